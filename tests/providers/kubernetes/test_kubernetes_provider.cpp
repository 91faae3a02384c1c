// The Kubernetes provider against the fake API server (tests/fakes/kubernetes/fake_kube.py, Pods without
// containers here; the integration suite runs them in Docker): over TLS with a bearer token, every object it
// sends accepted (the fake refuses what the real API server refuses: 422), offers from node shapes, a run's
// Secret, Pods and Service, idempotent creates, the scheduler's reason, an unpullable image, describe_many in one
// list, terminate, and the sweep by tag.
#include <doctest/doctest.h>

#include "providers/http/codec.h"
#include "providers/kubernetes/kubernetes_provider.h"
#include "support/fake_kube.h"
#include "support/run_sync.h"

using namespace tsum;
using namespace tsum::providers;
using nlohmann::json;
using tsum::testing::FakeKube;
using tsum::testing::run_sync;

namespace {

const char* kNodes = R"([
  {"name": "small-a", "cpu": "2", "memory": "4Gi"},
  {"name": "small-b", "cpu": "2", "memory": "4Gi", "pods": [{"cpu": "100m", "memory": "128Mi"}]},
  {"name": "small-c", "cpu": "2", "memory": "4Gi", "pods": [{"cpu": "100m", "memory": "128Mi", "daemonset": true}]},
  {"name": "gpu-a", "cpu": "8", "memory": "30Gi", "gpus": 1, "labels": {"nvidia.com/gpu.product": "Tesla-T4"}}])";

LaunchSpec spec_for(const std::string& token, int nodes = 1, const std::string& image = "tsum-train:latest") {
  LaunchSpec s;
  s.run_id = "7";
  s.tag = "tsum-test";
  s.idempotency_token = token;
  s.agent_script = "#!/bin/sh\necho agent\n";
  s.agent_sha256 = http::sha256_hex(s.agent_script);
  s.runtime = "docker";
  s.nodes = nodes;
  s.env = {{"TSUM_URL", "https://daemon:8443"},
           {"TSUM_TOKEN", "run-token-xyz"},
           {"TSUM_IMAGE", image},
           {"TSUM_RUNTIME", "docker"}};
  return s;
}

template <class F>
bool wait_for(F f, int seconds = 60) {
  for (int i = 0; i < seconds * 10; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

TEST_CASE("kubernetes provider against the fake API server") {
  FakeKube kube({.nodes = kNodes});
  auto opts = kube.options();
  opts.shapes["2c-4g"] = {.hourly_price = 0.10, .billing_rule = "per_minute", .currency = "EUR"};
  KubernetesProvider p(opts);
  CHECK(p.capabilities().gang_nodes);
  CHECK_FALSE(p.capabilities().native);
  CHECK(p.capabilities().docker);

  SUBCASE("offers: one per node shape, priced per shape or per resource, unpriced ones say so") {
    auto offers = run_sync(p.offers({}));
    REQUIRE(offers);
    REQUIRE(offers->size() == 2);
    const Offer& small = (*offers)[0].instance_type == "2c-4g" ? (*offers)[0] : (*offers)[1];
    const Offer& gpu = (*offers)[0].instance_type == "2c-4g" ? (*offers)[1] : (*offers)[0];
    CHECK(small.vcpus == 2);
    CHECK(small.memory_gib == 4);
    CHECK(small.hourly_price == 0.10);
    CHECK(small.billing_rule == "per_minute");
    CHECK(small.currency == "EUR");
    CHECK(small.note.find("1 of 3 nodes of this shape free") != std::string::npos);  // b: a tenant, c: a DaemonSet
    CHECK(gpu.instance_type == "8c-30g-1xtesla-t4");
    CHECK(gpu.gpus == 1);
    CHECK(gpu.gpu_type == "Tesla-T4");
    CHECK(gpu.hourly_price == 0);
    CHECK(gpu.note.find("unpriced") != std::string::npos);
    auto with_gpu = run_sync(p.offers({.gpus = 1}));
    REQUIRE(with_gpu);
    CHECK(with_gpu->size() == 1);

    auto priced = kube.options();
    priced.resources = {.vcpu_hour = 0.04, .gib_hour = 0.005, .gpu_hour = 0.35};
    KubernetesProvider by_resource(priced);
    auto offers2 = run_sync(by_resource.offers({.gpus = 1}));
    REQUIRE(offers2);
    CHECK(offers2->front().hourly_price == doctest::Approx(8 * 0.04 + 30 * 0.005 + 0.35));
  }

  SUBCASE("a run: its Secret holds the environment, its Pod runs, describe and terminate, creates repeat safely") {
    auto offers = run_sync(p.offers({.instance_type = "2c-4g"}));
    REQUIRE(offers);
    REQUIRE(offers->size() == 1);
    auto h = run_sync(p.create(offers->front(), spec_for("run7-tsum-test")));
    REQUIRE_MESSAGE(h, (h ? "" : h.error().detail));
    CHECK(h->id == "tsum-run7-tsum-test");
    auto again = run_sync(p.create(offers->front(), spec_for("run7-tsum-test")));
    REQUIRE(again);
    CHECK(again->id == h->id);
    CHECK(kube.items("pods").size() == 1);

    const json secrets = kube.items("secrets");
    REQUIRE(secrets.size() == 1);
    CHECK(http::base64_decode(secrets[0]["data"]["TSUM_TOKEN"].get<std::string>()).value() == "run-token-xyz");
    CHECK(http::base64_decode(secrets[0]["data"]["TSUM_RUNTIME"].get<std::string>()).value() == "container");
    const json pod = kube.items("pods")[0];
    CHECK(pod.dump().find("run-token-xyz") == std::string::npos);
    CHECK(pod["spec"]["containers"][0]["image"] == "tsum-train:latest");
    CHECK(pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "2");
    CHECK(pod["spec"]["activeDeadlineSeconds"] == 6 * 3600);
    CHECK(pod["metadata"]["labels"]["tsum.dev/tag"] == "tsum-test");

    CHECK(wait_for([&] {
      auto st = run_sync(p.describe(*h));
      return st && st->state == InstanceState::running && st->queue_wait_s.has_value();
    }));
    auto many = run_sync(p.describe_many({*h, InstanceHandle{"kubernetes", "tsum-none", {{"namespace", "default"}}}}));
    REQUIRE(many.size() == 2);
    CHECK(many[0]->state == InstanceState::running);
    CHECK(many[1]->state == InstanceState::gone);

    auto strays = run_sync(p.list_tagged("tsum-test"));
    REQUIRE(strays);
    REQUIRE(strays->size() == 1);
    CHECK(strays->front().id == h->id);

    REQUIRE(run_sync(p.terminate(*h)));
    CHECK(kube.items("pods").empty());
    CHECK(kube.items("secrets").empty());
    auto st = run_sync(p.describe(*h));
    REQUIRE(st);
    CHECK(st->state == InstanceState::gone);
    CHECK(run_sync(p.terminate(*h)));  // gone already is success
  }

  SUBCASE("describe_many: one list, then the watch keeps the copy current") {
    auto offers = run_sync(p.offers({.instance_type = "2c-4g"}));
    REQUIRE(offers);
    auto h = run_sync(p.create(offers->front(), spec_for("run11-tsum-test")));
    REQUIRE(h);
    CHECK(wait_for([&] {
      auto st = run_sync(p.describe_many({*h}));
      return st[0] && st[0]->state == InstanceState::running;
    }));
    // The watch connects after the first list; from then on describe_many lists no more.
    const long lists = p.pod_lists();
    CHECK(lists >= 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    for (int i = 0; i < 5; ++i) {
      auto st = run_sync(p.describe_many({*h}));
      REQUIRE(st[0]);
      CHECK(st[0]->state == InstanceState::running);
    }
    const long after_watch = p.pod_lists();
    CHECK(after_watch <= lists + 1);
    // Someone else deletes the Pod: the watch's DELETED event, no list, says so.
    kube.call("DELETE", "/api/v1/namespaces/default/pods/" + h->id + "-0");
    CHECK(wait_for([&] {
      auto st = run_sync(p.describe_many({*h}));
      return st[0] && st[0]->state == InstanceState::gone;
    }));
    CHECK(p.pod_lists() == after_watch);
    REQUIRE(run_sync(p.terminate(*h)));
  }

  SUBCASE("two nodes: two Pods and a headless Service; an unschedulable one waits with the scheduler's reason") {
    auto offers = run_sync(p.offers({.instance_type = "8c-30g-1xtesla-t4"}));
    REQUIRE(offers);
    auto h = run_sync(p.create(offers->front(), spec_for("run8-tsum-test", 2)));
    REQUIRE_MESSAGE(h, (h ? "" : h.error().detail));
    CHECK(kube.items("pods").size() == 2);
    const json services = kube.items("services");
    REQUIRE(services.size() == 1);
    CHECK(services[0]["spec"]["clusterIP"] == "None");
    // One GPU node: the second Pod cannot be placed.
    std::string detail;
    CHECK(wait_for([&] {
      auto st = run_sync(p.describe(*h));
      detail = st ? st->detail : st.error().detail;
      return st && st->state == InstanceState::pending && detail.find("unschedulable") != std::string::npos;
    }));
    CHECK(detail.find("0/4 nodes are available:") != std::string::npos);
    CHECK(detail.find("3 node(s) didn't match Pod's node affinity/selector") != std::string::npos);
    CHECK(detail.find("Insufficient nvidia.com/gpu") != std::string::npos);
    REQUIRE(run_sync(p.terminate(*h)));
    CHECK(kube.items("services").empty());
  }

  SUBCASE("an image that cannot be pulled ends the run with the kubelet's reason") {
    auto offers = run_sync(p.offers({.instance_type = "2c-4g"}));
    REQUIRE(offers);
    auto h = run_sync(p.create(offers->front(), spec_for("run9-tsum-test", 1, "registry.invalid/does-not-exist:1")));
    REQUIRE(h);
    std::string detail;
    CHECK(wait_for([&] {
      auto st = run_sync(p.describe(*h));
      detail = st ? st->detail : "";
      return st && st->state == InstanceState::exited;
    }));
    CHECK(detail.find("image pull failed: ErrImagePull") != std::string::npos);
    CHECK(detail.find("not found") != std::string::npos);
    REQUIRE(run_sync(p.terminate(*h)));
  }

  SUBCASE("refused: the native runtime, a wrong token, a CA that did not sign the server's certificate") {
    auto offers = run_sync(p.offers({}));
    REQUIRE(offers);
    auto native = spec_for("run10-tsum-test");
    native.runtime = "native";
    auto h = run_sync(p.create(offers->front(), native));
    REQUIRE_FALSE(h);
    CHECK(h.error().detail.find("runtime must be docker") != std::string::npos);

    auto wrong = kube.options();
    wrong.token_file.clear();
    wrong.token = "nope";
    auto refused = run_sync(KubernetesProvider(wrong).offers({}));
    REQUIRE_FALSE(refused);
    CHECK(refused.code() == Code::invalid_argument);
    CHECK(refused.error().detail.find("HTTP 401") != std::string::npos);

    auto untrusted = kube.options();
    untrusted.ca_file = "/etc/ssl/certs/ca-certificates.crt";
    auto tls = run_sync(KubernetesProvider(untrusted).offers({}));
    REQUIRE_FALSE(tls);
  }
}
