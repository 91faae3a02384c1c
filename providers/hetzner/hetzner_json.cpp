#include "providers/hetzner/hetzner_json.h"

#include <algorithm>
#include <limits>

#include "common/json_util.h"

namespace tsum::providers::hetzner {

namespace {

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

Result<long long> price_of(const nlohmann::json& price, const char* which, const std::string& type) {
  auto p = price.find(which);
  std::string net = p != price.end() && p->is_object() ? json_str(*p, "net") : "";
  auto parsed = parse_decimal(net, kPriceScale);
  if (!parsed) return make_error(Code::internal, "Hetzner server type " + type + ": " + which + ".net: " + parsed.error().detail);
  return parsed;
}

}  // namespace

Result<long long> parse_decimal(std::string_view text, int scale) {
  auto bad = [&](const char* why) { return make_error(Code::invalid_argument, "decimal '" + std::string(text) + "': " + why); };
  auto dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  auto digits = [](std::string_view s) { return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }); };
  if (whole.empty() || !digits(whole) || !digits(frac) || (dot != std::string_view::npos && frac.empty()))
    return bad("not digits with an optional fraction");
  if (frac.size() > static_cast<std::size_t>(scale)) {
    if (frac.substr(scale).find_first_not_of('0') != std::string_view::npos) return bad("more precision than kept");
    frac = frac.substr(0, scale);
  }
  constexpr long long kMax = std::numeric_limits<long long>::max();
  long long v = 0;
  for (char c : whole) {
    if (v > (kMax - 9) / 10) return bad("too large");
    v = v * 10 + (c - '0');
  }
  for (int i = 0; i < scale; ++i) {
    int d = i < static_cast<int>(frac.size()) ? frac[i] - '0' : 0;
    if (v > (kMax - 9) / 10) return bad("too large");
    v = v * 10 + d;
  }
  return v;
}

nlohmann::json create_body(const CreateServer& c) {
  nlohmann::json body{{"name", c.name}, {"server_type", c.server_type}, {"image", c.image}, {"location", c.location},
                      {"user_data", c.user_data}, {"labels", c.labels}, {"start_after_create", true}};
  if (!c.ssh_keys.empty()) body["ssh_keys"] = c.ssh_keys;
  return body;
}

Result<HetznerServer> parse_server(const nlohmann::json& j) {
  if (!j.is_object() || !j.value("id", nlohmann::json()).is_number_integer() || json_str(j, "status").empty())
    return make_error(Code::internal, "Hetzner: a server without id or status");
  HetznerServer s{j["id"].get<long long>(), json_str(j, "name"), json_str(j, "status")};
  if (auto net = j.find("public_net"); net != j.end() && net->is_object()) {
    if (auto v4 = net->find("ipv4"); v4 != net->end() && v4->is_object()) s.ipv4 = json_str(*v4, "ip");
    if (auto v6 = net->find("ipv6"); v6 != net->end() && v6->is_object()) s.ipv6 = json_str(*v6, "ip");
  }
  if (auto t = j.find("server_type"); t != j.end() && t->is_object()) s.server_type = json_str(*t, "name");
  if (auto dc = j.find("datacenter"); dc != j.end() && dc->is_object())
    if (auto loc = dc->find("location"); loc != dc->end() && loc->is_object()) s.location = json_str(*loc, "name");
  if (auto labels = j.find("labels"); labels != j.end() && labels->is_object())
    for (const auto& [k, v] : labels->items())
      if (v.is_string()) s.labels[k] = v.get<std::string>();
  return s;
}

Result<ServerType> parse_server_type(const nlohmann::json& j) {
  if (!j.is_object() || json_str(j, "name").empty() || !j.value("cores", nlohmann::json()).is_number_integer() ||
      !j.value("memory", nlohmann::json()).is_number())
    return make_error(Code::internal, "Hetzner: a server type without name, cores or memory");
  ServerType t{json_str(j, "name"), j["cores"].get<int>(), j["memory"].get<double>(), json_str(j, "cpu_type"),
               json_str(j, "architecture")};
  auto deprecation = j.find("deprecation");
  t.deprecated = (deprecation != j.end() && !deprecation->is_null()) || json_or(j, "deprecated", false);
  auto prices = j.find("prices");
  if (prices == j.end() || !prices->is_array()) return make_error(Code::internal, "Hetzner server type " + t.name + ": no prices");
  for (const auto& p : *prices) {
    if (!p.is_object()) return make_error(Code::internal, "Hetzner server type " + t.name + ": a price is not an object");
    auto hourly = price_of(p, "price_hourly", t.name);
    if (!hourly) return hourly.error();
    auto monthly = price_of(p, "price_monthly", t.name);
    if (!monthly) return monthly.error();
    t.prices.push_back({json_str(p, "location"), *hourly, *monthly});
  }
  return t;
}

std::optional<long> next_page(const nlohmann::json& answer) {
  auto meta = answer.find("meta");
  if (meta == answer.end() || !meta->is_object()) return std::nullopt;
  auto pagination = meta->find("pagination");
  if (pagination == meta->end() || !pagination->is_object()) return std::nullopt;
  auto next = pagination->find("next_page");
  if (next == pagination->end() || !next->is_number_integer()) return std::nullopt;
  return next->get<long>();
}

bool valid_server_name(std::string_view n) {
  return !n.empty() && n.size() <= 63 && alnum(n.front()) && alnum(n.back()) &&
         std::all_of(n.begin(), n.end(), [](char c) { return (alnum(c) && !(c >= 'A' && c <= 'Z')) || c == '-' || c == '.'; });
}

bool valid_label(std::string_view s, bool allow_empty) {
  if (s.empty()) return allow_empty;
  return s.size() <= 63 && alnum(s.front()) && alnum(s.back()) &&
         std::all_of(s.begin(), s.end(), [](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

}  // namespace tsum::providers::hetzner
