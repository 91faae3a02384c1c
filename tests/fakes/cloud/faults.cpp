#include "tests/fakes/cloud/faults.h"

#include <charconv>

namespace tsum::providers::fake_cloud {

namespace {

std::optional<FaultKind> kind_of(std::string_view s) {
  if (s == "429") return FaultKind::throttle_429;
  if (s == "503") return FaultKind::unavailable_503;
  if (s == "500") return FaultKind::internal_500;
  if (s == "timeout") return FaultKind::timeout;
  if (s == "lost") return FaultKind::lost;
  return std::nullopt;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    auto at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

}  // namespace

Result<std::vector<Fault>> parse_faults(std::string_view spec) {
  std::vector<Fault> out;
  if (spec.empty()) return out;
  for (std::string_view entry : split(spec, ',')) {
    auto bad = [&](const char* why) {
      return make_error(Code::invalid_argument, "fault '" + std::string(entry) + "': " + why +
                                                    " (want METHOD:429|503|500|timeout|lost[:COUNT])");
    };
    auto parts = split(entry, ':');
    if (parts.size() < 2 || parts.size() > 3 || parts[0].empty()) return bad("malformed");
    auto kind = kind_of(parts[1]);
    if (!kind) return bad("unknown kind");
    int count = 1;
    if (parts.size() == 3) {
      auto [p, ec] = std::from_chars(parts[2].data(), parts[2].data() + parts[2].size(), count);
      if (ec != std::errc() || p != parts[2].data() + parts[2].size() || count < 1) return bad("count must be a positive integer");
    }
    out.push_back({std::string(parts[0]), *kind, count});
  }
  return out;
}

void FaultPlan::add(const Fault& f) {
  std::lock_guard lock(mu_);
  faults_.push_back(f);
}

std::optional<FaultKind> FaultPlan::take(std::string_view method) {
  std::lock_guard lock(mu_);
  for (std::string_view want : {method, std::string_view("*")}) {
    for (auto it = faults_.begin(); it != faults_.end(); ++it) {
      if (it->method != want) continue;
      FaultKind k = it->kind;
      if (--it->count == 0) faults_.erase(it);
      return k;
    }
  }
  return std::nullopt;
}

int FaultPlan::pending() const {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& f : faults_) n += f.count;
  return n;
}

}  // namespace tsum::providers::fake_cloud
