#include "workload/serve/infer_protocol.h"

#include <algorithm>
#include <bit>
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

// An input's JSON "data", read as the request parses (RequestSax) straight into its elements, never into a document:
// a document of numbers takes about 15x the text (a 50 MB body took 730 MiB), the elements at most half of it.
struct CapturedData {
  bool present = false;
  Floats fp32;                     // number leaves
  std::vector<std::string> bytes;  // string leaves
  std::string error;               // a leaf neither, or a number out of FP32's range
  int leaf_depth = -1;             // arrays around each leaf (0: "data" is a scalar); -1 none yet, -2 uneven
  std::vector<std::int64_t> lengths;  // [d]: the length of every array d+1 deep; -1 where they differ
  std::vector<std::int64_t> open;     // elements so far of each array open now
};

constexpr int kMaxDepth = 64;

// Builds the request's JSON document, except the inputs' "data", which go to `captured` (one per input, by its
// index). Stops at the first problem: `error` then says it (or nlohmann's parse error does).
class RequestSax {
 public:
  explicit RequestSax(std::int64_t max_elements) : max_elements_(max_elements) {}

  json root;
  std::vector<CapturedData> captured;
  std::string error;

  bool null() { return leaf(nullptr); }
  bool boolean(bool v) { return leaf(v); }
  bool number_integer(json::number_integer_t v) { return number(static_cast<double>(v), v); }
  bool number_unsigned(json::number_unsigned_t v) { return number(static_cast<double>(v), v); }
  bool number_float(json::number_float_t v, const std::string&) { return number(v, v); }
  bool string(std::string& v) {
    if (data_) {
      if (!enter_leaf()) return false;
      data_->bytes.push_back(std::move(v));
      return count_leaf();
    }
    return put(std::move(v)) != nullptr;
  }
  bool binary(json::binary_t&) { return fail("binary values are not JSON"); }
  bool start_object(std::size_t) {
    if (data_) return fail(name() + "\"data\" holds an object");
    if (stack_.size() >= kMaxDepth) return fail("the request nests too deep");
    json* o = put(json::object());
    if (!o) return false;
    stack_.push_back(o);
    return true;
  }
  bool key(std::string& k) {
    key_ = std::move(k);
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    if (data_) {
      auto& d = *data_;
      if (d.open.size() >= 32) return fail(name() + "\"data\" nests too deep");
      if (!d.open.empty()) ++d.open.back();
      d.open.push_back(0);
      if (d.lengths.size() < d.open.size()) d.lengths.push_back(-2);
      return true;
    }
    if (stack_.size() >= kMaxDepth) return fail("the request nests too deep");
    const bool inputs = stack_.size() == 1 && key_ == "inputs";
    json* a = put(json::array());
    if (!a) return false;
    if (!data_) {
      stack_.push_back(a);
      if (inputs) inputs_ = a;
    }
    return true;
  }
  bool end_array() {
    if (data_) {
      auto& d = *data_;
      const std::int64_t len = d.open.back();
      auto& want = d.lengths[d.open.size() - 1];
      want = want == -2 ? len : want == len ? want : -1;
      d.open.pop_back();
      if (d.open.empty()) data_ = nullptr;
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    if (error.empty()) error = "the request is not JSON";
    return false;
  }

 private:
  bool fail(std::string why) {
    if (error.empty()) error = std::move(why);
    return false;
  }
  std::string name() const { return "input " + std::to_string(index_) + ": "; }

  // A value at the current place: the document's, or the start of an input's "data" (which begins capturing).
  json* put(json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    if (stack_.size() == 3 && stack_[1] == inputs_ && key_ == "data") {
      index_ = inputs_->size() - 1;
      if (captured.size() <= index_) captured.resize(index_ + 1);
      data_ = &captured[index_];
      if (data_->present) {
        fail(name() + "\"data\" given twice");
        return nullptr;
      }
      data_->present = true;
      if (v.is_object()) {
        fail(name() + "\"data\" is an object");
        return nullptr;
      }
      if (v.is_array()) {  // the array just begun: what start_array does inside "data"
        data_->open.push_back(0);
        data_->lengths.push_back(-2);
        return &top;
      }
      // A scalar "data": one leaf, no array around it.
      data_->leaf_depth = 0;
      data_ = nullptr;
      return &top;
    }
    json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }

  template <class T>
  bool leaf(T v) {
    if (data_) return fail(name() + "\"data\" holds a value that is neither a number nor a string");
    return put(json(v)) != nullptr;
  }

  template <class T>
  bool number(double d, T v) {
    if (!data_) return put(json(v)) != nullptr;
    if (!enter_leaf()) return false;
    if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max())
      return fail(name() + "an FP32 value out of range");
    data_->fp32.push_back(static_cast<float>(d));
    return count_leaf();
  }

  bool enter_leaf() {
    auto& d = *data_;
    const int depth = static_cast<int>(d.open.size());
    d.leaf_depth = d.leaf_depth == -1 || d.leaf_depth == depth ? depth : -2;
    ++d.open.back();
    return true;
  }
  bool count_leaf() {
    if (++leaves_ > max_elements_) return fail("the request holds more than " + std::to_string(max_elements_) +
                                               " elements");
    return true;
  }

  std::int64_t max_elements_;
  std::int64_t leaves_ = 0;
  std::vector<json*> stack_;  // the open containers of the document
  std::string key_;
  json* inputs_ = nullptr;       // the top-level "inputs" array
  CapturedData* data_ = nullptr;  // the "data" being read, while inside it
  std::size_t index_ = 0;
};

// An input's captured data checked against its datatype and shape: as many elements as the shape holds, nested
// as the shape is (or flat, row-major), of the datatype's kind.
Status read_json_data(CapturedData& data, InputTensor& t, std::int64_t count) {
  if (!data.error.empty()) return bad(data.error);
  if (t.datatype == "FP32" && !data.bytes.empty()) return bad("input '" + t.name + "': FP32 data holds a non-number");
  if (t.datatype == "BYTES" && !data.fp32.empty())
    return bad("input '" + t.name + "': BYTES data holds a non-string");
  if (data.leaf_depth == 0) return bad("input '" + t.name + "': \"data\" must be an array");
  const auto seen = static_cast<std::int64_t>(data.fp32.size() + data.bytes.size());
  if (seen != count)
    return bad("input '" + t.name + "': shape holds " + std::to_string(count) + " elements, data " +
               std::to_string(seen));
  if (data.leaf_depth == -2) return bad("input '" + t.name + "': \"data\" nests unevenly");
  // Nested as the shape, where leading dimensions of 1 may go unwritten ([[1, 2]] for [1, 1, 2]).
  const bool flat = data.lengths.size() == 1 && data.lengths[0] == count;
  const std::size_t skipped = t.shape.size() - std::min(t.shape.size(), data.lengths.size());
  const bool nested = data.lengths.size() <= t.shape.size() &&
                      std::all_of(t.shape.begin(), t.shape.begin() + static_cast<std::ptrdiff_t>(skipped),
                                  [](std::int64_t d) { return d == 1; }) &&
                      std::equal(t.shape.begin() + static_cast<std::ptrdiff_t>(skipped), t.shape.end(),
                                 data.lengths.begin());
  if (!flat && !nested) {
    auto list = [](const std::vector<std::int64_t>& v) {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i)
        out += (i ? ", " : "") + (v[i] < 0 ? std::string("uneven") : std::to_string(v[i]));
      return out + "]";
    };
    return bad("input '" + t.name + "': \"data\" nests as " + list(data.lengths) + ", the shape is " +
               list(t.shape) + " (nest it as the shape, or give it flat)");
  }
  t.fp32 = std::move(data.fp32);
  t.bytes = std::move(data.bytes);
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
    // Copied and checked in one pass: finite is the exponent's bits not all set (no branch an element).
    std::uint32_t worst = 0;
    float* out = t.fp32.data();
    for (std::size_t i = 0; i < t.fp32.size(); ++i) {
      std::uint32_t u = 0;
      if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(&u, bytes.data() + 4 * i, 4);
      } else {
        u = read_u32le(bytes.data() + 4 * i);
      }
      worst |= (u & 0x7f800000u) == 0x7f800000u;
      out[i] = std::bit_cast<float>(u);
    }
    if (worst) return bad("input '" + t.name + "': a non-finite FP32 value");
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
Result<InputTensor> read_input(const json& in, CapturedData& data, std::string_view binary, std::size_t& offset,
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
  if (binary_size.has_value() == data.present)
    return bad("input '" + t.name + "': needs either \"data\" or parameters.binary_data_size");
  if (data.present) {
    if (auto st = read_json_data(data, t, *count); !st.ok()) return st.error();
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
  RequestSax sax(max_elements);
  if (!json::sax_parse(text, &sax)) return bad(sax.error.empty() ? "the request is not JSON" : sax.error);
  const json& j = sax.root;
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
  sax.captured.resize(inputs->size());
  for (std::size_t i = 0; i < inputs->size(); ++i) {
    auto t = read_input((*inputs)[i], sax.captured[i], binary, offset, max_elements);
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
