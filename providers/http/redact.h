// Keeping credentials out of error messages: every occurrence of a secret in a text is replaced by
// "[redacted]". Adapters run each error detail through this before it leaves them, so a server (or a
// proxy) that quotes a token back does not put it into logs, the API or SQLite.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace tsum::providers::http {

inline constexpr std::string_view kRedacted = "[redacted]";

// Secrets shorter than 4 characters are left alone (they would match everywhere and hide nothing).
inline std::string redact(std::string text, std::initializer_list<std::string_view> secrets) {
  for (std::string_view secret : secrets) {
    if (secret.size() < 4) continue;
    for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + kRedacted.size()))
      text.replace(at, secret.size(), kRedacted);
  }
  return text;
}

}  // namespace tsum::providers::http
