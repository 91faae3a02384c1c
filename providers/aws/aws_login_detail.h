// What providers/aws/aws_login.cpp (the login's files and chain) and aws_credentials.cpp (fetching its credentials)
// share; nothing else includes it.
#pragma once

#include <string>

#include "common/result.h"
#include "providers/http/codec.h"

namespace tsum::providers::aws::detail {

inline Error bad(const std::string& what) { return make_error(Code::invalid_argument, "aws: " + what); }

// An expiry as botocore writes it (RFC 3339, or "UTC" for "Z") in seconds since the epoch.
inline Result<double> parse_expiry(std::string text) {
  if (text.ends_with("UTC")) text = text.substr(0, text.size() - 3) + "Z";
  return http::parse_rfc3339(http::trim(text));
}

}  // namespace tsum::providers::aws::detail
