#include "providers/azure/azure_login.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>

#include <nlohmann/json.hpp>

#include "common/json_util.h"
#include "providers/http/codec.h"
#include "providers/gce/jwt.h"

namespace tsum::providers::azure {

namespace {

Error bad(const std::string& what) { return make_error(Code::invalid_argument, "azure: " + what); }

constexpr const char* kCliFix = "run 'az login'";

// The Azure CLI's files, under AZURE_CONFIG_DIR or ~/.azure.
struct CliDir {
  std::string dir, shown;
};

CliDir cli_dir(const http::LoginEnvironment& env) {
  std::string dir = env.get("AZURE_CONFIG_DIR");
  dir = dir.empty() ? env.home + "/.azure" : http::expand_home(dir, env.home);
  return {dir, http::tilde(dir, env.home)};
}

// AZURE_POD_IDENTITY_AUTHORITY_HOST (azure-identity's override), else the VM's own metadata service; no final '/'.
std::string imds_base(const http::LoginEnvironment& env) {
  std::string url = env.has("AZURE_POD_IDENTITY_AUTHORITY_HOST") ? env.get("AZURE_POD_IDENTITY_AUTHORITY_HOST") : "";
  if (url.empty()) url = std::string(kImdsHost);
  while (url.ends_with('/')) url.pop_back();
  return url;
}

// The CLI's files in their own order: MSAL and the CLI take the first account, token or entry that matches.
using Json = nlohmann::ordered_json;

// A JSON file as the CLI writes it (azureProfile.json starts with a UTF-8 byte order mark).
std::optional<Json> read_json(const std::string& path) {
  auto text = http::read_login_file(path);
  if (!text) return std::nullopt;
  if (text->starts_with("\xEF\xBB\xBF")) text->erase(0, 3);
  auto doc = Json::parse(*text, nullptr, false);
  return doc.is_discarded() ? Json() : doc;
}

template <class J>
std::string str(const J& j, const char* key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->template get<std::string>() : std::string();
}

// The CLI's default subscription (azureProfile.json), as `az account show` finds it.
Result<Json> cli_subscription(const CliDir& cli) {
  const std::string path = cli.dir + "/azureProfile.json";
  auto doc = read_json(path);
  const std::string shown = cli.shown + "/azureProfile.json";
  if (!doc) return bad("the Azure CLI is not logged in (" + shown + " does not exist); " + kCliFix);
  if (!doc->is_object()) return bad(shown + " is not JSON; " + kCliFix);
  const auto subs = doc->value("subscriptions", Json::array());
  if (!subs.is_array() || subs.empty()) return bad("the Azure CLI has no subscription (" + shown + "); " + kCliFix);
  std::vector<Json> defaults;
  for (const auto& s : subs)
    if (s.is_object() && s.contains("isDefault") && s["isDefault"].is_boolean() && s["isDefault"].get<bool>()) defaults.push_back(s);
  if (defaults.empty()) return bad("the Azure CLI has no default subscription (" + shown + "); run 'az account set --subscription ID'");
  if (defaults.size() > 1) return bad(shown + " marks several subscriptions default; run 'az account set --subscription ID'");
  const auto& s = defaults.front();
  if (str(s, "id").empty() || !s.contains("user") || str(s.at("user"), "name").empty())
    return bad(shown + ": the default subscription has no id or user; " + kCliFix);
  return s;
}

// A user's refresh token for the CLI's client in MSAL's cache (msal_token_cache.json): the account whose
// username is the subscription's user (compared as MSAL does, without case), then its refresh token for the
// CLI's client id, else one of the family of Microsoft's first-party clients (family_id "1").
Result<std::string> cli_refresh_token(const CliDir& cli, const std::string& username) {
  const std::string path = cli.dir + "/msal_token_cache.json";
  const std::string shown = cli.shown + "/msal_token_cache.json";
  auto doc = read_json(path);
  if (!doc) {
    if (http::read_login_file(cli.dir + "/msal_token_cache.bin"))
      return bad("the Azure CLI keeps its tokens encrypted (" + cli.shown + "/msal_token_cache.bin); run "
                 "'az config set core.encrypt_token_cache=false' and 'az login', or set AZURE_CLIENT_ID and AZURE_CLIENT_SECRET");
    return bad("the Azure CLI has no tokens (" + shown + " does not exist); " + kCliFix);
  }
  if (!doc->is_object()) return bad(shown + " is not JSON; " + kCliFix);
  const auto& cache = *doc;
  std::string home;
  const Json accounts = cache.value("Account", Json::object()), tokens = cache.value("RefreshToken", Json::object());
  for (const auto& [k, a] : accounts.items())
    if (http::lower(str(a, "username")) == http::lower(username)) {
      home = str(a, "home_account_id");
      break;
    }
  if (home.empty()) return bad("the Azure CLI has no token for " + username + " in " + shown + "; " + kCliFix);
  std::string own, family;
  for (const auto& [k, t] : tokens.items()) {
    if (str(t, "home_account_id") != home || str(t, "secret").empty()) continue;
    if (str(t, "client_id") == kAzureCliClientId && own.empty()) own = str(t, "secret");
    if (str(t, "family_id") == "1" && family.empty()) family = str(t, "secret");
  }
  if (own.empty() && family.empty())
    return bad("the Azure CLI has no refresh token for " + username + " in " + shown + "; " + kCliFix);
  return own.empty() ? family : own;
}

// The managed identity `az login --identity` named: "MSI", "MSIClient-<id>", "MSIObject-<id>", "MSIResource-<id>"
// as its query parameter ("" the system-assigned one); nullopt for another text (the CLI then takes the account
// as a user or service principal).
std::optional<std::string> identity_param(const std::string& info) {
  const auto dash = info.find('-');
  const std::string type = info.substr(0, dash), id = dash == std::string::npos ? "" : info.substr(dash + 1);
  if (type == "MSI") return std::string();
  if (type == "MSIClient") return id.empty() ? "" : "client_id=" + id;
  if (type == "MSIObject") return id.empty() ? "" : "object_id=" + id;
  if (type == "MSIResource") return id.empty() ? "" : "msi_res_id=" + id;
  return std::nullopt;
}

// Step 4: the CLI's default subscription and its account's credentials.
Result<AzureLogin> cli_login(const http::LoginEnvironment& env) {
  const CliDir cli = cli_dir(env);
  auto sub = cli_subscription(cli);
  if (!sub) return sub.error();
  AzureLogin out;
  auto& c = out.credentials;
  const Json& user = (*sub)["user"];
  const std::string name = str(user, "name"), type = str(user, "type");
  c.subscription_id = str(*sub, "id");
  c.tenant_id = str(*sub, "tenantId");
  out.subscription_from = "the Azure CLI's default subscription";
  std::string info = str(user, "assignedIdentityInfo");
  if (info.empty()) info = str(*sub, "name");
  const auto identity = identity_param(info);
  if ((name == "systemAssignedIdentity" || name == "userAssignedIdentity") && identity) {
    c.kind = "managed_identity";
    c.identity = *identity;
    c.imds_url = imds_base(env);
    out.source = "Azure CLI (" + cli.shown + ", the managed identity" + (c.identity.empty() ? "" : " " + c.identity) + ")";
    return out;
  }
  if (type == "servicePrincipal") {
    const std::string shown = cli.shown + "/service_principal_entries.json";
    auto entries = read_json(cli.dir + "/service_principal_entries.json");
    Json entry;
    if (entries && entries->is_array())
      for (const auto& e : *entries)
        if (e.is_object() && str(e, "client_id") == name && (entry.is_null() || (str(e, "tenant") == c.tenant_id && str(entry, "tenant") != c.tenant_id)))
          entry = e;
    if (entry.is_null())
      return bad("the Azure CLI has no secret for service principal " + name + " in " + shown +
                 "; run 'az login --service-principal'");
    c.client_id = name;  // the token is asked in the subscription's tenant, as the CLI asks it
    out.source = "Azure CLI (" + cli.shown + ", service principal " + name + ")";
    if (!str(entry, "client_secret").empty()) {
      c.client_secret = str(entry, "client_secret");
    } else if (!str(entry, "certificate").empty()) {
      c.kind = "certificate";
      c.certificate_path = http::expand_home(str(entry, "certificate"), env.home);
    } else {
      return bad("service principal " + name + " in " + shown + " has neither a secret nor a certificate; run 'az login --service-principal'");
    }
    return out;
  }
  auto token = cli_refresh_token(cli, name);
  if (!token) return token.error();
  c.kind = "cli_user";
  c.client_id = std::string(kAzureCliClientId);
  c.refresh_token = std::move(*token);
  out.username = name;
  out.source = "Azure CLI (" + cli.shown + ", user " + name + ")";
  return out;
}

std::string authority_url(const std::string& host) {
  if (host.empty()) return {};
  return host.starts_with("http://") || host.starts_with("https://") ? host : "https://" + host;
}

}  // namespace

std::optional<AzureSubscription> find_azure_subscription(const http::LoginEnvironment& env) {
  if (!env.get("AZURE_SUBSCRIPTION_ID").empty()) return AzureSubscription{env.get("AZURE_SUBSCRIPTION_ID"), "AZURE_SUBSCRIPTION_ID"};
  if (auto sub = cli_subscription(cli_dir(env))) return AzureSubscription{str(*sub, "id"), "the Azure CLI's default subscription"};
  return std::nullopt;
}

std::string imds_token_url(const std::string& imds_url, const std::string& identity) {
  return imds_url + "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=" +
         http::uri_encode("https://management.azure.com/") + (identity.empty() ? "" : "&" + identity);
}

Result<AzureLogin> resolve_azure_login(const http::LoginEnvironment& env) {
  AzureLogin out;
  auto& c = out.credentials;
  // azure-identity takes a variable that is set, even to "": so does this chain, and then refuses the empty value
  auto all = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (!env.has(n)) return false;
    return true;
  };
  auto need = [&](std::initializer_list<const char*> names) -> Status {
    for (const char* n : names)
      if (env.get(n).empty()) return bad(std::string(n) + " is set but empty; set it or unset it");
    return {};
  };
  out.login_endpoint = authority_url(env.get("AZURE_AUTHORITY_HOST"));
  c.tenant_id = env.get("AZURE_TENANT_ID");
  c.client_id = env.get("AZURE_CLIENT_ID");
  if (all({"AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID"})) {
    if (auto s = need({"AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID"}); !s) return s.error();
    c.client_secret = env.get("AZURE_CLIENT_SECRET");
    out.source = "AZURE_CLIENT_SECRET (service principal " + c.client_id + ")";
  } else if (all({"AZURE_CLIENT_ID", "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_TENANT_ID"})) {
    if (auto s = need({"AZURE_CLIENT_ID", "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_TENANT_ID"}); !s) return s.error();
    c.kind = "certificate";
    c.certificate_path = http::expand_home(env.get("AZURE_CLIENT_CERTIFICATE_PATH"), env.home);
    c.certificate_password = env.get("AZURE_CLIENT_CERTIFICATE_PASSWORD");
    if (auto cert = load_client_certificate(c.certificate_path, c.certificate_password); !cert)
      return bad("AZURE_CLIENT_CERTIFICATE_PATH: " + cert.error().detail.substr(7) +
                 "; set it to a PEM file (certificate and key) or a PKCS#12 file and its password");
    out.source = "AZURE_CLIENT_CERTIFICATE_PATH (" + http::tilde(c.certificate_path, env.home) + ", service principal " + c.client_id + ")";
  } else if (all({"AZURE_CLIENT_ID", "AZURE_USERNAME", "AZURE_PASSWORD"})) {
    return bad("AZURE_USERNAME and AZURE_PASSWORD (a user's password) are not a login tsum takes: multi-factor sign-in "
               "refuses it; set AZURE_CLIENT_SECRET (a service principal) or unset them and run 'az login'");
  } else if (env.has("IDENTITY_ENDPOINT") || env.has("MSI_ENDPOINT")) {
    return bad(std::string(env.has("IDENTITY_ENDPOINT") ? "IDENTITY_ENDPOINT" : "MSI_ENDPOINT") +
               " (App Service's, Arc's or Cloud Shell's managed identity) is not a login tsum takes; set AZURE_CLIENT_ID "
               "and AZURE_CLIENT_SECRET, or run 'az login'");
  } else if (!c.tenant_id.empty() && !c.client_id.empty() && !env.get("AZURE_FEDERATED_TOKEN_FILE").empty()) {
    c.kind = "workload_identity";
    c.token_file = http::expand_home(env.get("AZURE_FEDERATED_TOKEN_FILE"), env.home);
    if (!http::read_login_file(c.token_file))
      return bad("AZURE_FEDERATED_TOKEN_FILE names " + http::tilde(c.token_file, env.home) + ", which cannot be read");
    out.source = "workload identity (AZURE_FEDERATED_TOKEN_FILE, client " + c.client_id + ")";
  } else {
    c.kind = "managed_identity";
    c.client_secret.clear();
    c.imds_url = imds_base(env);
    out.probe = !env.has("AZURE_POD_IDENTITY_AUTHORITY_HOST");
    if (!c.client_id.empty()) c.identity = "client_id=" + c.client_id;
    out.source = "managed identity (" + c.imds_url + (c.identity.empty() ? "" : ", " + c.identity) + ")";
    out.fallback = std::make_shared<Result<AzureLogin>>(cli_login(env));
  }
  if (auto sub = find_azure_subscription(env)) {
    c.subscription_id = sub->id;
    out.subscription_from = sub->from;
  }
  if (out.fallback && *out.fallback && !c.subscription_id.empty()) {
    (*out.fallback)->credentials.subscription_id = c.subscription_id;
    (*out.fallback)->subscription_from = out.subscription_from;
  }
  if (out.fallback && *out.fallback) (*out.fallback)->login_endpoint = out.login_endpoint;
  return out;
}

Task<Result<AzureLogin>> settle_azure_login(http::HttpClient& http, AzureLogin login) {
  if (login.credentials.kind != "managed_identity") co_return login;
  const auto& c = login.credentials;
  const std::string url = imds_token_url(c.imds_url, c.identity);
  bool answers = true;
  if (login.probe) {  // is anything there? (a machine off Azure: nothing answers 169.254.169.254)
    const http::HttpRequest ping{.method = "GET", .url = url, .timeout = std::chrono::seconds(1)};
    auto pong = co_await http.send_once(ping);
    answers = static_cast<bool>(pong);
  }
  std::optional<http::HttpResponse> token;
  if (answers) {
    const http::HttpRequest get{.method = "GET", .url = url, .headers = {{"Metadata", "true"}}, .timeout = std::chrono::seconds(5)};
    auto res = co_await http.send_once(get);
    if (res && res->status == 200) token = std::move(*res);
  }
  if (!token) {
    const std::string where = "no AZURE_CLIENT_ID/AZURE_CLIENT_SECRET in the environment, no managed identity at " + c.imds_url;
    if (login.fallback && *login.fallback) co_return std::move(**login.fallback);
    std::string cli = login.fallback ? login.fallback->error().detail : "";
    if (cli.starts_with("azure: ")) cli = cli.substr(7);
    co_return bad("no login (" + where + (cli.empty() ? "" : ", and " + cli) + ")" +
                  (cli.find("run '") == std::string::npos ? std::string("; ") + kCliFix : ""));
  }
  login.fallback.reset();
  if (login.credentials.subscription_id.empty()) {
    const http::HttpRequest get{.method = "GET", .url = c.imds_url + "/metadata/instance/compute/subscriptionId?api-version=2021-02-01&format=text",
                                .headers = {{"Metadata", "true"}}, .timeout = std::chrono::seconds(5)};
    auto sub = co_await http.send_once(get);
    if (sub && sub->status == 200 && !sub->body.empty()) {
      login.credentials.subscription_id = http::trim(sub->body);
      login.subscription_from = "the VM's metadata";
    }
  }
  co_return login;
}

Result<ClientCertificate> load_client_certificate(const std::string& path, const std::string& password) {
  auto text = http::read_login_file(path);
  if (!text) return bad("the certificate " + path + " cannot be read");
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  BIO* bio = BIO_new_mem_buf(text->data(), static_cast<int>(text->size()));
  if (text->find("-----BEGIN") != std::string::npos) {
    cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    bio = BIO_new_mem_buf(text->data(), static_cast<int>(text->size()));
    key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, const_cast<char*>(password.c_str()));
  } else if (PKCS12* p12 = d2i_PKCS12_bio(bio, nullptr)) {
    PKCS12_parse(p12, password.c_str(), &key, &cert, nullptr);
    PKCS12_free(p12);
  }
  BIO_free(bio);
  Result<ClientCertificate> out = bad("the certificate " + path + " holds no certificate and private key (PEM, or PKCS#12 with "
                                      "AZURE_CLIENT_CERTIFICATE_PASSWORD)");
  if (cert && key && EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA) {
    unsigned char sha1[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    BIO* mem = BIO_new(BIO_s_mem());
    if (X509_digest(cert, EVP_sha1(), sha1, &n) == 1 && PEM_write_bio_PrivateKey(mem, key, nullptr, nullptr, 0, nullptr, nullptr) == 1) {
      char* data = nullptr;
      long len = BIO_get_mem_data(mem, &data);
      out = ClientCertificate{gce::base64url_encode(std::string_view(reinterpret_cast<char*>(sha1), n)), std::string(data, len)};
    }
    BIO_free(mem);
  }
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

}  // namespace tsum::providers::azure
