// The name a cloud instance gets from its launch: "tsum-<run>-<8 hex of sha256(idempotency token)>", the run
// id lowercased to [a-z0-9-] and cut at 40 characters. Valid as a GCE instance and a Hetzner server name; the
// same launch always gets the same name, so a create retried after a lost answer finds its first instance.
#pragma once

#include <string>

#include "providers/http/codec.h"
#include "providers/provider.h"

namespace tsum::providers {

inline std::string instance_name_for(const LaunchSpec& spec) {
  std::string run;
  for (char c : spec.run_id) {
    if (run.size() == 40) break;
    c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    run += (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-';
  }
  return "tsum-" + (run.empty() ? std::string() : run + "-") + http::sha256_hex(spec.idempotency_token).substr(0, 8);
}

}  // namespace tsum::providers
