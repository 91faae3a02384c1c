// tsum-sigv4: signs requests read as JSON lines on stdin and prints one JSON line per request, for the
// botocore differential test (sigv4_botocore_diff.py).
//   in:  {"method", "path", "query": [[name, value]...], "headers": [[name, value]...], "body_b64",
//         "access_key", "secret_key", "token", "region", "service", "amz_date", "unsigned_payload"}
//   out: {"canonical_request", "string_to_sign", "signature", "authorization"} or {"error": "..."}
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "providers/aws/sigv4.h"

using namespace tsum::providers::aws;
using nlohmann::json;

namespace {

Fields fields_of(const json& pairs) {
  Fields out;
  for (const auto& p : pairs) out.emplace_back(p.at(0).get<std::string>(), p.at(1).get<std::string>());
  return out;
}

json sign_one(const json& in) {
  auto body = base64_decode(in.value("body_b64", ""));
  if (!body) return {{"error", body.error().detail}};
  SignableRequest req{.method = in.at("method"), .path = in.at("path"), .query = fields_of(in.value("query", json::array())),
                      .headers = fields_of(in.value("headers", json::array())), .body = *body};
  Credentials creds{in.at("access_key"), in.at("secret_key"), in.value("token", "")};
  SignOptions opts{.region = in.at("region"), .service = in.at("service"), .amz_date = in.at("amz_date"),
                   .unsigned_payload = in.value("unsigned_payload", false)};
  auto s = sign(req, creds, opts);
  if (!s) return {{"error", s.error().detail}};
  return {{"canonical_request", s->canonical_request}, {"string_to_sign", s->string_to_sign},
          {"signature", s->signature}, {"authorization", s->authorization}};
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    auto in = json::parse(line, nullptr, false);
    json out;
    if (in.is_discarded() || !in.is_object()) {
      out = {{"error", "input line is not a JSON object"}};
    } else {
      try {
        out = sign_one(in);
      } catch (const json::exception& e) {
        out = {{"error", std::string("bad request JSON: ") + e.what()}};
      }
    }
    std::cout << out.dump() << "\n" << std::flush;
  }
  return 0;
}
