// tsum-fake-hetzner: the fake Hetzner Cloud (fake_hetzner_cloud.h) as a process, for trying tsum's Hetzner
// provider without an account. The shared flags (listen address, TLS, faults, guest root) are
// fake_cloud/fake_flags.h's. Prints "listening on <base URL>" and serves until SIGINT or SIGTERM.
#include "tests/fakes/cloud/fake_flags.h"
#include "tests/fakes/cloud/stop_signals.h"
#include "tests/fakes/hetzner/fake_hetzner_cloud.h"

using namespace tsum::providers;
using namespace tsum::providers::hetzner::fake;

int main(int argc, char** argv) {
  FakeHetznerCloudOptions o;
  fake_cloud::FakeFlags flags("tsum-fake-hetzner", &o.server, "servers.create:lost,servers.get:429:2");
  flags.text("--token", "TOKEN", &o.token, "the API token requests must carry (default tsum-fake-hcloud-token)");
  flags.seconds("--initializing-s", &o.servers.initializing_s, "initializing -> starting");
  flags.seconds("--starting-s", &o.servers.starting_s, "starting -> running");
  flags.seconds("--deleting-s", &o.servers.deleting_s, "deleting -> gone");
  flags.count("--page-size", &o.servers.page_size, "most items per page of any listing");
  if (auto exit = flags.parse(argc, argv)) return *exit;

  fake_cloud::StopSignals stop;  // before the server's thread starts
  FakeHetznerCloud cloud(o);
  if (auto port = cloud.start(); !port) return flags.fail(port.error().detail);
  return stop.announce_and_wait(flags.program(), cloud.server().base_url(), "API at " + cloud.api_url());
}
