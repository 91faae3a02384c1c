#include "billing/catalog.h"

#include <nlohmann/json.hpp>

namespace tsum::billing {

const CatalogOffer* Catalog::find(std::string_view instance_type) const {
  for (const auto& o : offers)
    if (o.instance_type == instance_type) return &o;
  return nullptr;
}

std::optional<double> Catalog::hourly_price(std::string_view instance_type, int vcpus) const {
  if (const auto* o = find(instance_type)) return o->hourly;
  if (per_vcpu_hourly) return *per_vcpu_hourly * vcpus;
  return std::nullopt;
}

Result<Catalog> parse_catalog(std::string_view json_text) {
  try {
    auto j = nlohmann::json::parse(json_text);
    Catalog c;
    c.provider = j.at("provider").get<std::string>();
    c.currency = j.value("currency", "USD");
    c.source = j.at("source").get<std::string>();
    c.as_of = j.at("as_of").get<std::string>();
    c.note = j.value("note", "");
    if (j.contains("per_vcpu_hourly") && !j["per_vcpu_hourly"].is_null())
      c.per_vcpu_hourly = j["per_vcpu_hourly"].get<double>();
    for (const auto& o : j.value("offers", nlohmann::json::array())) {
      CatalogOffer off;
      off.instance_type = o.at("instance_type").get<std::string>();
      off.vcpus = o.value("vcpus", 0);
      off.memory_gib = o.value("memory_gib", 0.0);
      off.gpus = o.value("gpus", 0);
      off.gpu_type = o.value("gpu_type", "");
      off.hourly = o.at("hourly").get<double>();
      if (o.contains("spot_hourly") && !o["spot_hourly"].is_null()) off.spot_hourly = o["spot_hourly"].get<double>();
      off.region = o.value("region", "");
      off.emulates = o.value("emulates", "");
      if (off.hourly < 0) return make_error(Code::invalid_argument, "catalog: negative price for " + off.instance_type);
      c.offers.push_back(std::move(off));
    }
    return c;
  } catch (const std::exception& e) {
    return make_error(Code::invalid_argument, std::string("catalog: ") + e.what());
  }
}

}  // namespace tsum::billing
