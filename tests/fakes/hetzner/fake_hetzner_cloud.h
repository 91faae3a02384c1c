// FakeHetznerCloud: a stateful fake of the Hetzner Cloud API endpoints tsum's provider uses, on the shared
// fake server (fake_cloud/fake_server.h: loopback HTTP(S), call book, faults, guests), under /v1:
// POST/GET /servers, GET/DELETE /servers/{id} (fake_servers.h) and GET /server_types (fake_server_types.h).
// Every request needs "Authorization: Bearer <the token>"; a refusal (401 unauthorized) quotes the token it
// got back, as a careless proxy might, so tests can check that the client redacts it. Method names (for
// faults and the call book): servers.create, servers.list, servers.get, servers.delete, server_types.list.
// Point the provider at it with HetznerOptions::endpoint = api_url() and, for HTTPS, http.ca_file = the CA
// that signed the certificate.
// Guests: a server's guest id is its numeric id; its user_data is up while initializing, starting or running.
#pragma once

#include <string>
#include <vector>

#include "tests/fakes/cloud/fake_server.h"
#include "tests/fakes/hetzner/fake_servers.h"

namespace tsum::providers::hetzner::fake {

struct FakeHetznerCloudOptions {
  fake_cloud::FakeServerOptions server = {};
  std::string token = "tsum-fake-hcloud-token";
  FakeServersOptions servers = {};
};

class FakeHetznerCloud final : public fake_cloud::FakeCloudApi {
 public:
  explicit FakeHetznerCloud(FakeHetznerCloudOptions opts);

  // invalid_argument without a token; else see LoopbackServer::start.
  Result<std::uint16_t> start();
  fake_cloud::FakeServer& server() { return server_; }
  const fake_cloud::FakeServer& server() const { return server_; }
  std::string api_url() const { return server_.base_url() + "/v1"; }

  std::vector<FakeServer> servers() const { return servers_.servers(); }
  int created() const { return servers_.created(); }
  Status guest_shutdown(long long id);

 private:
  fake_cloud::Route route(const http::LoopbackRequest& req) override;
  http::LoopbackReply fault_answer(int status, const std::string& method) const override;
  std::vector<fake_guest::LiveInstance> live_guests() const override;

  FakeHetznerCloudOptions opts_;
  FakeServers servers_;
  fake_cloud::FakeServer server_;  // last: its thread stops before the state above goes
};

}  // namespace tsum::providers::hetzner::fake
