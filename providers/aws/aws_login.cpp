#include "providers/aws/aws_login.h"

#include <fcntl.h>
#include <openssl/sha.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "common/json_util.h"
#include "providers/aws/aws_login_detail.h"
#include "providers/aws/xml.h"
#include "providers/http/codec.h"

extern char** environ;

namespace tsum::providers::aws {

using detail::bad;
using detail::parse_expiry;
using nlohmann::json;
using http::expand_home;
using http::lower;
using http::parse_ini;
using http::trim;
using http::read_login_file;
using http::tilde;

namespace {

bool is_true(const std::string& v) { return lower(v) == "true"; }

// botocore's shlex.split of "profile NAME" / "sso-session NAME": two words or nothing.
std::optional<std::string> second_word(const std::string& header) {
  auto words = shell_split(header);
  if (!words || words->size() != 2) return std::nullopt;
  return (*words)[1];
}

std::string value_or(const IniSection& s, const std::string& key, const std::string& dflt = "") {
  auto it = s.find(key);
  return it == s.end() ? dflt : it->second;
}

}  // namespace

// ---- environment and files --------------------------------------------------------------------------------

namespace {

// A nested value ("\nkey = value\n..."): its keys; invalid_argument for a line without '='.
Result<IniSection> parse_nested(const std::string& value) {
  IniSection out;
  std::size_t at = 0;
  while (at <= value.size()) {
    std::size_t end = value.find('\n', at);
    if (end == std::string::npos) end = value.size();
    const std::string line = trim(std::string_view(value).substr(at, end - at));
    at = end + 1;
    if (line.empty()) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) return make_error(Code::invalid_argument, "nested line without '=': " + line);
    out[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return out;
}

// The file at `path` parsed, or nothing when it is not there.
Result<std::optional<std::vector<std::pair<std::string, IniSection>>>> read_ini(const std::string& path, const std::string& home) {
  auto text = read_login_file(path);
  if (!text) return std::optional<std::vector<std::pair<std::string, IniSection>>>();
  auto parsed = parse_ini(*text);
  if (!parsed) return bad(tilde(path, home) + ": " + parsed.error().detail);
  return std::optional(std::move(*parsed));
}

}  // namespace

Result<AwsSharedFiles> load_aws_shared_files(const AwsEnvironment& env) {
  AwsSharedFiles f;
  f.config_file = expand_home(env.has("AWS_CONFIG_FILE") ? env.get("AWS_CONFIG_FILE") : "~/.aws/config", env.home);
  f.credentials_file = expand_home(
      env.has("AWS_SHARED_CREDENTIALS_FILE") ? env.get("AWS_SHARED_CREDENTIALS_FILE") : "~/.aws/credentials", env.home);
  auto config = read_ini(f.config_file, env.home);
  if (!config) return config.error();
  if (*config) {
    f.config_found = true;
    for (auto& [name, section] : **config) {
      if (name.starts_with("profile")) {
        if (auto p = second_word(name)) f.config_profiles[*p] = section;
      } else if (name.starts_with("sso-session")) {
        if (auto p = second_word(name)) f.sso_sessions[*p] = section;
      } else if (name.starts_with("services")) {
        if (auto p = second_word(name))
          for (const auto& [svc, v] : section)
            if (v.starts_with('\n') || v.empty())
              if (auto nested = parse_nested(v); nested) f.services[*p][svc] = std::move(*nested);
      } else if (name == "default") {
        f.config_profiles[name] = section;
      }
    }
  }
  f.profiles = f.config_profiles;
  auto creds = read_ini(f.credentials_file, env.home);
  if (!creds) return creds.error();
  if (*creds) {
    f.credentials_found = true;
    for (auto& [name, section] : **creds) {
      f.credentials_profiles[name] = section;
      auto& merged = f.profiles[name];
      for (const auto& [k, v] : section) merged[k] = v;
    }
  }
  return f;
}

Result<std::vector<std::string>> shell_split(std::string_view s) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\'') {
      auto close = s.find('\'', i + 1);
      if (close == std::string_view::npos) return make_error(Code::invalid_argument, "no closing quotation");
      word += s.substr(i + 1, close - i - 1);
      in_word = true;
      i = close;
    } else if (c == '"') {
      in_word = true;
      for (++i;; ++i) {
        if (i >= s.size()) return make_error(Code::invalid_argument, "no closing quotation");
        if (s[i] == '"') break;
        if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '"' || s[i + 1] == '\\')) ++i;
        word += s[i];
      }
    } else if (c == '\\') {
      if (i + 1 >= s.size()) return make_error(Code::invalid_argument, "no escaped character");
      word += s[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      if (in_word) out.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(std::move(word));
  return out;
}

// ---- the chain ----------------------------------------------------------------------------------------------

std::string AwsLoginPlan::describe(const std::string& home) const {
  const std::string where = tilde(file, home);
  if (method == "env") return "environment (AWS_ACCESS_KEY_ID)";
  if (method == "shared-credentials-file" || method == "config-file") return "profile " + profile + " (" + where + ")";
  if (method == "custom-process") return "profile " + profile + " (" + where + ", credential_process)";
  if (method == "sso") return "profile " + profile + " (" + where + ", SSO)";
  if (method == "assume-role")
    return "profile " + profile + " (" + where + ", role " + role_arn + " from " + (source ? source->describe(home) : "?") + ")";
  if (method == "assume-role-with-web-identity")
    return (profile.empty() ? "environment (AWS_WEB_IDENTITY_TOKEN_FILE" : "profile " + profile + " (" + where) +
           ", web identity, role " + role_arn + ")";
  if (method == "container-role") return "container role (" + container_url + ")";
  if (method == "iam-role") return "instance role (IMDS)";
  return method;
}

namespace {

struct Chain {
  const AwsEnvironment& env;
  const AwsSharedFiles& files;
  std::vector<std::string> visited;

  std::string where(const std::string& profile) const {
    const bool in_creds = files.credentials_profiles.count(profile) > 0;
    const bool in_config = files.config_profiles.count(profile) > 0;
    return tilde(in_config || !in_creds ? files.config_file : files.credentials_file, env.home);
  }

  Result<std::optional<AwsLoginPlan>> env_keys() const {
    if (env.get("AWS_ACCESS_KEY_ID").empty()) return std::optional<AwsLoginPlan>();
    if (env.get("AWS_SECRET_ACCESS_KEY").empty())
      return bad("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not; set both, or unset AWS_ACCESS_KEY_ID");
    AwsLoginPlan p;
    p.method = "env";
    p.credentials = {env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY"),
                     !env.get("AWS_SECURITY_TOKEN").empty() ? env.get("AWS_SECURITY_TOKEN") : env.get("AWS_SESSION_TOKEN")};
    if (auto e = env.get("AWS_CREDENTIAL_EXPIRATION"); !e.empty()) {
      auto t = parse_expiry(e);
      if (!t) return bad("AWS_CREDENTIAL_EXPIRATION: " + t.error().detail);
      p.expires_s = *t;
    }
    return std::optional(std::move(p));
  }

  static bool has_static(const IniSection& s) { return s.count("aws_access_key_id") || s.count("aws_secret_access_key"); }
  static bool has_role(const IniSection& s) { return s.count("role_arn") && !s.count("web_identity_token_file"); }

  // `profile`'s assume-role step, when it has a role.
  Result<std::optional<AwsLoginPlan>> assume_role(const std::string& profile) {
    auto it = files.profiles.find(profile);
    if (it == files.profiles.end() || !has_role(it->second)) return std::optional<AwsLoginPlan>();
    const IniSection& s = it->second;
    AwsLoginPlan p;
    p.method = "assume-role";
    p.profile = profile;
    p.file = where(profile);
    p.role_arn = value_or(s, "role_arn");
    p.role_session_name = value_or(s, "role_session_name");
    p.external_id = value_or(s, "external_id");
    p.mfa_serial = value_or(s, "mfa_serial");
    if (s.count("duration_seconds")) {
      char* end = nullptr;
      const std::string d = value_or(s, "duration_seconds");
      long v = std::strtol(d.c_str(), &end, 10);
      if (end && *end == '\0' && !d.empty() && v > 0 && v <= 43200) p.duration_s = static_cast<int>(v);
    }
    const bool has_source = s.count("source_profile"), has_cred_source = s.count("credential_source");
    if (has_source && has_cred_source)
      return bad("profile " + profile + " has both source_profile and credential_source; keep one");
    if (!has_source && !has_cred_source)
      return bad("profile " + profile + " has role_arn but no source_profile or credential_source");
    if (has_cred_source) {
      const std::string cs = value_or(s, "credential_source");
      AwsLoginPlan src;
      if (cs == "Environment") {
        auto e = env_keys();
        if (!e) return e.error();
        if (!*e) return bad("profile " + profile + ": credential_source Environment, but AWS_ACCESS_KEY_ID is not set");
        src = std::move(**e);
      } else if (cs == "Ec2InstanceMetadata") {
        src.method = "iam-role";
      } else if (cs == "EcsContainer") {
        auto c = container();
        if (!c) return bad("profile " + profile + ": credential_source EcsContainer, but AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is not set");
        src = std::move(*c);
      } else {
        return bad("profile " + profile + ": credential_source " + cs + " is not Environment, Ec2InstanceMetadata or EcsContainer");
      }
      p.source = std::make_shared<AwsLoginPlan>(std::move(src));
      return std::optional(std::move(p));
    }
    const std::string source = value_or(s, "source_profile");
    auto src_it = files.profiles.find(source);
    if (src_it == files.profiles.end())
      return bad("profile " + profile + ": its source_profile " + source + " is not in " + tilde(files.config_file, env.home));
    if (std::find(visited.begin(), visited.end(), source) != visited.end() &&
        (source != profile || !has_static(src_it->second)))
      return bad("profile " + profile + ": source_profile " + source + " leads back to a profile already visited");
    visited.push_back(source);
    Result<std::optional<AwsLoginPlan>> src = std::optional<AwsLoginPlan>();
    if (has_static(src_it->second) || !has_role(src_it->second)) {
      src = profile_steps(source, /*env_vars=*/false);
      if (src && !*src) return bad("profile " + profile + ": its source_profile " + source + " has no credentials");
    } else {
      src = assume_role(source);
    }
    if (!src) return src.error();
    p.source = std::make_shared<AwsLoginPlan>(std::move(**src));
    return std::optional(std::move(p));
  }

  Result<std::optional<AwsLoginPlan>> web_identity(const std::string& profile, bool env_vars) const {
    auto conf = [&](const std::string& key, const std::string& env_name) -> std::optional<std::string> {
      if (env_vars && env.has(env_name)) return env.get(env_name);
      auto it = files.profiles.find(profile);
      if (it != files.profiles.end() && it->second.count(key)) return it->second.at(key);
      return std::nullopt;
    };
    auto token_file = conf("web_identity_token_file", "AWS_WEB_IDENTITY_TOKEN_FILE");
    if (!token_file || token_file->empty()) return std::optional<AwsLoginPlan>();
    auto role = conf("role_arn", "AWS_ROLE_ARN");
    if (!role || role->empty())
      return bad("a web identity token file is set but no role: set AWS_ROLE_ARN or role_arn in profile " + profile);
    AwsLoginPlan p;
    p.method = "assume-role-with-web-identity";
    const bool from_env = env_vars && env.has("AWS_WEB_IDENTITY_TOKEN_FILE");
    if (!from_env) p.profile = profile, p.file = where(profile);
    p.web_identity_token_file = *token_file;
    p.role_arn = *role;
    p.role_session_name = conf("role_session_name", "AWS_ROLE_SESSION_NAME").value_or("");
    return std::optional(std::move(p));
  }

  Result<std::optional<AwsLoginPlan>> sso(const std::string& profile) const {
    auto it = files.profiles.find(profile);
    if (it == files.profiles.end() || (!it->second.count("sso_role_name") && !it->second.count("sso_account_id")))
      return std::optional<AwsLoginPlan>();
    IniSection c = it->second;
    std::vector<std::string> required = {"sso_role_name", "sso_account_id", "sso_start_url", "sso_region"};
    if (c.count("sso_session")) {
      const std::string name = c.at("sso_session");
      auto s = files.sso_sessions.find(name);
      if (s == files.sso_sessions.end()) return bad("profile " + profile + ": its sso_session " + name + " is not in " + tilde(files.config_file, env.home));
      for (const auto& [k, v] : s->second) {
        if (c.count(k) && c.at(k) != v)
          return bad("profile " + profile + ": " + k + " differs between the profile and sso-session " + name);
        c[k] = v;
      }
      required.push_back("sso_session");
    }
    std::string missing;
    for (const auto& k : required)
      if (!c.count(k)) missing += (missing.empty() ? "" : ", ") + k;
    if (!missing.empty()) return bad("profile " + profile + " is set up for SSO but lacks " + missing + "; run 'aws configure sso --profile " + profile + "'");
    AwsLoginPlan p;
    p.method = "sso";
    p.profile = profile;
    p.file = where(profile);
    p.sso_start_url = c["sso_start_url"];
    p.sso_region = c["sso_region"];
    p.sso_account_id = c["sso_account_id"];
    p.sso_role_name = c["sso_role_name"];
    p.sso_session = value_or(c, "sso_session");
    return std::optional(std::move(p));
  }

  Result<std::optional<AwsLoginPlan>> static_keys(const std::map<std::string, IniSection>& profiles, const std::string& profile,
                                                  const std::string& method, const std::string& file) const {
    auto it = profiles.find(profile);
    if (it == profiles.end() || !it->second.count("aws_access_key_id")) return std::optional<AwsLoginPlan>();
    if (!it->second.count("aws_secret_access_key"))
      return bad("profile " + profile + " in " + tilde(file, env.home) + " has aws_access_key_id but no aws_secret_access_key; run 'aws configure --profile " + profile + "'");
    AwsLoginPlan p;
    p.method = method;
    p.profile = profile;
    p.file = file;
    const IniSection& s = it->second;
    p.credentials = {s.at("aws_access_key_id"), s.at("aws_secret_access_key"),
                     s.count("aws_security_token") ? s.at("aws_security_token") : value_or(s, "aws_session_token")};
    return std::optional(std::move(p));
  }

  std::optional<AwsLoginPlan> process(const std::string& profile) const {
    auto it = files.profiles.find(profile);
    if (it == files.profiles.end() || !it->second.count("credential_process")) return std::nullopt;
    AwsLoginPlan p;
    p.method = "custom-process";
    p.profile = profile;
    p.file = where(profile);
    p.process = it->second.at("credential_process");
    return p;
  }

  std::optional<AwsLoginPlan> container() const {
    const std::string rel = env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"), full = env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    if (rel.empty() && full.empty()) return std::nullopt;
    AwsLoginPlan p;
    p.method = "container-role";
    p.container_url = !rel.empty() ? "http://169.254.170.2" + rel : full;
    p.container_token = env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    p.container_token_file = env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    return p;
  }

  // The steps that read a profile: web identity, SSO, the credentials file, credential_process, the config file.
  Result<std::optional<AwsLoginPlan>> profile_steps(const std::string& profile, bool env_vars) {
    auto w = web_identity(profile, env_vars);
    if (!w || *w) return w;
    auto s = sso(profile);
    if (!s || *s) return s;
    auto c = static_keys(files.credentials_profiles, profile, "shared-credentials-file", files.credentials_file);
    if (!c || *c) return c;
    if (auto p = process(profile)) return std::optional(std::move(*p));
    return static_keys(files.config_profiles, profile, "config-file", files.config_file);
  }
};

// AWS_ENDPOINT_URL_<ID>, AWS_ENDPOINT_URL, the profile's services section, its endpoint_url.
std::string endpoint_for(const AwsEnvironment& env, const AwsSharedFiles& files, const IniSection& profile,
                         const std::string& id) {
  if (is_true(env.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")) || is_true(value_or(profile, "ignore_configured_endpoint_urls")))
    return "";
  std::string upper;
  for (char c : id) upper += c == ' ' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (auto v = env.get("AWS_ENDPOINT_URL_" + upper); !v.empty()) return v;
  if (auto v = env.get("AWS_ENDPOINT_URL"); !v.empty()) return v;
  if (auto svc = value_or(profile, "services"); !svc.empty())
    if (auto s = files.services.find(svc); s != files.services.end())
      if (auto e = s->second.find(lower(upper)); e != s->second.end())
        if (auto v = value_or(e->second, "endpoint_url"); !v.empty()) return v;
  return value_or(profile, "endpoint_url");
}

std::string strip_slash(std::string s) {
  while (s.ends_with('/')) s.pop_back();
  return s;
}

}  // namespace

Result<AwsLogin> resolve_aws_login(const AwsEnvironment& env, const std::string& explicit_profile) {
  auto files = load_aws_shared_files(env);
  if (!files) return files.error();
  AwsLogin login;
  login.explicit_profile = !explicit_profile.empty();
  if (login.explicit_profile) login.profile = explicit_profile;
  else if (env.has("AWS_DEFAULT_PROFILE")) login.profile = env.get("AWS_DEFAULT_PROFILE");
  else login.profile = env.get("AWS_PROFILE");
  if (login.profile.empty()) login.profile = "default";
  const std::string cfg = tilde(files->config_file, env.home), creds = tilde(files->credentials_file, env.home);
  auto pit = files->profiles.find(login.profile);
  if (pit == files->profiles.end() && login.profile != "default")
    return bad("profile " + login.profile + " is not in " + cfg + " or " + creds + "; run 'aws configure --profile " +
               login.profile + "'");
  const IniSection profile = pit == files->profiles.end() ? IniSection{} : pit->second;

  if (auto r = env.get("AWS_REGION"); !r.empty()) login.region = r, login.region_from = "AWS_REGION";
  else if (env.has("AWS_DEFAULT_REGION")) login.region = env.get("AWS_DEFAULT_REGION"), login.region_from = "AWS_DEFAULT_REGION";
  else if (profile.count("region")) login.region = profile.at("region"), login.region_from = "profile " + login.profile;

  auto& ep = login.endpoints;
  ep.ec2 = strip_slash(endpoint_for(env, *files, profile, "EC2"));
  ep.pricing = strip_slash(endpoint_for(env, *files, profile, "Pricing"));
  ep.sts = strip_slash(endpoint_for(env, *files, profile, "STS"));
  ep.ssm = strip_slash(endpoint_for(env, *files, profile, "SSM"));
  ep.sso = strip_slash(endpoint_for(env, *files, profile, "SSO"));
  ep.quotas = strip_slash(endpoint_for(env, *files, profile, "Service Quotas"));
  ep.imds = strip_slash(env.has("AWS_EC2_METADATA_SERVICE_ENDPOINT") ? env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT")
                                                                       : value_or(profile, "ec2_metadata_service_endpoint"));
  ep.imds_disabled = is_true(env.get("AWS_EC2_METADATA_DISABLED"));

  Chain chain{env, *files, {login.profile}};
  auto found = [&](Result<std::optional<AwsLoginPlan>> r) -> std::optional<Result<AwsLogin>> {
    if (!r) return Result<AwsLogin>(r.error());
    if (!*r) return std::nullopt;
    login.plan = std::move(**r);
    return Result<AwsLogin>(std::move(login));
  };
  if (!login.explicit_profile)
    if (auto r = found(chain.env_keys())) return std::move(*r);
  if (auto r = found(chain.assume_role(login.profile))) return std::move(*r);
  if (auto r = found(chain.profile_steps(login.profile, !login.explicit_profile))) return std::move(*r);
  if (auto c = chain.container()) return found(std::optional(std::move(*c))).value();
  const std::string looked = (login.explicit_profile ? "" : "AWS_ACCESS_KEY_ID, ") + std::string("profile ") +
                             login.profile + " in " + creds + " and " + cfg;
  if (!ep.imds_disabled) {
    login.plan.method = "iam-role";
    login.looked = {looked, "the instance role (IMDS)"};
    return login;
  }
  return bad("no login found (looked at " + looked + "; IMDS is disabled); run 'aws configure' or 'aws sso login', or set AWS_PROFILE");
}

}  // namespace tsum::providers::aws
