// The key of a parameter's entry in a torch::optim optimizer's state_: libtorch 1.13 keys it by the text of the
// TensorImpl's address, libtorch 2 by the address itself. Our optimizers (adadelta, nadam, fused Adam) use the
// optimizer's own key type, so their state serializes like the stock ones' on either.
#pragma once

#include <torch/torch.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace tsum::workload {

using OptimStateKey = std::remove_cvref_t<
    decltype(std::declval<torch::optim::Optimizer&>().state().begin()->first)>;

template <typename Key = OptimStateKey>
Key optim_state_key(const torch::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;  // what c10::guts::to_string wrote
    text << static_cast<const void*>(p.unsafeGetTensorImpl());
    return text.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

}  // namespace tsum::workload
