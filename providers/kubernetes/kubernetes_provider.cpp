#include "providers/kubernetes/kubernetes_provider.h"

#include <algorithm>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>

#include "providers/cloud_init/cloud_init.h"
#include "providers/http/codec.h"
#include "providers/kubernetes/kube_json.h"
#include "providers/sleep_for.h"

namespace tsum::providers {

using nlohmann::json;

namespace {

std::string selector_of(std::string_view label, std::string_view value) {
  return std::string(label) + "=" + std::string(value);
}

std::string ns_of(const InstanceHandle& h, const std::string& fallback) {
  return h.data.is_object() ? h.data.value("namespace", fallback) : fallback;
}

std::string price_note(const kube::KubeNodeShape& s) {
  return std::to_string(s.free) + " of " + std::to_string(s.nodes) + " node" + (s.nodes == 1 ? "" : "s") +
         " of this shape free";
}

}  // namespace

KubernetesProvider::KubernetesProvider(KubernetesOptions opts)
    : api_(std::make_unique<kube::KubeApi>(std::move(opts))) {}

Capabilities KubernetesProvider::capabilities() const {
  return {.gpus = true, .spot = false, .docker = true, .native = false, .reaches_daemon = false, .gang_nodes = true};
}

Task<Result<std::vector<kube::KubeNodeShape>>> KubernetesProvider::shapes() {
  auto nodes_json = co_await api_->get("/api/v1/nodes");
  if (!nodes_json) co_return nodes_json.error();
  auto nodes = kube::parse_nodes(*nodes_json);
  if (!nodes) co_return nodes.error();
  // Every namespace's Pods hold room on the nodes; a user who may list only their own namespace sees those.
  auto pods = co_await api_->get("/api/v1/pods");
  if (!pods && pods.code() == Code::invalid_argument) pods = co_await api_->get(api_->collection("pods"));
  if (!pods) co_return pods.error();
  co_return kube::node_shapes(*nodes, *pods);
}

Task<Result<std::vector<Offer>>> KubernetesProvider::offers(const Requirements& req) {
  auto shapes_now = co_await shapes();
  if (!shapes_now) co_return shapes_now.error();
  const auto& o = api_->options();
  std::vector<Offer> out;
  for (const auto& s : *shapes_now) {
    Offer offer;
    offer.provider = "kubernetes";
    offer.instance_type = s.name;
    offer.vcpus = s.vcpus;
    offer.memory_gib = s.memory_gib;
    offer.gpus = s.gpus;
    offer.gpu_type = s.gpu_type;
    offer.region = o.namespace_;
    offer.family = "k8s";
    if (auto it = o.shapes.find(s.name); it != o.shapes.end()) {
      offer.hourly_price = it->second.hourly_price;
      offer.billing_rule = it->second.billing_rule;
      offer.currency = it->second.currency;
      offer.note = "Kubernetes node shape " + s.name + ": " + price_note(s) + "; priced per shape";
    } else if (o.resources.set()) {
      offer.hourly_price =
          s.vcpus * o.resources.vcpu_hour + s.memory_gib * o.resources.gib_hour + s.gpus * o.resources.gpu_hour;
      offer.billing_rule = o.resources.billing_rule;
      offer.currency = o.resources.currency;
      offer.note = "Kubernetes node shape " + s.name + ": " + price_note(s) + "; priced per vCPU-, GiB- and GPU-hour";
    } else {
      offer.billing_rule = "step:1,min:0";
      offer.note = "Kubernetes node shape " + s.name + ": " + price_note(s) +
                   "; unpriced: no providers.kubernetes.shapes." + s.name + " nor resource prices in the config";
    }
    if (satisfies(offer, req)) out.push_back(std::move(offer));
  }
  co_return out;
}

Task<Result<InstanceHandle>> KubernetesProvider::create(const Offer& offer, const LaunchSpec& spec) {
  const auto& o = api_->options();
  if (spec.runtime != "docker")
    co_return make_error(Code::invalid_argument,
                         "kubernetes runs containers: the config's runtime must be docker (the workload image)");
  auto image = spec.env.find("TSUM_IMAGE");
  if (image == spec.env.end() || image->second.empty())
    co_return make_error(Code::invalid_argument, "kubernetes: the run names no workload image (TSUM_IMAGE)");
  if (spec.agent_sha256.empty())
    co_return make_error(Code::invalid_argument, "kubernetes: the agent's sha256 is needed for the Pods' bootstrap");
  kube::PodPlan plan;
  plan.base = kube::object_base_name(spec.idempotency_token);
  plan.namespace_ = o.namespace_;
  plan.tag = spec.tag;
  plan.run_id = spec.run_id;
  plan.image = image->second;
  plan.bootstrap = bootstrap_script("/tsum", spec.agent_sha256);
  plan.requests = {static_cast<double>(offer.vcpus), offer.memory_gib * 1073741824.0, static_cast<double>(offer.gpus)};
  plan.nodes = std::max(1, spec.nodes);
  plan.active_deadline_s = static_cast<long>(o.active_deadline.count());
  plan.image_pull_secret = o.image_pull_secret;
  // The Pods go to nodes of the offer's shape (by its instance-type label, else by the nodes' names).
  auto shapes_now = co_await shapes();
  if (!shapes_now) co_return shapes_now.error();
  auto shape = std::find_if(shapes_now->begin(), shapes_now->end(),
                            [&](const kube::KubeNodeShape& s) { return s.name == offer.instance_type; });
  if (shape == shapes_now->end())
    co_return make_error(Code::unavailable,
                         "kubernetes: no ready, schedulable node of shape " + offer.instance_type + " now");
  if (shape->from_label)
    plan.instance_type_label = shape->name;
  else
    plan.node_names = shape->node_names;
  const InstanceHandle handle{"kubernetes",
                              plan.base,
                              {{"namespace", plan.namespace_},
                               {"tag", plan.tag},
                               {"nodes", plan.nodes},
                               {"created_at", static_cast<long long>(std::time(nullptr))}}};

  auto env = spec.env;
  env["TSUM_RUNTIME"] = "container";  // the agent runs in the workload image itself
  env.erase("TSUM_NODE");             // per Pod, in its spec
  auto made = [](const Result<json>& r) { return r.ok() || r.code() == Code::already_exists; };
  Status failed;
  const std::string secret_path = api_->collection("secrets");
  auto secret = co_await api_->post(secret_path, kube::secret_manifest(plan, env));
  if (!made(secret)) failed = secret.error();
  if (failed.ok() && plan.nodes > 1) {
    const std::string path = api_->collection("services");
    auto service = co_await api_->post(path, kube::service_manifest(plan));
    if (!made(service)) failed = service.error();
  }
  for (int n = 0; failed.ok() && n < plan.nodes; ++n) {
    const std::string path = api_->collection("pods");
    auto pod = co_await api_->post(path, kube::pod_manifest(plan, n));
    if (!made(pod)) failed = pod.error();
  }
  if (!failed.ok()) {
    auto cleanup = co_await delete_objects(plan.namespace_, plan.base);
    co_return make_error(failed.code(), failed.error().detail +
                                            (cleanup ? "; what was made is deleted"
                                                     : "; deleting what was made failed: " + cleanup.error().detail));
  }
  co_return handle;
}

InstanceStatus KubernetesProvider::status_of(const InstanceHandle& h, const json& pods) {
  std::vector<kube::PodState> mine;
  if (auto items = pods.find("items"); items != pods.end() && items->is_array())
    for (const auto& p : *items) {
      const auto* labels = p.contains("metadata") ? &p["metadata"] : nullptr;
      if (labels && labels->contains("labels") &&
          (*labels)["labels"].value(std::string(kube::kInstanceLabel), "") == h.id)
        mine.push_back(kube::parse_pod(p));
    }
  std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) { return a.node < b.node; });
  InstanceStatus st;
  const int expected = h.data.is_object() ? h.data.value("nodes", 1) : 1;
  if (mine.empty()) {
    st.state = InstanceState::gone;
    st.detail = "no Pod of " + h.id + " is left";
    return st;
  }
  const std::string many = expected > 1 ? " of " + std::to_string(expected) : "";
  auto who = [&](const kube::PodState& p) { return "Pod " + p.name + ": "; };
  // Ended: a failure of any Pod, or all succeeded.
  int succeeded = 0;
  for (const auto& p : mine) {
    if (p.phase == "Failed") {
      st.state = InstanceState::exited;
      std::string why = !p.reason.empty() ? p.reason + (p.message.empty() ? "" : ": " + p.message)
                        : p.exit_code     ? "agent exited with code " + std::to_string(*p.exit_code) +
                                            (p.terminated_reason.empty() ? "" : " (" + p.terminated_reason + ")")
                                      : "failed";
      st.detail = who(p) + why;
      return st;
    }
    if (kube::image_pull_failure(p.waiting_reason)) {
      st.state = InstanceState::exited;
      st.detail = who(p) + "image pull failed: " + p.waiting_reason +
                  (p.waiting_message.empty() ? "" : ": " + p.waiting_message);
      return st;
    }
    if (p.phase == "Succeeded") ++succeeded;
  }
  if (static_cast<int>(mine.size()) < expected) {
    st.state = InstanceState::exited;
    st.detail =
        std::to_string(expected - static_cast<int>(mine.size())) + " Pod(s)" + many + " of " + h.id + " were deleted";
    return st;
  }
  if (succeeded == static_cast<int>(mine.size())) {
    st.state = InstanceState::exited;
    st.detail = "agent exited with code 0";
    return st;
  }
  for (const auto& p : mine)
    if (p.phase == "Pending" || p.phase.empty()) {
      st.state = InstanceState::pending;
      st.detail = !p.unschedulable.empty() ? who(p) + "unschedulable: " + p.unschedulable
                  : !p.waiting_reason.empty()
                      ? who(p) + p.waiting_reason + (p.waiting_message.empty() ? "" : ": " + p.waiting_message)
                      : who(p) + "pending";
      return st;
    }
  st.state = InstanceState::running;
  st.address = mine.front().pod_ip;
  double wait = 0;
  bool all_started = true;
  for (const auto& p : mine) {
    if (!p.started || !p.created)
      all_started = false;
    else
      wait = std::max(wait, *p.started - *p.created);
  }
  if (all_started) st.queue_wait_s = std::max(0.0, wait);
  for (const auto& p : mine)
    if (p.deleting) st.detail = who(p) + "being deleted";
  return st;
}

Task<Result<InstanceStatus>> KubernetesProvider::describe(const InstanceHandle& h) {
  const auto& o = api_->options();
  const std::string path = "/api/v1/namespaces/" + ns_of(h, o.namespace_) +
                           "/pods?labelSelector=" + http::uri_encode(selector_of(kube::kInstanceLabel, h.id));
  auto pods = co_await api_->get(path);
  if (!pods) co_return pods.error();
  co_return status_of(h, *pods);
}

kube::PodWatch& KubernetesProvider::watch_of(const std::string& ns) {
  std::lock_guard lock(watches_mu_);
  auto& w = watches_[ns];
  if (!w) w = std::make_unique<kube::PodWatch>(api_->options(), ns);
  return *w;
}

Task<std::vector<Result<InstanceStatus>>> KubernetesProvider::describe_many(
    const std::vector<InstanceHandle>& handles) {
  const auto& o = api_->options();
  std::map<std::string, Result<json>> lists;  // by namespace: the watch's copy, else one list call
  std::map<std::string, bool> watched;
  for (const auto& h : handles) {
    const std::string ns = ns_of(h, o.namespace_);
    if (lists.count(ns)) continue;
    auto& watch = watch_of(ns);
    if (auto copy = watch.snapshot()) {
      lists.emplace(ns, std::move(*copy));
      watched[ns] = true;
      continue;
    }
    const std::string path =
        "/api/v1/namespaces/" + ns + "/pods?labelSelector=" + http::uri_encode(selector_of(kube::kManagedBy, "tsum"));
    auto list = co_await api_->get(path);
    ++pod_lists_;
    if (list) watch.reset(*list);
    lists.emplace(ns, std::move(list));
  }
  std::vector<Result<InstanceStatus>> out;
  for (const auto& h : handles) {
    const std::string ns = ns_of(h, o.namespace_);
    const auto& list = lists.at(ns);
    if (!list) {
      out.push_back(list.error());
      continue;
    }
    auto st = status_of(h, *list);
    if (st.state == InstanceState::gone && watched[ns]) {
      // Not in the watch's copy: a Pod made a moment ago may not have reached it yet. Asked about alone.
      auto alone = co_await describe(h);
      out.push_back(std::move(alone));
      continue;
    }
    out.push_back(std::move(st));
  }
  co_return out;
}

Task<Status> KubernetesProvider::delete_objects(const std::string& ns, const std::string& base) {
  const std::string selector = http::uri_encode(selector_of(kube::kInstanceLabel, base));
  Status first;
  for (const char* kind : {"pods", "services", "secrets"}) {
    const std::string list_path = "/api/v1/namespaces/" + ns + "/" + kind + "?labelSelector=" + selector;
    auto list = co_await api_->get(list_path);
    if (!list) {
      if (first.ok()) first = list.error();
      continue;
    }
    for (const auto& item : list->value("items", json::array())) {
      const std::string name = item.value("metadata", json::object()).value("name", "");
      if (name.empty()) continue;
      std::string path = "/api/v1/namespaces/" + ns + "/" + kind + "/" + name;
      if (std::string_view(kind) == "pods") path += "?gracePeriodSeconds=1";
      auto gone = co_await api_->del(path);
      if (!gone && gone.code() != Code::not_found && first.ok()) first = gone.error();
    }
  }
  co_return first;
}

Task<Status> KubernetesProvider::terminate(const InstanceHandle& h) {
  const auto& o = api_->options();
  const std::string ns = ns_of(h, o.namespace_);
  if (auto s = co_await delete_objects(ns, h.id); !s) co_return s;
  const auto deadline = std::chrono::steady_clock::now() + o.delete_timeout;
  const std::string path =
      "/api/v1/namespaces/" + ns + "/pods?labelSelector=" + http::uri_encode(selector_of(kube::kInstanceLabel, h.id));
  for (;;) {
    auto pods = co_await api_->get(path);
    if (!pods) co_return pods.error();
    if (pods->value("items", json::array()).empty()) co_return Status{};
    if (std::chrono::steady_clock::now() > deadline)
      co_return make_error(Code::timeout, "kubernetes: the Pods of " + h.id + " are still there after " +
                                              std::to_string(o.delete_timeout.count()) + " s");
    co_await sleep_for(std::chrono::milliseconds(500));
  }
}

Task<Result<std::vector<InstanceHandle>>> KubernetesProvider::list_tagged(std::string_view tag) {
  const auto& o = api_->options();
  std::map<std::string, InstanceHandle> found;
  for (const char* kind : {"pods", "services", "secrets"}) {
    auto list = co_await api_->get(api_->collection(kind, selector_of(kube::kTagLabel, tag)));
    if (!list) co_return list.error();
    for (const auto& item : list->value("items", json::array())) {
      const json labels = item.value("metadata", json::object()).value("labels", json::object());
      const std::string base = labels.value(std::string(kube::kInstanceLabel), "");
      if (base.empty() || found.count(base)) continue;
      found[base] = InstanceHandle{"kubernetes", base, {{"namespace", o.namespace_}, {"tag", std::string(tag)}}};
    }
  }
  std::vector<InstanceHandle> out;
  for (auto& [_, h] : found) out.push_back(std::move(h));
  co_return out;
}

}  // namespace tsum::providers
