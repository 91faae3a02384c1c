// FakeServer: the skeleton every fake cloud shares. It serves a FakeCloudApi over HTTP(S) on loopback and,
// for every request the API routes to a method: books it (CallBook: requests per method, refusals, issued
// tokens), applies an injected fault (faults.h: 429 with Retry-After, 503, 500, a timeout that holds the
// connection for `hang` and closes it, or a lost answer: carried out, then the connection closes), carries
// it out, and lets the guests follow the instances (guest_hook.h).
// Besides the cloud's API: POST /_fake/interrupt/<instance id>[?notice_s=S] takes a spot instance back as its
// cloud does (FakeCloudApi::interrupt; S 0: at once, without notice), POST /_fake/capacity/<region>?spot=N
// limits the spot machines a region still starts (FakeCloudApi::set_spot_capacity), and with FakeServerOptions::metadata set,
// a second, plain-HTTP server answers the guests' metadata requests (FakeCloudApi::metadata), knowing each
// caller's instance by its address.
// Lifetime: the cloud that implements the API owns its FakeServer as its last member, so the server's
// thread stops before the API's state goes; the guests outlive the server's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "tests/fakes/cloud/call_book.h"
#include "tests/fakes/cloud/cloud_api.h"
#include "tests/fakes/cloud/faults.h"
#include "tests/fakes/cloud/guest_hook.h"
#include "tests/fakes/http/loopback_server.h"

namespace tsum::providers::fake_cloud {

struct FakeServerOptions {
  http::LoopbackOptions listen = {};      // host, port, cert_file/key_file (both empty: plain HTTP)
  std::chrono::milliseconds hang{30000};  // how long a "timeout" fault holds the connection before closing it
  int retry_after_s = 1;                  // the Retry-After of a 429 fault
  std::vector<Fault> faults = {};         // injected from the start
  GuestOptions guest = {};
  // The metadata service the guests ask (plain HTTP, on an address they reach: the bridge's); host empty: none.
  http::LoopbackOptions metadata = {.host = ""};
  const Clock* clock = nullptr;           // lifecycles, signatures and tokens; null: the system clock
};

// The clock a fake runs on: *clock, or the system clock when null.
const Clock& clock_or_system(const Clock* clock);

class FakeServer {
 public:
  FakeServer(FakeServerOptions opts, FakeCloudApi& api);
  ~FakeServer();  // stop()
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  // See LoopbackServer::start.
  Result<std::uint16_t> start();
  void stop();
  const std::string& base_url() const { return server_.base_url(); }
  const Clock& clock() const { return clock_; }

  void inject(const Fault& f) { faults_.add(f); }
  int pending_faults() const { return faults_.pending(); }

  CallBook& book() { return book_; }
  const CallBook& book() const { return book_; }
  // Shorthands for the book: accepted requests per method (faulted ones included), refused requests,
  // tokens issued, and a revocation of every token (with refuse_new, of later ones too).
  int requests(std::string_view method) const { return book_.requests(method); }
  int rejected() const { return book_.rejected(); }
  int tokens_issued() const { return book_.issued(); }
  void revoke_tokens(bool refuse_new = false) { book_.revoke_all(refuse_new); }

  // Lets the guests follow the instances now, after a change made outside a request (a guest power-off).
  void sync_guests();
  // http://HOST:PORT of the metadata service, once started; empty without one.
  const std::string& metadata_url() const { return metadata_.base_url(); }

 private:
  http::LoopbackReply handle(const http::LoopbackRequest& req);
  http::LoopbackReply interrupt(const http::LoopbackRequest& req);
  http::LoopbackReply capacity(const http::LoopbackRequest& req);
  http::LoopbackReply fault_reply(FaultKind kind, const std::string& method) const;

  FakeServerOptions opts_;
  const Clock& clock_;
  FakeCloudApi& api_;
  FaultPlan faults_;
  CallBook book_;
  GuestHook guests_;             // outlives the servers, whose threads use it
  http::LoopbackServer metadata_;
  http::LoopbackServer server_;
};

}  // namespace tsum::providers::fake_cloud
