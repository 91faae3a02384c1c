// The Open Inference Protocol (KServe v2, as Triton and KServe speak it over HTTP) for `tsum-train serve`:
// reading an infer request and writing its answer. No libtorch (the fuzz target links it alone).
//
// A request body is JSON, or with the binary tensor extension a JSON header of Inference-Header-Content-Length
// bytes followed by the inputs' bytes in the order of the inputs that name a "binary_data_size":
//   {"id": "...", "parameters": {...}, "inputs": [{"name": "input", "shape": [2, 3, 224, 224], "datatype": "FP32",
//     "data": [...] | "parameters": {"binary_data_size": N}}], "outputs": [{"name": "class",
//     "parameters": {"binary_data": true}}]}
// FP32 tensors come as JSON numbers, flat or nested as the shape is (row-major), or as little-endian binary;
// BYTES tensors (a JPEG per element) as JSON strings or as binary, each element a 4-byte little-endian length and
// its bytes. Fields the protocol leaves open (model_name, extra parameters) are ignored. Anything else (a datatype
// other than these, data that does not match the shape in count or in nesting, bytes left over) is an error
// naming it: the server answers 400 with {"error": "..."}. The JSON is read as it parses: "data" goes straight
// into the tensor's elements, so a request takes its body and about half of it again, not a document's 15x.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "workload/serve/large_alloc.h"

namespace tsum::workload::v2 {

struct InputTensor {
  std::string name;
  std::string datatype;  // "FP32" or "BYTES"
  std::vector<std::int64_t> shape;
  Floats fp32;                      // FP32: the elements, row-major
  std::vector<std::string> bytes;   // BYTES: one string per element
};

struct OutputRequest {
  std::string name;
  bool binary = false;
};

struct InferRequest {
  std::string id;
  std::vector<InputTensor> inputs;
  std::vector<OutputRequest> outputs;  // empty: every output, as JSON unless binary_data_output
  bool binary_data_output = false;     // the request's "parameters": {"binary_data_output": true}
};

// Reads a request body. `json_length` is the Inference-Header-Content-Length header's value (nullopt: the body
// is all JSON). `max_elements` bounds any one tensor (its shape's product). invalid_argument saying what is
// wrong; nothing else.
Result<InferRequest> parse_infer_request(std::string_view body, std::optional<std::size_t> json_length,
                                         std::int64_t max_elements);

// One output of an answer: FP32 or INT64 data with its shape.
struct OutputTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> fp32;         // datatype FP32 when non-empty or i64 is empty
  std::vector<std::int64_t> i64;   // datatype INT64 when non-empty
  bool binary = false;
};

struct InferAnswer {
  std::string model_name;
  std::string id;
  std::vector<OutputTensor> outputs;
};

// The answer body, and the length of its JSON part when an output is binary (the Inference-Header-Content-Length
// header the answer then carries).
struct AnswerBody {
  std::string body;
  std::optional<std::size_t> json_length;
};
AnswerBody format_infer_answer(const InferAnswer& answer);

// {"error": "..."}: the protocol's error body.
std::string error_body(std::string_view message);

// A BYTES tensor's binary form: each element as a 4-byte little-endian length and its bytes.
std::string encode_bytes_elements(const std::vector<std::string>& elements);

}  // namespace tsum::workload::v2
