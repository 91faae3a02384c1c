#include "daemon/experiments/presets.h"

#include <algorithm>
#include <map>
#include <optional>

#include "billing/prices/billing_rule.h"
#include "daemon/experiments/experiment_spec.h"

namespace tsum::daemon {

using nlohmann::json;
using providers::Offer;

namespace {

constexpr int kCpuSizes[] = {1, 2, 4, 8, 12, 16, 24};

// The cheapest offer of each provider matching `fits`, per key (e.g. its vCPU or GPU count).
template <class Fits, class Key>
std::vector<Offer> cheapest_per(const std::vector<Offer>& offers, Fits fits, Key key) {
  std::map<std::pair<std::string, int>, Offer> best;
  for (const auto& o : offers) {
    if (o.vcpus <= 0 || !fits(o)) continue;
    auto k = std::make_pair(o.provider, key(o));
    auto it = best.find(k);
    if (it == best.end() || o.hourly_price < it->second.hourly_price) best[k] = o;
  }
  std::vector<Offer> out;
  for (auto& [_, o] : best) out.push_back(o);
  return out;
}

json config(const Offer& o) { return {{"provider", o.provider}, {"instance_type", o.instance_type}}; }

json configs(const std::vector<Offer>& offers) {
  json out = json::array();
  for (const auto& o : offers) out.push_back(config(o));
  return out;
}

json experiment(const std::string& name, const json& workload, const json& cfgs, int repetitions, int deadline_s) {
  return {{"name", name}, {"workload", workload}, {"configs", cfgs}, {"repetitions", repetitions},
          {"deadline", deadline_s}};
}

}  // namespace

std::vector<Preset> presets(const std::vector<Offer>& offers, const std::vector<Dataset>& datasets) {
  std::string cifar;
  for (const auto& d : datasets)
    if (d.format == "cifar10-bin" && (cifar.empty() || d.name < cifar)) cifar = d.name;
  const std::string no_cifar =
      "no cifar10-bin data set is registered: the CIFAR-10 experiment is left out (register one: README, Workloads)";

  const auto cpus = cheapest_per(
      offers, [](const Offer& o) { return o.gpus == 0 && std::ranges::find(kCpuSizes, o.vcpus) != std::end(kCpuSizes); },
      [](const Offer& o) { return o.vcpus; });
  const auto gpus = cheapest_per(offers, [](const Offer& o) { return o.gpus == 1 || o.gpus == 2; },
                                 [](const Offer& o) { return o.gpus; });
  // The optimizers' and the sweep's CPU machine: the local provider's largest, else the cheapest CPU offer.
  std::optional<Offer> cpu_box;
  for (const auto& o : cpus)
    if (o.provider == "local" && (!cpu_box || o.vcpus > cpu_box->vcpus)) cpu_box = o;
  for (const auto& o : cpus)
    if (!cpu_box || (cpu_box->provider != "local" && o.hourly_price < cpu_box->hourly_price)) cpu_box = o;
  std::optional<Offer> one_gpu;
  for (const auto& o : gpus)
    if (o.gpus == 1 && (!one_gpu || o.hourly_price < one_gpu->hourly_price)) one_gpu = o;

  std::vector<Preset> out;
  {
    Preset p{"cpu-vs-gpu", "MNIST and CIFAR-10 CNNs on 1-24 cores and 1-2 GPUs, 10 repetitions (seed 001)", {}, {}};
    std::vector<Offer> all = cpus;
    all.insert(all.end(), gpus.begin(), gpus.end());
    if (all.empty()) p.notes.push_back("no provider offers a machine of those sizes");
    else {
      p.experiments.push_back(experiment("cpu-vs-gpu mnist", {{"model", "mnist_cnn"}, {"dataset", "fashion-mnist"}},
                                         configs(all), 10, 3600));
      if (cifar.empty()) p.notes.push_back(no_cifar);
      else
        p.experiments.push_back(
            experiment("cpu-vs-gpu cifar10", {{"model", "cifar10_cnn"}, {"dataset", cifar}}, configs(all), 10, 7200));
    }
    if (gpus.empty()) p.notes.push_back("no configured provider offers 1 or 2 GPUs: CPU configurations only");
    out.push_back(std::move(p));
  }
  {
    Preset p{"optimizers", "the CIFAR-10 CNN with each of the 8 optimizers, 3 repetitions (seed 002)", {}, {}};
    json optimizers = json::array();
    for (auto o : kOptimizers) optimizers.push_back(std::string(o));
    if (cifar.empty()) p.notes.push_back(no_cifar);
    else if (!cpu_box) p.notes.push_back("no CPU offer to run it on");
    else
      p.experiments.push_back(experiment("optimizers", {{"model", "cifar10_cnn"}, {"dataset", cifar}, {"optimizer", optimizers}},
                                         json::array({config(*cpu_box)}), 3, 7200));
    out.push_back(std::move(p));
  }
  {
    Preset p{"inference", "ResNet-50 inference throughput and latency against batch size, sync and async (seed 001)", {}, {}};
    json cfgs = json::array();
    if (cpu_box) cfgs.push_back(config(*cpu_box));
    if (one_gpu) cfgs.push_back(config(*one_gpu));
    else p.notes.push_back("no configured provider offers a GPU: CPU only");
    if (cfgs.empty()) p.notes.push_back("no offer to run it on");
    else
      p.experiments.push_back(experiment("inference",
                                         {{"kind", "infer"}, {"model", "resnet50"}, {"batch", {1, 2, 4, 8, 16, 32, 64}},
                                          {"mode", {"sync", "async"}}, {"source", "files"}},
                                         cfgs, 3, 3600));
    out.push_back(std::move(p));
  }
  return out;
}

json preset_summary(const Preset& p, const std::vector<Offer>& offers) {
  int runs = 0;
  std::string currency = "USD";
  json worst = json::object();
  for (const auto& body : p.experiments) {
    auto spec = experiment_spec_from_json(body);
    if (!spec) continue;  // the route refuses it when asked to create it
    for (size_t v = 0; v < spec->variants(); ++v) {
      const auto& cfg = spec->config_of(v);
      auto offer = std::ranges::find_if(offers, [&](const Offer& o) {
        return o.provider == cfg.provider && o.instance_type == cfg.instance_type;
      });
      if (offer == offers.end()) continue;
      currency = offer->currency;
      runs += spec->repetitions;
      for (const auto& rule : spec->billing)
        worst[rule.name] = worst.value(rule.name, 0.0) +
                           spec->repetitions * billing::cost(rule, offer->hourly_price, spec->deadline_s.value_or(3600));
    }
  }
  json experiments = json::array();
  for (const auto& e : p.experiments) experiments.push_back(e);
  return {{"name", p.name}, {"description", p.description}, {"experiments", experiments}, {"notes", p.notes},
          {"runs", runs}, {"worst_case", worst}, {"currency", currency}};
}

}  // namespace tsum::daemon
