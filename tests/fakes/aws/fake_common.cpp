#include "tests/fakes/aws/fake_common.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>

#include "providers/aws/ec2_xml.h"
#include "providers/aws/xml.h"

namespace tsum::providers::aws::fake {

namespace {

std::string request_id() {
  static std::atomic<unsigned long> next{1};
  char buf[48];
  std::snprintf(buf, sizeof buf, "fa4e0000-0000-4000-8000-%012lx", next++);
  return buf;
}

}  // namespace

FakeAnswer ec2_error(int status, std::string_view code, std::string_view message) {
  return {status, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error>" + el("Code", code) +
                      el("Message", message) + "</Error></Errors>" + el("RequestID", request_id()) + "</Response>"};
}

FakeAnswer ec2_ok(std::string_view action, std::string_view inner_xml) {
  std::string root = std::string(action) + "Response";
  return {200, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<" + root + " xmlns=\"http://ec2.amazonaws.com/doc/" +
                   std::string(kEc2ApiVersion) + "/\">" + el("requestId", request_id()) + std::string(inner_xml) +
                   "</" + root + ">"};
}

FakeAnswer json_error(int status, std::string_view type, std::string_view message) {
  nlohmann::json body = {{"__type", type}, {"message", message}};
  return {status, body.dump(), "application/x-amz-json-1.1", {{"x-amzn-ErrorType", std::string(type)}}};
}

std::string el(std::string_view name, std::string_view text) {
  return "<" + std::string(name) + ">" + xml_escape(text) + "</" + std::string(name) + ">";
}

std::optional<std::string> param(const Fields& params, std::string_view name) {
  for (const auto& [n, v] : params)
    if (n == name) return v;
  return std::nullopt;
}

std::vector<std::string> indexed(const Fields& params, std::string_view prefix) {
  std::map<long, std::string> by_index;
  for (const auto& [n, v] : params) {
    if (n.size() <= prefix.size() + 1 || !n.starts_with(prefix) || n[prefix.size()] != '.') continue;
    std::string_view idx = std::string_view(n).substr(prefix.size() + 1);
    long i = 0;
    auto [p, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), i);
    if (ec == std::errc() && p == idx.data() + idx.size() && i > 0) by_index[i] = v;
  }
  std::vector<std::string> out;
  for (auto& [_, v] : by_index) out.push_back(v);
  return out;
}

std::optional<std::string> unknown_param(const Fields& params, std::initializer_list<std::string_view> exact,
                                         std::initializer_list<std::string_view> prefixes) {
  for (const auto& [n, _] : params) {
    if (n == "Action" || n == "Version") continue;
    bool known = false;
    for (auto e : exact) known = known || n == e;
    for (auto p : prefixes) known = known || (n.starts_with(p) && n.size() > p.size() && n[p.size()] == '.');
    if (!known) return n;
  }
  return std::nullopt;
}

std::optional<long> int_param(const Fields& params, std::string_view name, long lo, long hi) {
  auto v = param(params, name);
  if (!v) return std::nullopt;
  long n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || p != v->data() + v->size() || n < lo || n > hi) return -1;
  return n;
}

}  // namespace tsum::providers::aws::fake
