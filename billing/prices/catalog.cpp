#include "billing/prices/catalog.h"

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "common/json_util.h"

namespace tsum::billing {

using nlohmann::json;

namespace {

const std::set<std::string> kCatalogFields = {"provider", "currency", "source",          "as_of",
                                              "note",     "billing",  "per_vcpu_hourly", "offers"};
const std::set<std::string> kOfferFields = {"instance_type", "vcpus",  "memory_gib", "gpus",    "gpu_type",
                                            "cpu_family",    "hourly", "spot_hourly", "monthly", "region",
                                            "billing",       "emulates", "source",    "as_of"};

Status reject_unknown(const json& j, const std::set<std::string>& known, const std::string& at) {
  for (const auto& [key, _] : j.items())
    if (!known.contains(key)) return make_error(Code::invalid_argument, "catalog: " + at + "unknown field '" + key + "'");
  return {};
}

std::optional<double> opt_number(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<double>();
}

Status check_price(const std::string& type, const char* what, std::optional<double> v, bool allow_zero) {
  if (!v) return {};
  if (!std::isfinite(*v) || *v < 0 || (!allow_zero && *v == 0))
    return make_error(Code::invalid_argument, "catalog: " + std::string(what) + " of " + type + " must be " +
                                                  (allow_zero ? ">= 0" : "> 0"));
  return {};
}

// Throws nlohmann's type errors for wrong types; parse_catalog turns them into invalid_argument.
Result<CatalogOffer> parse_offer(const json& o, size_t i) {
  if (!o.is_object()) return make_error(Code::invalid_argument, "catalog: offers[" + std::to_string(i) + "] must be an object");
  CatalogOffer off;
  off.instance_type = o.at("instance_type").get<std::string>();
  if (auto s = reject_unknown(o, kOfferFields, "offer " + off.instance_type + ": "); !s) return s.error();
  off.vcpus = o.value("vcpus", 0);
  off.memory_gib = o.value("memory_gib", 0.0);
  off.gpus = o.value("gpus", 0);
  off.gpu_type = o.value("gpu_type", "");
  off.cpu_family = o.value("cpu_family", "");
  off.hourly = o.at("hourly").get<double>();
  off.spot_hourly = opt_number(o, "spot_hourly");
  off.monthly = opt_number(o, "monthly");
  off.region = o.value("region", "");
  off.billing = o.value("billing", "");
  off.emulates = o.value("emulates", "");
  off.source = o.value("source", "");
  off.as_of = o.value("as_of", "");
  if (off.instance_type.empty()) return make_error(Code::invalid_argument, "catalog: offers[" + std::to_string(i) + "] has an empty instance_type");
  if (off.vcpus < 0 || off.gpus < 0 || off.memory_gib < 0)
    return make_error(Code::invalid_argument, "catalog: negative vcpus, gpus or memory for " + off.instance_type);
  if (off.hourly < 0 || !std::isfinite(off.hourly))
    return make_error(Code::invalid_argument, "catalog: negative price for " + off.instance_type);
  if (auto s = check_price(off.instance_type, "spot_hourly", off.spot_hourly, true); !s) return s.error();
  if (auto s = check_price(off.instance_type, "monthly", off.monthly, false); !s) return s.error();
  return off;
}

json offer_json(const CatalogOffer& o) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return json{{"instance_type", o.instance_type}, {"vcpus", o.vcpus},       {"memory_gib", o.memory_gib},
              {"gpus", o.gpus},                   {"gpu_type", o.gpu_type}, {"cpu_family", o.cpu_family},
              {"hourly", o.hourly},               {"spot_hourly", opt(o.spot_hourly)},
              {"monthly", opt(o.monthly)},        {"region", o.region},     {"billing", o.billing},
              {"emulates", o.emulates},           {"source", o.source},     {"as_of", o.as_of}};
}

}  // namespace

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
  auto doc = parse_json_safely(json_text);
  if (!doc || !doc->is_object()) return make_error(Code::invalid_argument, "catalog: not a JSON object");
  try {
    const auto& j = *doc;
    if (auto s = reject_unknown(j, kCatalogFields, ""); !s) return s.error();
    Catalog c;
    c.provider = j.at("provider").get<std::string>();
    c.currency = j.value("currency", "USD");
    c.source = j.at("source").get<std::string>();
    c.as_of = j.at("as_of").get<std::string>();
    c.note = j.value("note", "");
    c.billing = j.value("billing", "");
    c.per_vcpu_hourly = opt_number(j, "per_vcpu_hourly");
    std::set<std::string> seen;
    const json offers = j.value("offers", json::array());
    for (size_t i = 0; i < offers.size(); ++i) {
      auto off = parse_offer(offers[i], i);
      if (!off) return off.error();
      if (!seen.insert(off->instance_type).second)
        return make_error(Code::invalid_argument, "catalog: instance_type " + off->instance_type + " listed twice");
      c.offers.push_back(std::move(*off));
    }
    return c;
  } catch (const std::exception& e) {
    return make_error(Code::invalid_argument, std::string("catalog: ") + e.what());
  }
}

std::string serialize_catalog(const Catalog& c) {
  json offers = json::array();
  for (const auto& o : c.offers) offers.push_back(offer_json(o));
  return json{{"provider", c.provider},
              {"currency", c.currency},
              {"source", c.source},
              {"as_of", c.as_of},
              {"note", c.note},
              {"billing", c.billing},
              {"per_vcpu_hourly", c.per_vcpu_hourly ? json(*c.per_vcpu_hourly) : json(nullptr)},
              {"offers", offers}}
      .dump(2);
}

Result<Catalog> merge_prices(const Catalog& base, const Catalog& update) {
  if (base.provider != update.provider)
    return make_error(Code::invalid_argument,
                      "merge_prices: the update is for provider " + update.provider + ", not " + base.provider);
  if (base.currency != update.currency)
    return make_error(Code::invalid_argument,
                      "merge_prices: the update is in " + update.currency + ", the catalog in " + base.currency);
  Catalog out = base;
  for (const auto& u : update.offers) {
    CatalogOffer* o = nullptr;
    for (auto& existing : out.offers)
      if (existing.instance_type == u.instance_type) o = &existing;
    if (!o) {
      out.offers.push_back(u);
      o = &out.offers.back();
    }
    o->hourly = u.hourly;
    if (u.spot_hourly) o->spot_hourly = u.spot_hourly;
    if (u.monthly) o->monthly = u.monthly;
    o->source = u.source.empty() ? update.source : u.source;
    o->as_of = u.as_of.empty() ? update.as_of : u.as_of;
  }
  return out;
}

}  // namespace tsum::billing
