#include "daemon/config/offers_cmd.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "billing/prices/catalog.h"
#include "daemon/config/config.h"
#include "providers/kubernetes/kubernetes_provider.h"
#include "providers/slurm/slurm_provider.h"
#include "providers/ssh/ssh_provider.h"

namespace tsum::daemon {

namespace {

std::string today_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// The fetched offers as a price refresh, merged into the shipped catalog of the provider where there is one.
Result<billing::Catalog> refreshed_catalog(const std::string& provider, const std::vector<providers::Offer>& offers) {
  billing::Catalog update;
  update.provider = provider;
  update.currency = offers.empty() ? "USD" : offers.front().currency;
  update.source = "tsumd offers: " + provider + "'s price API";
  update.as_of = today_utc();
  for (const auto& o : offers) {
    if (o.currency != update.currency)
      return make_error(Code::invalid_argument, provider + " priced offers in both " + update.currency + " and " + o.currency);
    billing::CatalogOffer c;
    c.instance_type = o.instance_type;
    c.vcpus = o.vcpus;
    c.memory_gib = o.memory_gib;
    c.gpus = o.gpus;
    c.gpu_type = o.gpu_type;
    c.hourly = o.hourly_price;
    c.region = o.region;
    c.billing = o.billing_rule;
    if (o.spot_hourly_price > 0) c.spot_hourly = o.spot_hourly_price;
    update.offers.push_back(std::move(c));
  }
  auto shipped = find_embedded(billing::embedded_catalogs(), provider + ".json");
  if (shipped.empty()) return update;
  auto base = billing::parse_catalog(shipped);
  if (!base) return base.error();
  return billing::merge_prices(*base, update);
}

void print_table(const std::vector<providers::Offer>& all) {
  std::printf("%-8s %-24s %6s %5s %12s %-4s  %-20s %-14s %s\n", "PROVIDER", "TYPE", "VCPUS", "GPUS", "PER HOUR", "CUR",
              "BILLING", "REGION", "IMAGE");
  for (const auto& o : all)
    std::printf("%-8s %-24s %6d %5d %12.4f %-4s  %-20s %-14s %s\n", o.provider.c_str(), o.instance_type.c_str(), o.vcpus,
                o.gpus, o.hourly_price, o.currency.c_str(), o.billing_rule.c_str(), o.region.c_str(),
                o.image.empty() ? "-" : o.image.c_str());
}

}  // namespace

int offers_command(const std::string& config_path, const std::string& only, bool json, const std::string& catalog_out) {
  auto config = load_config(config_path);
  if (!config) {
    std::cerr << "tsumd: " << config.error().detail << "\n";
    return 1;
  }
  auto providers = make_cloud_providers(config->clouds);
  if (!providers) {
    std::cerr << "tsumd: " << providers.error().detail << "\n";
    return 1;
  }
  // Listing an ssh host's offer touches neither the host nor a state dir.
  if (config->ssh) providers->push_back(std::make_unique<providers::SshProvider>(*config->ssh));
  if (config->kubernetes) providers->push_back(std::make_unique<providers::KubernetesProvider>(*config->kubernetes));
  // The Slurm provider asks sinfo on the login node; its known_hosts and logs go to a temporary state dir.
  std::string slurm_state;
  if (config->slurm) {
    char tmpl[] = "/tmp/tsum-offers-XXXXXX";
    if (const char* made = mkdtemp(tmpl)) slurm_state = made;
    config->slurm->state_dir = slurm_state;
    providers->push_back(std::make_unique<providers::SlurmProvider>(*config->slurm));
  }
  struct RemoveDir {
    std::string path;
    ~RemoveDir() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
  } remove_state{slurm_state};
  std::erase_if(*providers, [&](const auto& p) { return !only.empty() && p->name() != only; });
  if (providers->empty()) {
    std::cerr << "tsumd: " << (only.empty() ? "the config file configures no provider" : "the config file configures no '" + only + "'") << "\n";
    return 2;
  }

  std::vector<providers::Offer> all;
  nlohmann::json errors = nlohmann::json::array();  // {"provider", "detail"} per provider whose offers() failed
  boost::asio::io_context io;
  boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> {
    const providers::Requirements any;
    for (auto& p : *providers) {
      auto o = co_await p->offers(any);
      if (!o) {
        std::cerr << "tsumd: " << p->name() << ": " << o.error().detail << "\n";
        errors.push_back({{"provider", std::string(p->name())}, {"detail", o.error().detail}});
        continue;
      }
      all.insert(all.end(), o->begin(), o->end());
    }
  }, boost::asio::detached);
  io.run();
  const int rc = errors.empty() ? 0 : 1;

  if (!catalog_out.empty() && rc == 0) {
    auto catalog = refreshed_catalog(only, all);
    std::ofstream out(catalog_out);
    if (!catalog || !(out << billing::serialize_catalog(*catalog))) {
      std::cerr << "tsumd: --catalog-out " << catalog_out << ": "
                << (catalog ? std::string("cannot be written") : catalog.error().detail) << "\n";
      return 1;
    }
  }
  if (json) {
    nlohmann::json offers = nlohmann::json::array();
    for (const auto& o : all)
      offers.push_back({{"provider", o.provider}, {"instance_type", o.instance_type}, {"vcpus", o.vcpus},
                     {"memory_gib", o.memory_gib > 0 ? nlohmann::json(o.memory_gib) : nlohmann::json(nullptr)},
                     {"gpus", o.gpus}, {"gpu_type", o.gpu_type},
                     {"hourly_price", o.hourly_price}, {"spot_hourly_price", o.spot_hourly_price},
                     {"currency", o.currency}, {"region", o.region}, {"billing_rule", o.billing_rule}, {"note", o.note},
                        {"image", o.image}});
    std::cout << nlohmann::json{{"offers", offers}, {"errors", errors}}.dump(2) << "\n";
  } else {
    print_table(all);
  }
  return rc;
}

}  // namespace tsum::daemon
