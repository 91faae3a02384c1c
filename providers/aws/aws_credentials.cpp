// The credentials of a resolved AWS login (providers/aws/aws_login.h): a credential_process run, and the fetches of
// STS (assume-role, web identity), SSO, the instance metadata service and the container endpoint, each cached to its
// expiry.
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
#include "providers/http/base_url.h"
#include "providers/http/codec.h"

extern char** environ;

namespace tsum::providers::aws {

using detail::bad;
using detail::parse_expiry;
using http::read_login_file;
using http::tilde;
using http::trim;
using nlohmann::json;

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
