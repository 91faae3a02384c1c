// The AWS EC2 provider: instances are EC2 instances booted from image_id, or from the AMI a public SSM parameter
// names in their region (image()), with user data (cloud_init/cloud_init.h) that starts the tsum agent. Its
// credentials are static keys or a login's (aws_login.h), fetched and refreshed as calls need them.
//   create     RunInstances with ClientToken = the launch's idempotency token (hashed when longer than EC2's
//              64 characters), so a retried create never makes a second instance; tags <tag_key>=<tag>,
//              tsum-run=<run id> and Name; InstanceInitiatedShutdownBehavior=terminate.
//   describe   DescribeInstances: pending -> pending, running -> running, shutting-down/stopping/stopped ->
//              exited, terminated or unknown -> gone. Right after create EC2 may not know the instance yet
//              (eventual consistency): within visibility_grace of create that reads as pending.
//   describe_many DescribeInstances filtered by instance-id (up to 200 ids a call, every page): one call
//              for all the daemon's live runs; an instance it does not list reads as describe's unknown one.
//   terminate  TerminateInstances; an instance EC2 no longer knows counts as terminated.
//   list_tagged DescribeInstances filtered by tag <tag_key>=<tag>, every page, terminated ones left out.
//   offers     from a catalog per region (aws_catalog.h) fetched on first use and kept for catalog_ttl; each
//              offer names its region, and create() launches it there.
// Regions: `regions` (else `region` alone). Each has its own EC2 endpoint (ec2.<region>.amazonaws.com, or the
// one ec2_endpoint override for all, as a regional stand-in routes by the signature's scope) and its own SigV4
// scope; a handle carries its region, so describe, terminate and list_tagged reach each instance where it is.
// Every call goes through AwsApi: SigV4-signed, retried by HttpClient on throttling and 5xx.
// Not thread-safe: call from one thread (the daemon's io_context).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "providers/aws/aws_api.h"
#include "providers/cloud_init/cloud_init.h"
#include "providers/provider.h"

namespace tsum::providers::aws {

struct Ec2Instance;  // ec2_xml.h

struct AwsOptions {
  std::string region = "us-east-1";
  std::vector<std::string> regions = {};   // several regions, the first the default; empty: {region}
  Credentials credentials = {};            // static keys, or:
  std::shared_ptr<AwsCredentialSource> credential_source = {};  // the user's login (aws_login.h)
  std::string ec2_endpoint = {};           // base URL override; empty: https://ec2.<region>.amazonaws.com
  std::string pricing_endpoint = {};       // empty: https://api.pricing.us-east-1.amazonaws.com
  std::string image_id = {};               // the AMI instances boot; empty: image_parameter's, per region
  // The public SSM parameter its publisher keeps the current image under (Debian 12 by default; Ubuntu 22.04:
  // /aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id). "amd64" becomes
  // "arm64" for Graviton types.
  std::string image_parameter = "/aws/service/debian/release/bookworm/latest/amd64";
  std::string ssm_endpoint = {};           // empty: https://ssm.<region>.amazonaws.com
  std::string quotas_endpoint = {};        // empty: https://servicequotas.<region>.amazonaws.com
  std::string key_name = {};               // optional EC2 key pair
  std::string subnet_id = {};              // optional
  std::vector<std::string> security_group_ids = {};
  std::string tag_key = "tsum";            // the ownership tag's key; its value is LaunchSpec::tag
  CloudInitOptions cloud_init = {};
  http::HttpClientOptions http = {};       // CA file, retry policy
  std::chrono::milliseconds attempt_timeout{30000};  // one HTTP attempt
  std::chrono::seconds catalog_ttl{3600};
  std::chrono::seconds visibility_grace{120};
  const Clock* clock = nullptr;            // null: the system clock
};

class AwsProvider final : public Provider {
 public:
  // invalid_argument for a missing region or credentials or a malformed endpoint.
  static Result<std::unique_ptr<AwsProvider>> make(AwsOptions opts);

  std::string_view name() const override { return "aws"; }
  Capabilities capabilities() const override { return {.gpus = true, .spot = true, .docker = true, .native = true}; }
  Task<Result<std::vector<Offer>>> offers(const Requirements& req) override;
  Task<Result<InstanceHandle>> create(const Offer& offer, const LaunchSpec& spec) override;
  Task<Result<InstanceStatus>> describe(const InstanceHandle& h) override;
  Task<std::vector<Result<InstanceStatus>>> describe_many(const std::vector<InstanceHandle>& handles) override;
  Task<Status> terminate(const InstanceHandle& h) override;
  Task<Result<std::vector<InstanceHandle>>> list_tagged(std::string_view tag) override;
  // The default region's "Running On-Demand Standard instances" vCPU quota (Service Quotas L-1216C47A) over
  // the fewest vCPUs of its offers.
  Task<Result<MachineQuota>> machine_quota() override;

  // The AMI instances of `instance_type` boot in `region` ("": the first): image_id, or image_parameter's
  // value, asked once per region and architecture.
  Task<Result<std::string>> image(const std::string& region, const std::string& instance_type = "");

  // The ClientToken EC2 gets for an idempotency token.
  static std::string client_token(std::string_view idempotency_token);

 private:
  AwsProvider(AwsOptions opts, std::map<std::string, std::unique_ptr<AwsApi>> apis);
  // The API of `region` ("": the first); null for a region not configured.
  AwsApi* api(const std::string& region);
  double now_s() const;
  Result<Fields> run_instances_params(const Offer& offer, const LaunchSpec& spec, const std::string& image) const;
  // What describe says of h, given what DescribeInstances listed for it (null: not listed).
  InstanceStatus status_of(const InstanceHandle& h, const Ec2Instance* found) const;

  AwsOptions opts_;
  std::map<std::string, std::unique_ptr<AwsApi>> apis_;  // by region
  SystemClock system_clock_;
  std::map<std::string, std::vector<Offer>> catalog_;   // by region
  std::map<std::string, double> catalog_at_s_;
  std::map<std::string, std::string> images_;           // by region and parameter
};

}  // namespace tsum::providers::aws
