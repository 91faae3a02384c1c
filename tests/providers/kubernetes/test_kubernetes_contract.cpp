// The provider contract (tests/providers/conformance) for the Kubernetes provider: the same checks the five clouds
// pass there, against the fake API server. Its fake is a process of its own (fake_kube.py), not of the fake_cloud
// library the conformance rigs share, so the checks are spelled out here: create idempotent by token (also when
// its answer was lost), describe pending -> running with an address, terminate idempotent and then gone,
// list_tagged exact, describe_many in order, retries of 429/503 and their limit, a refused credential named
// without the secret, and the leak guard.
#include <doctest/doctest.h>

#include <fstream>

#include "providers/http/codec.h"
#include "providers/kubernetes/kubeconfig.h"
#include "providers/kubernetes/kubernetes_provider.h"
#include "support/fake_kube.h"
#include "support/run_sync.h"

using namespace tsum;
using namespace tsum::providers;
using nlohmann::json;
using tsum::testing::FakeKube;
using tsum::testing::run_sync;

namespace {

const char* kTwoNodes = R"([{"name": "n1", "cpu": "2", "memory": "4Gi"}, {"name": "n2", "cpu": "2", "memory": "4Gi"}])";

LaunchSpec spec(const std::string& run, const std::string& tag = "tsum-test") {
  LaunchSpec s;
  s.run_id = run;
  s.tag = tag;
  s.idempotency_token = "run" + run + "-" + tag;
  s.agent_script = "#!/bin/sh\necho agent\n";
  s.agent_sha256 = http::sha256_hex(s.agent_script);
  s.runtime = "docker";
  s.env = {{"TSUM_URL", "https://daemon:8443"}, {"TSUM_TOKEN", "run-token"}, {"TSUM_IMAGE", "tsum-train:latest"}};
  return s;
}

Result<InstanceStatus> describe_until(KubernetesProvider& p, const InstanceHandle& h, InstanceState want) {
  auto st = run_sync(p.describe(h));
  for (int i = 0; i < 600 && st.ok() && st->state != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    st = run_sync(p.describe(h));
  }
  return st;
}

size_t pods(const FakeKube& kube) { return kube.items("pods").size(); }

// No Pod or Secret left, within 60 s (a deleted Pod goes once its kubelet has stopped it).
bool eventually_empty(const FakeKube& kube) {
  for (int i = 0; i < 600; ++i) {
    if (pods(kube) == 0 && kube.items("secrets").empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

TEST_CASE("kubernetes contract: create, describe, terminate, list_tagged and describe_many as every provider's") {
  FakeKube kube({.nodes = kTwoNodes});
  KubernetesProvider p(kube.options());
  auto offers = run_sync(p.offers({}));
  REQUIRE(offers);
  REQUIRE(offers->size() == 1);
  const Offer offer = offers->front();

  auto h = run_sync(p.create(offer, spec("1")));
  REQUIRE_MESSAGE(h, (h ? "" : h.error().detail));
  CHECK(h->provider == "kubernetes");
  auto round_trip = InstanceHandle::from_json(json::parse(h->to_json().dump()));  // as SQLite keeps it
  auto st = describe_until(p, round_trip, InstanceState::running);
  REQUIRE(st);
  CHECK(st->state == InstanceState::running);
  CHECK_FALSE(st->address.empty());

  auto again = run_sync(p.create(offer, spec("1")));
  REQUIRE(again);
  CHECK(again->id == h->id);
  auto other = run_sync(p.create(offer, spec("2", "tsum-other")));
  REQUIRE(other);
  CHECK(other->id != h->id);
  CHECK(pods(kube) == 2);

  auto mine = run_sync(p.list_tagged("tsum-test"));
  REQUIRE(mine);
  REQUIRE(mine->size() == 1);
  CHECK(mine->front().id == h->id);

  const InstanceHandle unknown{"kubernetes", "tsum-run99-tsum-test", {{"namespace", "default"}, {"nodes", 1}}};
  auto many = run_sync(p.describe_many({*other, unknown, *h}));
  REQUIRE(many.size() == 3);
  REQUIRE(many[0]);
  REQUIRE(many[1]);
  REQUIRE(many[2]);
  CHECK(many[1]->state == InstanceState::gone);
  CHECK(many[2]->state == InstanceState::running);
  CHECK(run_sync(p.describe_many({})).empty());

  REQUIRE(run_sync(p.terminate(*h)));
  CHECK(run_sync(p.terminate(*h)));  // "already gone" is success
  CHECK(run_sync(p.describe(*h))->state == InstanceState::gone);
  REQUIRE(run_sync(p.terminate(*other)));
  CHECK(pods(kube) == 0);
  mine = run_sync(p.list_tagged("tsum-test"));
  REQUIRE(mine);
  CHECK(mine->empty());
}

TEST_CASE("kubernetes contract: 429 and 503 are retried, throttling that outlasts the retries is unavailable") {
  FakeKube kube({.nodes = kTwoNodes});
  auto opts = kube.options();
  opts.request_timeout = std::chrono::seconds(3);
  KubernetesProvider p(opts);
  kube.fault({{"method", "GET"}, {"path", "/api/v1/nodes"}, {"status", 429}, {"retry_after", 1}, {"times", 1}});
  kube.fault({{"method", "GET"}, {"path", "/api/v1/pods"}, {"status", 503}, {"times", 2}});
  auto offers = run_sync(p.offers({}));
  REQUIRE_MESSAGE(offers, (offers ? "" : offers.error().detail));
  CHECK(offers->size() == 1);
  CHECK(kube.get("/fake/faults")["faults"].empty());  // each one met

  kube.fault({{"method", "GET"}, {"path", "/api/v1/nodes"}, {"status", 503}, {"times", 100}});
  auto throttled = run_sync(p.offers({}));
  REQUIRE_FALSE(throttled);
  CHECK(throttled.code() == Code::unavailable);
  CHECK(throttled.error().detail.find("503") != std::string::npos);
}

TEST_CASE("kubernetes contract: a create whose answer was lost is retried into one Pod; all answers lost leave nothing") {
  FakeKube kube({.nodes = kTwoNodes});
  auto opts = kube.options();
  opts.request_timeout = std::chrono::seconds(3);
  KubernetesProvider p(opts);
  auto offers = run_sync(p.offers({}));
  REQUIRE(offers);
  kube.fault({{"method", "POST"}, {"path", "/api/v1/namespaces/default/pods"}, {"lose_answer", true}, {"times", 1}});
  auto h = run_sync(p.create(offers->front(), spec("3")));
  REQUIRE_MESSAGE(h, (h ? "" : h.error().detail));
  CHECK(kube.get("/fake/faults")["faults"].empty());  // the answer was lost
  CHECK(pods(kube) == 1);  // the retry met 409 AlreadyExists: the Pod the lost answer was about
  REQUIRE(run_sync(p.terminate(*h)));

  // Leak guard: every answer lost. The create fails and deletes what it made; the sweep finds nothing left.
  kube.fault({{"method", "POST"}, {"path", "/api/v1/namespaces/default/pods"}, {"lose_answer", true}, {"times", 100}});
  auto lost = run_sync(p.create(offers->front(), spec("4")));
  REQUIRE_FALSE(lost);
  CHECK(lost.code() == Code::unavailable);
  CHECK(lost.error().detail.find("what was made is deleted") != std::string::npos);
  CHECK(eventually_empty(kube));
  auto strays = run_sync(p.list_tagged("tsum-test"));
  REQUIRE(strays);
  CHECK(strays->empty());
}

TEST_CASE("kubernetes contract: a refused credential is invalid_argument naming the call, with no secret in it") {
  FakeKube kube({.nodes = kTwoNodes, .token = "secret-token-123"});
  auto opts = kube.options();
  opts.token_file.clear();
  opts.token = "wrong-token-456";
  KubernetesProvider p(opts);
  auto offers = run_sync(p.offers({}));
  REQUIRE_FALSE(offers);
  CHECK(offers.code() == Code::invalid_argument);
  CHECK(offers.error().detail.find("GET /api/v1/nodes: HTTP 401") != std::string::npos);
  CHECK(offers.error().detail.find("secret-token-123") == std::string::npos);
  CHECK(offers.error().detail.find("wrong-token-456") == std::string::npos);
  auto h = run_sync(p.create(Offer{.provider = "kubernetes", .instance_type = "2c-4g", .vcpus = 2, .memory_gib = 4},
                             spec("5")));
  REQUIRE_FALSE(h);
  CHECK(kube.items("pods").empty());
}

TEST_CASE("kubernetes: a client certificate authenticates, from files or from a kubeconfig's inline data") {
  FakeKube kube({.nodes = kTwoNodes, .client_certs = true});
  auto by_files = kube.options();
  by_files.token_file.clear();
  by_files.client_cert_file = kube.client_cert_file();
  by_files.client_key_file = kube.client_key_file();
  auto offers = run_sync(KubernetesProvider(by_files).offers({}));
  REQUIRE_MESSAGE(offers, (offers ? "" : offers.error().detail));
  CHECK(offers->size() == 1);

  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string{std::istreambuf_iterator<char>(in), {}};
  };
  tsum::testing::TempDir dir;
  std::ofstream(dir.file("config")) << "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n"
                                       "  cluster:\n    server: " << kube.url() << "\n    certificate-authority-data: "
                                    << http::base64_encode(read(kube.ca_file())) << "\nusers:\n- name: u\n  user:\n"
                                    << "    client-certificate-data: " << http::base64_encode(read(kube.client_cert_file()))
                                    << "\n    client-key-data: " << http::base64_encode(read(kube.client_key_file()))
                                    << "\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n";
  KubernetesOptions by_kubeconfig;
  REQUIRE(kube::apply_kubeconfig(dir.file("config"), "", &by_kubeconfig));
  CHECK(by_kubeconfig.ca_file.empty());
  CHECK(by_kubeconfig.token.empty());
  auto inline_offers = run_sync(KubernetesProvider(by_kubeconfig).offers({}));
  REQUIRE_MESSAGE(inline_offers, (inline_offers ? "" : inline_offers.error().detail));
  CHECK(inline_offers->size() == 1);

  auto none = by_files;
  none.client_cert_file.clear();
  none.client_key_file.clear();
  auto refused = run_sync(KubernetesProvider(none).offers({}));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().detail.find("HTTP 401") != std::string::npos);
}
