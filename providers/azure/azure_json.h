// The Azure Resource Manager JSON tsum writes and reads: the resource group, virtual network and virtual
// machine PUT bodies, VMs with their instance view, public IP listings, asynchronous operations, resource
// group listings, and the names Azure accepts. Pure functions, no I/O.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::providers::azure {

// api-versions tsum speaks.
inline constexpr std::string_view kResourcesApi = "2022-09-01";
inline constexpr std::string_view kComputeApi = "2024-07-01";
inline constexpr std::string_view kNetworkApi = "2024-05-01";
inline constexpr std::string_view kSkusApi = "2021-07-01";
inline constexpr std::string_view kRetailApi = "2023-01-01-preview";

using Tags = std::map<std::string, std::string>;

struct ImageReference {
  std::string publisher = "Canonical";
  std::string offer = "0001-com-ubuntu-server-jammy";
  std::string sku = "22_04-lts-gen2";
  std::string version = "latest";
};

struct VmSpec {
  std::string name;
  std::string location;
  std::string size;                // e.g. Standard_D2s_v5
  ImageReference image = {};
  int disk_gb = 64;
  std::string admin_username = "tsum";
  std::string ssh_public_key = {};  // OpenSSH "ssh-rsa AAAA..."; password login stays disabled
  std::string user_data = {};       // cloud-init, sent base64 as osProfile.customData
  std::string subnet_id = {};       // the subnet the VM's NIC joins
  Tags tags = {};
  bool spot = false;                // priority Spot, evictionPolicy Delete, maxPrice -1 (up to the on-demand price)
  std::string zone = {};            // an availability zone of the location ("1", "2", "3"); empty: Azure's choice
};

// {"location", "tags"}
nlohmann::json group_body(const std::string& location, const Tags& tags);
// A /16 network with one /24 subnet named "default".
nlohmann::json vnet_body(const std::string& location, const Tags& tags);
// The VM creates its NIC and a Standard static public IP itself (networkApiVersion with
// networkInterfaceConfigurations); OS disk, NIC and public IP all have deleteOption Delete.
nlohmann::json vm_body(const VmSpec& s);

struct AzureVm {
  std::string name = {};
  std::string group = {};               // from its resource id, lower-cased (group_of_id); "" without one
  std::string vm_size = {};
  std::string provisioning_state = {};  // Creating, Updating, Succeeded, Failed, Deleting
  std::string power_state = {};         // from the instance view: starting, running, stopping, stopped, deallocating, deallocated; empty: none yet
  Tags tags = {};
};

// internal: not a VM (no name or provisioningState). A VM of a statusOnly listing may carry its provisioning
// state only as an instance-view status ("ProvisioningState/succeeded"): that is read as "Succeeded".
Result<AzureVm> parse_vm(const nlohmann::json& j);

// ASCII lower case: ARM's names compare case-insensitively.
std::string ascii_lower(std::string_view s);

// The resource group in an ARM resource id (".../resourceGroups/<group>/providers/..."), lower-cased; "" when it
// names none.
std::string group_of_id(std::string_view id);

// A page of a list call: its items and the nextLink ("" on the last page).
struct ArmPage {
  std::vector<nlohmann::json> value;
  std::string next_link;
};
ArmPage parse_page(const nlohmann::json& j);

// The first public IP address of a publicIPAddresses listing that has one assigned; empty: none yet.
std::string first_public_ip(const nlohmann::json& listing);
// The public IPs of a subscription-wide listing's items, by resource group (group_of_id), the first assigned one
// of each group.
std::map<std::string, std::string> public_ips_by_group(const std::vector<nlohmann::json>& items);

struct AsyncStatus {
  std::string status = {};  // InProgress, Succeeded, Failed, Canceled
  std::string error_code = {};
  std::string error_message = {};
  bool done() const { return status != "InProgress" && status != "Accepted" && status != "Running"; }
};

// An Azure-AsyncOperation answer; internal without a status.
Result<AsyncStatus> parse_async_status(const nlohmann::json& j);

struct ResourceGroup {
  std::string name = {};
  std::string location = {};
  std::string provisioning_state = {};  // Succeeded, Deleting
  Tags tags = {};
};

struct GroupPage {
  std::vector<ResourceGroup> items;
  std::string next_link;
};

Result<ResourceGroup> parse_group(const nlohmann::json& j);
Result<GroupPage> parse_group_page(const nlohmann::json& j);

// Resource group names: 1-90 of letters, digits, _ - . ( ), not ending in '.'.
bool valid_group_name(std::string_view name);
// Locations: lowercase letters and digits, e.g. westeurope.
bool valid_location(std::string_view location);
// What tsum puts into tags and OData filters: 1-256 of [A-Za-z0-9_.-].
bool valid_tag_text(std::string_view text);

}  // namespace tsum::providers::azure
