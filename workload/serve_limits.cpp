// The request parser's limits and the status of what it refuses (serve.h), apart from the server so that the fuzz
// target (tests/fuzz/fuzz_infer_request.cpp) links them without the batcher and the model.
#include <algorithm>
#include <cstdint>

#include <boost/beast/http/error.hpp>

#include "workload/serve.h"

namespace tsum::workload {

void apply_limits(RequestParser& parser, const HttpLimits& limits) {
  parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(limits.max_head, UINT32_MAX)));
  parser.body_limit(limits.max_body);
}

int refusal_status(const boost::system::error_code& ec) {
  namespace bhttp = boost::beast::http;
  if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) return 431;
  if (ec == bhttp::error::body_limit) return 413;
  if (ec == bhttp::error::bad_version) return 505;  // Beast reads HTTP/1.0 and HTTP/1.1 only
  return 400;
}

}  // namespace tsum::workload
