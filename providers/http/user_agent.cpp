#include "providers/http/http_client.h"

namespace tsum::providers::http {

std::string_view default_user_agent() { return "tsum/" TSUM_VERSION; }

}  // namespace tsum::providers::http
