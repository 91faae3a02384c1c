// The fake cloud on its own: what it refuses (signatures, skew, tokens, unknown actions and parameters),
// its fault spec, and the user data the provider hands to EC2.
#include <doctest/doctest.h>

#include "providers/aws/cloud_init.h"
#include "providers/aws/ec2_xml.h"
#include "providers/aws/fake/fake_cloud.h"
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
  FakeCloud fake;
  http::HttpClient client{{.retry = {.max_attempts = 1}}};

  explicit PlainCloud(Credentials creds = {"AKIDTSUMFAKE", "tsum-fake-secret-key", ""})
      : fake({.credentials = creds, .clock = &clock}) {
    REQUIRE(fake.start().ok());
  }

  // A Query API POST signed with creds at the fake clock's time plus skew_s.
  http::HttpResponse call(const Fields& params, const Credentials& creds, double skew_s = 0, std::string region = "us-east-1") {
    std::string host = fake.base_url().substr(std::string("http://").size());
    std::string body = form_encode(params);
    SignableRequest req{.method = "POST", .path = "/",
                        .headers = {{"Host", host}, {"Content-Type", "application/x-www-form-urlencoded"}}, .body = body};
    auto when = std::chrono::system_clock::time_point(std::chrono::seconds(static_cast<long long>(clock.now_s() + skew_s)));
    auto s = sign(req, creds, {.region = region, .service = "ec2", .amz_date = amz_date(when)});
    REQUIRE(s.ok());
    http::HttpRequest out{.method = "POST", .url = fake.base_url() + "/", .headers = req.headers, .body = body};
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
  auto unsigned_req = run_sync(c.client.send({.method = "POST", .url = c.fake.base_url() + "/", .body = "Action=DescribeInstances"}));
  REQUIRE(unsigned_req.ok());
  CHECK(unsigned_req->status == 401);
  CHECK(c.error_code(*unsigned_req) == "MissingAuthenticationToken");
  CHECK(c.fake.rejected() == 5);
  CHECK(c.fake.requests("DescribeInstances") == 2);
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

TEST_CASE("fault specs parse, and a bad one is named") {
  auto f = parse_faults("RunInstances:lost,DescribeInstances:429:2,*:503");
  REQUIRE(f.ok());
  REQUIRE(f->size() == 3);
  CHECK((*f)[0].kind == FaultKind::lost);
  CHECK((*f)[1].count == 2);
  CHECK((*f)[2].action == "*");
  CHECK(parse_faults("").ok());
  auto bad = parse_faults("RunInstances:explode");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().detail.find("RunInstances:explode") != std::string::npos);
  CHECK_FALSE(parse_faults("RunInstances:429:0").ok());
  CHECK_FALSE(parse_faults(":429").ok());

  FaultPlan plan;
  plan.add({.action = "*", .kind = FaultKind::internal_500});
  plan.add({.action = "RunInstances", .kind = FaultKind::lost, .count = 2});
  CHECK(plan.take("RunInstances") == FaultKind::lost);  // an action's own faults first
  CHECK(plan.take("DescribeInstances") == FaultKind::internal_500);
  CHECK(plan.take("DescribeInstances") == std::nullopt);
  CHECK(plan.pending() == 1);
}

TEST_CASE("the user data writes the agent, its environment and a start script, and runs the start script") {
  LaunchSpec spec{.run_id = "3", .agent_script = "#!/bin/sh\necho hi\n", .env = {{"TSUM_TOKEN", "a'b c"}, {"TSUM_URL", "http://x"}}};
  auto ud = cloud_init_user_data(spec, {.dir = "/opt/tsum", .max_lifetime = 90min});
  REQUIRE(ud.ok());
  CHECK(ud->starts_with("#cloud-config\nwrite_files:\n"));
  CHECK(ud->find("  - path: /opt/tsum/agent.sh\n    permissions: '0755'\n    encoding: gz+b64\n    content: " +
                 base64_encode(gzip_compress(spec.agent_script)) + "\n") != std::string::npos);
  CHECK(ud->find(base64_encode("TSUM_TOKEN='a'\\''b c'\nTSUM_URL='http://x'\n")) != std::string::npos);
  CHECK(ud->ends_with("runcmd:\n  - [/bin/sh, /opt/tsum/start.sh]\n"));
  auto start_at = ud->find("path: /opt/tsum/start.sh");
  REQUIRE(start_at != std::string::npos);
  auto content_at = ud->find("content: ", start_at) + 9;
  auto start = base64_decode(ud->substr(content_at, ud->find('\n', content_at) - content_at));
  REQUIRE(start.ok());
  CHECK(start->find("shutdown -P +90") != std::string::npos);
  CHECK(start->find(". /opt/tsum/agent.env") != std::string::npos);
  CHECK(start->find("setsid /bin/sh /opt/tsum/agent.sh") != std::string::npos);

  CHECK(cloud_init_user_data(spec, {.dir = "relative"}).code() == Code::invalid_argument);
  CHECK(cloud_init_user_data(spec, {.dir = "/opt/$(reboot)"}).code() == Code::invalid_argument);
  spec.agent_script.clear();  // incompressible: gzip cannot bring it under the limit
  for (unsigned x = 1; spec.agent_script.size() < 20000;) spec.agent_script += static_cast<char>((x = x * 1103515245u + 12345u) >> 23);
  CHECK(cloud_init_user_data(spec, {}).error().detail.find("16384") != std::string::npos);
}
