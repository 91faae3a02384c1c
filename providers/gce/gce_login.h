// The Google login a user already has: Application Default Credentials, found in google-auth's order (no SDK
// or gcloud needed; the order and the two file formats are documented and small):
//   1. GOOGLE_APPLICATION_CREDENTIALS, when set: that key file (a service account's, or an authorized user's)
//   2. gcloud's ADC file, $CLOUDSDK_CONFIG (else ~/.config/gcloud)/application_default_credentials.json, which
//      `gcloud auth application-default login` writes (an authorized user: client id, secret, refresh token)
//   3. the metadata server, when tsumd runs on a GCE VM (its service account's tokens): GCE_METADATA_IP and
//      GCE_METADATA_ROOT (google-auth's variables), else metadata.google.internal; found by asking it
// The project: GOOGLE_CLOUD_PROJECT, GCLOUD_PROJECT, else a service account key's project_id, else (for gcloud's
// ADC file, as google-auth asks gcloud) gcloud's configuration: CLOUDSDK_CORE_PROJECT, else [core] project of
// the active configuration ($CLOUDSDK_ACTIVE_CONFIG_NAME, else the active_config file, else "default") in
// configurations/config_<name>; else the metadata server's. Where google-auth finds none, tsum still reads
// gcloud's configuration (a user who ran `gcloud config set project` means it).
// tests/providers/logins/gce_login_diff.py holds this against google-auth.
#pragma once

#include <string>

#include "common/result.h"
#include "providers/gce/jwt.h"
#include "providers/http/http_client.h"
#include "providers/http/login_env.h"

namespace tsum::providers::gce {

using http::Task;

// gcloud's ADC file after `gcloud auth application-default login` (type "authorized_user"): exchanged at
// token_uri with OAuth2's refresh_token grant.
struct AuthorizedUser {
  std::string client_id = {};
  std::string client_secret = {};
  std::string refresh_token = {};
  std::string token_uri = std::string(kDefaultTokenUri);
};

// How a GceApi gets its access tokens.
struct GceCredentials {
  std::string kind = "service_account";  // "service_account", "authorized_user", "metadata"
  ServiceAccount account = {};            // service_account
  AuthorizedUser user = {};               // authorized_user
  std::string metadata_host = {};         // metadata: host[:port], e.g. metadata.google.internal
  std::string metadata_ping_host = {};    // where it is found (GCE_METADATA_IP, else 169.254.169.254)
};

struct GceLogin {
  GceCredentials credentials;
  std::string project;       // "" with kind metadata: the metadata server's (metadata_project)
  std::string project_from;  // "GOOGLE_CLOUD_PROJECT", "the key file", "gcloud configuration work", ...
  std::string source;        // "GOOGLE_APPLICATION_CREDENTIALS (~/key.json, service account a@p.iam...)", ...
  std::string adc_file;      // where gcloud's file is looked for, for messages
};

// A key file's JSON: a service account's or an authorized user's. invalid_argument names what is missing.
Result<GceCredentials> parse_credentials_file(std::string_view json);

// invalid_argument with the fix for a key file that is missing or malformed. No file at all gives the
// metadata server (kind "metadata"), found or not by probe_metadata.
Result<GceLogin> resolve_gce_login(const http::LoginEnvironment& env);

// Whether the metadata server answers as Google's (Metadata-Flavor: Google) within 3 s, and its project.
// unavailable when nothing answers as it: the fix is to log in with gcloud.
Task<Result<std::string>> metadata_project(http::HttpClient& http, const GceLogin& login);

}  // namespace tsum::providers::gce
