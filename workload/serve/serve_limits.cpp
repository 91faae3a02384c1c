// The request parser's limits and the status of what it refuses (serve.h), apart from the server so that the fuzz
// target (tests/fuzz/fuzz_infer_request.cpp) links them without the batcher and the model.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string_view>

#include <boost/beast/http/error.hpp>

#include "workload/serve/serve.h"

namespace tsum::workload {

void apply_limits(RequestParser& parser, const HttpLimits& limits) {
  parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(limits.max_head, UINT32_MAX)));
  parser.body_limit(limits.max_body);
}

int refusal_status(const boost::system::error_code& ec, std::string_view head) {
  namespace bhttp = boost::beast::http;
  if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) return 431;
  if (ec == bhttp::error::body_limit) return 413;
  if (ec == bhttp::error::bad_version) {
    // Beast says bad_version for another version and for a request line that does not end in CRLF after one (a
    // bare LF): only the first is 505.
    const std::string_view line = head.substr(0, head.find('\n'));
    const auto at = line.rfind(" HTTP/");
    const bool versioned = at != std::string_view::npos && line.size() == at + 10 && line.back() == '\r' &&
                           std::isdigit(static_cast<unsigned char>(line[at + 6])) && line[at + 7] == '.' &&
                           std::isdigit(static_cast<unsigned char>(line[at + 8]));
    return head.empty() || versioned ? 505 : 400;
  }
  return 400;
}

}  // namespace tsum::workload
