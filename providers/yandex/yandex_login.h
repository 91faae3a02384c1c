// The Yandex Cloud login a user already has, found as the yc CLI keeps it (`yc init`, `yc config set ...`):
// ~/.config/yandex-cloud/config.yaml, its `current` profile (or the one tsum's config names) under `profiles`:
//   service-account-key       the authorized key itself (id, service_account_id, private_key): JWT -> IAM token
//   token                     a user's OAuth token: exchanged at IAM for an IAM token
//   instance-service-account  true: the VM's service account, from the metadata server
//   federation-id             refused: it needs a browser (give the profile a service account key)
//   folder-id, compute-default-zone
// Yandex's Terraform provider's variables come first, as its users set them: YC_SERVICE_ACCOUNT_KEY_FILE (a key
// file), YC_FOLDER_ID, YC_ZONE. tests/providers/logins/yandex_login_diff.py holds this against the documented
// format over Python's YAML parser.
#pragma once

#include <string>

#include "common/result.h"
#include "providers/http/login_env.h"
#include "providers/yandex/ps256_jwt.h"

namespace tsum::providers::yandex {

// How a YandexApi gets its IAM tokens.
struct YandexCredentials {
  std::string kind = "key";   // "key", "oauth", "metadata"
  AuthorizedKey key = {};     // key
  std::string oauth_token = {};  // oauth
};

struct YandexLogin {
  YandexCredentials credentials;
  std::string folder_id;  // "" when the profile names none
  std::string zone;       // "" when the profile names none
  std::string source;     // "yc profile default (~/.config/yandex-cloud/config.yaml, service account aje...)"
};

// invalid_argument with where it looked and the fix: no key or token anywhere, a profile that is not there, a
// federation login, a malformed file or key.
Result<YandexLogin> resolve_yandex_login(const http::LoginEnvironment& env, const std::string& profile = "");

}  // namespace tsum::providers::yandex
