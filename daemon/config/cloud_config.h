// The cloud sections of the config file (providers.aws, .gce, .azure, .hetzner, .yandex) and the providers
// they make. docs/config.md documents every field; the README has one example per cloud.
//
// Secrets never sit in the file. Each names where to read it when the config is loaded: an environment
// variable (`<secret>_env`) or a file (`<secret>_file`, refused when group or others may read it). Errors name
// the field, the variable or the file, never the secret's value.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "daemon/runs/startup_deadline.h"
#include "providers/aws/aws_provider.h"
#include "providers/azure/azure_provider.h"
#include "providers/gce/gce_provider.h"
#include "providers/hetzner/hetzner_provider.h"
#include "providers/yandex/yandex_provider.h"

namespace tsum::daemon {

// Where one secret comes from: exactly one of env and file (absolute), or neither for an optional one.
struct SecretRef {
  std::string field;  // e.g. "providers.aws.secret_access_key", for messages
  std::string env;
  std::string file;
  bool named() const { return !env.empty() || !file.empty(); }
};

struct AwsSection {
  std::chrono::seconds startup_deadline = default_startup_deadline("aws");  // startup_deadline_s
  providers::aws::AwsOptions options;
  SecretRef secret_access_key, session_token;
  std::string profile;      // the login's profile; "" the environment's (AWS_PROFILE, "default")
  bool region_set = false;  // region or regions named; else the login's region
  std::string login;        // what resolve_cloud_secrets found: "profile work (~/.aws/config, SSO), region ..."
  std::string login_error;  // or why there is none, with the fix
};
struct GceSection {
  std::chrono::seconds startup_deadline = default_startup_deadline("gce");  // startup_deadline_s
  providers::gce::GceOptions options;
  SecretRef service_account;  // the key file's JSON; none named: Application Default Credentials (gce_login.h)
  bool project_set = false;   // project named; else the login's
  std::string login;          // what resolve_cloud_secrets found
  std::string login_error;    // or why there is none, with the fix
};
struct AzureSection {
  std::chrono::seconds startup_deadline = default_startup_deadline("azure");  // startup_deadline_s
  providers::azure::AzureOptions options;
  SecretRef client_secret;  // with tenant_id and client_id; none named: the user's login (azure_login.h)
  std::string login;        // what resolve_cloud_secrets found
  std::string login_error;  // or why there is none, with the fix
};
struct HetznerSection {
  std::chrono::seconds startup_deadline = default_startup_deadline("hetzner");  // startup_deadline_s
  providers::hetzner::HetznerOptions options;
  SecretRef token;          // none named: the hcloud CLI's login (hetzner_login.h)
  std::string context;      // the CLI's context to use; "" HCLOUD_CONTEXT or the active one
  std::string login;        // what resolve_cloud_secrets found: "context work (~/.config/hcloud/cli.toml)"
  std::string login_error;  // or why there is none, with the fix
};
struct YandexSection {
  std::chrono::seconds startup_deadline = default_startup_deadline("yandex");  // startup_deadline_s
  providers::yandex::YandexOptions options;
  SecretRef key;                   // the authorized key file's JSON; none named: the yc CLI's login
  std::string profile;             // the yc profile to use; "" the current one
  std::string metadata_endpoint;   // the VM's metadata server (instance-service-account); "" 169.254.169.254
  bool folder_set = false, zone_set = false;  // named; else the login's
  std::string login;               // what resolve_cloud_secrets found
  std::string login_error;         // or why there is none, with the fix
};

struct CloudConfig {
  std::optional<AwsSection> aws;
  std::optional<GceSection> gce;
  std::optional<AzureSection> azure;
  std::optional<HetznerSection> hetzner;
  std::optional<YandexSection> yandex;

  std::vector<std::string> names() const;  // the configured clouds, e.g. {"aws", "hetzner"}
  // Each configured cloud's startup deadline (its startup_deadline_s, or the default), by name.
  std::map<std::string, std::chrono::seconds> startup_deadlines() const;
};

inline constexpr std::string_view kCloudNames[] = {"aws", "gce", "azure", "hetzner", "yandex"};
// The clouds whose empty section means "my login and the defaults".
inline constexpr std::string_view kLoginClouds[] = {"aws", "gce", "azure", "hetzner", "yandex"};

// Parses providers.<name> for one of kCloudNames into `out`. `dir` resolves relative file paths. Pure: no
// file or environment is read.
Status parse_cloud_section(std::string_view name, const nlohmann::json& j, const std::string& dir, CloudConfig* out);

// Reads every named secret (file modes checked) into its section's options. An AWS section without
// access_key_id takes the user's login (providers/aws/aws_login.h: this process's environment and ~/.aws); one
// that finds none still makes its provider, whose calls answer why (AwsSection::login_error).
Status resolve_cloud_secrets(CloudConfig& config);

// One provider per configured cloud, secrets resolved. invalid_argument names the cloud and what is wrong.
Result<std::vector<std::unique_ptr<providers::Provider>>> make_cloud_providers(const CloudConfig& config);

}  // namespace tsum::daemon
