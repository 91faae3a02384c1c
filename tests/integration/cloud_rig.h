// CloudRig: a fake cloud booting guest machines on a test network of their own, and a tsumd configured with it
// (not yet started) listening on the network's bridge, where the guests reach it; and run_tsumd, the daemon's
// command line in one call. Shared by the cloud suites (test_clouds.cpp, test_spot.cpp).
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "integration/daemon_process.h"
#include "integration/fake_clouds.h"
#include "support/guest_net.h"

namespace tsum::testing {

struct Ran {
  int rc = -1;
  std::string out, err;
};

inline Ran run_tsumd(const TempDir& dir, const std::string& args) {
  const std::string out = dir.file("cmd.out"), err = dir.file("cmd.err");
  int status = std::system((std::string(TSUMD_BIN) + " " + args + " >" + out + " 2>" + err).c_str());
  std::ifstream o(out), e(err);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, {std::istreambuf_iterator<char>(o), {}},
          {std::istreambuf_iterator<char>(e), {}}};
}

// Instances the fake booted: it logs "fake guest <id>: booted at <address> in <n> ms" once per boot.
inline int guest_boots(const FakeCloud& fake) {
  int n = 0;
  const std::string log = fake.log();
  for (std::size_t at = 0; (at = log.find(": booted at ", at)) != std::string::npos; ++at) ++n;
  return n;
}

// A fake cloud booting guest machines on a test network, and a tsumd configured with it (not yet started)
// listening on the network's bridge, where the guests reach it.
struct CloudRig {
  // image: the guests' stock root; registry_port: a plain-HTTP registry on this host that the guests' Docker
  // engines reach (and trust) at the bridge's address; metadata: the fake serves its instances' metadata service
  // (spot notices) on the bridge's address.
  // boot_hook: a host command run as each guest boots (FakeGuestOptions::boot_hook).
  CloudRig(const std::string& cloud, const std::string& faults, const std::string& image = kGuestImage,
           int registry_port = 0, bool metadata = false, const std::string& boot_hook = "")
      : guest_root(dir.file("guests")),
        registry(registry_port ? net.listen_address() + ":" + std::to_string(registry_port) : ""),
        fake(cloud, dir, tls, faults,
             {.root = guest_root, .image = image, .network = net.bridge(), .insecure_registry = registry,
              .boot_hook = boot_hook},
             metadata ? net.listen_address() : ""),
        daemon(dir.file("t.db"),
               {"--config", write_cloud_config(dir, cloud, fake.section()), "--public-url",
                "http://" + net.listen_address() + ":{port}", "--insecure-agents"},
               net.listen_address()) {
    std::filesystem::create_directories(guest_root);
  }

  // Processes running in the fake's guest machines.
  int guest_processes() const { return static_cast<int>(guests().size()); }

  // The experiment body: one run of a small workload on the cloud's smallest offer; with an image, in Docker.
  std::string experiment(int limit, const std::string& image = "") {
    auto r = run_tsumd(dir, "offers --json --config " + dir.file("tsumd-" + fake.name() + ".json"));
    REQUIRE(r.rc == 0);
    auto offers = nlohmann::json::parse(r.out)["offers"];
    REQUIRE_FALSE(offers.empty());
    nlohmann::json smallest = offers[0];
    for (const auto& o : offers)
      if (o["vcpus"].get<int>() < smallest["vcpus"].get<int>()) smallest = o;
    nlohmann::json body = {{"name", "on " + fake.name()},
                 {"workload", {{"epochs", 1}, {"limit", limit}, {"test_limit", 200}, {"threads", 1}}},
                 {"configs", {{{"provider", fake.name()}, {"instance_type", smallest["instance_type"]}}}},
                 {"repetitions", 1}};
    if (!image.empty()) {
      body["workload"]["image"] = image;
      body["configs"][0]["runtime"] = "docker";
    }
    return body.dump();
  }

  nlohmann::json run(const std::string& admin) const { return daemon.call("GET", "/v1/runs/1", admin).json(); }

  TempDir dir{"tsum-cloud"};
  TestTls tls;
  TestNetwork net;  // after dir: it removes the machines before dir goes
  ProcessList guests = net.guests();
  std::string guest_root;
  std::string registry;  // HOST:PORT on the test network, or empty
  FakeCloud fake;
  DaemonProcess daemon;
};

inline bool is_terminal(const nlohmann::json& run) {
  return run["status"] == "done" || run["status"] == "failed" || run["status"] == "cancelled";
}

}  // namespace tsum::testing
