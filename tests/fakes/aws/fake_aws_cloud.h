// FakeAwsCloud: a stateful fake of the AWS endpoints tsum's EC2 provider talks to, on the shared fake server
// (fake_cloud/fake_server.h: loopback HTTP(S), call book, faults, guests). One server answers both APIs:
//   - EC2 Query API (POST form or GET query; service "ec2", one of the configured regions, which the signature's
//     scope picks, as moto does on one endpoint; each region its own instances and spot capacity): RunInstances,
//     DescribeInstances, TerminateInstances (fake_ec2.h), DescribeInstanceTypes and
//     DescribeSpotPriceHistory (fake_catalog.h);
//   - the Price List API (X-Amz-Target AWSPriceListService.*; service "pricing", us-east-1): GetProducts.
//   - STS (Query API, service "sts", any region): GetCallerIdentity, AssumeRole (temporary credentials, good
//     for every API here until they expire), AssumeRoleWithWebIdentity (unsigned, any non-empty token).
//   - SSM (X-Amz-Target AmazonSSM.*; service "ssm"): GetParameter of the public image parameters
//     /aws/service/debian/release/bookworm/latest/{amd64,arm64}: an AMI id per region and architecture.
//   - Service Quotas (X-Amz-Target ServiceQuotasV20190624.*; service "servicequotas"): GetServiceQuota of EC2's
//     On-Demand Standard vCPUs (L-1216C47A): standard_vcpu_quota.
//   - the IAM Identity Center portal's GetRoleCredentials (GET /federation/credentials?account_id=&role_name=,
//     x-amz-sso_bearer_token: the access token `aws sso login` cached; sso_access_token) and the host's own
//     IMDSv2 (PUT /latest/api/token, then the instance role's credentials under
//     /latest/meta-data/iam/security-credentials/; instance_role, else 404 as an instance without one): both
//     issue temporary credentials, as STS does.
// Every request must carry a valid SigV4 signature for the configured credentials (fake_auth.h); bad ones
// get AWS's error answer and count as rejected. Faults apply to authenticated requests, by action name.
// Point the provider at it with AwsOptions::ec2_endpoint = pricing_endpoint = server().base_url() and, for
// HTTPS, http.ca_file = the CA that signed the certificate.
// Guests (a guest root set): an instance's guest id is its instance id; it is up while pending or running.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tests/fakes/aws/fake_common.h"
#include "tests/fakes/aws/fake_ec2.h"
#include "providers/aws/sigv4.h"
#include "tests/fakes/cloud/fake_server.h"

namespace tsum::providers::aws::fake {

struct FakeAwsCloudOptions {
  fake_cloud::FakeServerOptions server = {};
  Credentials credentials{"AKIDTSUMFAKE", "tsum-fake-secret-key", ""};
  FakeEc2Options ec2 = {};  // ec2.region: the first region
  // Further regions, each with its own instances (ids apart) and spot prices (each region's 15 % above the one
  // before it), served on the same endpoint.
  std::vector<std::string> more_regions = {};
  std::string sso_access_token = {};  // the SSO portal takes it ("" refuses every token)
  std::string instance_role = {};     // the host's IMDS instance role ("" none)
  double standard_vcpu_quota = 32;    // Service Quotas' L-1216C47A
};

class FakeAwsCloud final : public fake_cloud::FakeCloudApi {
 public:
  explicit FakeAwsCloud(FakeAwsCloudOptions opts);

  Result<std::uint16_t> start() { return server_.start(); }
  fake_cloud::FakeServer& server() { return server_; }
  const fake_cloud::FakeServer& server() const { return server_; }

  std::vector<FakeInstance> instances() const;  // every region's
  int created() const;
  Status guest_shutdown(std::string_view id);
  // A spot interruption (FakeEc2::interrupt) and the instances' IMDSv2 (FakeEc2::metadata).
  Status interrupt(const std::string& id, std::optional<double> notice_s) override;
  http::LoopbackReply metadata(const http::LoopbackRequest& req, const std::string& id) override;
  Status set_spot_capacity(const std::string& region, std::optional<int> left) override;

 private:
  fake_cloud::Route route(const http::LoopbackRequest& req) override;
  http::LoopbackReply fault_answer(int status, const std::string& action) const override;
  std::vector<fake_guest::LiveInstance> live_guests() const override;
  FakeAnswer dispatch(const std::string& region, const std::string& action, const Fields& params,
                      const std::string& body, bool pricing);
  FakeEc2* holding(const std::string& id) const;  // the region's EC2 that knows instance `id`; null: none
  FakeAnswer sts(const std::string& action, const Fields& params, const std::string& caller);
  FakeAnswer ssm(const std::string& action, const std::string& region, const std::string& body) const;
  FakeAnswer sso(const http::LoopbackRequest& req);
  FakeAnswer quotas(const std::string& action, const std::string& body) const;
  FakeAnswer host_imds(const http::LoopbackRequest& req);
  // The credentials a request signed with `access_key_id` must match: the configured ones or issued ones.
  std::optional<Credentials> signer(const std::string& access_key_id);

  struct Issued {
    Credentials credentials;
    double expires_s = 0;
    std::string arn;
  };
  Issued issue(const std::string& arn, int duration_s);  // temporary credentials every API here takes
  std::vector<std::string> imds_tokens_;  // under issued_mu_
  std::mutex issued_mu_;
  std::map<std::string, Issued> issued_;  // by access key id
  int issued_count_ = 0;

  FakeAwsCloudOptions opts_;
  std::vector<std::string> regions_;
  std::map<std::string, std::unique_ptr<FakeEc2>> ec2_;  // by region
  fake_cloud::FakeServer server_;  // last: its thread stops before the state above goes
};

}  // namespace tsum::providers::aws::fake
