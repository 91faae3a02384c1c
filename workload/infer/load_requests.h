// The requests `tsum-train load` (workload/infer/load_gen.h) sends: what the server says of its model, and the
// seeded random tensors (or JPEGs) of each infer request, built once before the sweep.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "workload/infer/http_client.h"
#include "workload/infer/load_gen.h"

namespace tsum::workload {

// One tensor of the model's metadata.
struct TensorSpec {
  std::string name;
  std::string datatype;
  std::vector<std::int64_t> shape;  // -1: any size
};

// What the server says of the model (GET /v2/models/{m}) and of itself (GET /v2: whether it lists the
// binary_tensor_data extension, without which every tensor travels as JSON).
struct ModelSpec {
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  bool binary = false;
};

// The model's tensors (GET /v2/models/{model}) and whether the server takes binary tensors (GET /v2), asked on `conn`.
Result<ModelSpec> model_spec(http::Connection& conn, const http::Url& url, const std::string& model);

// The requests the workers cycle through: seeded random tensors for each numeric input the model's metadata
// names, or the JPEGs of --images as its BYTES input, `batch` a request; binary where the server takes it.
Result<std::vector<http::Request>> make_requests(const LoadOptions& o, const http::Url& url, const ModelSpec& spec);

}  // namespace tsum::workload
