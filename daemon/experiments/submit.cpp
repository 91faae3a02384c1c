#include "daemon/experiments/submit.h"

#include "daemon/runs/admission.h"

#include <algorithm>

namespace tsum::daemon {

boost::asio::awaitable<Result<std::vector<PricedConfig>>> price_configs(const ExperimentSpec& spec,
                                                                        ProviderRegistry& providers,
                                                                        Datasets& datasets) {
  if (auto st = check_datasets(spec, datasets); !st) co_return st.error();
  std::vector<PricedConfig> priced;
  for (const auto& cfg : spec.configs) {
    if (cfg.nodes > 1 && (cfg.provider == "ssh" || cfg.provider == "byo" || cfg.provider == "trace"))
      co_return make_error(Code::invalid_argument,
                           "configs: nodes " + std::to_string(cfg.nodes) + " on '" + cfg.provider + "': " +
                               (cfg.provider == "trace" ? "a trace replays one machine's runs"
                                                        : "each of its machines is named and one of a kind") +
                               "; a multi-node run takes N machines of one type (a cloud, local, slurm)");
    auto* p = providers.get(cfg.provider);
    if (!p) co_return make_error(Code::invalid_argument, providers.unknown(cfg.provider));
    const bool job = std::any_of(spec.workloads.begin(), spec.workloads.end(),
                                 [](const Workload& w) { return w.kind == "job"; });
    if ((cfg.runtime == "docker" || job) && !p->capabilities().docker)
      co_return make_error(Code::invalid_argument,
                           "provider '" + cfg.provider + "' cannot run the docker runtime" + (job ? " (a job runs in Docker)" : "") +
                               (cfg.provider == "local" ? " (no Docker engine is used locally); use native" : ""));
    if (cfg.runtime == "native" && !job && !p->capabilities().native)
      co_return make_error(Code::invalid_argument,
                           "configs: runtime native on '" + cfg.provider + "': it runs containers only; use runtime "
                           "docker with workload.image (the workload image, make workload-image)");
    if (cfg.market == "spot" && !p->capabilities().spot)
      co_return make_error(Code::invalid_argument,
                           "configs: market spot on '" + cfg.provider + "': it sells no spare capacity (spot runs on "
                           "aws, gce, azure and yandex); use on-demand");
    if (cfg.market == "spot" && cfg.nodes > 1 && cfg.dist == "ps-async")
      co_return make_error(Code::invalid_argument,
                           "configs: market spot with dist ps-async: its ranks share no step to checkpoint at, so it "
                           "cannot resume after an interruption; use dist ring or ps");
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
    const auto& offer = offers->front();
    // Local machines share this one's CPUs: a run whose machines need more cores than it has would wait for good.
    if (const int per_node = local_cores_of(cfg.provider, cfg.instance_type); per_node > 0 && cfg.nodes > 1) {
      const providers::Requirements any;
      auto all = co_await p->offers(any);
      int usable = 0;
      if (all)
        for (const auto& o : *all) usable = std::max(usable, local_cores_of(cfg.provider, o.instance_type));
      if (usable > 0 && per_node * cfg.nodes > usable)
        co_return make_error(Code::invalid_argument,
                             "configs: " + std::to_string(cfg.nodes) + " machines of " + cfg.instance_type +
                                 " need " + std::to_string(per_node * cfg.nodes) + " cores, and this machine has " +
                                 std::to_string(usable) + " usable CPUs" +
                                 (spec.workloads.front().kind == "serve" ? " (a serving run is two machines, the "
                                                                           "server and its load client)"
                                                                         : "") +
                                 ": use local-" + std::to_string(std::max(1, usable / cfg.nodes)) + "c");
    }
    for (const auto& w : spec.workloads) {
      const std::string on = "'" + cfg.provider + "' " + cfg.instance_type;
      if (w.device_on(offer.gpus) == "cuda" && offer.gpus == 0)
        co_return make_error(Code::invalid_argument, "workload.device: cuda, but " + on + " has no GPU");
      if (w.precision == "fp16" && w.device_on(offer.gpus) == "cpu")
        co_return make_error(Code::invalid_argument, "workload.precision: fp16 runs on cuda only, and " + on +
                                                         " has no GPU (fp32 or bf16)");
    }
    // A spot run at the spot price where the provider quotes one, else at the on-demand price, which bounds it
    // (every cloud here caps spot at on-demand: Azure's maxPrice -1, EC2's default maximum).
    const double price = cfg.market == "spot" && offer.spot_hourly_price > 0 ? offer.spot_hourly_price : offer.hourly_price;
    priced.push_back({cfg, price, offer.currency, providers::machine_of(offer)});
  }
  co_return priced;
}

}  // namespace tsum::daemon

namespace tsum::daemon {

Status check_datasets(const ExperimentSpec& spec, Datasets& datasets) {
  for (const auto& w : spec.workloads) {
    if (!w.workdir_sha256.empty()) {
      auto folder = datasets.workdir(w.workdir_sha256);
      if (!folder && folder.code() == Code::not_found)
        return make_error(Code::invalid_argument, "workload.workdir: " + folder.error().detail);
      if (!folder) return folder.error();
    }
    if (w.dataset.empty() || !w.dataset_url.empty()) continue;  // none, or one the agent fetches (checked)
    auto d = datasets.get(w.dataset);
    if (!d && d.code() == Code::not_found)
      return make_error(Code::invalid_argument,
                        "workload.dataset: there is no data set '" + w.dataset + "' (GET /v1/datasets lists them)");
    if (!d) return d.error();
    if (auto fits = dataset_fits(w, d->format); !fits) return fits;
  }
  return {};
}

}  // namespace tsum::daemon
