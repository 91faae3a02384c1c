// tsum-fake-yandex: the fake Yandex Cloud (fake_yandex_cloud.h) as a process, for trying tsum's Yandex
// provider without a Yandex account. It makes an authorized key of its own and writes its key file where
// --key-out says, or trusts the key file given with --key (so the TLS key is --key-pem here). The shared
// flags (listen address, TLS, faults, guest root) are fake_cloud/fake_flags.h's. Prints "listening on
// <base URL>" and serves until SIGINT or SIGTERM.
#include <fstream>

#include "tests/fakes/cloud/fake_flags.h"
#include "tests/fakes/cloud/stop_signals.h"
#include "providers/gce/jwt.h"
#include "tests/fakes/yandex/fake_yandex_cloud.h"
#include "providers/yandex/ps256_jwt.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::yandex;
using namespace tsum::providers::yandex::fake;

namespace {

// The key to trust: the key file's, or a new one.
Result<AuthorizedKey> key(const std::string& key_file, const FakeYandexCloudOptions& o) {
  if (!key_file.empty()) return load_authorized_key(key_file);
  auto pem = gce::generate_rsa_key_pem();
  if (!pem) return pem.error();
  auto pub = gce::rsa_public_key_pem(*pem);
  if (!pub) return pub.error();
  return AuthorizedKey{.id = o.key_id, .service_account_id = o.service_account_id, .private_key_pem = *pem,
                       .public_key_pem = *pub};
}

}  // namespace

int main(int argc, char** argv) {
  FakeYandexCloudOptions o;
  std::string key_in, key_out;
  fake_cloud::FakeFlags flags("tsum-fake-yandex", &o.server, "instances.create:lost,instances.get:429:2");
  flags.rename_tls_key("--key-pem");
  flags.text("--key", "FILE", &key_in, "trust this authorized key file (its id, service account and public key)");
  flags.text("--key-out", "FILE", &key_out, "else: make an authorized key and write its key file here (default: none)");
  flags.toggle("--instance-service-account", &o.instance_service_account, "be the VM's metadata server, with a service account");
  flags.text("--folder", "ID", &o.compute.folder_id, "the folder requests must name (default b1gfakefolder0000001)");
  flags.seconds("--provisioning-s", &o.compute.provisioning_s, "PROVISIONING -> STARTING");
  flags.seconds("--starting-s", &o.compute.starting_s, "STARTING -> RUNNING");
  flags.seconds("--stopping-s", &o.compute.stopping_s, "STOPPING -> STOPPED after a guest power-off");
  flags.seconds("--operation-s", &o.compute.operation_s, "an operation is done this long after it started");
  flags.count("--operation-polls", &o.compute.operation_polls, "or after this many polls");
  flags.count("--page-size", &o.compute.page_size, "most instances per page");
  if (auto exit = flags.parse(argc, argv)) return *exit;
  auto k = key(key_in, o);
  if (!k) return flags.fail(k.error().detail);
  o.key_id = k->id;
  o.service_account_id = k->service_account_id;
  o.public_key_pem = k->private_key_pem;

  fake_cloud::StopSignals stop;  // before the server's thread starts
  FakeYandexCloud cloud(o);
  if (auto port = cloud.start(); !port) return flags.fail(port.error().detail);
  if (!key_out.empty()) {
    std::ofstream out(key_out);
    out << authorized_key_json(*k);
    if (!out.flush()) return flags.fail("cannot write " + key_out);
  }
  return stop.announce_and_wait(flags.program(), cloud.server().base_url(),
                                "folder " + o.compute.folder_id + ", service account " + k->service_account_id);
}
