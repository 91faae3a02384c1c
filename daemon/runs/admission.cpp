#include "daemon/runs/admission.h"

#include <charconv>
#include <set>

#include "providers/local/local_provider.h"

namespace tsum::daemon {

int local_cores_of(const std::string& provider, const std::string& instance_type) {
  return provider == "local" ? providers::LocalProvider::cores_of(instance_type) : 0;
}

std::vector<int64_t> admit(const std::vector<QueueEntry>& queued, const std::vector<QueueEntry>& live,
                           const QueueLimits& limits) {
  int running = 0, cores_used = 0;
  std::map<std::string, int> by_provider, by_type, by_ssh_host;
  std::map<int64_t, int> by_experiment;
  auto take = [&](const QueueEntry& e) {
    ++running;
    by_provider[e.provider] += e.nodes;
    by_type[e.instance_type] += e.nodes;
    ++by_experiment[e.experiment_id];
    cores_used += e.nodes * local_cores_of(e.provider, e.instance_type);
    if (e.provider == "ssh") ++by_ssh_host[e.instance_type];
  };
  for (const auto& e : live) take(e);
  auto fits = [&](const QueueEntry& e) {
    if (auto it = limits.per_provider.find(e.provider);
        it != limits.per_provider.end() && by_provider[e.provider] + e.nodes > it->second)
      return false;
    if (auto it = limits.per_type.find(e.instance_type);
        it != limits.per_type.end() && by_type[e.instance_type] + e.nodes > it->second)
      return false;
    if (e.provider == "ssh" && by_ssh_host[e.instance_type] > 0) return false;
    int cores = e.nodes * local_cores_of(e.provider, e.instance_type);
    return limits.local_cores <= 0 || cores == 0 || cores_used + cores <= limits.local_cores;
  };

  std::vector<int64_t> out;
  std::set<size_t> taken;
  while (running < limits.global) {
    size_t best = queued.size();
    for (size_t i = 0; i < queued.size(); ++i) {
      if (taken.count(i) || !fits(queued[i])) continue;
      if (best == queued.size() || by_experiment[queued[i].experiment_id] < by_experiment[queued[best].experiment_id])
        best = i;
    }
    if (best == queued.size()) break;
    taken.insert(best);
    take(queued[best]);
    out.push_back(queued[best].run_id);
  }
  return out;
}

void default_caps(QueueLimits& limits, const std::vector<std::string>& providers) {
  for (const auto& p : providers)
    if (p != "local" && p != "ssh" && p != "trace" && limits.per_provider.try_emplace(p, kDefaultProviderCap).second)
      limits.defaulted.insert(p);
}

std::string describe_limits(const QueueLimits& limits, const std::vector<std::string>& providers) {
  std::string out = "runs at once: " + std::to_string(limits.global) + " in all";
  for (const auto& p : providers) {
    out += "; " + p + " ";
    if (auto it = limits.per_provider.find(p); it != limits.per_provider.end())
      out += std::to_string(it->second) + (it->second == 1 ? " machine" : " machines");
    else if (p == "local")
      out += limits.local_cores > 0 ? "by its " + std::to_string(limits.local_cores) + " cores" : "uncapped";
    else if (p == "ssh")
      out += "one run a host";
    else
      out += "uncapped";
  }
  if (!limits.per_type.empty()) {
    out += "; types";
    for (const auto& [t, n] : limits.per_type) out += " " + t + "=" + std::to_string(n);
  }
  return out;
}

bool parse_caps(const std::string& text, std::map<std::string, int>* out) {
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() : comma + 1;
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return false;
    int n = 0;
    auto [p, ec] = std::from_chars(item.data() + eq + 1, item.data() + item.size(), n);
    if (ec != std::errc() || p != item.data() + item.size() || n < 1) return false;
    (*out)[item.substr(0, eq)] = n;
  }
  return true;
}

}  // namespace tsum::daemon
