#include "workload/infer/load_requests.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "workload/machine/host_stats.h"
#include "workload/serve/infer_protocol.h"

namespace tsum::workload {

using nlohmann::json;
using Ms = std::chrono::milliseconds;

namespace {

// The bytes of one element of each numeric datatype generated here; 0 for one that is not.
std::size_t element_size(std::string_view datatype) {
  if (datatype == "BOOL" || datatype == "INT8" || datatype == "UINT8") return 1;
  if (datatype == "INT16" || datatype == "UINT16") return 2;
  if (datatype == "FP32" || datatype == "INT32" || datatype == "UINT32") return 4;
  if (datatype == "FP64" || datatype == "INT64" || datatype == "UINT64") return 8;
  return 0;
}

Result<std::vector<TensorSpec>> read_tensors(const json& meta, const char* key, const std::string& model) {
  std::vector<TensorSpec> out;
  const auto it = meta.find(key);
  if (it == meta.end() || !it->is_array())
    return make_error(Code::unavailable, "model '" + model + "': its metadata has no \"" + key + "\" array");
  for (const auto& t : *it) {
    TensorSpec spec;
    const auto name = t.is_object() ? t.find("name") : t.end();
    const auto type = t.is_object() ? t.find("datatype") : t.end();
    const auto shape = t.is_object() ? t.find("shape") : t.end();
    if (!t.is_object() || name == t.end() || !name->is_string() || type == t.end() || !type->is_string() ||
        shape == t.end() || !shape->is_array())
      return make_error(Code::unavailable, "model '" + model + "': a tensor of its \"" + key +
                                               "\" lacks a name, datatype or shape: " + t.dump());
    spec.name = name->get<std::string>();
    spec.datatype = type->get<std::string>();
    for (const auto& d : *shape) {
      if (!d.is_number_integer())
        return make_error(Code::unavailable, "model '" + model + "': tensor '" + spec.name + "' has a bad shape");
      spec.shape.push_back(d.get<std::int64_t>());
    }
    out.push_back(std::move(spec));
  }
  return out;
}


// A request's shape for `t`: a leading -1 (the batch) is --batch; a model without one takes its shape as it is.
Result<std::vector<std::int64_t>> request_shape(const TensorSpec& t, std::int64_t batch) {
  std::vector<std::int64_t> shape = t.shape;
  if (!shape.empty() && shape.front() == -1) {
    shape.front() = batch;
  } else if (batch != 1) {
    return make_error(Code::invalid_argument, "input '" + t.name + "' has no batch dimension (its shape starts " +
                                                  "with no -1): --batch must be 1");
  }
  std::int64_t count = 1;
  for (const auto d : shape) {
    if (d < 0)
      return make_error(Code::invalid_argument, "input '" + t.name + "' has a dimension of any size past the " +
                                                    "batch: no request shape to send it");
    if (d != 0 && count > (std::int64_t{1} << 28) / d)
      return make_error(Code::invalid_argument, "input '" + t.name + "' is too large to generate");
    count *= d;
  }
  return shape;
}

// `count` seeded random elements of `datatype` as little-endian bytes, and as the JSON array of the same values.
void random_elements(std::string_view datatype, std::int64_t count, std::mt19937_64& rng, std::string& bytes,
                     json& values) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> small(0, 1);
  const std::size_t size = element_size(datatype);
  bytes.assign(static_cast<std::size_t>(count) * size, '\0');
  values = json::array();
  for (std::int64_t i = 0; i < count; ++i) {
    char* at = bytes.data() + static_cast<std::size_t>(i) * size;
    if (datatype == "FP32") {
      const float v = static_cast<float>(normal(rng));
      std::memcpy(at, &v, 4);
      values.push_back(v);
    } else if (datatype == "FP64") {
      const double v = normal(rng);
      std::memcpy(at, &v, 8);
      values.push_back(v);
    } else {  // integers and BOOL: 0 or 1, an index and a flag any model takes
      const int v = small(rng);
      at[0] = static_cast<char>(v);
      if (datatype == "BOOL") {
        values.push_back(v != 0);
      } else {
        values.push_back(v);
      }
    }
  }
}

// One infer request: `inputs` (each with its "data", or its binary bytes in `binary`), every output of the model.
http::Request infer_request(const LoadOptions& o, const http::Url& url, const ModelSpec& spec, json inputs,
                            const std::string& binary) {
  json outputs = json::array();
  for (const auto& t : spec.outputs) {
    json out = {{"name", t.name}};
    if (spec.binary) out["parameters"] = {{"binary_data", true}};
    outputs.push_back(std::move(out));
  }
  const json header = {{"inputs", std::move(inputs)}, {"outputs", std::move(outputs)}};
  std::string text = header.dump();
  const std::string target = "/v2/models/" + o.model + "/infer";
  if (!spec.binary) return http::make_request("POST", target, url.host, "application/json", std::move(text));
  const std::string json_length = std::to_string(text.size());
  return http::make_request("POST", target, url.host, "application/octet-stream", text + binary,
                            {{"Inference-Header-Content-Length", json_length}});
}

}  // namespace

Result<ModelSpec> model_spec(http::Connection& conn, const http::Url& url, const std::string& model) {
  ModelSpec spec;
  auto server = conn.round_trip(http::make_request("GET", "/v2", url.host), Ms(30'000));
  if (!server.ok()) return make_error(Code::unavailable, "the server does not answer: " + server.error().detail);
  if (server->status == 200) {
    const json j = json::parse(server->body, nullptr, false);
    if (j.is_object() && j.contains("extensions") && j["extensions"].is_array())
      for (const auto& e : j["extensions"]) spec.binary = spec.binary || e == "binary_tensor_data";
  }
  auto answer = conn.round_trip(http::make_request("GET", "/v2/models/" + model, url.host), Ms(30'000));
  if (!answer.ok()) return make_error(Code::unavailable, "the server does not answer: " + answer.error().detail);
  const json j = json::parse(answer->body, nullptr, false);
  if (answer->status != 200)
    return make_error(Code::unavailable, "the server does not serve model '" + model + "': " +
                                             (j.is_object() ? j.value("error", answer->body) : answer->body));
  if (!j.is_object()) return make_error(Code::unavailable, "model '" + model + "': its metadata is not a JSON object");
  auto inputs = read_tensors(j, "inputs", model);
  if (!inputs.ok()) return inputs.error();
  auto outputs = read_tensors(j, "outputs", model);
  if (!outputs.ok()) return outputs.error();
  spec.inputs = std::move(*inputs);
  spec.outputs = std::move(*outputs);
  return spec;
}

// The requests the workers cycle through: seeded random tensors for each numeric input the model's metadata
// names, or the JPEGs of --images as its BYTES input, `batch` a request; binary where the server takes it.
Result<std::vector<http::Request>> make_requests(const LoadOptions& o, const http::Url& url, const ModelSpec& spec) {
  std::vector<http::Request> out;
  if (o.images_dir.empty()) {
    std::mt19937_64 rng(o.seed);
    for (int k = 0; k < 2; ++k) {
      json inputs = json::array();
      std::string binary;
      for (const auto& t : spec.inputs) {
        if (t.datatype == "BYTES") continue;  // another way in (ours: JPEGs beside the tensor): --images
        if (element_size(t.datatype) == 0)
          return make_error(Code::invalid_argument, "input '" + t.name + "' is " + t.datatype +
                                                        ", which is not generated here (BOOL, INT*, UINT*, FP32, FP64)");
        auto shape = request_shape(t, o.batch);
        if (!shape.ok()) return shape.error();
        std::int64_t count = 1;
        for (const auto d : *shape) count *= d;
        std::string bytes;
        json values;
        random_elements(t.datatype, count, rng, bytes, values);
        json in = {{"name", t.name}, {"datatype", t.datatype}, {"shape", *shape}};
        if (spec.binary) {
          in["parameters"] = {{"binary_data_size", bytes.size()}};
          binary += bytes;
        } else {
          in["data"] = std::move(values);
        }
        inputs.push_back(std::move(in));
      }
      if (inputs.empty())
        return make_error(Code::invalid_argument, "model '" + o.model + "' has no numeric input: give --images");
      out.push_back(infer_request(o, url, spec, std::move(inputs), binary));
    }
    return out;
  }
  const auto bytes_input = std::find_if(spec.inputs.begin(), spec.inputs.end(),
                                        [](const TensorSpec& t) { return t.datatype == "BYTES"; });
  if (bytes_input == spec.inputs.end())
    return make_error(Code::invalid_argument, "model '" + o.model + "' has no BYTES input to send --images to");
  if (!spec.binary)
    return make_error(Code::invalid_argument, "the server does not list the binary_tensor_data extension: JPEG "
                                              "bytes cannot travel as JSON strings");
  auto shape = request_shape(*bytes_input, o.batch);
  if (!shape.ok()) return shape.error();
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(o.images_dir, ec)) {
    const auto ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".jpg" || ext == ".jpeg" || ext == ".JPG")) files.push_back(e.path());
  }
  if (ec) return make_error(Code::not_found, o.images_dir + ": " + ec.message());
  if (files.empty()) return make_error(Code::invalid_argument, o.images_dir + ": holds no .jpg files");
  std::sort(files.begin(), files.end());
  const std::size_t bodies = std::min<std::size_t>(16, (files.size() + o.batch - 1) / o.batch);
  for (std::size_t b = 0; b < bodies; ++b) {
    std::vector<std::string> jpegs;
    for (std::int64_t i = 0; i < o.batch; ++i) {
      std::ifstream in(files[(b * o.batch + i) % files.size()], std::ios::binary);
      jpegs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    const std::string data = v2::encode_bytes_elements(jpegs);
    json in = {{"name", bytes_input->name}, {"datatype", "BYTES"}, {"shape", *shape},
               {"parameters", {{"binary_data_size", data.size()}}}};
    out.push_back(infer_request(o, url, spec, json::array({std::move(in)}), data));
  }
  return out;
}

}  // namespace tsum::workload
