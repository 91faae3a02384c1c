// tsum-fake-gce: the fake GCE (fake_gce_cloud.h) as a process, for trying tsum's GCE provider without a
// Google account. It makes a service account of its own and writes its key file (with token_uri pointing
// at this server) where --account-out says, or trusts the key file given with --account. The shared flags
// (listen address, TLS, faults, guest root) are fake_cloud/fake_flags.h's. Prints "listening on <base URL>"
// and serves until SIGINT or SIGTERM.
#include <fstream>

#include "tests/fakes/cloud/fake_flags.h"
#include "tests/fakes/cloud/stop_signals.h"
#include "tests/fakes/gce/fake_gce_cloud.h"
#include "providers/gce/jwt.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::gce;
using namespace tsum::providers::gce::fake;

namespace {

// The account to trust: the key file's, or a new one (its key file is written once the URL is known).
Result<ServiceAccount> account(const std::string& key_file, const FakeGceCloudOptions& o) {
  if (!key_file.empty()) return load_service_account(key_file);
  auto key = generate_rsa_key_pem();
  if (!key) return key.error();
  return ServiceAccount{.client_email = o.client_email, .private_key_id = "fake-key-1", .private_key_pem = *key,
                        .project_id = o.compute.project};
}

}  // namespace

int main(int argc, char** argv) {
  FakeGceCloudOptions o;
  std::string account_in, account_out;
  fake_cloud::FakeFlags flags("tsum-fake-gce", &o.server, "instances.insert:lost,instances.get:429:2");
  flags.text("--account", "FILE", &account_in, "trust this service account key file (its email and public key)");
  flags.text("--account-out", "FILE", &account_out, "else: make a service account and write its key file here (default: none)");
  flags.text("--project", "ID", &o.compute.project, "the project requests must name (default tsum-fake)");
  flags.seconds("--provisioning-s", &o.compute.provisioning_s, "PROVISIONING -> STAGING");
  flags.seconds("--staging-s", &o.compute.staging_s, "STAGING -> RUNNING");
  flags.seconds("--stopping-s", &o.compute.stopping_s, "STOPPING -> gone or TERMINATED");
  flags.seconds("--cpus-quota", &o.compute.cpus_quota, "each region's CPUS quota (regions.get)");
  flags.count("--page-size", &o.compute.page_size, "most items per page of any listing");
  if (auto exit = flags.parse(argc, argv)) return *exit;

  auto sa = account(account_in, o);
  if (!sa) return flags.fail(sa.error().detail);
  o.client_email = sa->client_email;
  o.public_key_pem = sa->private_key_pem;

  fake_cloud::StopSignals stop;  // before the server's thread starts
  FakeGceCloud cloud(o);
  if (auto port = cloud.start(); !port) return flags.fail(port.error().detail);
  if (!account_out.empty()) {
    sa->token_uri = cloud.token_url();
    std::ofstream out(account_out);
    out << service_account_json(*sa);
    if (!out.flush()) return flags.fail("cannot write " + account_out);
  }
  return stop.announce_and_wait(flags.program(), cloud.server().base_url(),
                                "project " + o.compute.project + ", account " + sa->client_email);
}
