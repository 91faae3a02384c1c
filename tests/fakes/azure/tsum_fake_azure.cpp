// tsum-fake-azure: the fake Azure (fake_azure_cloud.h) as a process, for trying tsum's Azure provider
// without an Azure account. The shared flags (listen address, TLS, faults, guest root) are
// fake_cloud/fake_flags.h's. Prints "listening on <base URL>" with the tenant, client id and subscription to
// use, and serves until SIGINT or SIGTERM.
#include <fstream>

#include "tests/fakes/azure/fake_azure_cloud.h"
#include "tests/fakes/cloud/fake_flags.h"
#include "tests/fakes/cloud/stop_signals.h"

using namespace tsum::providers;
using namespace tsum::providers::azure::fake;

int main(int argc, char** argv) {
  FakeAzureCloudOptions o;
  fake_cloud::FakeFlags flags("tsum-fake-azure", &o.server, "virtualMachines.createOrUpdate:lost,virtualMachines.get:429:2");
  flags.set_synopsis("--client-secret SECRET [flags]");
  std::string certificate_file;
  flags.text("--client-secret", "SECRET", &o.client_secret, "the app's client secret the token endpoint accepts");
  flags.text("--client-certificate", "FILE", &certificate_file, "the app's certificate (PEM): assertions its key signs are taken");
  flags.text("--federated-token", "TOKEN", &o.federated_token, "workload identity's token, taken as a client assertion");
  flags.text("--refresh-token", "TOKEN", &o.refresh_token, "a user's refresh token for the Azure CLI's client id");
  flags.toggle("--managed-identity", &o.managed_identity, "/metadata/identity/oauth2/token hands out tokens (IMDS)");
  flags.text("--tenant", "ID", &o.tenant_id, "the tenant requests must name");
  flags.text("--client-id", "ID", &o.client_id, "the app's client id");
  flags.text("--subscription", "ID", &o.arm.subscription, "the subscription requests must name");
  flags.seconds("--starting-s", &o.arm.starting_s, "PowerState/starting -> running after provisioning");
  flags.seconds("--operation-s", &o.arm.operation_s, "an operation is done this long after it started");
  flags.count("--operation-polls", &o.arm.operation_polls, "or after this many polls");
  flags.count("--page-size", &o.arm.page_size, "resource groups per page");
  flags.seconds("--cores-quota", &o.arm.cores_quota, "each location's Total Regional vCPUs quota (usages)");
  flags.count("--prices-page-size", &o.retail.page_size, "Retail Prices items per page");
  flags.toggle("--drop-next-page-link", &o.retail.drop_next_page_link, "Retail Prices pages without NextPageLink (clients must use $skip)");
  if (auto exit = flags.parse(argc, argv)) return *exit;
  if (!certificate_file.empty()) {
    std::ifstream in(certificate_file);
    o.certificate_pem.assign(std::istreambuf_iterator<char>(in), {});
    if (o.certificate_pem.empty()) return flags.fail("--client-certificate: " + certificate_file + " cannot be read", 2);
  }
  if (o.client_secret.empty() && o.certificate_pem.empty() && o.federated_token.empty() && o.refresh_token.empty() && !o.managed_identity)
    return flags.fail("give a grant to take: --client-secret, --client-certificate, --federated-token, --refresh-token or --managed-identity\n" + flags.usage(), 2);

  fake_cloud::StopSignals stop;  // before the server's thread starts
  FakeAzureCloud cloud(o);
  if (auto port = cloud.start(); !port) return flags.fail(port.error().detail);
  return stop.announce_and_wait(flags.program(), cloud.server().base_url(),
                                "tenant " + o.tenant_id + ", client " + o.client_id + ", subscription " + o.arm.subscription);
}
