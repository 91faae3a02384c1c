// HttpSession over TLS (api/http/http_session_impl.h holds the definitions).
#include "api/http/http_session_impl.h"

namespace tsum::api {
template class HttpSession<boost::beast::ssl_stream<boost::beast::tcp_stream>>;
}  // namespace tsum::api
