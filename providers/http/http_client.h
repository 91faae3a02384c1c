// HttpClient: HTTP(S) requests from Boost.Asio coroutines, on libcurl.
//
// Each attempt runs a blocking libcurl easy transfer on one of the client's worker threads; the coroutine
// that called send() waits without blocking its executor and resumes there when the transfer ends. The
// caller's io_context stays busy (outstanding work) while a transfer it waits for runs.
//
// send() retries per RetryPolicy (see retry.h) and returns the final response whatever its status: a 404,
// or a 503 once the retries are spent, is a response, not an error. Errors are for exchanges that produced
// no response: timeout (an attempt or the overall deadline ran out), unavailable (connection refused,
// reset, closed without an answer, DNS failure), invalid_argument (malformed URL, TLS certificate not
// trusted, unreadable CA file), internal (response larger than max_response_bytes), cancelled (the client
// is being destroyed).
//
// Every request carries "User-Agent: tsum/<version>" (CMake's project version) unless the request names a
// User-Agent of its own or HttpClientOptions::user_agent is set to something else.
//
// Lifetime: the client must outlive every send() it started. Its destructor aborts transfers in flight
// and waits for the worker threads.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "providers/http/http_types.h"
#include "providers/http/retry.h"

namespace tsum::providers::http {

template <class T>
using Task = boost::asio::awaitable<T>;

// "tsum/<version>", e.g. "tsum/0.1.0".
std::string_view default_user_agent();

struct HttpClientOptions {
  std::string ca_file = {};  // PEM file of CAs to trust instead of the system store; empty: the system store
  // A TLS client certificate and its private key (PEM files), for servers that authenticate clients by
  // certificate (a Kubernetes API server); empty: none.
  std::string client_cert_file = {};
  std::string client_key_file = {};
  // The same as PEM text held in memory (a kubeconfig's *-data fields), used where the file is not set.
  std::string ca_pem = {};
  std::string client_cert_pem = {};
  std::string client_key_pem = {};
  int threads = 4;      // transfers that can run at once
  // Keep connections open between requests (each worker thread its own). Off by default: on a kept connection
  // that the server closed without answering, libcurl sends the request again by itself, and a create with no
  // idempotency token would be made twice where the caller must see a lost answer. For clients whose requests
  // are all safe to repeat (the trace provider's marks, which the daemon takes once).
  bool reuse_connections = false;
  RetryPolicy retry = {};
  std::size_t max_response_bytes = 64u << 20;
  std::string user_agent = std::string(default_user_agent());  // empty: no User-Agent header
};

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions opts = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends req with retries. Each attempt gets req.timeout, cut to what is left of the policy's deadline.
  // req is read until the returned task completes (co_await it at once, with a named request: GCC 12
  // mishandles temporaries inside co_await expressions).
  Task<Result<HttpResponse>> send(const HttpRequest& req);

  // One attempt, no retries, req.timeout as its deadline.
  Task<Result<HttpResponse>> send_once(const HttpRequest& req);

  // A blocking exchange on the calling thread whose 2xx body goes to on_data as it arrives (a Kubernetes watch):
  // one attempt, req.timeout as its deadline, no size limit. on_data returning false, or *cancel turning true
  // (checked about once a second and at each piece), ends it: cancelled. Otherwise the response's status and
  // headers (the body only when the status is not 2xx).
  Result<HttpResponse> stream(const HttpRequest& req, const std::function<bool(std::string_view)>& on_data,
                              const std::atomic<bool>* cancel) const;

  const HttpClientOptions& options() const { return opts_; }

 private:
  Result<HttpResponse> perform(const HttpRequest& req, const std::function<bool(std::string_view)>* sink = nullptr,
                               const std::atomic<bool>* cancel = nullptr) const;

  HttpClientOptions opts_;
  std::atomic<bool> stopping_{false};
  boost::asio::thread_pool pool_;
};

}  // namespace tsum::providers::http
