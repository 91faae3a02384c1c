// The fake GCE's catalog: a handful of real machine types (shapes as machineTypes.list gives them) and
// Compute Engine SKUs as the Cloud Billing Catalog lists them, with approximate public us-central1 and
// europe-west4 on-demand rates (mid 2024). The SKU list also holds Spot, commitment, custom, other-region
// and non-instance SKUs, so a client must filter; c2d types have no SKUs here and get no offer.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tsum::providers::gce::fake {

struct FakeMachineType {
  std::string_view name;
  int vcpus;
  long memory_mb;
  bool shared_cpu;
  std::string_view gpu_type;
  int gpus;
};

std::span<const FakeMachineType> fake_machine_types();
const FakeMachineType* find_machine_type(std::string_view name);

// A Google-style answer: status and JSON body.
struct JsonAnswer {
  int status = 200;
  nlohmann::json body = nlohmann::json::object();
};

// {"error": {"code", "message", "status", "errors": [{"reason", "message", "domain"}]}}
JsonAnswer google_error(int status, std::string_view reason, std::string_view message);

// A page token: "pt-" and the next page's offset (fake_cloud/pagination.h).
inline constexpr std::string_view kPageTokenPrefix = "pt-";

// machineTypes.list for zone; query maxResults, pageToken.
JsonAnswer list_machine_types(std::string_view project, std::string_view zone,
                              const std::map<std::string, std::string>& query, int page_size);
// services/6F81-5844-456A/skus; query currencyCode (USD only), pageSize, pageToken.
JsonAnswer list_skus(const std::map<std::string, std::string>& query, int page_size);

}  // namespace tsum::providers::gce::fake
