#include "providers/http/base_url.h"

namespace tsum::providers::http {

Result<BaseUrl> parse_base_url(std::string_view url) {
  auto bad = [&](const char* why) {
    return make_error(Code::invalid_argument, "endpoint '" + std::string(url) + "': " + why);
  };
  std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos || (url.substr(0, scheme_end) != "https" && url.substr(0, scheme_end) != "http"))
    return bad("must start with https:// or http://");
  if (url.find_first_of("?#") != std::string_view::npos) return bad("must have no query or fragment");
  std::string_view rest = url.substr(scheme_end + 3);
  std::size_t slash = rest.find('/');
  std::string_view host = rest.substr(0, slash);
  if (host.empty() || host.find_first_of(" @") != std::string_view::npos) return bad("has no valid host");
  std::string path(slash == std::string_view::npos ? "/" : rest.substr(slash));
  if (!path.ends_with('/')) path += '/';
  return BaseUrl{std::string(url.substr(0, scheme_end + 3)) + std::string(host) + path, std::string(host), path};
}

}  // namespace tsum::providers::http
