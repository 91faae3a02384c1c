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
  std::vector<providers::Provider*> all() const {
    std::vector<providers::Provider*> out;
    for (const auto& [_, p] : providers_) out.push_back(p.get());
    return out;
  }

 private:
  std::map<std::string, std::unique_ptr<providers::Provider>> providers_;
};

}  // namespace tsum::daemon
