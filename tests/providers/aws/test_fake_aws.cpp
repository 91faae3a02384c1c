// The fake AWS on its own: what it refuses (signatures, skew, session tokens, unknown actions and
// parameters), with EC2's error codes.
#include <doctest/doctest.h>

#include "providers/aws/ec2_xml.h"
#include "tests/fakes/aws/fake_aws_cloud.h"
#include "providers/http/http_client.h"
#include "support/run_sync.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::aws;
using namespace tsum::providers::aws::fake;
using namespace std::chrono_literals;
using tsum::testing::run_sync;

namespace {

struct PlainCloud {
  FakeClock clock;
  FakeAwsCloud fake;
  http::HttpClient client{{.retry = {.max_attempts = 1}}};

  explicit PlainCloud(Credentials creds = {"AKIDTSUMFAKE", "tsum-fake-secret-key", ""})
      : fake({.server = {.clock = &clock}, .credentials = creds}) {
    REQUIRE(fake.start().ok());
  }

  // A Query API POST signed with creds at the fake clock's time plus skew_s.
  http::HttpResponse call(const Fields& params, const Credentials& creds, double skew_s = 0, std::string region = "us-east-1") {
    std::string host = fake.server().base_url().substr(std::string("http://").size());
    std::string body = form_encode(params);
    SignableRequest req{.method = "POST", .path = "/",
                        .headers = {{"Host", host}, {"Content-Type", "application/x-www-form-urlencoded"}}, .body = body};
    auto when = std::chrono::system_clock::time_point(std::chrono::seconds(static_cast<long long>(clock.now_s() + skew_s)));
    auto s = sign(req, creds, {.region = region, .service = "ec2", .amz_date = amz_date(when)});
    REQUIRE(s.ok());
    http::HttpRequest out{.method = "POST", .url = fake.server().base_url() + "/", .headers = req.headers, .body = body};
    out.headers.insert(out.headers.end(), s->added_headers.begin(), s->added_headers.end());
    auto r = run_sync(client.send(out));
    REQUIRE(r.ok());
    return *r;
  }

  std::string error_code(const http::HttpResponse& r) {
    auto e = parse_ec2_error(r.body);
    return e ? e->code : "";
  }
};

const Credentials kGood{"AKIDTSUMFAKE", "tsum-fake-secret-key", ""};
const Fields kDescribe{{"Action", "DescribeInstances"}, {"Version", "2016-11-15"}};

}  // namespace

TEST_CASE("the fake refuses unsigned, badly signed, stale and mis-scoped requests with AWS's codes") {
  PlainCloud c;
  CHECK(c.call(kDescribe, kGood).status == 200);
  auto wrong = c.call(kDescribe, {"AKIDTSUMFAKE", "guess", ""});
  CHECK(wrong.status == 403);
  CHECK(c.error_code(wrong) == "SignatureDoesNotMatch");
  CHECK(c.error_code(c.call(kDescribe, {"AKIDOTHER", "tsum-fake-secret-key", ""})) == "AuthFailure");
  CHECK(c.error_code(c.call(kDescribe, kGood, 16 * 60)) == "RequestExpired");
  CHECK(c.call(kDescribe, kGood, 10 * 60).status == 200);  // within AWS's 15 minutes
  CHECK(c.error_code(c.call(kDescribe, kGood, 0, "eu-west-1")) == "AuthFailure");
  auto unsigned_req = run_sync(c.client.send({.method = "POST", .url = c.fake.server().base_url() + "/", .body = "Action=DescribeInstances"}));
  REQUIRE(unsigned_req.ok());
  CHECK(unsigned_req->status == 401);
  CHECK(c.error_code(*unsigned_req) == "MissingAuthenticationToken");
  CHECK(c.fake.server().rejected() == 5);
  CHECK(c.fake.server().requests("DescribeInstances") == 2);
}

TEST_CASE("with a session token configured, requests must carry it") {
  PlainCloud c({"AKIDTSUMFAKE", "tsum-fake-secret-key", "the-token"});
  CHECK(c.error_code(c.call(kDescribe, kGood)) == "AuthFailure");
  CHECK(c.call(kDescribe, {"AKIDTSUMFAKE", "tsum-fake-secret-key", "the-token"}).status == 200);
}

TEST_CASE("unknown actions, unknown parameters, bad values and bad tokens get EC2's error codes") {
  PlainCloud c;
  auto with = [](Fields extra) {
    Fields f = kDescribe;
    f.insert(f.end(), extra.begin(), extra.end());
    return f;
  };
  CHECK(c.error_code(c.call({{"Action", "LaunchRockets"}, {"Version", "2016-11-15"}}, kGood)) == "InvalidAction");
  CHECK(c.error_code(c.call({{"Action", "DescribeInstances"}, {"Version", "2010-01-01"}}, kGood)) == "InvalidParameterValue");
  CHECK(c.error_code(c.call(with({{"InstanceIds.1", "i-0123456789abcdef0"}}), kGood)) == "UnknownParameter");
  CHECK(c.error_code(c.call(with({{"InstanceId.1", "i-nothex"}}), kGood)) == "InvalidInstanceID.Malformed");
  CHECK(c.error_code(c.call(with({{"InstanceId.1", "i-0123456789abcdef0"}}), kGood)) == "InvalidInstanceID.NotFound");
  CHECK(c.error_code(c.call(with({{"MaxResults", "3"}}), kGood)) == "InvalidParameterValue");
  CHECK(c.error_code(c.call(with({{"NextToken", "forged"}}), kGood)) == "InvalidParameterValue");
  CHECK(c.error_code(c.call(with({{"Filter.1.Name", "colour"}, {"Filter.1.Value.1", "red"}}), kGood)) == "InvalidParameterValue");
  Fields run{{"Action", "RunInstances"}, {"Version", "2016-11-15"}, {"ImageId", "ami-1"}, {"InstanceType", "m5.large"},
             {"MinCount", "1"}, {"MaxCount", "1"}};
  CHECK(c.call(run, kGood).status == 200);
  Fields bad_user_data = run;
  bad_user_data.emplace_back("UserData", "not base64!");
  CHECK(c.error_code(c.call(bad_user_data, kGood)) == "InvalidParameterValue");
  Fields no_image = run;
  no_image.erase(no_image.begin() + 2);
  CHECK(c.error_code(c.call(no_image, kGood)) == "MissingParameter");
  CHECK(c.error_code(c.call({{"Action", "TerminateInstances"}, {"Version", "2016-11-15"}}, kGood)) == "MissingParameter");
}
