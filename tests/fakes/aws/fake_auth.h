// How the fake cloud checks a request's SigV4 signature: it rebuilds the canonical request from what
// arrived (method, path, query, the headers named in SignedHeaders, the body) with sigv4.h, and compares.
// Refusals carry AWS's error codes: MissingAuthenticationToken, IncompleteSignature, AuthFailure,
// RequestExpired (more than 15 minutes of clock skew), XAmzContentSHA256Mismatch, SignatureDoesNotMatch.
#pragma once

#include <string>
#include <string_view>

#include "providers/aws/sigv4.h"
#include "tests/fakes/http/loopback_server.h"

namespace tsum::providers::aws::fake {

struct AuthRefusal {
  int status = 0;  // 0: the signature is good
  std::string code;
  std::string message;
};

AuthRefusal verify_sigv4(const http::LoopbackRequest& req, const Credentials& creds, std::string_view region,
                         std::string_view service, double now_s);

}  // namespace tsum::providers::aws::fake
