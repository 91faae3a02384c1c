// `tsum-train serve`'s request parsing (issue 41): the bytes a client sends on one connection, taken off as the
// server takes them (workload/http1.h, under small limits), each message's body read as an Open Inference
// Protocol infer request (workload/infer_protocol.h) with its Inference-Header-Content-Length. A crash, a hang
// or a request that parses into a tensor whose data does not match its shape is a finding.
#include <charconv>
#include <string>

#include "fuzz_input.h"
#include "workload/http1.h"
#include "workload/infer_protocol.h"

namespace http1 = tsum::workload::http1;
namespace v2 = tsum::workload::v2;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string buffer(tsum::fuzz::text(data, size));
  const http1::Limits limits{4096, 1 << 20};
  for (int i = 0; i < 64; ++i) {
    const std::size_t before = buffer.size();
    auto taken = http1::take_message(buffer, http1::Kind::request, limits);
    if (taken.what != http1::Taken::What::message) {
      if (taken.what == http1::Taken::What::error && (taken.status < 400 || taken.status > 505)) __builtin_trap();
      break;
    }
    if (buffer.size() >= before) __builtin_trap();  // a message must consume bytes
    std::optional<std::size_t> json_length;
    if (const auto* h = taken.message.header("inference-header-content-length")) {
      std::size_t n = 0;
      if (std::from_chars(h->data(), h->data() + h->size(), n).ec == std::errc()) json_length = n;
    }
    auto request = v2::parse_infer_request(taken.message.body, json_length, 1 << 16);
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
