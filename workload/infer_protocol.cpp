#include "workload/infer_protocol.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

namespace tsum::workload::v2 {
namespace {

using nlohmann::json;

Error bad(std::string why) { return make_error(Code::invalid_argument, std::move(why)); }

// The product of a shape's dimensions; an error for a negative one or a product over `max`.
Result<std::int64_t> element_count(const std::string& name, const std::vector<std::int64_t>& shape,
                                   std::int64_t max) {
  std::int64_t n = 1;
  for (const auto d : shape) {
    if (d < 0) return bad("input '" + name + "': negative dimension in its shape");
    if (d != 0 && n > max / d) return bad("input '" + name + "': more than " + std::to_string(max) + " elements");
    n *= d;
  }
  if (n > max) return bad("input '" + name + "': more than " + std::to_string(max) + " elements");
  return n;
}

// Appends a JSON "data" value's leaves (nested arrays read row-major) to `out`, at most `limit` of them.
template <class F>
Status flatten(const json& data, std::int64_t limit, std::int64_t& seen, int depth, F&& leaf) {
  if (depth > 32) return bad("\"data\" nests too deep");
  if (!data.is_array()) {
    if (++seen > limit) return bad("\"data\" holds more elements than the shape");
    return leaf(data);
  }
  for (const auto& v : data)
    if (auto st = flatten(v, limit, seen, depth + 1, leaf); !st.ok()) return st;
  return {};
}

Status read_json_data(const json& data, InputTensor& t, std::int64_t count) {
  std::int64_t seen = 0;
  Status st;
  if (t.datatype == "FP32") {
    t.fp32.reserve(static_cast<std::size_t>(count));
    st = flatten(data, count, seen, 0, [&](const json& v) -> Status {
      if (!v.is_number()) return bad("input '" + t.name + "': FP32 data holds a non-number");
      const double d = v.get<double>();
      if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max())
        return bad("input '" + t.name + "': an FP32 value out of range");
      t.fp32.push_back(static_cast<float>(d));
      return {};
    });
  } else {
    st = flatten(data, count, seen, 0, [&](const json& v) -> Status {
      if (!v.is_string()) return bad("input '" + t.name + "': BYTES data holds a non-string");
      t.bytes.push_back(v.get<std::string>());
      return {};
    });
  }
  if (!st.ok()) return st;
  if (seen != count)
    return bad("input '" + t.name + "': shape holds " + std::to_string(count) + " elements, data " +
               std::to_string(seen));
  return {};
}

std::uint32_t read_u32le(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<std::uint32_t>(u[0]) | static_cast<std::uint32_t>(u[1]) << 8 |
         static_cast<std::uint32_t>(u[2]) << 16 | static_cast<std::uint32_t>(u[3]) << 24;
}

Status read_binary_data(std::string_view bytes, InputTensor& t, std::int64_t count) {
  if (t.datatype == "FP32") {
    if (bytes.size() != static_cast<std::size_t>(count) * 4)
      return bad("input '" + t.name + "': " + std::to_string(bytes.size()) + " bytes of FP32 data for " +
                 std::to_string(count) + " elements");
    t.fp32.resize(static_cast<std::size_t>(count));
    static_assert(sizeof(float) == 4);
    for (std::size_t i = 0; i < t.fp32.size(); ++i) {
      const std::uint32_t u = read_u32le(bytes.data() + 4 * i);
      std::memcpy(&t.fp32[i], &u, 4);
      if (!std::isfinite(t.fp32[i])) return bad("input '" + t.name + "': a non-finite FP32 value");
    }
    return {};
  }
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < 4) return bad("input '" + t.name + "': a BYTES element's length is cut off");
    const std::size_t len = read_u32le(bytes.data() + pos);
    pos += 4;
    if (bytes.size() - pos < len) return bad("input '" + t.name + "': a BYTES element is cut off");
    if (static_cast<std::int64_t>(t.bytes.size()) == count)
      return bad("input '" + t.name + "': more BYTES elements than the shape holds");
    t.bytes.emplace_back(bytes.substr(pos, len));
    pos += len;
  }
  if (static_cast<std::int64_t>(t.bytes.size()) != count)
    return bad("input '" + t.name + "': shape holds " + std::to_string(count) + " elements, data " +
               std::to_string(t.bytes.size()));
  return {};
}

Result<std::vector<std::int64_t>> read_shape(const json& in, const std::string& name) {
  const auto it = in.find("shape");
  if (it == in.end() || !it->is_array()) return bad("input '" + name + "': \"shape\" must be an array");
  if (it->size() > 8) return bad("input '" + name + "': more than 8 dimensions");
  std::vector<std::int64_t> shape;
  for (const auto& d : *it) {
    if (!d.is_number_integer()) return bad("input '" + name + "': \"shape\" must hold integers");
    shape.push_back(d.get<std::int64_t>());
  }
  return shape;
}

// One element of "inputs"; its binary bytes come from `binary` at `offset`, which it advances.
Result<InputTensor> read_input(const json& in, std::string_view binary, std::size_t& offset,
                               std::int64_t max_elements) {
  if (!in.is_object()) return bad("each of \"inputs\" must be an object");
  InputTensor t;
  const auto name = in.find("name");
  if (name == in.end() || !name->is_string() || name->get<std::string>().empty())
    return bad("an input has no \"name\"");
  t.name = name->get<std::string>();
  const auto type = in.find("datatype");
  if (type == in.end() || !type->is_string()) return bad("input '" + t.name + "': no \"datatype\"");
  t.datatype = type->get<std::string>();
  if (t.datatype != "FP32" && t.datatype != "BYTES")
    return bad("input '" + t.name + "': datatype " + t.datatype + " is not read here (FP32 or BYTES)");
  auto shape = read_shape(in, t.name);
  if (!shape.ok()) return shape.error();
  t.shape = std::move(*shape);
  auto count = element_count(t.name, t.shape, max_elements);
  if (!count.ok()) return count.error();
  std::optional<std::size_t> binary_size;
  if (const auto p = in.find("parameters"); p != in.end()) {
    if (!p->is_object()) return bad("input '" + t.name + "': \"parameters\" must be an object");
    if (const auto b = p->find("binary_data_size"); b != p->end()) {
      if (!b->is_number_unsigned()) return bad("input '" + t.name + "': bad \"binary_data_size\"");
      binary_size = b->get<std::size_t>();
    }
  }
  const auto data = in.find("data");
  if (binary_size.has_value() == (data != in.end()))
    return bad("input '" + t.name + "': needs either \"data\" or parameters.binary_data_size");
  if (data != in.end()) {
    if (auto st = read_json_data(*data, t, *count); !st.ok()) return st.error();
    return t;
  }
  if (binary.size() - offset < *binary_size)
    return bad("input '" + t.name + "': binary_data_size runs past the body");
  if (auto st = read_binary_data(binary.substr(offset, *binary_size), t, *count); !st.ok()) return st.error();
  offset += *binary_size;
  return t;
}

Status read_outputs(const json& outputs, InferRequest& r) {
  if (!outputs.is_array()) return bad("\"outputs\" must be an array");
  for (const auto& o : outputs) {
    if (!o.is_object()) return bad("each of \"outputs\" must be an object");
    const auto name = o.find("name");
    if (name == o.end() || !name->is_string()) return bad("an output has no \"name\"");
    OutputRequest want{name->get<std::string>(), r.binary_data_output};
    if (const auto p = o.find("parameters"); p != o.end()) {
      if (!p->is_object()) return bad("output '" + want.name + "': \"parameters\" must be an object");
      if (const auto b = p->find("binary_data"); b != p->end()) {
        if (!b->is_boolean()) return bad("output '" + want.name + "': \"binary_data\" must be true or false");
        want.binary = b->get<bool>();
      }
    }
    r.outputs.push_back(std::move(want));
  }
  return {};
}

void append_u32le(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

Result<InferRequest> parse_infer_request(std::string_view body, std::optional<std::size_t> json_length,
                                         std::int64_t max_elements) {
  if (json_length && *json_length > body.size())
    return bad("Inference-Header-Content-Length is " + std::to_string(*json_length) + ", the body " +
               std::to_string(body.size()) + " bytes");
  const std::string_view text = json_length ? body.substr(0, *json_length) : body;
  const std::string_view binary = json_length ? body.substr(*json_length) : std::string_view();
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return bad("the request is not JSON");
  if (!j.is_object()) return bad("the request must be a JSON object");
  InferRequest r;
  if (const auto id = j.find("id"); id != j.end()) {
    if (!id->is_string()) return bad("\"id\" must be a string");
    r.id = id->get<std::string>();
  }
  if (const auto p = j.find("parameters"); p != j.end()) {
    if (!p->is_object()) return bad("\"parameters\" must be an object");
    if (const auto b = p->find("binary_data_output"); b != p->end()) {
      if (!b->is_boolean()) return bad("\"binary_data_output\" must be true or false");
      r.binary_data_output = b->get<bool>();
    }
  }
  const auto inputs = j.find("inputs");
  if (inputs == j.end() || !inputs->is_array() || inputs->empty()) return bad("\"inputs\" must be a non-empty array");
  std::size_t offset = 0;
  for (const auto& in : *inputs) {
    auto t = read_input(in, binary, offset, max_elements);
    if (!t.ok()) return t.error();
    r.inputs.push_back(std::move(*t));
  }
  if (offset != binary.size())
    return bad(std::to_string(binary.size() - offset) + " bytes after the last input's binary data");
  if (const auto o = j.find("outputs"); o != j.end()) {
    if (auto st = read_outputs(*o, r); !st.ok()) return st.error();
  }
  return r;
}

AnswerBody format_infer_answer(const InferAnswer& answer) {
  json j = {{"model_name", answer.model_name}, {"model_version", "1"}};
  if (!answer.id.empty()) j["id"] = answer.id;
  json outputs = json::array();
  std::string binary;
  for (const auto& o : answer.outputs) {
    const bool is_int = !o.i64.empty();
    json out = {{"name", o.name}, {"datatype", is_int ? "INT64" : "FP32"}, {"shape", o.shape}};
    if (o.binary) {
      const std::size_t before = binary.size();
      if (is_int) {
        for (const auto v : o.i64) {
          const auto u = static_cast<std::uint64_t>(v);
          append_u32le(binary, static_cast<std::uint32_t>(u));
          append_u32le(binary, static_cast<std::uint32_t>(u >> 32));
        }
      } else {
        for (const float f : o.fp32) {
          std::uint32_t u = 0;
          std::memcpy(&u, &f, 4);
          append_u32le(binary, u);
        }
      }
      out["parameters"] = {{"binary_data_size", binary.size() - before}};
    } else if (is_int) {
      out["data"] = o.i64;
    } else {
      out["data"] = o.fp32;
    }
    outputs.push_back(std::move(out));
  }
  j["outputs"] = std::move(outputs);
  AnswerBody a;
  a.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!binary.empty() || std::any_of(answer.outputs.begin(), answer.outputs.end(),
                                     [](const OutputTensor& o) { return o.binary; })) {
    a.json_length = a.body.size();
    a.body += binary;
  }
  return a;
}

std::string error_body(std::string_view message) {
  return json{{"error", std::string(message)}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode_bytes_elements(const std::vector<std::string>& elements) {
  std::string out;
  for (const auto& e : elements) {
    append_u32le(out, static_cast<std::uint32_t>(e.size()));
    out += e;
  }
  return out;
}

}  // namespace tsum::workload::v2
