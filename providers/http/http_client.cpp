#include "providers/http/http_client.h"

#include <curl/curl.h>

#include <boost/asio/async_result.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <mutex>
#include <random>

#include "providers/sleep_for.h"

namespace tsum::providers::http {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

namespace {

struct CurlDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

struct Transfer {
  HttpResponse response = {};
  std::size_t max_bytes = 0;
  bool too_large = false;
  const std::atomic<bool>* stopping = nullptr;
  const std::function<bool(std::string_view)>* sink = nullptr;  // stream(): a 2xx body goes here
  const std::atomic<bool>* cancel = nullptr;
  bool sink_ended = false;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (t->sink && t->response.status >= 200 && t->response.status < 300) {
    if ((*t->sink)(std::string_view(data, size * n))) return size * n;
    t->sink_ended = true;
    return 0;
  }
  if (t->response.body.size() + size * n > t->max_bytes) {
    t->too_large = true;
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  t->response.body.append(data, size * n);
  return size * n;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.starts_with("HTTP/")) {
    t->response.headers.clear();  // a new response head (after 100 Continue, for instance)
    if (auto sp = line.find(' '); sp != std::string_view::npos)
      t->response.status = std::atoi(std::string(line.substr(sp + 1, 3)).c_str());
  } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    t->response.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->stopping->load() || (t->cancel && t->cancel->load()) ? 1 : 0;
}

Error transfer_error(CURLcode rc, const char* detail, const HttpRequest& req) {
  std::string what = req.method + " " + req.url + ": " + (detail[0] ? detail : curl_easy_strerror(rc));
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      return make_error(Code::timeout, what);
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
      return make_error(Code::invalid_argument, what);
    case CURLE_ABORTED_BY_CALLBACK:
      return make_error(Code::cancelled, what);
    default:
      return make_error(Code::unavailable, what);
  }
}

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

double uniform01() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

bool retryable(const Result<HttpResponse>& r) {
  if (r.ok()) return retryable_status(r->status);
  return r.code() == Code::timeout || r.code() == Code::unavailable;
}

}  // namespace

HttpClient::HttpClient(HttpClientOptions opts) : opts_(std::move(opts)), pool_(std::max(1, opts_.threads)) {
  init_curl_once();
}

HttpClient::~HttpClient() {
  stopping_ = true;
  pool_.join();
}

Result<HttpResponse> HttpClient::stream(const HttpRequest& req, const std::function<bool(std::string_view)>& on_data,
                                        const std::atomic<bool>* cancel) const {
  return perform(req, &on_data, cancel);
}

Result<HttpResponse> HttpClient::perform(const HttpRequest& req, const std::function<bool(std::string_view)>* sink,
                                         const std::atomic<bool>* cancel) const {
  if (stopping_) return make_error(Code::cancelled, req.method + " " + req.url + ": client is shutting down");
  // With reuse_connections, a worker thread keeps one easy handle, and with it its open connections, as an SDK
  // keeps its pool: the next request to the same host skips the connect (and the TLS handshake). curl_easy_reset
  // clears the options, not the connections; curl reuses one only for a matching host and TLS setup, and
  // reconnects if it was closed. A stream (sink) runs on its caller's thread and takes a handle of its own.
  thread_local std::unique_ptr<CURL, CurlDeleter> kept;
  const bool reuse = opts_.reuse_connections && !sink;
  std::unique_ptr<CURL, CurlDeleter> own;
  if (reuse && !kept) kept.reset(curl_easy_init());
  if (!reuse) own.reset(curl_easy_init());
  CURL* const handle = reuse ? kept.get() : own.get();
  if (!handle) return make_error(Code::internal, "curl_easy_init failed");
  curl_easy_reset(handle);
  // The options point into this frame (the error buffer, the header list, the transfer): cleared on the way out.
  struct Reset {
    CURL* h;
    ~Reset() { curl_easy_reset(h); }
  } reset_after{handle};
  Transfer t{.max_bytes = opts_.max_response_bytes, .stopping = &stopping_, .sink = sink, .cancel = cancel};
  std::unique_ptr<curl_slist, CurlDeleter> headers;
  auto add_header = [&](const std::string& line) {
    curl_slist* l = curl_slist_append(headers.get(), line.c_str());
    if (l) (void)headers.release(), headers.reset(l);
  };
  for (const auto& [name, value] : req.headers) add_header(value.empty() ? name + ";" : name + ": " + value);
  add_header("Expect:");  // no 100-continue round trip
  char error[CURL_ERROR_SIZE] = "";
  const long timeout_ms = std::max<long>(1, static_cast<long>(req.timeout.count()));
  CURL* c = handle;
  curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  // A User-Agent in req.headers replaces this one (curl sends the custom header instead).
  if (!opts_.user_agent.empty()) curl_easy_setopt(c, CURLOPT_USERAGENT, opts_.user_agent.c_str());
  if (!opts_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, opts_.ca_file.c_str());
  if (!opts_.client_cert_file.empty()) {
    curl_easy_setopt(c, CURLOPT_SSLCERT, opts_.client_cert_file.c_str());
    curl_easy_setopt(c, CURLOPT_SSLKEY, opts_.client_key_file.c_str());
  }
  // In-memory PEM (libcurl copies a blob at once).
  auto blob = [c](CURLoption what, const std::string& pem) {
    if (pem.empty()) return;
    curl_blob b{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(c, what, &b);
  };
  if (opts_.ca_file.empty()) blob(CURLOPT_CAINFO_BLOB, opts_.ca_pem);
  if (opts_.client_cert_file.empty()) {
    blob(CURLOPT_SSLCERT_BLOB, opts_.client_cert_pem);
    blob(CURLOPT_SSLKEY_BLOB, opts_.client_key_pem);
    if (!opts_.client_cert_pem.empty()) curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (req.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (req.method != "GET" || !req.body.empty()) {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  }
  CURLcode rc = curl_easy_perform(c);
  if (t.too_large)
    return make_error(Code::internal, req.method + " " + req.url + ": response larger than " +
                                          std::to_string(opts_.max_response_bytes) + " bytes");
  if (t.sink_ended || (cancel && cancel->load()))
    return make_error(Code::cancelled, req.method + " " + req.url + ": ended by the receiver");
  if (rc != CURLE_OK) return transfer_error(rc, error, req);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  t.response.status = static_cast<int>(status);
  return std::move(t.response);
}

Task<Result<HttpResponse>> HttpClient::send_once(const HttpRequest& req) {
  auto initiation = [this, req](auto handler) mutable {
    // Keeps the caller's io_context running until the result is posted back.
    auto caller = asio::prefer(asio::get_associated_executor(handler), asio::execution::outstanding_work.tracked);
    asio::post(pool_, [this, req = std::move(req), handler = std::move(handler), caller]() mutable {
      auto result = perform(req);
      asio::post(caller, [handler = std::move(handler), result = std::move(result)]() mutable {
        std::move(handler)(std::move(result));
      });
    });
  };
  co_return co_await asio::async_initiate<const asio::use_awaitable_t<>, void(Result<HttpResponse>)>(
      std::move(initiation), asio::use_awaitable);
}

Task<Result<HttpResponse>> HttpClient::send(const HttpRequest& req) {
  const RetryPolicy& policy = opts_.retry;
  const auto deadline = steady::now() + policy.deadline;
  HttpRequest one = req;
  Result<HttpResponse> last = make_error(Code::timeout, req.method + " " + req.url + ": no time left for an attempt");
  for (int attempt = 1;; ++attempt) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - steady::now());
    if (left <= milliseconds(0)) break;
    one.timeout = std::min(req.timeout, left);
    last = co_await send_once(one);
    if (last.ok()) last->attempts = attempt;
    if (!retryable(last) || attempt >= policy.max_attempts) co_return last;
    milliseconds wait = backoff_delay(policy, attempt, uniform01());
    if (last.ok())
      if (auto ra = last->header("Retry-After"))
        if (auto secs = parse_retry_after(*ra)) wait = *secs;
    if (steady::now() + wait >= deadline) break;
    co_await sleep_for(wait);
  }
  if (last.ok()) co_return last;
  co_return make_error(last.code(), last.error().detail + " (retries ended by the " +
                                        std::to_string(policy.deadline.count()) + " ms deadline)");
}

}  // namespace tsum::providers::http
