// A cloud API's base URL, split for building requests: "https://host:port/prefix" -> url
// "https://host:port/prefix/", host "host:port" (the Host header), path "/prefix/". Every adapter takes one
// per endpoint, so tests can point it at a loopback fake.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace tsum::providers::http {

struct BaseUrl {
  std::string url;   // ends with '/'
  std::string host;  // the Host header
  std::string path;  // ends with '/'
};

// invalid_argument unless http(s) with a host and no query or fragment.
Result<BaseUrl> parse_base_url(std::string_view url);

}  // namespace tsum::providers::http
