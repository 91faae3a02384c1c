// The AWS login a user already has, found in the order botocore (the AWS CLI's SDK) looks for it, and the
// credentials it gives, refreshed before they expire. No SDK or CLI is needed: the order and the file formats
// are documented and small, and each fetch is one HTTP call over HttpClient (STS, the SSO portal, IMDSv2, the
// container endpoint) or one process (credential_process).
//
// The chain for profile P (an explicit `profile`, else AWS_DEFAULT_PROFILE, AWS_PROFILE, "default"):
//   env                            AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SECURITY_TOKEN or
//                                  AWS_SESSION_TOKEN, AWS_CREDENTIAL_EXPIRATION); skipped for an explicit profile
//   assume-role                    P has role_arn (and no web_identity_token_file): STS AssumeRole with the
//                                  credentials of source_profile (its own chain, recursively) or credential_source
//                                  (Environment, Ec2InstanceMetadata, EcsContainer)
//   assume-role-with-web-identity  AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN (not for an explicit profile), or P's
//                                  web_identity_token_file + role_arn: STS AssumeRoleWithWebIdentity
//   sso                            P has sso_account_id / sso_role_name (with sso_start_url and sso_region, or an
//                                  sso_session): the CLI's cached token (~/.aws/sso/cache, `aws sso login`), then
//                                  the portal's GetRoleCredentials
//   shared-credentials-file        [P] of the credentials file with aws_access_key_id
//   custom-process                 P's credential_process (its JSON on stdout, Version 1)
//   config-file                    [profile P] of the config file with aws_access_key_id
//   container-role                 AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI (ECS, EKS pod identity)
//   iam-role                       the instance role from IMDSv2, unless AWS_EC2_METADATA_DISABLED=true
// The files: AWS_CONFIG_FILE (~/.aws/config) and AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials); as in
// botocore, the credentials file's sections are merged into the config's profiles for everything but the
// config-file step. Region: AWS_REGION (the other SDKs'), AWS_DEFAULT_REGION, P's region. Endpoints:
// AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL, P's endpoint_url (and its `services` section's), unless
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true. tests/providers/logins/aws_login_diff.py holds this against botocore.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "providers/aws/sigv4.h"
#include "providers/http/http_client.h"
#include "providers/http/login_env.h"

namespace tsum::providers::aws {

using http::Task;

// The environment the chain reads: a snapshot, so a test can give its own.
using AwsEnvironment = http::LoginEnvironment;

using http::IniSection;

// The config and credentials files as botocore reads them.
struct AwsSharedFiles {
  std::string config_file, credentials_file;  // the paths looked at
  bool config_found = false, credentials_found = false;
  std::map<std::string, IniSection> config_profiles;      // [default] / [profile P] of the config file alone
  std::map<std::string, IniSection> credentials_profiles;  // [P] of the credentials file
  std::map<std::string, IniSection> profiles;              // both merged (the credentials file's keys win)
  std::map<std::string, IniSection> sso_sessions;          // [sso-session S]
  std::map<std::string, std::map<std::string, IniSection>> services;  // [services S]: service -> its keys
};


// Reads both files (a missing one is empty). invalid_argument names a file that does not parse.
Result<AwsSharedFiles> load_aws_shared_files(const AwsEnvironment& env);

// One step of the chain as found: what it will fetch, before anything is fetched.
struct AwsLoginPlan {
  std::string method;       // botocore's names: env, assume-role, sso, shared-credentials-file, ...
  std::string profile;      // the profile it came from ("" for env, container-role, iam-role)
  std::string file;         // the file that holds it
  Credentials credentials;  // env, shared-credentials-file, config-file
  double expires_s = 0;     // env with AWS_CREDENTIAL_EXPIRATION; 0: does not expire
  std::string process;      // custom-process: the command line
  // assume-role and assume-role-with-web-identity
  std::string role_arn, role_session_name, external_id, mfa_serial, web_identity_token_file;
  int duration_s = 0;                     // 0: STS's default
  std::shared_ptr<AwsLoginPlan> source;   // assume-role: whose credentials call STS
  // sso
  std::string sso_start_url, sso_region, sso_account_id, sso_role_name, sso_session;
  // container-role
  std::string container_url, container_token, container_token_file;
  // "none": no login; every fetch answers this line (the provider stays, and says why it cannot work)
  std::string unusable;

  // "profile work (~/.aws/config, SSO)", "environment (AWS_ACCESS_KEY_ID)", "instance role (IMDS)"
  std::string describe(const std::string& home = "") const;
};

// Where the calls go: base URLs with no trailing slash.
struct AwsEndpoints {
  std::string ec2, pricing, sts, ssm, sso, imds, quotas;  // empty: the service's own for the region
  bool imds_disabled = false;
};

// What the environment and the files say, resolved.
struct AwsLogin {
  std::string profile;         // the profile the chain looked at
  bool explicit_profile = false;
  std::string region;          // "" when nothing names one
  std::string region_from;     // "AWS_REGION", "AWS_DEFAULT_REGION", "profile work"
  AwsEndpoints endpoints;
  AwsLoginPlan plan;
  std::vector<std::string> looked;  // where it looked, for "not found" messages
};

// Resolves the chain. `profile`: an explicit profile (tsum's config field), "" for the environment's.
// invalid_argument with one line and its fix for a profile that is not there, a broken one, or no login.
Result<AwsLogin> resolve_aws_login(const AwsEnvironment& env, const std::string& profile = "");

// Splits a credential_process command line as POSIX shlex does (quotes and backslashes; no shell).
Result<std::vector<std::string>> shell_split(std::string_view line);

struct TimedCredentials {
  Credentials credentials;
  double expires_s = 0;  // 0: never
};

// Runs a credential_process (60 s at most) and reads its JSON. invalid_argument says what went wrong.
Result<TimedCredentials> run_credential_process(const std::string& command_line, const std::string& profile);

struct AwsCredentialSourceOptions {
  http::HttpClientOptions http = {};
  std::chrono::milliseconds attempt_timeout{10000};
  const Clock* clock = nullptr;   // null: the system clock
  std::string region;             // for STS's regional endpoint
  AwsEndpoints endpoints;
  std::string home;               // where ~/.aws/sso/cache is
  double refresh_before_s = 900;  // fetch again this long before expiry (botocore's advisory window)
};

// Gives a plan's credentials, fetched on first use and again when they are about to expire. One thread (the
// provider's). Errors are one line with the fix ("run 'aws sso login --profile work'").
class AwsCredentialSource {
 public:
  AwsCredentialSource(AwsLoginPlan plan, AwsCredentialSourceOptions opts);
  ~AwsCredentialSource();

  Task<Result<Credentials>> get();
  const AwsLoginPlan& plan() const { return plan_; }
  // STS GetCallerIdentity with the login: the account's ARN. Proves the login (tsumd check).
  Task<Result<std::string>> caller_identity();

 private:
  Task<Result<TimedCredentials>> fetch(const AwsLoginPlan& plan);
  Task<Result<TimedCredentials>> assume_role(const AwsLoginPlan& plan);
  Task<Result<TimedCredentials>> web_identity(const AwsLoginPlan& plan);
  Task<Result<TimedCredentials>> sso(const AwsLoginPlan& plan);
  Task<Result<TimedCredentials>> imds();
  Task<Result<TimedCredentials>> container(const AwsLoginPlan& plan);
  Task<Result<std::string>> sts(const std::string& action, const http::Fields& params, const Credentials* signer);
  std::string sts_url() const;
  double now_s() const;

  AwsLoginPlan plan_;
  AwsCredentialSourceOptions opts_;
  SystemClock system_clock_;
  std::unique_ptr<http::HttpClient> http_;
  std::optional<TimedCredentials> current_;
};

}  // namespace tsum::providers::aws
