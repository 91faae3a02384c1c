// The room workload/optim/ owns the optimizers tsum-train adds to libtorch's (Adadelta, Nadam, fused Adam), fp16 loss
// scaling and the registry by name. It calls only common/ and libtorch.
//
// Optimizers by name. To add one: add a row to the table in optimizer_registry.cpp.
//
//   sgd       plain gradient descent                          default lr 0.01
//   momentum  SGD with momentum 0.9                            default lr 0.01
//   nesterov  SGD with Nesterov momentum 0.9                   default lr 0.01
//   rmsprop   RMSprop, Keras's rho 0.9 and eps 1e-7            default lr 0.001
//   adam      Adam, torch's betas 0.9/0.999 and eps 1e-8, computed by FusedAdam
//                                                              default lr 0.001
//   adagrad   Adagrad, eps 1e-7 (Keras), accumulator from 0    default lr 0.01
//   adadelta  Adadelta as Keras (adadelta.h): rho 0.95, eps 1e-7
//                                                              default lr 1.0
//   nadam     Nadam as Keras (nadam.h)                         default lr 0.002
// The default learning rates are Keras's.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::workload {

inline constexpr std::string_view kDefaultOptimizer = "adam";

// An optimizer over `params` with learning rate `lr` and the defaults above otherwise.
// invalid_argument for an unknown name or a non-positive lr.
Result<std::unique_ptr<torch::optim::Optimizer>> make_optimizer(
    std::string_view name, const std::vector<torch::Tensor>& params, double lr);

// The optimizer's default learning rate, or invalid_argument for an unknown name.
Result<double> default_learning_rate(std::string_view name);

// Known optimizer names, comma separated, for usage text.
std::string optimizer_names();

}  // namespace tsum::workload
