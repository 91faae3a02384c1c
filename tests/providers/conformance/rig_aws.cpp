// The AWS rig: the EC2 adapter on the fake AWS (SigV4 on every call).
#include "providers/aws/aws_provider.h"
#include "tests/fakes/aws/fake_aws_cloud.h"
#include "providers/conformance/cloud_rig.h"
#include "support/provider_fixtures.h"

namespace tsum::conformance {

namespace {

using namespace std::chrono_literals;
using namespace providers;
using namespace providers::aws;

const Credentials kCreds{"AKIDTSUMCONFORM", "conformance-secret-0123456789", ""};
const Credentials kWrongCreds{"AKIDTSUMCONFORM", "wrong-secret-abcdef", ""};

class AwsRig final : public CloudRig {
 public:
  explicit AwsRig(const RigOptions& o)
      : fake_({.server = {.listen = {.cert_file = tls_.cert_file(), .key_file = tls_.key_file()}, .hang = 3s,
                          .guest = o.guest, .clock = &clock_},
               .credentials = kCreds,
               .ec2 = {.terminated_visible_s = 5, .page_size = o.page_size > 0 ? o.page_size : 1000}}) {
    REQUIRE(fake_.start().ok());
    provider_ = make(kCreds);
  }

  std::string name() const override { return "aws"; }
  Provider& provider() override { return *provider_; }
  fake_cloud::FakeServer& server() override { return fake_.server(); }
  Methods methods() const override {
    return {"RunInstances", "DescribeInstances", "TerminateInstances", "DescribeInstances",
            {"GetProducts", "DescribeInstanceTypes", "DescribeSpotPriceHistory"}};
  }
  Offer offer() const override { return {.provider = "aws", .instance_type = "m5.large"}; }
  std::unique_ptr<Provider> with_wrong_credential() override { return make(kWrongCreds); }
  std::vector<std::string> secrets() const override { return {kCreds.secret_access_key, kWrongCreds.secret_access_key}; }
  std::string refusal_code() const override { return "SignatureDoesNotMatch"; }
  bool fake_quotes_credentials() const override { return false; }  // a SigV4 secret never leaves the client

  int created() const override { return fake_.created(); }
  int existing() const override {
    int n = 0;
    for (const auto& i : fake_.instances()) n += i.state != "terminated";
    return n;
  }
  std::string user_data(const InstanceHandle& h) const override {
    for (const auto& i : fake_.instances())
      if (i.id == h.id) return i.user_data;
    return {};
  }
  std::string market(const InstanceHandle& h) const override {
    for (const auto& i : fake_.instances())
      if (i.id == h.id) return i.lifecycle.empty() ? "on-demand" : i.lifecycle;
    return {};
  }

 private:
  std::unique_ptr<AwsProvider> make(const Credentials& creds) {
    AwsOptions o{.credentials = creds, .ec2_endpoint = fake_.server().base_url(), .pricing_endpoint = fake_.server().base_url(),
                 .image_id = "ami-0tsum0test",
                 .http = testing::fake_http(tls_.ca_file()),
                 .attempt_timeout = 1000ms, .clock = &clock_};
    auto p = AwsProvider::make(o);
    REQUIRE_MESSAGE(p.ok(), p.error().detail);
    return std::move(*p);
  }

  aws::fake::FakeAwsCloud fake_;
  std::unique_ptr<AwsProvider> provider_;
};

}  // namespace

std::unique_ptr<CloudRig> make_aws_rig(const RigOptions& o) { return std::make_unique<AwsRig>(o); }

}  // namespace tsum::conformance
