#include "tests/fakes/hetzner/fake_server_types.h"

#include <array>

#include "tests/fakes/cloud/pagination.h"

namespace tsum::providers::hetzner::fake {

namespace {

constexpr std::array<FakeServerType, 9> kTypes{{
    {"cx11", 1, 2, 20, "shared", "x86", true, "0.0052000000", "3.2900000000", "", ""},
    {"cx22", 2, 4, 40, "shared", "x86", false, "0.0060000000", "3.7900000000", "", ""},
    {"cpx11", 2, 2, 40, "shared", "x86", false, "0.0070000000", "4.3500000000", "0.0080000000", "4.9900000000"},
    {"cax11", 2, 4, 40, "shared", "arm", false, "0.0061000000", "3.7900000000", "", ""},
    {"cx32", 4, 8, 80, "shared", "x86", false, "0.0109000000", "6.8000000000", "", ""},
    {"cpx21", 3, 4, 80, "shared", "x86", false, "0.0121000000", "7.5500000000", "0.0138000000", "8.4900000000"},
    {"ccx13", 2, 8, 80, "dedicated", "x86", false, "0.0200000000", "12.4900000000", "0.0224000000", "13.9900000000"},
    {"cx42", 8, 16, 160, "shared", "x86", false, "0.0263000000", "16.4000000000", "", ""},
    {"ccx33", 8, 32, 240, "dedicated", "x86", false, "0.0784000000", "48.9900000000", "0.0880000000", "54.9900000000"},
}};

// Gross = net + 19 % VAT, written with 16 decimals as Hetzner does (exact: the net prices have 4 decimals).
std::string gross(std::string_view net) {
  long long v = 0;
  for (char c : net)
    if (c != '.') v = v * 10 + (c - '0');  // net x 1e10
  long long g = v * 119;                   // gross x 1e12
  std::string digits = std::to_string(g);
  if (digits.size() < 13) digits.insert(0, 13 - digits.size(), '0');
  return digits.substr(0, digits.size() - 12) + "." + digits.substr(digits.size() - 12) + "0000";
}

nlohmann::json price(std::string_view location, std::string_view hourly, std::string_view monthly) {
  return {{"location", location},
          {"price_hourly", {{"net", hourly}, {"gross", gross(hourly)}}},
          {"price_monthly", {{"net", monthly}, {"gross", gross(monthly)}}},
          {"included_traffic", 21990232555520LL},
          {"price_per_tb_traffic", {{"net", "1.0000000000"}, {"gross", "1.1900000000000000"}}}};
}

}  // namespace

std::span<const FakeServerType> fake_server_types() { return kTypes; }

const FakeServerType* find_server_type(std::string_view name) {
  for (const auto& t : kTypes)
    if (t.name == name) return &t;
  return nullptr;
}

nlohmann::json server_type_json(const FakeServerType& t, long id) {
  nlohmann::json prices = nlohmann::json::array();
  for (const auto& loc : kFakeLocations) {
    bool us = loc == "ash";
    if (us && t.hourly_us.empty()) continue;
    prices.push_back(price(loc, us ? t.hourly_us : t.hourly_eu, us ? t.monthly_us : t.monthly_eu));
  }
  nlohmann::json j{{"id", id}, {"name", t.name}, {"description", std::string(t.name).substr(0, 3) == "ccx" ? "CCX" : "CX"},
                   {"cores", t.cores}, {"memory", t.memory_gb}, {"disk", t.disk_gb}, {"storage_type", "local"},
                   {"cpu_type", t.cpu_type}, {"architecture", t.architecture}, {"deprecated", t.deprecated},
                   {"deprecation", nullptr}, {"prices", prices}};
  if (t.deprecated)
    j["deprecation"] = {{"announced", "2024-06-06T08:00:00+00:00"}, {"unavailable_after", "2024-09-06T08:00:00+00:00"}};
  return j;
}

JsonAnswer hetzner_error(int status, std::string_view code, std::string_view message) {
  return {status, {{"error", {{"code", code}, {"message", message}, {"details", nlohmann::json::object()}}}}};
}

std::optional<PageWindow> page_window(std::size_t n, const std::map<std::string, std::string>& query, int page_size) {
  auto page = fake_cloud::number_param(query, "page", 1, 1L << 30, 1);
  auto per_page = fake_cloud::number_param(query, "per_page", 1, 50, 25);
  if (!page || !per_page) return std::nullopt;
  const long size = std::min<long>(*per_page, page_size);
  const std::size_t last = fake_cloud::last_page(n, size);
  const fake_cloud::PageWindow w = fake_cloud::numbered_page(n, *page, size);
  auto page_or_null = [](bool has, long p) { return has ? nlohmann::json(p) : nlohmann::json(nullptr); };
  return PageWindow{w.begin, w.end,
                    {{"pagination", {{"page", *page}, {"per_page", size},
                                     {"previous_page", page_or_null(*page > 1, *page - 1)},
                                     {"next_page", page_or_null(static_cast<std::size_t>(*page) < last, *page + 1)},
                                     {"last_page", last}, {"total_entries", n}}}}};
}

JsonAnswer list_server_types(const std::map<std::string, std::string>& query, int page_size) {
  auto w = page_window(kTypes.size(), query, page_size);
  if (!w) return hetzner_error(400, "invalid_input", "page must be >= 1 and per_page 1..50");
  nlohmann::json types = nlohmann::json::array();
  for (std::size_t i = w->begin; i < w->end; ++i) types.push_back(server_type_json(kTypes[i], static_cast<long>(i + 1)));
  return {200, {{"server_types", types}, {"meta", w->meta}}};
}

}  // namespace tsum::providers::hetzner::fake
