// The Azure provider against the fake Azure, in-process, over HTTPS with a CA made at test time: what is
// Azure's own (a resource group per launch, its network and VM, power states, operations and their
// deadlines, allocation failures, Retail Prices and Resource SKUs, throwaway SSH keys, ARM's refusals). The
// contract every cloud shares is tests/providers/conformance.
#include <doctest/doctest.h>

#include <algorithm>

#include "providers/azure/azure_provider.h"
#include "tests/fakes/azure/fake_azure_cloud.h"
#include "providers/http/codec.h"
#include "support/run_sync.h"
#include "support/test_tls.h"
#include "support/provider_fixtures.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::azure;
using namespace tsum::providers::azure::fake;
using namespace std::chrono_literals;
using tsum::testing::launch_spec;
using tsum::testing::run_sync;

namespace {

const std::string kSecret = "azure-test-secret~0123456789";
const std::string kSshKey = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7 test";

struct Cloud {
  testing::TestTls tls;
  FakeClock clock;
  FakeAzureCloud fake;
  std::unique_ptr<AzureProvider> provider;

  explicit Cloud(FakeArmOptions arm = {}, RetailPaging retail = {}, int sku_page_size = 100)
      : fake({.server = {.listen = {.cert_file = tls.cert_file(), .key_file = tls.key_file()}, .hang = 3s, .clock = &clock},
              .client_secret = kSecret, .arm = arm, .retail = retail, .sku_page_size = sku_page_size}) {
    REQUIRE(fake.start().ok());
    provider = make(kSecret);
  }

  AzureOptions options(const std::string& secret, const std::string& location = "westeurope") {
    FakeAzureCloudOptions d;
    return {.credentials = {.tenant_id = d.tenant_id, .client_id = d.client_id, .client_secret = secret,
                            .subscription_id = fake.subscription()},
            .location = location, .login_endpoint = fake.server().base_url(), .management_endpoint = fake.server().base_url(),
            .prices_endpoint = fake.prices_url(), .ssh_public_key = kSshKey,
            .http = testing::fake_http(tls.ca_file()),
            .attempt_timeout = 1500ms, .operation_deadline = 5s, .delete_deadline = 5s, .operation_poll = 5ms, .clock = &clock};
  }

  std::unique_ptr<AzureProvider> make(const std::string& secret, const std::string& location = "westeurope") {
    auto p = AzureProvider::make(options(secret, location));
    REQUIRE_MESSAGE(p.ok(), p.error().detail);
    return std::move(*p);
  }
};

Offer offer(const std::string& size = "Standard_D2s_v5") { return {.provider = "azure", .instance_type = size}; }

}  // namespace

TEST_CASE("create makes a tagged group, a network and a VM booting the agent; describe follows starting -> running") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), launch_spec("7")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  const std::string group = AzureProvider::group_name(launch_spec("7"));
  CHECK(h->provider == "azure");
  CHECK(h->id == group);
  CHECK(h->data.value("vm", "") == group);
  CHECK(h->data.value("location", "") == "westeurope");
  CHECK(h->data.value("subscription", "") == c.fake.subscription());
  auto groups = c.fake.groups();
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].name == group);
  CHECK(groups[0].tags == std::map<std::string, std::string>{{"tsum", "tsum-test"}, {"tsum-run", "7"}});
  auto vms = c.fake.vms();
  REQUIRE(vms.size() == 1);
  const FakeVm& vm = vms[0];
  CHECK(vm.size == "Standard_D2s_v5");
  CHECK(vm.provisioning_state == "Succeeded");
  CHECK(vm.image == "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:latest");
  CHECK(vm.custom_data.starts_with("#cloud-config\n"));
  CHECK(vm.custom_data.find(http::base64_encode(http::gzip_compress(launch_spec("7").agent_script))) != std::string::npos);
  CHECK(vm.ssh_key == kSshKey);
  CHECK(vm.all_delete_options);
  CHECK(vm.tags.at("tsum-run") == "7");
  CHECK(c.fake.server().requests("virtualNetworks.createOrUpdate") == 1);
  CHECK(c.fake.server().requests("operations.get") == 4);  // network and VM: InProgress once, then Succeeded
  CHECK(c.fake.server().tokens_issued() == 1);

  auto st = run_sync(c.provider->describe(*h));
  REQUIRE_MESSAGE(st.ok(), st.error().detail);
  CHECK(st->state == InstanceState::pending);
  CHECK(st->detail == "Azure provisioning Succeeded, PowerState/starting");
  CHECK(st->address == vm.public_ip);
  c.clock.advance(2.5);
  st = run_sync(c.provider->describe(*h));
  CHECK(st->state == InstanceState::running);
  CHECK(st->address == vm.public_ip);
  REQUIRE(c.fake.guest_shutdown(group).ok());
  st = run_sync(c.provider->describe(*h));
  CHECK(st->state == InstanceState::exited);
  CHECK(st->detail == "Azure provisioning Succeeded, PowerState/stopped");
}

TEST_CASE("describe_many: two listings for every run, every page, each answered as describe; the rest alone") {
  Cloud c({.page_size = 1});  // one VM or IP a page: the nextLinks are followed
  auto a = run_sync(c.provider->create(offer(), launch_spec("7")));
  auto b = run_sync(c.provider->create(offer(), launch_spec("8")));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const auto same_as_describe = [&](const std::vector<Result<InstanceStatus>>& many) {
    REQUIRE(many.size() == 2);
    for (size_t i = 0; i < 2; ++i) {
      auto one = run_sync(c.provider->describe(i == 0 ? *a : *b));
      REQUIRE(one.ok());
      REQUIRE_MESSAGE(many[i].ok(), many[i].error().detail);
      CHECK(many[i]->state == one->state);
      CHECK(many[i]->detail == one->detail);
      CHECK(many[i]->address == one->address);
    }
  };
  const int gets = c.fake.server().requests("virtualMachines.get");
  auto many = run_sync(c.provider->describe_many({*a, *b}));
  CHECK(c.fake.server().requests("virtualMachines.listAll") == 2);  // two pages
  CHECK(c.fake.server().requests("publicIPAddresses.listAll") == 2);
  CHECK(c.fake.server().requests("virtualMachines.get") == gets);  // nothing asked one by one
  CHECK(many[0]->state == InstanceState::pending);
  CHECK_FALSE(many[0]->address.empty());
  same_as_describe(many);

  c.clock.advance(2.5);
  REQUIRE(c.fake.guest_shutdown(AzureProvider::group_name(launch_spec("8"))).ok());
  many = run_sync(c.provider->describe_many({*a, *b}));
  CHECK(many[0]->state == InstanceState::running);
  CHECK(many[1]->state == InstanceState::exited);
  same_as_describe(many);

  REQUIRE(run_sync(c.provider->terminate(*b)).ok());
  InstanceHandle bad = *a;
  bad.id = "not a group!";
  many = run_sync(c.provider->describe_many({*a, *b, bad}));
  REQUIRE(many.size() == 3);
  CHECK(many[0]->state == InstanceState::running);
  REQUIRE(many[1].ok());
  CHECK(many[1]->state == InstanceState::gone);  // not listed: asked alone, 404
  REQUIRE_FALSE(many[2].ok());
  CHECK(many[2].error().code == Code::invalid_argument);

  auto refused = c.make("wrong-secret");  // the listing fails: every handle gets its error
  many = run_sync(refused->describe_many({*a, *b}));
  REQUIRE(many.size() == 2);
  REQUIRE_FALSE(many[0].ok());
  REQUIRE_FALSE(many[1].ok());
  CHECK(many[0].error().detail == many[1].error().detail);
}

TEST_CASE("create again (a daemon retry) gives the same group; a group tagged for another run clashes") {
  Cloud c;
  auto first = run_sync(c.provider->create(offer(), launch_spec("2")));
  REQUIRE(first.ok());
  auto again = run_sync(c.provider->create(offer(), launch_spec("2")));
  REQUIRE_MESSAGE(again.ok(), again.error().detail);
  CHECK(again->id == first->id);
  CHECK(c.fake.vms_created() == 1);
  auto stranger = launch_spec("2", "other-tag");
  stranger.idempotency_token = launch_spec("2").idempotency_token;
  auto clash = run_sync(c.provider->create(offer(), stranger));
  CHECK(clash.code() == Code::already_exists);
  CHECK(clash.error().detail.find("another run") != std::string::npos);
  CHECK(c.fake.groups()[0].tags.at("tsum") == "tsum-test");  // not retagged
}

TEST_CASE("terminate deletes the group and waits for it to go; then gone; terminating again is fine") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), launch_spec("3")));
  REQUIRE(h.ok());
  REQUIRE(run_sync(c.provider->terminate(*h)).ok());
  CHECK(c.fake.server().requests("resourceGroups.delete") == 1);
  CHECK(c.fake.server().requests("operationResults.get") == 2);  // 202 once, then 200
  CHECK(c.fake.groups().empty());
  CHECK(c.fake.vms().empty());
  auto st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::gone);
  CHECK(run_sync(c.provider->terminate(*h)).ok());  // 404: deleted already
}

TEST_CASE("operations that outlast the deadline: create and terminate time out, a later call picks up where they were") {
  Cloud c({.operation_polls = 1000, .operation_s = 60});  // operations finish by time only
  auto o = c.options(kSecret);
  o.operation_deadline = o.delete_deadline = 200ms;
  auto p = std::move(AzureProvider::make(o).value());
  auto h = run_sync(p->create(offer(), launch_spec("8")));
  CHECK(h.code() == Code::timeout);  // waiting for the network
  c.clock.advance(61);
  CHECK(run_sync(p->create(offer(), launch_spec("8"))).code() == Code::timeout);  // waiting for the VM
  c.clock.advance(61);
  auto made = run_sync(p->create(offer(), launch_spec("8")));
  REQUIRE_MESSAGE(made.ok(), made.error().detail);
  CHECK(c.fake.vms_created() == 1);
  CHECK(c.fake.groups_created() == 1);
  auto gone = run_sync(p->terminate(*made));
  CHECK(gone.code() == Code::timeout);
  CHECK(gone.error().detail.find("deleting resource group") != std::string::npos);
  auto st = run_sync(p->describe(*made));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::exited);
  CHECK(st->detail.starts_with("Azure provisioning Deleting"));
  auto retry = run_sync(p->create(offer(), launch_spec("8")));
  CHECK(retry.code() == Code::unavailable);
  CHECK(retry.error().detail.find("ResourceGroupBeingDeleted") != std::string::npos);
  c.clock.advance(61);
  CHECK(run_sync(p->describe(*made))->state == InstanceState::gone);
}

TEST_CASE("an allocation failure is unavailable, and the failed launch's group is deleted") {
  Cloud c;
  c.fake.set_allocation_failure(true);
  auto h = run_sync(c.provider->create(offer("Standard_NC4as_T4_v3"), launch_spec("9")));
  REQUIRE_FALSE(h.ok());
  CHECK(h.code() == Code::unavailable);
  CHECK(h.error().detail.find("AllocationFailed") != std::string::npos);
  CHECK(h.error().detail.find("being deleted") != std::string::npos);
  REQUIRE(c.fake.groups().size() == 1);
  CHECK(c.fake.groups()[0].provisioning_state == "Deleting");
}

TEST_CASE("offers: Resource SKUs and Retail Prices over every page; Linux on-demand only; restricted sizes out") {
  Cloud c({}, {.page_size = 8}, 3);
  auto all = run_sync(c.provider->offers({}));
  REQUIRE_MESSAGE(all.ok(), all.error().detail);
  CHECK(c.fake.server().requests("prices.list") == 4);  // 28 Consumption items in westeurope, 8 a page
  CHECK(c.fake.server().requests("resourceSkus.list") == 5);  // 14 SKUs of westeurope, 3 a page
  CHECK(all->size() == 6);  // Standard_E4s_v5 is NotAvailableForSubscription there
  auto d2 = std::find_if(all->begin(), all->end(), [](const Offer& o) { return o.instance_type == "Standard_D2s_v5"; });
  REQUIRE(d2 != all->end());
  CHECK(d2->hourly_price == 0.115);  // not the Windows, Spot or Low Priority meter
  CHECK(d2->vcpus == 2);
  CHECK(d2->memory_gib == 8);
  CHECK(d2->currency == "USD");
  CHECK(d2->region == "westeurope");
  CHECK(d2->note.find("per minute") != std::string::npos);
  auto gpu = run_sync(c.provider->offers({.gpus = 1}));
  REQUIRE(gpu->size() == 2);
  CHECK((*gpu)[0].instance_type == "Standard_NC4as_T4_v3");
  CHECK((*gpu)[0].gpu_type == "nvidia-t4");

  Cloud east({}, {.page_size = 7, .drop_next_page_link = true});
  auto us = east.make(kSecret, "eastus");
  auto offers = run_sync(us->offers({}));
  REQUIRE_MESSAGE(offers.ok(), offers.error().detail);
  CHECK(offers->size() == 7);
  CHECK(east.fake.server().requests("prices.list") == 5);  // no NextPageLink, full pages: $skip=7, 14, 21, then 28 is empty
  auto b2s = std::find_if(offers->begin(), offers->end(), [](const Offer& o) { return o.instance_type == "Standard_B2s"; });
  REQUIRE(b2s != offers->end());
  CHECK(b2s->hourly_price == doctest::Approx(0.041));
}

TEST_CASE("offers name the marketplace image's newest version, the VM boots it; the quota caps the machines") {
  Cloud c;
  auto all = run_sync(c.provider->offers({}));
  REQUIRE_MESSAGE(all.ok(), all.error().detail);
  for (const auto& o : *all) CHECK(o.image == "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:22.04.202611200");
  auto d2 = std::find_if(all->begin(), all->end(), [](const Offer& o) { return o.instance_type == "Standard_D2s_v5"; });
  REQUIRE(d2 != all->end());
  auto h = run_sync(c.provider->create(*d2, launch_spec("8")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  REQUIRE(c.fake.vms().size() == 1);
  CHECK(c.fake.vms()[0].image == d2->image);  // what the offer named, not "latest"
  auto quota = run_sync(c.provider->machine_quota());
  REQUIRE_MESSAGE(quota.ok(), quota.error().detail);
  CHECK(quota->machines == 10);  // the fake's 20 regional vCPUs over Standard_B2s's 2
  CHECK(quota->source.find("Total Regional vCPUs quota 20 over 2-vCPU machines") != std::string::npos);
}

TEST_CASE("create refuses what it cannot launch, naming why; make() checks its options") {
  Cloud c;
  auto no_token = launch_spec("1");
  no_token.idempotency_token.clear();
  CHECK(run_sync(c.provider->create(offer(), no_token)).code() == Code::invalid_argument);
  CHECK(run_sync(c.provider->create(offer(), launch_spec("1", "bad tag!"))).error().detail.find("tag") != std::string::npos);
  CHECK(run_sync(c.provider->create(offer(""), launch_spec("1"))).code() == Code::invalid_argument);
  CHECK(c.fake.groups().empty());

  auto o = c.options(kSecret);
  CHECK(AzureProvider::make(o).ok());
  auto no_secret = o;
  no_secret.credentials.client_secret.clear();
  CHECK(AzureProvider::make(no_secret).error().detail.find("client secret") != std::string::npos);
  auto no_sub = o;
  no_sub.credentials.subscription_id.clear();
  CHECK(AzureProvider::make(no_sub).code() == Code::invalid_argument);
  auto bad_location = o;
  bad_location.location = "West Europe";
  CHECK(AzureProvider::make(bad_location).code() == Code::invalid_argument);
  auto bad_endpoint = o;
  bad_endpoint.management_endpoint = "ftp://x";
  CHECK(AzureProvider::make(bad_endpoint).code() == Code::invalid_argument);
}

TEST_CASE("the fake refuses what ARM refuses: no api-version, a bad filter, a VM without its network or deleteOptions") {
  FakeClock clock;
  FakeAzureCloud fake({.server = {.clock = &clock}, .client_secret = kSecret});
  REQUIRE(fake.start().ok());
  http::HttpClient client{{.retry = {.max_attempts = 1}}};
  FakeAzureCloudOptions d;
  http::HttpRequest token_req{.method = "POST", .url = fake.server().base_url() + "/" + d.tenant_id + "/oauth2/v2.0/token",
                              .body = http::form_encode({{"grant_type", "client_credentials"}, {"client_id", d.client_id},
                                                        {"client_secret", kSecret}, {"scope", std::string(kManagementScope)}})};
  auto tok = run_sync(client.send(token_req));
  REQUIRE(tok.ok());
  REQUIRE(tok->status == 200);
  const std::string bearer = "Bearer " + nlohmann::json::parse(tok->body)["access_token"].get<std::string>();
  const std::string sub = "/subscriptions/" + fake.subscription();
  auto call = [&](const std::string& method, const std::string& path, const std::string& body = "") {
    http::HttpRequest req{.method = method, .url = fake.server().base_url() + path, .headers = {{"Authorization", bearer}}, .body = body};
    auto r = run_sync(client.send(req));
    REQUIRE(r.ok());
    auto j = nlohmann::json::parse(r->body);
    return std::make_pair(r->status, j.contains("error") ? j["error"]["code"].get<std::string>() : std::string());
  };
  CHECK(call("GET", sub + "/resourcegroups") == std::make_pair(400, std::string("MissingApiVersionParameter")));
  CHECK(call("GET", sub + "/resourcegroups?api-version=x&$filter=" + http::uri_encode("name eq 'a'")).second == "InvalidFilterInQueryString");
  CHECK(call("PUT", sub + "/resourcegroups/g1?api-version=x", R"({"location":"westeurope","tags":{"tsum":"a"}})").first == 201);
  CHECK(call("PUT", sub + "/resourcegroups/g1?api-version=x", R"({"location":"westeurope"})").first == 200);
  CHECK(call("PUT", sub + "/resourcegroups/g1?api-version=x", R"({"location":"eastus"})").second == "InvalidResourceGroupLocation");
  CHECK(call("PUT", sub + "/resourcegroups/bad%20name?api-version=x", R"({"location":"eastus"})").second == "InvalidResourceGroup");
  VmSpec s{.name = "v", .location = "westeurope", .size = "Standard_B2s", .ssh_public_key = kSshKey, .user_data = "#cloud-config\n",
           .subnet_id = sub + "/resourceGroups/g1/providers/Microsoft.Network/virtualNetworks/none/subnets/default"};
  const std::string vm_path = sub + "/resourceGroups/g1/providers/Microsoft.Compute/virtualMachines/v?api-version=x";
  CHECK(call("PUT", vm_path, vm_body(s).dump()).second == "InvalidResourceReference");
  CHECK(call("PUT", sub + "/resourceGroups/g1/providers/Microsoft.Network/virtualNetworks/none?api-version=x",
             vnet_body("westeurope", {}).dump()).first == 201);
  auto no_key = s;
  no_key.ssh_public_key.clear();
  CHECK(call("PUT", vm_path, vm_body(no_key).dump()).second == "InvalidParameter");
  auto no_delete = vm_body(s);
  no_delete["properties"]["storageProfile"]["osDisk"].erase("deleteOption");
  CHECK(call("PUT", vm_path, no_delete.dump()).first == 201);
  CHECK_FALSE(fake.vms().at(0).all_delete_options);
  CHECK(call("GET", sub + "/resourceGroups/nope/providers/Microsoft.Compute/virtualMachines/v?api-version=x").second == "ResourceGroupNotFound");
  CHECK(call("GET", sub + "/resourceGroups/g1/providers/Microsoft.Compute/virtualMachines/w?api-version=x").second == "ResourceNotFound");
  CHECK(call("GET", "/subscriptions/other/resourcegroups?api-version=x").second == "SubscriptionNotFound");
  http::HttpRequest anonymous{.method = "GET", .url = fake.server().base_url() + sub + "/resourcegroups?api-version=x"};
  CHECK(run_sync(client.send(anonymous))->status == 401);
  http::HttpRequest prices{.method = "GET", .url = fake.prices_url() + "?$filter=" + http::uri_encode("colour eq 'red'")};
  CHECK(run_sync(client.send(prices))->status == 400);
}

TEST_CASE("without a configured SSH key the VM gets a throwaway one, the same for every launch of the provider") {
  Cloud c;
  auto o = c.options(kSecret);
  o.ssh_public_key.clear();
  auto p = std::move(AzureProvider::make(o).value());
  REQUIRE(run_sync(p->create(offer(), launch_spec("30"))).ok());
  REQUIRE(run_sync(p->create(offer(), launch_spec("31"))).ok());
  auto vms = c.fake.vms();
  REQUIRE(vms.size() == 2);
  CHECK(vms[0].ssh_key.starts_with("ssh-rsa AAAAB3NzaC1yc2E"));
  CHECK(vms[0].ssh_key.ends_with(" tsum-throwaway"));
  CHECK(vms[1].ssh_key == vms[0].ssh_key);
}

TEST_CASE("a Spot VM's eviction: a Preempt event on Scheduled Events (Metadata: true required), then Azure deletes "
          "the VM alone, which describe reads as interrupted; a VM whose group tsum deleted is not") {
  Cloud c;
  auto spec = launch_spec("21");
  spec.market = "spot";
  auto h = run_sync(c.provider->create(offer(), spec));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(h->data.value("spot", false));
  c.clock.advance(5);
  const std::string guest = h->id + "." + h->id;  // <group>.<vm name>
  auto ask = [&](bool header) {
    http::LoopbackRequest req{"GET", "/metadata/scheduledevents?api-version=2020-07-01"};
    if (header) req.headers.emplace_back("Metadata", "true");
    return c.fake.metadata(req, guest);
  };
  CHECK(ask(false).status == 400);
  auto quiet = nlohmann::json::parse(ask(true).body);
  CHECK(quiet["Events"].empty());
  auto standard = run_sync(c.provider->create(offer(), launch_spec("22")));
  REQUIRE(standard.ok());
  c.clock.advance(5);
  CHECK(c.fake.interrupt(standard->id, std::nullopt).code() == Code::invalid_argument);  // not a Spot VM
  CHECK(c.fake.interrupt("no-such-vm", std::nullopt).code() == Code::not_found);
  REQUIRE(c.fake.interrupt(h->id, std::nullopt).ok());
  CHECK(c.fake.interrupt(h->id, std::nullopt).code() == Code::invalid_argument);  // already being evicted
  auto notice = nlohmann::json::parse(ask(true).body);
  REQUIRE(notice["Events"].size() == 1);
  CHECK(notice["Events"][0]["EventType"] == "Preempt");
  CHECK(notice["Events"][0]["Resources"][0] == h->id);
  CHECK(notice["Events"][0]["NotBefore"].get<std::string>().ends_with(" GMT"));
  auto during = run_sync(c.provider->describe(*h));
  REQUIRE(during.ok());
  CHECK(during->state == InstanceState::running);  // Azure's 30 s
  CHECK_FALSE(during->interrupted);
  c.clock.advance(31);
  auto gone = run_sync(c.provider->describe(*h));
  REQUIRE(gone.ok());
  CHECK(gone->state == InstanceState::gone);
  CHECK(gone->interrupted);
  CHECK(gone->detail.find("evicted") != std::string::npos);
  CHECK(c.fake.groups().size() == 2);  // the VM went alone
  CHECK(c.fake.vms().size() == 1);
  auto many = run_sync(c.provider->describe_many({*h, *standard}));
  REQUIRE(many.size() == 2);
  CHECK(many[0]->interrupted);
  CHECK_FALSE(many[1]->interrupted);
  // terminate deletes the group: the evicted VM's handle stays gone and interrupted no more than the group says.
  REQUIRE(run_sync(c.provider->terminate(*h)).ok());
  auto after = run_sync(c.provider->describe(*h));
  REQUIRE(after.ok());
  CHECK(after->state == InstanceState::gone);
  CHECK_FALSE(after->interrupted);  // group and VM gone: tsum's own delete, nothing to tell
}

TEST_CASE("a zone: the VM asks for that availability zone of its location; ARM refuses one it does not have") {
  Cloud c;
  auto spec = launch_spec("23");
  spec.market = "spot";
  spec.zone = "2";
  auto h = run_sync(c.provider->create(offer(), spec));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  REQUIRE(c.fake.vms().size() == 1);
  CHECK(c.fake.vms()[0].zone == "2");
  auto far = launch_spec("24");
  far.zone = "7";
  auto refused = run_sync(c.provider->create(offer(), far));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().detail.find("zones") != std::string::npos);
}
