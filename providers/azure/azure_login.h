// The Azure login a user already has, found in azure-identity's DefaultAzureCredential order, with no SDK or
// az CLI at run time (the order and the files are documented and small):
//   1. the environment (EnvironmentCredential): AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET (a
//      service principal's secret), else AZURE_CLIENT_CERTIFICATE_PATH (its certificate and key: PEM, or
//      PKCS#12 with AZURE_CLIENT_CERTIFICATE_PASSWORD). AZURE_USERNAME/AZURE_PASSWORD (a user's password
//      grant, which multi-factor sign-in refuses) is not taken: the error says to use a service principal.
//   2. workload identity: AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_FEDERATED_TOKEN_FILE (AKS sets them with
//      AZURE_AUTHORITY_HOST): the file's token is the client assertion, read again for every token.
//   3. managed identity: the instance metadata service (AZURE_POD_IDENTITY_AUTHORITY_HOST, else
//      http://169.254.169.254), asked by settle_azure_login; AZURE_CLIENT_ID picks a user-assigned identity.
//      App Service's, Arc's and Cloud Shell's identity endpoints (IDENTITY_ENDPOINT, MSI_ENDPOINT) are not
//      taken: the error says so.
//   4. the Azure CLI's login ($AZURE_CONFIG_DIR, else ~/.azure): azureProfile.json's default subscription and
//      its account: a user's refresh token in msal_token_cache.json (for the CLI's own client id, as the CLI
//      asks), a service principal's secret or certificate in service_principal_entries.json, or
//      `az login --identity` (the managed identity).
// The authority: AZURE_AUTHORITY_HOST, else https://login.microsoftonline.com. The subscription:
// AZURE_SUBSCRIPTION_ID, else the CLI's default subscription, else (a managed identity) the VM's own.
// tests/providers/logins/azure_login_diff.py holds this against azure-identity and the az CLI's own code.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "providers/azure/azure_api.h"
#include "providers/http/http_client.h"
#include "providers/http/login_env.h"

namespace tsum::providers::azure {

inline constexpr std::string_view kAzureCliClientId = "04b07795-8ddb-461a-bbee-02f9e1bf7b46";
inline constexpr std::string_view kImdsHost = "http://169.254.169.254";

struct AzureLogin {
  AzureCredentials credentials;   // kind and what it needs; subscription_id "" while none is found
  std::string login_endpoint;     // AZURE_AUTHORITY_HOST as a URL; "" the public cloud's
  std::string subscription_from;  // "AZURE_SUBSCRIPTION_ID", "the Azure CLI's default subscription", ...
  std::string source;             // "AZURE_CLIENT_SECRET (client ...)", "Azure CLI (~/.azure, user me@x)", ...
  std::string username;           // cli_user: the account's name
  // kind managed_identity found at step 3: whether it answers is settle_azure_login's to ask; this is the
  // CLI's login (or why there is none) it falls back to.
  std::shared_ptr<Result<AzureLogin>> fallback;
  bool probe = false;             // ask IMDS without the Metadata header first (AZURE_POD_IDENTITY_AUTHORITY_HOST unset)
};

// The subscription when the login names none: AZURE_SUBSCRIPTION_ID, else the CLI's default one (what `az account
// show` says), with where it came from; nullopt when neither names one.
struct AzureSubscription {
  std::string id, from;
};
std::optional<AzureSubscription> find_azure_subscription(const http::LoginEnvironment& env);

// The metadata service's managed-identity token URL for ARM (identity: "client_id=..." and the like, or "").
std::string imds_token_url(const std::string& imds_url, const std::string& identity);

// Steps 1, 2 and 4 from the files and environment; a login whose fallback is set still needs
// settle_azure_login. invalid_argument with where it looked and the fix.
Result<AzureLogin> resolve_azure_login(const http::LoginEnvironment& env);

// Asks the instance metadata service for a managed identity's token (1 s to answer when probed): one given
// settles the login (and its subscription, from the VM's metadata when none is known); none (no service, or
// 400: no identity assigned) gives the fallback. Any other login comes back as it is.
Task<Result<AzureLogin>> settle_azure_login(http::HttpClient& http, AzureLogin login);

// A certificate credential's signing material: the certificate's SHA-1 thumbprint (base64url, the JWT's
// x5t) and its RSA private key as PEM. The file is PEM (certificate and key) or PKCS#12 (with password).
struct ClientCertificate {
  std::string x5t;
  std::string private_key_pem;
};
Result<ClientCertificate> load_client_certificate(const std::string& path, const std::string& password);

}  // namespace tsum::providers::azure
