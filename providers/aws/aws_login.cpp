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
#include "providers/aws/xml.h"
#include "providers/http/codec.h"

extern char** environ;

namespace tsum::providers::aws {

using nlohmann::json;
using http::expand_home;
using http::lower;
using http::parse_ini;
using http::trim;
using http::read_login_file;
using http::tilde;

namespace {

Error bad(const std::string& what) { return make_error(Code::invalid_argument, "aws: " + what); }

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

Result<double> parse_expiry(std::string text) {
  if (text.ends_with("UTC")) text = text.substr(0, text.size() - 3) + "Z";
  return http::parse_rfc3339(trim(text));
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

// ---- credential_process ---------------------------------------------------------------------------------------

Result<TimedCredentials> run_credential_process(const std::string& command_line, const std::string& profile) {
  const std::string who = "profile " + profile + "'s credential_process";
  auto argv_words = shell_split(command_line);
  if (!argv_words) return bad(who + ": " + argv_words.error().detail);
  if (argv_words->empty()) return bad(who + " is empty");
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return bad(who + ": pipe failed");
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]), close(out[1]);
    return bad(who + ": pipe failed");
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  std::vector<char*> argv;
  for (auto& w : *argv_words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]), close(err[1]);
  if (rc != 0) {
    close(out[0]), close(err[0]);
    return bad(who + ": cannot run " + (*argv_words)[0] + ": " + std::strerror(rc));
  }
  std::string stdout_text, stderr_text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  bool timed_out = false;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    if (poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0 && (i == 0 ? stdout_text : stderr_text).size() < (1 << 20)) (i == 0 ? stdout_text : stderr_text).append(buf, n);
      if (n <= 0) close(fds[i].fd), fds[i].fd = -1, --open_fds;
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) return bad(who + " gave no answer in 60 s");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string last = trim(stderr_text);
    if (auto nl = last.rfind('\n'); nl != std::string::npos) last = last.substr(nl + 1);
    return bad(who + " failed (exit " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) +
               ")" + (last.empty() ? "" : ": " + last.substr(0, 200)));
  }
  auto doc = parse_json_safely(stdout_text);
  if (!doc || !doc->is_object()) return bad(who + " did not print a JSON object");
  if (!doc->contains("Version") || (*doc)["Version"] != 1) return bad(who + ": Version must be 1");
  TimedCredentials t;
  t.credentials = {json_str(*doc, "AccessKeyId"), json_str(*doc, "SecretAccessKey"), json_str(*doc, "SessionToken")};
  if (t.credentials.access_key_id.empty() || t.credentials.secret_access_key.empty())
    return bad(who + " gave no AccessKeyId or SecretAccessKey");
  if (auto e = json_str(*doc, "Expiration"); !e.empty()) {
    auto at = parse_expiry(e);
    if (!at) return bad(who + ": Expiration: " + at.error().detail);
    t.expires_s = *at;
  }
  return t;
}

// ---- fetching -----------------------------------------------------------------------------------------------

AwsCredentialSource::AwsCredentialSource(AwsLoginPlan plan, AwsCredentialSourceOptions opts)
    : plan_(std::move(plan)), opts_(std::move(opts)) {
  http::HttpClientOptions h = opts_.http;
  h.threads = 1;
  http_ = std::make_unique<http::HttpClient>(h);
}

AwsCredentialSource::~AwsCredentialSource() = default;

double AwsCredentialSource::now_s() const { return (opts_.clock ? *opts_.clock : system_clock_).now_s(); }

Task<Result<Credentials>> AwsCredentialSource::get() {
  if (!current_ || (current_->expires_s > 0 && current_->expires_s - now_s() < opts_.refresh_before_s)) {
    auto fresh = co_await fetch(plan_);
    if (!fresh) {
      // A refresh that fails while the old credentials still hold keeps them (botocore's advisory window).
      if (current_ && current_->expires_s - now_s() > 60) co_return current_->credentials;
      co_return fresh.error();
    }
    current_ = std::move(*fresh);
  }
  co_return current_->credentials;
}

Task<Result<TimedCredentials>> AwsCredentialSource::fetch(const AwsLoginPlan& p) {
  if (p.method == "env" || p.method == "shared-credentials-file" || p.method == "config-file")
    co_return TimedCredentials{p.credentials, p.expires_s};
  if (p.method == "custom-process") co_return run_credential_process(p.process, p.profile);
  if (p.method == "assume-role") co_return co_await assume_role(p);
  if (p.method == "assume-role-with-web-identity") co_return co_await web_identity(p);
  if (p.method == "sso") co_return co_await sso(p);
  if (p.method == "container-role") co_return co_await container(p);
  if (p.method == "iam-role") co_return co_await imds();
  if (p.method == "none") co_return make_error(Code::invalid_argument, p.unusable);
  co_return bad("no way to fetch credentials of " + p.method);
}

std::string AwsCredentialSource::sts_url() const {
  if (!opts_.endpoints.sts.empty()) return opts_.endpoints.sts;
  return opts_.region.empty() ? "https://sts.amazonaws.com" : "https://sts." + opts_.region + ".amazonaws.com";
}

namespace {

// STS's <Credentials> in a result element; the fix when they are not there.
Result<TimedCredentials> sts_credentials(const std::string& body, const std::string& result_name, const std::string& what) {
  auto root = parse_xml(body);
  if (!root) return bad(what + ": STS's answer is not XML");
  const XmlNode* c = root->find({result_name, "Credentials"});
  if (!c) return bad(what + ": STS's answer has no Credentials");
  TimedCredentials t{{c->child_text("AccessKeyId"), c->child_text("SecretAccessKey"), c->child_text("SessionToken")}, 0};
  if (auto at = parse_expiry(c->child_text("Expiration")); at) t.expires_s = *at;
  return t;
}

// The SSO token cache's file name: the SHA-1 of the start URL or the session's name.
std::string sha1_hex(const std::string& key) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(key.data()), key.size(), digest);
  return http::hex(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

// Requests built outside the coroutines: GCC 12 cannot keep a braced list's array in a coroutine frame.
http::Fields role_params(const AwsLoginPlan& p, double now_s) {
  return {{"RoleArn", p.role_arn},
          {"RoleSessionName", p.role_session_name.empty() ? "tsum-" + std::to_string(static_cast<long long>(now_s)) : p.role_session_name}};
}
http::Fields sts_params(const std::string& action, const http::Fields& params) {
  http::Fields all{{"Action", action}, {"Version", "2011-06-15"}};
  all.insert(all.end(), params.begin(), params.end());
  return all;
}
http::HttpHeaders form_headers(const std::string& host) {
  return {{"Host", host}, {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
}
http::HttpHeaders bearer_header(const std::string& token) { return {{"x-amz-sso_bearer_token", token}}; }
http::HttpHeaders imds_header(const std::string& name, const std::string& value) { return {{name, value}}; }

}  // namespace

Task<Result<std::string>> AwsCredentialSource::sts(const std::string& action, const http::Fields& params,
                                                   const Credentials* signer) {
  http::Fields all = sts_params(action, params);
  const std::string body = http::form_encode(all);
  auto base = http::parse_base_url(sts_url());
  if (!base) co_return bad("STS endpoint " + sts_url() + ": " + base.error().detail);
  http::HttpHeaders headers = form_headers(base->host);
  if (signer) {
    SignableRequest req{.method = "POST", .path = base->path, .headers = headers, .body = body};
    std::time_t t = static_cast<std::time_t>(now_s());
    SignOptions so{.region = opts_.region.empty() ? "us-east-1" : opts_.region, .service = "sts",
                   .amz_date = amz_date(std::chrono::system_clock::from_time_t(t))};
    auto s = sign(req, *signer, so);
    if (!s) co_return s.error();
    headers.insert(headers.end(), s->added_headers.begin(), s->added_headers.end());
  }
  http::HttpRequest req{.method = "POST", .url = base->url, .headers = headers, .body = body, .timeout = opts_.attempt_timeout};
  auto res = co_await http_->send(req);
  if (!res) co_return make_error(res.code(), "aws: STS " + action + ": " + res.error().detail);
  if (res->status != 200) {
    std::string code, message;
    if (auto root = parse_xml(res->body)) {
      code = root->find({"Error", "Code"}) ? root->find({"Error", "Code"})->text : "";
      message = root->find({"Error", "Message"}) ? root->find({"Error", "Message"})->text : "";
    }
    message = message.substr(0, message.find('\n'));  // one line: AWS's SignatureDoesNotMatch goes on for many
    if (code == "InvalidClientTokenId" || code == "SignatureDoesNotMatch" || code == "ExpiredToken")
      message += (message.empty() ? "" : "; ") + std::string("the keys are wrong or expired: run 'aws configure' (or 'aws sso login')");
    co_return make_error(res->status >= 500 || res->status == 429 ? Code::unavailable : Code::invalid_argument,
                         "aws: STS " + action + " (HTTP " + std::to_string(res->status) + "): " +
                             (code.empty() ? "no error code" : code) + (message.empty() ? "" : ": " + message));
  }
  co_return std::move(res->body);
}

Task<Result<TimedCredentials>> AwsCredentialSource::assume_role(const AwsLoginPlan& p) {
  if (!p.mfa_serial.empty())
    co_return bad("profile " + p.profile + " needs an MFA code (mfa_serial), which a daemon cannot type; use a profile without mfa_serial, or 'aws sso login'");
  if (!p.source) co_return bad("profile " + p.profile + ": no source for role " + p.role_arn);
  auto source = co_await fetch(*p.source);
  if (!source) co_return source.error();
  http::Fields params = role_params(p, now_s());
  if (!p.external_id.empty()) params.emplace_back("ExternalId", p.external_id);
  if (p.duration_s > 0) params.emplace_back("DurationSeconds", std::to_string(p.duration_s));
  auto body = co_await sts("AssumeRole", params, &source->credentials);
  if (!body) co_return make_error(body.code(), body.error().detail + " (profile " + p.profile + ", role " + p.role_arn + ")");
  co_return sts_credentials(*body, "AssumeRoleResult", "profile " + p.profile);
}

Task<Result<TimedCredentials>> AwsCredentialSource::web_identity(const AwsLoginPlan& p) {
  auto token = read_login_file(p.web_identity_token_file);
  if (!token || trim(*token).empty()) co_return bad("web identity token file " + p.web_identity_token_file + " cannot be read");
  http::Fields params = role_params(p, now_s());
  params.emplace_back("WebIdentityToken", trim(*token));
  auto body = co_await sts("AssumeRoleWithWebIdentity", params, nullptr);
  if (!body) co_return body.error();
  co_return sts_credentials(*body, "AssumeRoleWithWebIdentityResult", "web identity");
}

Task<Result<TimedCredentials>> AwsCredentialSource::sso(const AwsLoginPlan& p) {
  const std::string fix = "run 'aws sso login --profile " + p.profile + "'";
  const std::string key = p.sso_session.empty() ? p.sso_start_url : p.sso_session;
  const std::string cache = opts_.home + "/.aws/sso/cache/" + sha1_hex(key) + ".json";
  auto text = read_login_file(cache);
  if (!text) co_return bad("profile " + p.profile + " uses SSO and has no cached login (" + tilde(cache, opts_.home) + "); " + fix);
  auto doc = parse_json_safely(*text);
  const std::string token = doc && doc->is_object() ? json_str(*doc, "accessToken") : "";
  auto expires = parse_expiry(doc && doc->is_object() ? json_str(*doc, "expiresAt") : "");
  if (token.empty() || !expires) co_return bad("profile " + p.profile + ": the cached SSO login " + tilde(cache, opts_.home) + " is not one the CLI writes; " + fix);
  if (*expires <= now_s()) co_return bad("profile " + p.profile + ": the SSO login expired; " + fix);
  const std::string base = !opts_.endpoints.sso.empty() ? opts_.endpoints.sso : "https://portal.sso." + p.sso_region + ".amazonaws.com";
  const std::string url = base + "/federation/credentials?account_id=" + http::uri_encode(p.sso_account_id) +
                          "&role_name=" + http::uri_encode(p.sso_role_name);
  http::HttpRequest req{.method = "GET", .url = url, .headers = bearer_header(token), .timeout = opts_.attempt_timeout};
  auto res = co_await http_->send(req);
  if (!res) co_return make_error(res.code(), "aws: SSO GetRoleCredentials: " + res.error().detail);
  if (res->status == 401 || res->status == 403) co_return bad("profile " + p.profile + ": the SSO portal refused the login (HTTP " + std::to_string(res->status) + "); " + fix);
  if (res->status != 200) co_return make_error(res->status >= 500 ? Code::unavailable : Code::invalid_argument, "aws: SSO GetRoleCredentials: HTTP " + std::to_string(res->status));
  auto rc = parse_json_safely(res->body);
  if (!rc || !rc->is_object() || !rc->contains("roleCredentials") || !(*rc)["roleCredentials"].is_object())
    co_return bad("SSO GetRoleCredentials: no roleCredentials in the answer");
  const json& c = (*rc)["roleCredentials"];
  TimedCredentials t{{json_str(c, "accessKeyId"), json_str(c, "secretAccessKey"), json_str(c, "sessionToken")}, 0};
  if (c.contains("expiration") && c["expiration"].is_number()) t.expires_s = c["expiration"].get<double>() / 1000.0;
  co_return t;
}

namespace {

Result<TimedCredentials> credentials_json(const std::string& body, const std::string& what) {
  auto doc = parse_json_safely(body);
  if (!doc || !doc->is_object()) return bad(what + ": the answer is not JSON");
  if (doc->contains("Code") && json_str(*doc, "Code") != "Success") return bad(what + ": " + json_str(*doc, "Code"));
  TimedCredentials t{{json_str(*doc, "AccessKeyId"), json_str(*doc, "SecretAccessKey"), json_str(*doc, "Token")}, 0};
  if (t.credentials.access_key_id.empty() || t.credentials.secret_access_key.empty()) return bad(what + ": no AccessKeyId");
  if (auto at = parse_expiry(json_str(*doc, "Expiration")); at) t.expires_s = *at;
  return t;
}

}  // namespace

Task<Result<TimedCredentials>> AwsCredentialSource::imds() {
  const std::string base = opts_.endpoints.imds.empty() ? "http://169.254.169.254" : opts_.endpoints.imds;
  const std::string not_ec2 = "no login found, and no instance role: the instance metadata service (" + base +
                              ") did not answer; run 'aws configure' or 'aws sso login', or set AWS_PROFILE";
  const auto t = std::chrono::milliseconds(2000);
  http::HttpRequest token_req{.method = "PUT", .url = base + "/latest/api/token", .headers = imds_header("X-aws-ec2-metadata-token-ttl-seconds", "21600"), .timeout = t};
  auto tok = co_await http_->send_once(token_req);
  if (!tok || tok->status != 200) co_return bad(not_ec2);
  const http::HttpHeaders h = imds_header("X-aws-ec2-metadata-token", tok->body);
  http::HttpRequest role_req{.method = "GET", .url = base + "/latest/meta-data/iam/security-credentials/", .headers = h, .timeout = t};
  auto role = co_await http_->send_once(role_req);
  if (!role) co_return bad(not_ec2);
  if (role->status == 404) co_return bad("this EC2 instance has no instance role; attach one, or run 'aws configure'");
  const std::string name = trim(role->body.substr(0, role->body.find('\n')));
  if (role->status != 200 || name.empty()) co_return bad("IMDS named no instance role (HTTP " + std::to_string(role->status) + ")");
  http::HttpRequest creds_req{.method = "GET", .url = base + "/latest/meta-data/iam/security-credentials/" + name, .headers = h, .timeout = t};
  auto creds = co_await http_->send_once(creds_req);
  if (!creds || creds->status != 200) co_return bad("IMDS gave no credentials for instance role " + name);
  co_return credentials_json(creds->body, "instance role " + name);
}

Task<Result<TimedCredentials>> AwsCredentialSource::container(const AwsLoginPlan& p) {
  http::HttpHeaders h;
  std::string token = p.container_token;
  if (!p.container_token_file.empty())
    if (auto t = read_login_file(p.container_token_file)) token = trim(*t);
  if (!token.empty()) h.emplace_back("Authorization", token);
  http::HttpRequest req{.method = "GET", .url = p.container_url, .headers = h, .timeout = opts_.attempt_timeout};
  auto res = co_await http_->send(req);
  if (!res || res->status != 200) co_return bad("the container credentials endpoint " + p.container_url + " gave none");
  co_return credentials_json(res->body, "container role");
}

Task<Result<std::string>> AwsCredentialSource::caller_identity() {
  auto creds = co_await get();
  if (!creds) co_return creds.error();
  const Credentials c = *creds;
  auto body = co_await sts("GetCallerIdentity", {}, &c);
  if (!body) co_return body.error();
  auto root = parse_xml(*body);
  const XmlNode* arn = root ? root->find({"GetCallerIdentityResult", "Arn"}) : nullptr;
  if (!arn) co_return bad("STS GetCallerIdentity: no Arn in the answer");
  co_return arn->text;
}

}  // namespace tsum::providers::aws
