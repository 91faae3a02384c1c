// Copies between a model's tensors (its parameters or their gradients) and one flat float32 buffer
// laid out in model order: the messages of the parameter-server modes (data_parallel.h).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace tsum::workload {

// Total elements of `tensors`.
std::int64_t numel_of(const std::vector<torch::Tensor>& tensors);

// Each parameter's gradient (zeros where it has none) into flat[0, numel_of(params)).
void flatten_grads(const std::vector<torch::Tensor>& params, torch::Tensor& flat);

// Each parameter's grad set to its slice of `flat` (a view: no copy).
void grads_from_flat(const std::vector<torch::Tensor>& params, const torch::Tensor& flat);

// Each parameter's values into flat[0, numel_of(params)).
void flatten_values(const std::vector<torch::Tensor>& params, torch::Tensor& flat);

// Each parameter's values copied from its slice of `flat`.
void values_from_flat(const std::vector<torch::Tensor>& params, const torch::Tensor& flat);

}  // namespace tsum::workload
