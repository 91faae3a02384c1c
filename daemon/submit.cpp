#include "daemon/submit.h"

namespace tsum::daemon {

boost::asio::awaitable<Result<std::vector<PricedConfig>>> price_configs(const ExperimentSpec& spec,
                                                                        ProviderRegistry& providers) {
  std::vector<PricedConfig> priced;
  for (const auto& cfg : spec.configs) {
    auto* p = providers.get(cfg.provider);
    if (!p) co_return make_error(Code::invalid_argument, "provider '" + cfg.provider + "' is not configured");
    if (cfg.runtime == "docker" && !p->capabilities().docker)
      co_return make_error(Code::invalid_argument,
                           "provider '" + cfg.provider + "' cannot run the docker runtime" +
                               (cfg.provider == "local" ? " (no Docker engine is used locally); use native" : ""));
    const providers::Requirements wanted{.instance_type = cfg.instance_type};
    auto offers = co_await p->offers(wanted);
    if (!offers) co_return offers.error();
    if (offers->empty()) {
      const providers::Requirements any;
      auto all = co_await p->offers(any);
      std::string names;
      if (all)
        for (const auto& o : *all) names += (names.empty() ? "" : ", ") + o.instance_type;
      co_return make_error(Code::invalid_argument, "provider '" + cfg.provider + "' does not offer '" +
                                                       cfg.instance_type + "' (offers: " + names + ")");
    }
    priced.push_back({cfg, offers->front().hourly_price, offers->front().currency});
  }
  co_return priced;
}

}  // namespace tsum::daemon
