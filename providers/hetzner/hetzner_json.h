// The Hetzner Cloud JSON tsum writes and reads: the POST /servers body, servers, server types with their
// per-location prices, and list pagination (meta.pagination). Prices are decimal strings ("0.0109000000");
// they are parsed exactly into integers, never through a float. Pure functions, no I/O.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::providers::hetzner {

// "12.3400" at scale 12 -> 12340000000000. Digits only, one optional '.', no sign or exponent; digits past
// the scale must be zeros (anything else would be rounded away). invalid_argument otherwise.
Result<long long> parse_decimal(std::string_view text, int scale);

inline constexpr int kPriceScale = 12;  // prices are kept in 1e-12 of the currency

struct CreateServer {
  std::string name;
  std::string server_type;
  std::string image;
  std::string location;
  std::string user_data;
  std::map<std::string, std::string> labels = {};
  std::vector<std::string> ssh_keys = {};
};

nlohmann::json create_body(const CreateServer& c);

struct HetznerServer {
  long long id = 0;
  std::string name = {};
  std::string status = {};  // initializing, starting, running, stopping, off, deleting, rebuilding, migrating, unknown
  std::string ipv4 = {};
  std::string ipv6 = {};
  std::string server_type = {};
  std::string location = {};
  std::map<std::string, std::string> labels = {};
};

Result<HetznerServer> parse_server(const nlohmann::json& j);

struct ServerTypePrice {
  std::string location;
  long long hourly_net = 0;   // kPriceScale
  long long monthly_net = 0;  // kPriceScale
};

struct ServerType {
  std::string name = {};
  int cores = 0;
  double memory_gb = 0;
  std::string cpu_type = {};      // shared | dedicated
  std::string architecture = {};  // x86 | arm
  bool deprecated = false;
  std::vector<ServerTypePrice> prices = {};
};

Result<ServerType> parse_server_type(const nlohmann::json& j);

// meta.pagination.next_page: the next page's number, nullopt on the last page (or without pagination).
std::optional<long> next_page(const nlohmann::json& answer);

// Hostname-like server names: [a-z0-9] and inner '-' '.', at most 63.
bool valid_server_name(std::string_view name);
// Label keys and values: at most 63 of [A-Za-z0-9_.-], starting and ending alphanumeric (values may be empty).
bool valid_label(std::string_view s, bool allow_empty);

}  // namespace tsum::providers::hetzner
