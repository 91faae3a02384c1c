// FakeEc2: the stateful part of the fake cloud, EC2's instance lifecycle behind the Query API actions
// RunInstances, DescribeInstances and TerminateInstances (version 2016-11-15), as tsum uses them.
//
// Model (fake_cloud/lifecycle.h): an instance is pending for pending_s after launch, then running with a
// public and a private IP. TerminateInstances (or a guest power-off with
// InstanceInitiatedShutdownBehavior=terminate) makes it shutting-down for shutting_down_s, then terminated; a
// terminated instance stays visible for terminated_visible_s, then EC2 no longer knows it
// (InvalidInstanceID.NotFound). A guest power-off with behavior "stop" goes stopping -> stopped. For
// visibility_delay_s after launch, Describe/Terminate do not know the instance yet (EC2's eventual
// consistency). Time comes from the given Clock, so a FakeClock drives the lifecycle in tests.
// ClientToken: a repeated RunInstances with the same token and parameters returns the first call's
// instances and launches nothing; the same token with other parameters is IdempotentParameterMismatch.
// Requests with unknown parameters, malformed ids or bad values get EC2's error codes.
// Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "tests/fakes/aws/fake_common.h"
#include "tests/fakes/cloud/lifecycle.h"

namespace tsum::providers::aws::fake {

struct FakeEc2Options {
  std::string region = "us-east-1";
  double pending_s = 2;
  double shutting_down_s = 2;
  double terminated_visible_s = 3600;
  double visibility_delay_s = 0;
  int page_size = 1000;  // caps every page whatever MaxResults asks, so tests can force pagination
  unsigned long first_id = 1;  // instance and reservation numbers start here (regions of one fake differ)
};

struct FakeInstance {
  std::string id = {};
  std::string reservation_id = {};
  std::string instance_type = {};
  std::string image_id = {};
  std::string state = {};  // as of now
  std::string public_ip = {};
  std::string private_ip = {};
  std::string client_token = {};
  std::string shutdown_behavior = {};  // stop | terminate
  std::string user_data = {};          // decoded
  std::string lifecycle = {};          // "spot" for spot capacity (instanceLifecycle), else empty: on-demand
  std::string zone = {};               // placement.availabilityZone
  std::map<std::string, std::string> tags = {};
  double launched_at_s = 0;
};

class FakeEc2 {
 public:
  FakeEc2(FakeEc2Options opts, const Clock& clock);

  // One RunInstances, DescribeInstances or TerminateInstances call; params decoded, signature checked.
  FakeAnswer handle(std::string_view action, const Fields& params);

  // Every instance EC2 still knows, with its state as of now, in launch order.
  std::vector<FakeInstance> instances() const;
  // How many instances were ever launched.
  int created() const;

  // The guest powered itself off (e.g. `poweroff` in the instance). not_found for an unknown id.
  Status guest_shutdown(std::string_view id);

  // A spot interruption (FakeCloudApi::interrupt): the instance's metadata shows spot/instance-action now, and
  // EC2 terminates it notice_s later (default 120: EC2's two-minute warning), with the state reason
  // Server.SpotInstanceTermination. not_found: no such instance up; invalid_argument: an on-demand one.
  Status interrupt(const std::string& id, std::optional<double> notice_s);
  // The spot instances the region can still launch (nullopt: as many as asked). At 0, a spot RunInstances gets
  // EC2's InsufficientInstanceCapacity.
  void set_spot_capacity(std::optional<int> left);
  // IMDSv2 inside instance `id`: PUT /latest/api/token (X-aws-ec2-metadata-token-ttl-seconds 1..21600) gives a
  // token every GET must carry (X-aws-ec2-metadata-token; else 401); GET /latest/meta-data/instance-id and
  // /latest/meta-data/spot/instance-action ({"action": "terminate", "time": ...} once noticed, else 404).
  FakeAnswer metadata(const std::string& method, const std::string& path, const std::string& token_header,
                      const std::string& ttl_header, const std::string& id);

 private:
  struct Record {
    FakeInstance inst;
    fake_cloud::Timeline t;  // deleted: terminate requested; halted: a guest power-off with behavior stop
    std::optional<double> notice_at_s = {};  // a spot interruption's notice; t.deleted_at_s is when it goes
    std::string state_reason = {};           // stateReason/code once it is going
  };
  struct Launch {
    std::string fingerprint;
    std::vector<std::string> ids;
  };

  FakeAnswer run_instances(const Fields& params);
  FakeAnswer describe_instances(const Fields& params);
  FakeAnswer terminate_instances(const Fields& params);
  std::string state_of(const Record& r, double now) const;
  bool visible(const Record& r, double now) const;
  FakeInstance snapshot(const Record& r, double now) const;
  std::string instance_xml(const Record& r, double now) const;
  Record* find(const std::string& id, double now);

  FakeEc2Options opts_;
  fake_cloud::Lifecycle life_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::vector<Record> records_;              // launch order
  std::map<std::string, Launch> by_token_;   // ClientToken -> the launch it made
  unsigned long next_id_ = 1;
  std::optional<int> spot_left_;
  std::map<std::string, double> imds_tokens_;  // IMDSv2 token -> expiry
};

}  // namespace tsum::providers::aws::fake
