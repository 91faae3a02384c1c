// FakeHetznerCloud: a stateful fake of the Hetzner Cloud API endpoints tsum's provider uses, served over
// HTTP(S) on loopback under /v1: POST/GET /servers, GET/DELETE /servers/{id} (fake_servers.h) and
// GET /server_types (fake_server_types.h). Every request needs "Authorization: Bearer <the token>"; a
// refusal (401 unauthorized) quotes the token it got back, as a careless proxy might, so tests can check
// that the client redacts it. Faults (aws/fake/fake_faults.h) apply to accepted requests, by action:
// servers.create, servers.list, servers.get, servers.delete, server_types.list.
// Point the provider at it with HetznerOptions::endpoint = api_url() and, for HTTPS, http.ca_file = the CA
// that signed cert_file.
// With guest.root set, each instance's user data really runs (providers/fake_guest): after every request
// the guests follow the servers: user_data is booted under guest.root/<server id> while the server is
// initializing, starting or running, and halted once it is off, deleting or gone;
// destroying the fake halts them all.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "providers/aws/fake/fake_faults.h"
#include "providers/hetzner/fake/fake_servers.h"
#include "providers/fake_guest/fake_guest.h"
#include "providers/http/loopback_server.h"

namespace tsum::providers::hetzner::fake {

using aws::fake::Fault;
using aws::fake::FaultKind;

struct FakeHetznerCloudOptions {
  http::LoopbackOptions listen = {};  // host, port, cert_file/key_file (both empty: plain HTTP)
  std::string token = "tsum-fake-hcloud-token";
  FakeServersOptions servers = {};
  std::chrono::milliseconds hang{30000};  // how long a "timeout" fault holds the connection before closing it
  int retry_after_s = 1;                  // the Retry-After of a 429 fault
  fake_guest::FakeGuestOptions guest = {};  // guest.root set: run instances' user data (FakeGuest, see above)
  const Clock* clock = nullptr;           // lifecycle time; null: the system clock
};

class FakeHetznerCloud {
 public:
  explicit FakeHetznerCloud(FakeHetznerCloudOptions opts);
  ~FakeHetznerCloud();

  Result<std::uint16_t> start();
  void stop();
  const std::string& base_url() const { return server_.base_url(); }
  std::string api_url() const { return base_url() + "/v1"; }

  void inject(const Fault& f) { faults_.add(f); }
  int pending_faults() const { return faults_.pending(); }

  // Accepted requests per action (faulted ones included), and requests refused for their token.
  int requests(std::string_view action) const;
  int rejected() const;

  std::vector<FakeServer> servers() const { return servers_.servers(); }
  int created() const { return servers_.created(); }
  Status guest_shutdown(long long id);

 private:
  http::LoopbackReply handle(const http::LoopbackRequest& req);
  void sync_guests();
  http::LoopbackReply fault_reply(FaultKind kind) const;
  JsonAnswer dispatch(const std::string& action, const std::string& id, const std::map<std::string, std::string>& query,
                      const std::string& body);

  FakeHetznerCloudOptions opts_;
  SystemClock system_clock_;
  const Clock& clock_;
  FakeServers servers_;
  aws::fake::FaultPlan faults_;
  mutable std::mutex mu_;
  std::map<std::string, int, std::less<>> requests_;
  int rejected_ = 0;
  std::optional<fake_guest::FakeGuest> guest_;  // outlives the server, whose thread syncs it
  http::LoopbackServer server_;
};

}  // namespace tsum::providers::hetzner::fake
