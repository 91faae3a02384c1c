// The providers this daemon is configured with, by name. Owns them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "providers/provider.h"

namespace tsum::daemon {

class ProviderRegistry {
 public:
  void add(std::unique_ptr<providers::Provider> p) {
    std::string n(p->name());
    providers_[n] = std::move(p);
  }
  providers::Provider* get(std::string_view name) const {
    auto it = providers_.find(std::string(name));
    return it == providers_.end() ? nullptr : it->second.get();
  }
  // "provider 'NAME' is not configured (configured: a, b)": what an unknown name is told.
  std::string unknown(std::string_view name) const {
    std::string names;
    for (const auto& [n, _] : providers_) names += (names.empty() ? "" : ", ") + n;
    return "provider '" + std::string(name) + "' is not configured (configured: " + names + ")";
  }
  std::vector<providers::Provider*> all() const {
    std::vector<providers::Provider*> out;
    for (const auto& [_, p] : providers_) out.push_back(p.get());
    return out;
  }

 private:
  std::map<std::string, std::unique_ptr<providers::Provider>> providers_;
};

}  // namespace tsum::daemon
