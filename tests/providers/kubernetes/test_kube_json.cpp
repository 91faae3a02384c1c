// The Kubernetes provider's pure parts: quantities and times as the API writes them, node shapes from nodes and
// the Pods on them, a run's state from its Pods, the manifests, and kubeconfig files.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>

#include "providers/http/codec.h"
#include "providers/kubernetes/kube_json.h"
#include "providers/kubernetes/kubeconfig.h"
#include "providers/kubernetes/kubernetes_provider.h"
#include "support/temp_dir.h"

using namespace tsum::providers;
using namespace tsum::providers::kube;
using nlohmann::json;

TEST_CASE("quantities: cores, bytes and devices in every suffix the API writes") {
  CHECK(*parse_quantity("4") == 4);
  CHECK(*parse_quantity("3500m") == doctest::Approx(3.5));
  CHECK(*parse_quantity("16Gi") == 16.0 * 1073741824);
  CHECK(*parse_quantity("16384Ki") == 16384.0 * 1024);
  CHECK(*parse_quantity("1e9") == 1e9);
  CHECK(*parse_quantity("1.5G") == 1.5e9);
  CHECK(*parse_quantity("500M") == 5e8);
  CHECK(*parse_quantity("2E") == 2e18);  // exa, not an exponent
  CHECK_FALSE(parse_quantity(""));
  CHECK_FALSE(parse_quantity("4 cores"));
  CHECK_FALSE(parse_quantity("Gi"));
  CHECK_FALSE(parse_quantity("1.2.3"));
  CHECK(cpu_quantity(4) == "4");
  CHECK(cpu_quantity(3.5) == "3500m");
  CHECK(memory_quantity(15.5 * 1073741824) == "15872Mi");
}

TEST_CASE("times: RFC 3339 with fractions and offsets") {
  CHECK(*parse_time("1970-01-01T00:01:00Z") == 60);
  CHECK(*parse_time("2026-11-27T08:14:25.5Z") == doctest::Approx(1795767265.5));
  CHECK(*parse_time("2026-11-27T09:14:25+01:00") == *parse_time("2026-11-27T08:14:25Z"));
  CHECK_FALSE(parse_time("2026-11-27 08:14:25"));
  CHECK_FALSE(parse_time("yesterday"));
  CHECK(*parse_time("2026-11-27T00:14:25.000-08:00") == *parse_time("2026-11-27T08:14:25Z"));
  // What the fuzzer found: an offset that is not digits threw from inside the parser.
  CHECK_FALSE(parse_time("2026-11-25T10:00:00.000-08:frid303"));
  CHECK_FALSE(parse_time("2026-11-25T10:00:00-0x:00"));
  CHECK_FALSE(parse_time("2026-11-25T10:00:00Zjunk"));
  CHECK_FALSE(parse_time("2026-11-25T10:00:00."));
  CHECK_FALSE(parse_time("2026-13-25T10:00:00Z"));
  CHECK_FALSE(parse_time("+026-11-25T10:00:00Z"));
}

namespace {

json node(const std::string& name, const std::string& cpu, const std::string& mem, int gpus = 0,
          json labels = json::object(), bool ready = true) {
  json alloc = {{"cpu", cpu}, {"memory", mem}, {"pods", "110"}};
  if (gpus) alloc["nvidia.com/gpu"] = std::to_string(gpus);
  return {{"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", json::object()},
          {"status",
           {{"allocatable", alloc}, {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
}

// A Pod on node_name: a DaemonSet's (owner "DaemonSet") or a run's (owner "").
json pod_on(const std::string& node_name, const std::string& cpu, const std::string& mem, const std::string& owner,
            const std::string& phase = "Running") {
  json labels = {{"app", "other"}};
  json container = {{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}, {"memory", mem}}}}}};
  json spec = {{"nodeName", node_name}, {"containers", json::array({container})}};
  json meta = {{"name", "p-" + node_name}, {"labels", labels}};
  if (!owner.empty()) meta["ownerReferences"] = {{{"kind", owner}, {"name", "agent"}}};
  return {{"metadata", meta}, {"spec", spec}, {"status", {{"phase", phase}}}};
}

}  // namespace

TEST_CASE("node shapes: grouped by allocatable and GPU model, sized apart from other tenants, free counted") {
  json nodes = {{"kind", "NodeList"},
                {"items",
                 {node("a", "4", "16Gi"), node("b", "4", "16Gi"), node("c", "4", "16Gi"),
                  node("g", "8", "61Gi", 1, {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"}}),
                  node("t", "16", "64Gi", 0, {{"node.kubernetes.io/instance-type", "m5.4xlarge"}}),
                  node("down", "4", "16Gi", 0, json::object(), false)}}};
  auto parsed = parse_nodes(nodes);
  REQUIRE(parsed);
  CHECK(parsed->size() == 6);
  CHECK_FALSE(parse_nodes(json{{"kind", "PodList"}}));
  json odd = nodes;  // a flag of another type reads as unset, never a type_error
  odd["items"][0]["spec"]["unschedulable"] = "true";
  REQUIRE(parse_nodes(odd));
  json pods = {{"items",
                {pod_on("a", "250m", "512Mi", "DaemonSet"),  // a DaemonSet's share, on a only
                 pod_on("b", "3", "8Gi", ""),                // a run holds most of b
                 pod_on("c", "2", "1Gi", "", "Succeeded"),   // ended: holds nothing
                 pod_on("", "64", "1Gi", "", "Pending")}}};  // not bound: holds nothing
  auto shapes = node_shapes(*parsed, pods);
  REQUIRE(shapes.size() == 3);
  CHECK(shapes[0].name == "4c-16g");
  CHECK_FALSE(shapes[0].from_label);
  CHECK(shapes[0].nodes == 3);  // "down" is not Ready
  CHECK(shapes[0].node_names == std::vector<std::string>{"a", "b", "c"});
  CHECK(shapes[0].vcpus == 4);  // an idle b or c gives all 4 cores
  CHECK(shapes[0].memory_gib == 16);
  CHECK(shapes[0].free == 1);  // c; a lacks its DaemonSet's 250m, b is held by the run
  CHECK(shapes[1].name == "8c-61g-1xnvidia-a100-sxm4-40gb");
  CHECK(shapes[1].gpus == 1);
  CHECK(shapes[1].gpu_type == "NVIDIA-A100-SXM4-40GB");
  CHECK(shapes[2].name == "m5.4xlarge");
  CHECK(shapes[2].from_label);
  CHECK(requests_by_node(pods, PodsOf::node).at("a").cpu == doctest::Approx(0.25));
  CHECK(requests_by_node(pods, PodsOf::workloads).at("b").cpu == doctest::Approx(3));
  CHECK(requests_by_node(pods, PodsOf::workloads).count("c") == 0);
}

namespace {

json pod_state(const std::string& name, int node, json status, const std::string& instance = "tsum-run1") {
  return {{"metadata",
           {{"name", name},
            {"creationTimestamp", "2026-11-27T08:00:00Z"},
            {"labels", {{"tsum.dev/instance", instance}, {"tsum.dev/node", std::to_string(node)}}}}},
          {"status", status}};
}

json running(const std::string& ip, const std::string& started = "2026-11-27T08:00:07Z") {
  return {{"phase", "Running"},
          {"podIP", ip},
          {"containerStatuses", {{{"state", {{"running", {{"startedAt", started}}}}}}}}};
}

}  // namespace

TEST_CASE("a run's state from its Pods: pending with the scheduler's reason, pull errors end it, all must end") {
  const InstanceHandle one{"kubernetes", "tsum-run1", {{"namespace", "default"}, {"nodes", 1}}};
  const InstanceHandle two{"kubernetes", "tsum-run1", {{"namespace", "default"}, {"nodes", 2}}};
  auto list = [](std::vector<json> pods) { return json{{"items", pods}}; };

  auto st = KubernetesProvider::status_of(one, list({}));
  CHECK(st.state == InstanceState::gone);

  json unsched = {{"phase", "Pending"},
                  {"conditions",
                   {{{"type", "PodScheduled"},
                     {"status", "False"},
                     {"reason", "Unschedulable"},
                     {"message", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}}}};
  st = KubernetesProvider::status_of(one, list({pod_state("tsum-run1-0", 0, unsched)}));
  CHECK(st.state == InstanceState::pending);
  CHECK(st.detail == "Pod tsum-run1-0: unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
  CHECK_FALSE(st.queue_wait_s);

  json pull = {
      {"phase", "Pending"},
      {"containerStatuses",
       {{{"state", {{"waiting", {{"reason", "ImagePullBackOff"}, {"message", "Back-off pulling image \"x\""}}}}}}}}};
  st = KubernetesProvider::status_of(one, list({pod_state("tsum-run1-0", 0, pull)}));
  CHECK(st.state == InstanceState::exited);
  CHECK(st.detail == "Pod tsum-run1-0: image pull failed: ImagePullBackOff: Back-off pulling image \"x\"");

  st = KubernetesProvider::status_of(one, list({pod_state("tsum-run1-0", 0, running("10.1.0.5")),
                                                pod_state("other-0", 0, json{{"phase", "Failed"}}, "tsum-run2")}));
  CHECK(st.state == InstanceState::running);
  CHECK(st.address == "10.1.0.5");
  CHECK(*st.queue_wait_s == doctest::Approx(7));

  // Two nodes: one done, one running is running; one still pending is pending; a failure ends the run.
  json done = {
      {"phase", "Succeeded"},
      {"containerStatuses", {{{"state", {{"terminated", {{"exitCode", 0}, {"startedAt", "2026-11-27T08:00:03Z"}}}}}}}}};
  st =
      KubernetesProvider::status_of(two, list({pod_state("tsum-run1-1", 1, running("10.1.0.6", "2026-11-27T08:00:09Z")),
                                               pod_state("tsum-run1-0", 0, done)}));
  CHECK(st.state == InstanceState::running);
  CHECK(*st.queue_wait_s == doctest::Approx(9));
  st = KubernetesProvider::status_of(two, list({pod_state("tsum-run1-0", 0, done), pod_state("tsum-run1-1", 1, done)}));
  CHECK(st.state == InstanceState::exited);
  CHECK(st.detail == "agent exited with code 0");
  json failed = {{"phase", "Failed"},
                 {"reason", "DeadlineExceeded"},
                 {"message", "Pod was active on the node longer than the specified deadline"}};
  st = KubernetesProvider::status_of(
      two, list({pod_state("tsum-run1-0", 0, running("10.1.0.5")), pod_state("tsum-run1-1", 1, failed)}));
  CHECK(st.state == InstanceState::exited);
  CHECK(st.detail ==
        "Pod tsum-run1-1: DeadlineExceeded: Pod was active on the node longer than the specified deadline");
  json crashed = {{"phase", "Failed"},
                  {"containerStatuses", {{{"state", {{"terminated", {{"exitCode", 3}, {"reason", "Error"}}}}}}}}};
  st = KubernetesProvider::status_of(one, list({pod_state("tsum-run1-0", 0, crashed)}));
  CHECK(st.detail == "Pod tsum-run1-0: agent exited with code 3 (Error)");
  st = KubernetesProvider::status_of(two, list({pod_state("tsum-run1-0", 0, running("10.1.0.5"))}));
  CHECK(st.state == InstanceState::exited);
  CHECK(st.detail == "1 Pod(s) of 2 of tsum-run1 were deleted");
}

TEST_CASE("manifests: the environment in a Secret, requests equal limits, labels, the headless Service") {
  PodPlan plan;
  plan.base = object_base_name("run12-tsum-ab12cd34ef56-a2");
  CHECK(plan.base == "tsum-run12-tsum-ab12cd34ef56-a2");
  CHECK(object_base_name(std::string(80, 'X')).size() <= 56);
  CHECK(object_base_name("Run_7.x") == "tsum-run-7-x");
  plan.namespace_ = "ml";
  plan.tag = "tsum-ab12cd34ef56";
  plan.run_id = "12";
  plan.image = "registry:5000/tsum-train:latest";
  plan.bootstrap = "echo hi";
  plan.requests = {3, 15.5 * 1073741824, 1};
  plan.nodes = 2;
  plan.active_deadline_s = 3600;
  const json secret = secret_manifest(plan, {{"TSUM_TOKEN", "s3cret"}, {"TSUM_URL", "https://d:8443"}});
  CHECK(secret["stringData"]["TSUM_TOKEN"] == "s3cret");
  CHECK(secret["metadata"]["labels"]["tsum.dev/tag"] == "tsum-ab12cd34ef56");
  const json pod = pod_manifest(plan, 1);
  CHECK(pod["metadata"]["name"] == plan.base + "-1");
  CHECK(pod["metadata"]["labels"]["tsum.dev/node"] == "1");
  CHECK(pod["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "tsum");
  const json& c = pod["spec"]["containers"][0];
  CHECK(c["resources"]["requests"] == c["resources"]["limits"]);
  CHECK(c["resources"]["requests"]["cpu"] == "3");
  CHECK(c["resources"]["requests"]["memory"] == "15872Mi");
  CHECK(c["resources"]["requests"]["nvidia.com/gpu"] == "1");
  CHECK(c["envFrom"][0]["secretRef"]["name"] == plan.base);
  CHECK(pod.dump().find("s3cret") == std::string::npos);
  CHECK(c["command"] == json::array({"/bin/sh", "-c", "echo hi"}));
  CHECK(pod["spec"]["activeDeadlineSeconds"] == 3600);
  CHECK(pod["spec"]["restartPolicy"] == "Never");
  CHECK(pod["spec"]["subdomain"] == plan.base);
  const json svc = service_manifest(plan);
  CHECK(svc["spec"]["clusterIP"] == "None");
  CHECK(svc["spec"]["selector"]["tsum.dev/instance"] == plan.base);
  CHECK(status_message(R"({"kind":"Status","message":"pods \"x\" not found","code":404})") == "pods \"x\" not found");
}

TEST_CASE("kubeconfig: the context's cluster, user and namespace; inline data; explicit fields win") {
  tsum::testing::TempDir dir;
  const std::string ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  std::ofstream(dir.file("config"))
      << "apiVersion: v1\nkind: Config\ncurrent-context: dev\nclusters:\n"
         "- name: prod\n  cluster:\n    server: https://prod:6443\n"
         "    certificate-authority: certs/prod-ca.pem\n"
         "- name: dev\n  cluster:\n    server: https://dev:6443\n"
         "    certificate-authority-data: "
      << http::base64_encode(ca_pem)
      << "\n"
         "users:\n- name: alice\n  user:\n    token: abc.def\n"
         "- name: bob\n  user:\n    client-certificate: bob.crt\n    client-key: bob.key\n"
         "- name: sso\n  user:\n    exec:\n      command: aws\n"
         "contexts:\n- name: dev\n  context: {cluster: dev, user: alice, namespace: ml}\n"
         "- name: prod\n  context: {cluster: prod, user: bob}\n"
         "- name: sso\n  context: {cluster: prod, user: sso}\n";
  KubernetesOptions dev;
  REQUIRE(apply_kubeconfig(dir.file("config"), "", &dev));
  CHECK(dev.api_url == "https://dev:6443");
  CHECK(dev.ca_pem == ca_pem);
  CHECK(dev.token == "abc.def");
  CHECK(dev.namespace_ == "ml");
  KubernetesOptions prod;
  prod.namespace_ = "team";
  REQUIRE(apply_kubeconfig(dir.file("config"), "prod", &prod));
  CHECK(prod.api_url == "https://prod:6443");
  CHECK(prod.ca_file == dir.file("certs/prod-ca.pem"));
  CHECK(prod.client_cert_file == dir.file("bob.crt"));
  CHECK(prod.client_key_file == dir.file("bob.key"));
  CHECK(prod.namespace_ == "team");
  KubernetesOptions sso;
  auto s = apply_kubeconfig(dir.file("config"), "sso", &sso);
  CHECK_FALSE(s);
  CHECK(s.error().detail.find("exec/auth-provider") != std::string::npos);
  KubernetesOptions none;
  CHECK_FALSE(apply_kubeconfig(dir.file("config"), "staging", &none));
  CHECK_FALSE(apply_kubeconfig(dir.file("missing"), "", &none));
  // What the fuzzer found: a list entry that is not a map threw from yaml-cpp instead of being skipped.
  std::ofstream(dir.file("odd")) << "current-context: lab\ncontexts:\n- just text\n- [1, 2]\n"
                                    "- name: lab\n  context: {cluster: lab, user: ci}\n"
                                    "clusters:\n- name: lab\n  cluster: a string\n";
  auto odd = apply_kubeconfig(dir.file("odd"), "", &none);
  CHECK_FALSE(odd);
  CHECK(odd.error().detail.find("names no cluster 'lab'") != std::string::npos);
}
