// AWS Signature Version 4, header signing (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html).
//
//   canonical request = METHOD \n canonical path \n canonical query \n canonical headers \n
//                       signed header names \n payload hash
//   string to sign    = "AWS4-HMAC-SHA256" \n amz_date \n date/region/service/aws4_request \n sha256(canonical)
//   signature         = hex(HMAC(HMAC(HMAC(HMAC(HMAC("AWS4" secret, date), region), service), "aws4_request"),
//                                string to sign))
//
// The path is taken as it appears on the wire and encoded once more (all services but S3); with normalize it
// first loses "." and ".." segments and repeated slashes. Query pairs are given decoded and are encoded and
// sorted here. Every header of the request is signed but user-agent, expect, x-amzn-trace-id and
// authorization; a header's values are whitespace-collapsed and joined by ','. Checked against the AWS suite
// (tests/providers/aws) and against botocore's SigV4Auth on random requests.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "providers/aws/codec.h"

namespace tsum::providers::aws {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty: long-term credentials
};

struct SignableRequest {
  std::string method = "GET";
  std::string path = "/";  // as in the request line, without the query
  Fields query = {};       // decoded names and values, any order, repeats allowed
  Fields headers = {};     // as sent: any case, repeats allowed; must include host
  std::string body = {};
};

struct SignOptions {
  std::string region;
  std::string service;
  std::string amz_date;             // "YYYYMMDDTHHMMSSZ", see amz_date()
  bool normalize_path = true;       // false for S3
  bool add_content_sha256 = false;  // send and sign x-amz-content-sha256
  bool unsigned_payload = false;    // payload hash "UNSIGNED-PAYLOAD" (implies the header above)
  bool omit_session_token = false;  // add x-amz-security-token after signing, unsigned
};

struct SignedRequest {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;      // 64 hex digits
  std::string authorization;  // the Authorization header's value
  Fields added_headers;       // add these to the request: X-Amz-Date, Authorization and the optional ones
};

// Signs `req`. invalid_argument when credentials, region, service or the date are missing or malformed, or
// the request has no host header. Headers that signing sets (authorization, x-amz-date, and the token and
// content hash when it adds them) are ignored in `req`.
Result<SignedRequest> sign(const SignableRequest& req, const Credentials& creds, const SignOptions& opts);

// "20150830T123600Z" for the given instant (UTC).
std::string amz_date(std::chrono::system_clock::time_point t);
// Parses an amz_date back; invalid_argument when malformed.
Result<std::chrono::system_clock::time_point> parse_amz_date(std::string_view s);

// The building blocks, for verifiers (the fake cloud) that rebuild a signature from a received request.
std::string canonical_path(std::string_view path, bool normalize);
std::string canonical_query(const Fields& query);
// The canonical request over exactly the headers named in signed_names (lowercase, any order).
std::string canonical_request(const SignableRequest& req, const std::vector<std::string>& signed_names,
                              std::string_view payload_hash, bool normalize_path);
std::string string_to_sign(std::string_view amz_date, std::string_view scope, std::string_view canonical_request);
std::string signature_of(std::string_view secret, std::string_view scope, std::string_view string_to_sign);

// The parts of an "AWS4-HMAC-SHA256 Credential=AK/DATE/REGION/SERVICE/aws4_request, SignedHeaders=a;b,
// Signature=hex" header.
struct AuthorizationHeader {
  std::string access_key_id;
  std::string date;  // YYYYMMDD
  std::string region;
  std::string service;
  std::string scope;  // date/region/service/aws4_request
  std::vector<std::string> signed_headers;
  std::string signature;
};
Result<AuthorizationHeader> parse_authorization(std::string_view value);

}  // namespace tsum::providers::aws
