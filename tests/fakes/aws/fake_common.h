// Shared by the fake cloud's handlers: the answer type, EC2's XML answer and error shapes, and reading
// Query API parameters (indexed lists such as InstanceId.1, InstanceId.2, ...).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "providers/aws/codec.h"
#include "tests/fakes/cloud/pagination.h"
#include "tests/fakes/cloud/request.h"
#include "providers/http/http_types.h"

namespace tsum::providers::aws::fake {

struct FakeAnswer {
  int status = 200;
  std::string body;
  std::string content_type = "text/xml;charset=UTF-8";
  http::HttpHeaders headers = {};
};

inline constexpr std::string_view kOwnerId = "123456789012";
// EC2's and the Price List's NextToken: "nt-" and the next page's offset (fake_cloud/pagination.h).
inline constexpr std::string_view kNextTokenPrefix = "nt-";

// <Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/></Response>
FakeAnswer ec2_error(int status, std::string_view code, std::string_view message);
// <{action}Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId/>{inner}</...>
FakeAnswer ec2_ok(std::string_view action, std::string_view inner_xml);
// {"__type": ..., "message": ...} with x-amzn-ErrorType, the JSON 1.1 protocol's error shape.
FakeAnswer json_error(int status, std::string_view type, std::string_view message);

// <name>escaped text</name>
std::string el(std::string_view name, std::string_view text);

std::optional<std::string> param(const Fields& params, std::string_view name);
// The values of prefix.1, prefix.2, ... ordered by index (gaps allowed).
std::vector<std::string> indexed(const Fields& params, std::string_view prefix);
// The first parameter that is neither one of `exact` nor starts with one of `prefixes`.
std::optional<std::string> unknown_param(const Fields& params, std::initializer_list<std::string_view> exact,
                                         std::initializer_list<std::string_view> prefixes = {});
// An integer parameter in [lo, hi]; nullopt when absent; -1 when present but invalid.
std::optional<long> int_param(const Fields& params, std::string_view name, long lo, long hi);

using fake_cloud::iso8601;

}  // namespace tsum::providers::aws::fake
