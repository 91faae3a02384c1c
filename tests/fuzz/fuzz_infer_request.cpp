// `tsum-train serve`'s request parsing (issues 41, 53): the bytes a client sends on one connection, taken off as the
// server takes them (Boost.Beast's request parser under the server's limits, workload/serve/serve.h, small here), each
// message's body read as an Open Inference Protocol infer request (workload/serve/infer_protocol.h) with its
// Inference-Header-Content-Length. A crash, a hang, a refusal answered with a status other than 400-431 or 505,
// or a request that parses into a tensor whose data does not match its shape is a finding.
#include <charconv>
#include <optional>
#include <string>

#include <boost/asio/buffer.hpp>

#include "fuzz_input.h"
#include "workload/serve/infer_protocol.h"
#include "workload/serve/serve.h"

namespace w = tsum::workload;
namespace v2 = tsum::workload::v2;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(tsum::fuzz::text(data, size));
  std::string_view rest = bytes;
  const w::HttpLimits limits{4096, 1 << 20};
  for (int i = 0; i < 64 && !rest.empty(); ++i) {
    w::RequestParser parser;
    w::apply_limits(parser, limits);
    parser.eager(true);
    boost::system::error_code ec;
    const std::string_view message_start = rest;
    const std::size_t before = rest.size();
    while (!rest.empty() && !parser.is_done()) {
      const std::size_t used = parser.put(boost::asio::buffer(rest.data(), rest.size()), ec);
      rest.remove_prefix(used);
      if (ec == boost::beast::http::error::need_more) {
        ec = {};
        break;  // the rest of the bytes are a message cut off
      }
      if (ec || used == 0) break;
    }
    if (ec) {
      const int status = w::refusal_status(ec, message_start);
      if (status < 400 || status > 505 || (status > 431 && status != 505)) __builtin_trap();
      break;
    }
    if (!parser.is_done()) break;
    if (rest.size() >= before) __builtin_trap();  // a message must consume bytes
    const auto& message = parser.get();
    std::optional<std::size_t> json_length;
    if (const auto it = message.find("inference-header-content-length"); it != message.end()) {
      std::size_t n = 0;
      const auto v = it->value();
      if (std::from_chars(v.data(), v.data() + v.size(), n).ec == std::errc()) json_length = n;
    }
    auto request = v2::parse_infer_request(message.body(), json_length, 1 << 16);
    if (!request.ok()) continue;
    for (const auto& in : request->inputs) {
      std::int64_t count = 1;
      for (const auto d : in.shape) count *= d;
      const auto have = static_cast<std::int64_t>(in.datatype == "FP32" ? in.fp32.size() : in.bytes.size());
      if (have != count) __builtin_trap();
    }
  }
  return 0;
}
