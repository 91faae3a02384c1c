#include "providers/kubernetes/kube_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>

#include "common/json_util.h"
#include "providers/http/codec.h"

namespace tsum::providers::kube {

using nlohmann::json;

namespace {

std::string text(const json& j, std::string_view key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& at(const json& j, std::string_view key) {
  static const json empty = json::object();
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}

const json& items_of(const json& list) {
  static const json none = json::array();
  auto it = list.find("items");
  return it != list.end() && it->is_array() ? *it : none;
}

Resources resources_of(const json& m) {
  Resources r;
  if (auto v = parse_quantity(text(m, "cpu"))) r.cpu = *v;
  if (auto v = parse_quantity(text(m, "memory"))) r.memory = *v;
  if (auto v = parse_quantity(text(m, kGpuResource))) r.gpus = *v;
  return r;
}

// A Pod's requests: its containers' (a container's limits stand in where it requests nothing, as the API
// server defaults them).
Resources pod_requests(const json& pod) {
  Resources total;
  auto cs = at(pod, "spec").find("containers");
  if (cs == at(pod, "spec").end() || !cs->is_array()) return total;
  for (const auto& c : *cs) {
    const json& res = at(c, "resources");
    const json& req = at(res, "requests").empty() ? at(res, "limits") : at(res, "requests");
    Resources r = resources_of(req);
    if (r.gpus == 0) r.gpus = resources_of(at(res, "limits")).gpus;  // extended resources: limits only is usual
    total.cpu += r.cpu, total.memory += r.memory, total.gpus += r.gpus;
  }
  return total;
}

bool holds_resources(const json& pod) {
  const std::string phase = text(at(pod, "status"), "phase");
  return !text(at(pod, "spec"), "nodeName").empty() && phase != "Succeeded" && phase != "Failed";
}

// A Pod every node of a pool has: a DaemonSet's, or a static Pod (its mirror is owned by the Node).
bool node_own(const json& pod) {
  auto refs = at(pod, "metadata").find("ownerReferences");
  if (refs == at(pod, "metadata").end() || !refs->is_array()) return false;
  for (const auto& r : *refs)
    if (text(r, "kind") == "DaemonSet" || text(r, "kind") == "Node") return true;
  return false;
}

std::string dns_label(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (ok)
      out += c;
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::optional<double> parse_quantity(std::string_view q) {
  if (q.empty()) return std::nullopt;
  std::size_t i = 0;
  if (q[i] == '+' || q[i] == '-') ++i;
  while (i < q.size() && ((q[i] >= '0' && q[i] <= '9') || q[i] == '.')) ++i;
  // A decimal exponent ("1e9", "1E3"), not to be read as the suffix E (exa) when digits follow it.
  if (i + 1 < q.size() && (q[i] == 'e' || q[i] == 'E') &&
      ((q[i + 1] >= '0' && q[i + 1] <= '9') || q[i + 1] == '-' || q[i + 1] == '+')) {
    ++i;
    if (q[i] == '-' || q[i] == '+') ++i;
    while (i < q.size() && q[i] >= '0' && q[i] <= '9') ++i;
  }
  const std::string number(q.substr(0, i));
  if (number.empty() || number == "+" || number == "-") return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(v)) return std::nullopt;
  static const std::pair<std::string_view, double> kSuffixes[] = {{"", 1},
                                                                  {"m", 1e-3},
                                                                  {"k", 1e3},
                                                                  {"M", 1e6},
                                                                  {"G", 1e9},
                                                                  {"T", 1e12},
                                                                  {"P", 1e15},
                                                                  {"E", 1e18},
                                                                  {"Ki", 1024.0},
                                                                  {"Mi", 1048576.0},
                                                                  {"Gi", 1073741824.0},
                                                                  {"Ti", 1099511627776.0},
                                                                  {"Pi", 1125899906842624.0},
                                                                  {"Ei", 1152921504606846976.0},
                                                                  {"n", 1e-9},
                                                                  {"u", 1e-6}};
  const std::string_view suffix = q.substr(i);
  for (const auto& [s, f] : kSuffixes)
    if (s == suffix) return v * f;
  return std::nullopt;
}

std::optional<double> parse_time(std::string_view t) {
  // RFC 3339 as the API server writes it: YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM), nothing else.
  auto digits = [&](std::size_t at, std::size_t n) -> std::optional<int> {
    if (at + n > t.size()) return std::nullopt;
    int v = 0;
    for (std::size_t k = at; k < at + n; ++k) {
      if (t[k] < '0' || t[k] > '9') return std::nullopt;
      v = v * 10 + (t[k] - '0');
    }
    return v;
  };
  auto sep = [&](std::size_t at, char c) { return at < t.size() && t[at] == c; };
  const auto year = digits(0, 4), mon = digits(5, 2), day = digits(8, 2), hour = digits(11, 2), min = digits(14, 2),
             sec = digits(17, 2);
  if (!year || !mon || !day || !hour || !min || !sec || !sep(4, '-') || !sep(7, '-') ||
      !(sep(10, 'T') || sep(10, 't')) || !sep(13, ':') || !sep(16, ':') || *mon < 1 || *mon > 12 || *day < 1 ||
      *day > 31 || *hour > 23 || *min > 59 || *sec > 60)
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *mon - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *min;
  tm.tm_sec = *sec;
  double out = static_cast<double>(timegm(&tm));
  std::size_t i = 19;
  if (sep(i, '.')) {
    std::size_t j = i + 1;
    double scale = 0.1;
    while (j < t.size() && t[j] >= '0' && t[j] <= '9') out += (t[j++] - '0') * scale, scale /= 10;
    if (j == i + 1) return std::nullopt;
    i = j;
  }
  if (i + 1 == t.size() && (t[i] == 'Z' || t[i] == 'z')) return out;
  if (i + 6 != t.size() || !(t[i] == '+' || t[i] == '-') || !sep(i + 3, ':')) return std::nullopt;
  const auto oh = digits(i + 1, 2), om = digits(i + 4, 2);
  if (!oh || !om || *oh > 23 || *om > 59) return std::nullopt;
  const int sign = t[i] == '+' ? 1 : -1;
  return out - sign * (*oh * 3600 + *om * 60);
}

Result<std::vector<KubeNode>> parse_nodes(const json& list) {
  if (!list.is_object() || text(list, "kind") != "NodeList")
    return make_error(Code::invalid_argument, "the API server's node list is not a NodeList");
  std::vector<KubeNode> out;
  for (const auto& n : items_of(list)) {
    KubeNode node;
    const json& meta = at(n, "metadata");
    const json& labels = at(meta, "labels");
    node.name = text(meta, "name");
    node.allocatable = resources_of(at(at(n, "status"), "allocatable"));
    for (auto key : kGpuProductLabels)
      if (node.gpu_product = text(labels, key); !node.gpu_product.empty()) break;
    node.instance_type = text(labels, "node.kubernetes.io/instance-type");
    if (node.instance_type.empty()) node.instance_type = text(labels, "beta.kubernetes.io/instance-type");
    bool ready = false;
    if (auto cs = at(n, "status").find("conditions"); cs != at(n, "status").end() && cs->is_array())
      for (const auto& c : *cs)
        if (text(c, "type") == "Ready") ready = text(c, "status") == "True";
    bool tainted = false;
    if (auto ts = at(n, "spec").find("taints"); ts != at(n, "spec").end() && ts->is_array())
      for (const auto& t : *ts)
        if (text(t, "effect") == "NoSchedule" || text(t, "effect") == "NoExecute") tainted = true;
    const bool cordoned = json_or(at(n, "spec"), "unschedulable", false);
    node.schedulable = ready && !tainted && !cordoned;
    if (!node.name.empty()) out.push_back(std::move(node));
  }
  return out;
}

std::map<std::string, Resources> requests_by_node(const json& pods, PodsOf which) {
  std::map<std::string, Resources> out;
  for (const auto& p : items_of(pods)) {
    if (!holds_resources(p) || node_own(p) != (which == PodsOf::node)) continue;
    const Resources r = pod_requests(p);
    Resources& sum = out[text(at(p, "spec"), "nodeName")];
    sum.cpu += r.cpu, sum.memory += r.memory, sum.gpus += r.gpus;
  }
  return out;
}

std::vector<KubeNodeShape> node_shapes(const std::vector<KubeNode>& nodes, const json& pods) {
  const auto own = requests_by_node(pods, PodsOf::node);
  const auto runs = requests_by_node(pods, PodsOf::workloads);
  std::map<std::string, KubeNodeShape> shapes;
  std::map<std::string, std::vector<std::pair<Resources, Resources>>> room;  // per shape: (apart from others, now)
  for (const auto& n : nodes) {
    if (!n.schedulable) continue;
    std::string name = n.instance_type;
    if (name.empty()) {
      name = number_text(std::floor(n.allocatable.cpu * 100 + 0.5) / 100) + "c-" +
             std::to_string(static_cast<long>(n.allocatable.memory / 1073741824.0)) + "g";
      if (n.allocatable.gpus > 0)
        name += "-" + std::to_string(static_cast<int>(n.allocatable.gpus)) + "x" +
                (n.gpu_product.empty() ? std::string("gpu") : dns_label(n.gpu_product));
    }
    auto taken = [](const std::map<std::string, Resources>& m, const std::string& node) {
      auto it = m.find(node);
      return it == m.end() ? Resources{} : it->second;
    };
    const Resources o = taken(own, n.name), t = taken(runs, n.name);
    const Resources apart{n.allocatable.cpu - o.cpu, n.allocatable.memory - o.memory, n.allocatable.gpus - o.gpus};
    const Resources now{apart.cpu - t.cpu, apart.memory - t.memory, apart.gpus - t.gpus};
    KubeNodeShape& s = shapes[name];
    s.name = name;
    s.from_label = !n.instance_type.empty();
    s.nodes += 1;
    s.node_names.push_back(n.name);
    if (s.gpu_type.empty()) s.gpu_type = n.gpu_product;
    room[name].push_back({apart, now});
  }
  std::vector<KubeNodeShape> out;
  for (auto& [name, s] : shapes) {
    Resources best;
    for (const auto& [apart, now] : room[name])
      if (apart.cpu > best.cpu || (apart.cpu == best.cpu && apart.memory > best.memory)) best = apart;
    s.vcpus = static_cast<int>(std::floor(best.cpu + 1e-9));
    s.memory_gib = std::floor(best.memory / 1048576.0) / 1024.0;
    s.gpus = static_cast<int>(std::floor(best.gpus + 1e-9));
    for (const auto& [apart, now] : room[name])
      if (now.cpu + 1e-9 >= s.vcpus && now.memory / 1073741824.0 + 1e-9 >= s.memory_gib && now.gpus + 1e-9 >= s.gpus)
        ++s.free;
    if (s.vcpus > 0) out.push_back(s);
  }
  return out;
}

PodState parse_pod(const json& pod) {
  PodState s;
  const json& meta = at(pod, "metadata");
  const json& status = at(pod, "status");
  s.name = text(meta, "name");
  try {
    s.node = std::stoi(text(at(meta, "labels"), kNodeLabel));
  } catch (...) {
    s.node = 0;
  }
  s.phase = text(status, "phase");
  s.deleting = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  s.reason = text(status, "reason");
  s.message = text(status, "message");
  s.pod_ip = text(status, "podIP");
  s.created = parse_time(text(meta, "creationTimestamp"));
  if (auto cs = status.find("conditions"); cs != status.end() && cs->is_array())
    for (const auto& c : *cs)
      if (text(c, "type") == "PodScheduled" && text(c, "status") == "False" && text(c, "reason") == "Unschedulable")
        s.unschedulable = text(c, "message");
  if (auto cs = status.find("containerStatuses"); cs != status.end() && cs->is_array() && !cs->empty()) {
    const json& state = at((*cs)[0], "state");
    if (const json& w = at(state, "waiting"); !w.empty()) {
      s.waiting_reason = text(w, "reason");
      s.waiting_message = text(w, "message");
    }
    if (const json& r = at(state, "running"); !r.empty()) s.started = parse_time(text(r, "startedAt"));
    if (const json& t = at(state, "terminated"); !t.empty()) {
      if (auto c = t.find("exitCode"); c != t.end() && c->is_number_integer()) s.exit_code = c->get<int>();
      s.terminated_reason = text(t, "reason");
      s.started = parse_time(text(t, "startedAt"));
    }
  }
  return s;
}

bool image_pull_failure(std::string_view r) {
  return r == "ErrImagePull" || r == "ImagePullBackOff" || r == "InvalidImageName" || r == "ErrImageNeverPull" ||
         r == "RegistryUnavailable";
}

std::string object_base_name(std::string_view token) {
  std::string base = "tsum-" + dns_label(token);
  if (base.size() > 56) base = base.substr(0, 47) + "-" + http::sha256_hex(token).substr(0, 8);
  while (base.back() == '-') base.pop_back();
  return base;
}

std::string cpu_quantity(double cores) {
  const long milli = std::lround(cores * 1000);
  return milli % 1000 == 0 ? std::to_string(milli / 1000) : std::to_string(milli) + "m";
}

std::string memory_quantity(double bytes) { return std::to_string(static_cast<long long>(bytes / 1048576.0)) + "Mi"; }

json labels_of(const PodPlan& plan) {
  return {{std::string(kManagedBy), "tsum"},
          {std::string(kTagLabel), plan.tag},
          {std::string(kInstanceLabel), plan.base},
          {std::string(kRunLabel), plan.run_id}};
}

json secret_manifest(const PodPlan& plan, const std::map<std::string, std::string>& env) {
  json data = json::object();
  for (const auto& [k, v] : env) data[k] = v;
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", {{"name", plan.base}, {"namespace", plan.namespace_}, {"labels", labels_of(plan)}}},
          {"type", "Opaque"},
          {"stringData", data}};
}

json service_manifest(const PodPlan& plan) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", plan.base}, {"namespace", plan.namespace_}, {"labels", labels_of(plan)}}},
          {"spec",
           {{"clusterIP", "None"},
            {"publishNotReadyAddresses", true},
            {"selector", {{std::string(kInstanceLabel), plan.base}}}}}};
}

json pod_manifest(const PodPlan& plan, int node) {
  json labels = labels_of(plan);
  labels[std::string(kNodeLabel)] = std::to_string(node);
  json amounts = {{"cpu", cpu_quantity(plan.requests.cpu)}, {"memory", memory_quantity(plan.requests.memory)}};
  if (plan.requests.gpus > 0) amounts[std::string(kGpuResource)] = std::to_string(static_cast<int>(plan.requests.gpus));
  const json pod_ip = {{"fieldRef", {{"fieldPath", "status.podIP"}}}};
  json env = json::array({{{"name", "TSUM_NODE"}, {"value", std::to_string(node)}},
                          {{"name", "TSUM_NODE_ADDRESS"}, {"valueFrom", pod_ip}}});
  json container = {{"name", "tsum"},
                    {"image", plan.image},
                    {"imagePullPolicy", "IfNotPresent"},
                    {"command", {"/bin/sh", "-c", plan.bootstrap}},
                    {"workingDir", "/tsum"},
                    {"envFrom", {{{"secretRef", {{"name", plan.base}}}}}},
                    {"env", env},
                    {"resources", {{"requests", amounts}, {"limits", amounts}}},
                    {"volumeMounts", {{{"name", "work"}, {"mountPath", "/tsum"}}}}};
  json spec = {{"restartPolicy", "Never"},
               {"automountServiceAccountToken", false},
               {"terminationGracePeriodSeconds", 10},
               {"containers", {container}},
               {"volumes", {{{"name", "work"}, {"emptyDir", json::object()}}}}};
  if (plan.active_deadline_s > 0) spec["activeDeadlineSeconds"] = plan.active_deadline_s;
  if (plan.nodes > 1) {
    spec["hostname"] = plan.base + "-" + std::to_string(node);
    spec["subdomain"] = plan.base;
  }
  if (!plan.image_pull_secret.empty()) spec["imagePullSecrets"] = {{{"name", plan.image_pull_secret}}};
  if (!plan.instance_type_label.empty()) {
    spec["nodeSelector"] = {{"node.kubernetes.io/instance-type", plan.instance_type_label}};
  } else if (!plan.node_names.empty()) {
    json field = {{"key", "metadata.name"}, {"operator", "In"}, {"values", plan.node_names}};
    json term = {{"matchFields", json::array({field})}};
    json required = {{"nodeSelectorTerms", json::array({term})}};
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = required;
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", plan.base + "-" + std::to_string(node)}, {"namespace", plan.namespace_}, {"labels", labels}}},
          {"spec", spec}};
}

std::string status_message(std::string_view body) {
  auto j = json::parse(body, nullptr, false);
  if (j.is_object() && text(j, "kind") == "Status" && !text(j, "message").empty()) return text(j, "message");
  return std::string(body.substr(0, 300));
}

}  // namespace tsum::providers::kube
