// FakeServers: the stateful part of the fake Hetzner Cloud, the server lifecycle behind POST /servers,
// GET /servers (label_selector, name, pagination), GET /servers/{id} and DELETE /servers/{id}.
//
// Model (fake_cloud/lifecycle.h): a created server has its IPs at once and is initializing for initializing_s, starting for
// starting_s, then running. DELETE makes it deleting for deleting_s, then it is gone (404 not_found). A
// guest power-off makes it off (it still exists, and still bills). Names are unique among existing
// servers: a second POST with a taken name is 409 uniqueness_error (Hetzner has no idempotency token).
// Bodies with unknown fields, bad names or labels, unknown types, images or locations, or user data over
// 32 KiB get Hetzner's invalid_input. label_selector supports k==v, k=v, k!=v, k and !k, joined by commas.
// Time comes from the given Clock, so a FakeClock drives the lifecycle in tests. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "tests/fakes/cloud/lifecycle.h"
#include "tests/fakes/hetzner/fake_server_types.h"

namespace tsum::providers::hetzner::fake {

struct FakeServersOptions {
  double initializing_s = 1;
  double starting_s = 1;
  double deleting_s = 2;
  int page_size = 50;  // caps every page whatever per_page asks, so tests can force pagination
};

struct FakeServer {
  long long id = 0;
  std::string name = {};
  std::string status = {};  // as of now
  std::string server_type = {};
  std::string image = {};
  std::string location = {};
  std::string user_data = {};
  std::string ipv4 = {};
  std::string ipv6 = {};
  std::map<std::string, std::string> labels = {};
  std::vector<std::string> ssh_keys = {};
  double created_at_s = 0;
};

class FakeServers {
 public:
  FakeServers(FakeServersOptions opts, const Clock& clock);

  JsonAnswer create(const std::string& body);
  JsonAnswer get(const std::string& id);
  JsonAnswer remove(const std::string& id);
  JsonAnswer list(const std::map<std::string, std::string>& query);

  // Every server that exists now, with its status as of now, in creation order.
  std::vector<FakeServer> servers() const;
  int created() const;
  // The guest powered itself off. not_found for an unknown or gone server.
  Status guest_shutdown(long long id);

 private:
  struct Record {
    FakeServer server;
    fake_cloud::Timeline t;  // halted: a guest power-off
  };

  std::string status_of(const Record& r, double now) const;
  Record* find(const std::string& id, double now);
  nlohmann::json server_json(const Record& r, double now) const;
  nlohmann::json action_json(const std::string& command, long long server_id, double now);

  FakeServersOptions opts_;
  fake_cloud::Lifecycle life_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::vector<Record> records_;
  long long next_id_ = 4711001;
  long long next_action_ = 9000001;
};

}  // namespace tsum::providers::hetzner::fake
