// The fake Hetzner's catalog: real cloud server types with their shapes and approximate list prices (EUR,
// mid 2024) per location, as GET /server_types answers them (decimal strings, net and gross), plus the
// answer shapes every fake route shares: errors and meta.pagination.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tsum::providers::hetzner::fake {

inline const std::vector<std::string> kFakeLocations{"fsn1", "nbg1", "hel1", "ash"};

struct FakeServerType {
  std::string_view name;
  int cores;
  double memory_gb;
  int disk_gb;
  std::string_view cpu_type;
  std::string_view architecture;
  bool deprecated;
  std::string_view hourly_eu, monthly_eu;  // net, fsn1 nbg1 hel1
  std::string_view hourly_us, monthly_us;  // net, ash; empty: not sold there
};

std::span<const FakeServerType> fake_server_types();
const FakeServerType* find_server_type(std::string_view name);
nlohmann::json server_type_json(const FakeServerType& t, long id);

struct JsonAnswer {
  int status = 200;
  nlohmann::json body = nlohmann::json::object();
};

// {"error": {"code": ..., "message": ..., "details": {}}}
JsonAnswer hetzner_error(int status, std::string_view code, std::string_view message);

// page and per_page (1..50, capped by page_size) of n items: [begin, end) and the meta object.
struct PageWindow {
  std::size_t begin = 0, end = 0;
  nlohmann::json meta;
};
// nullopt for a malformed page or per_page.
std::optional<PageWindow> page_window(std::size_t n, const std::map<std::string, std::string>& query, int page_size);

// GET /server_types: every type, paged.
JsonAnswer list_server_types(const std::map<std::string, std::string>& query, int page_size);

}  // namespace tsum::providers::hetzner::fake
