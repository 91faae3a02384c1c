// FakeCloud: a stateful fake of the AWS endpoints tsum's EC2 provider talks to, served over HTTP(S) on
// loopback. One server answers both APIs:
//   - EC2 Query API (POST form or GET query; service "ec2", the configured region): RunInstances,
//     DescribeInstances, TerminateInstances (fake_ec2.h), DescribeInstanceTypes and
//     DescribeSpotPriceHistory (fake_catalog.h);
//   - the Price List API (X-Amz-Target AWSPriceListService.*; service "pricing", us-east-1): GetProducts.
// Every request must carry a valid SigV4 signature for the configured credentials (fake_auth.h); bad ones
// get AWS's error answer and count as rejected. Faults (fake_faults.h) apply to authenticated requests.
// Point the provider at it with AwsOptions::ec2_endpoint = pricing_endpoint = base_url() and, for HTTPS,
// http.ca_file = the CA that signed cert_file.
// With guest.root set, each instance's user data really runs (providers/fake_guest): after every request
// the guests follow the instances, booted under guest.root/<instance id> while pending or running and
// halted once the instance is shutting down, stopped or gone; destroying the fake halts them all.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "providers/aws/fake/fake_ec2.h"
#include "providers/aws/fake/fake_faults.h"
#include "providers/aws/sigv4.h"
#include "providers/fake_guest/fake_guest.h"
#include "providers/http/loopback_server.h"

namespace tsum::providers::aws::fake {

struct FakeCloudOptions {
  http::LoopbackOptions listen = {};  // host, port, cert_file/key_file (both empty: plain HTTP)
  Credentials credentials{"AKIDTSUMFAKE", "tsum-fake-secret-key", ""};
  FakeEc2Options ec2 = {};
  std::chrono::milliseconds hang{30000};  // how long a "timeout" fault holds the connection before closing it
  int retry_after_s = 1;                  // the Retry-After of a 429 fault
  const Clock* clock = nullptr;           // lifecycle and signature time; null: the system clock
  fake_guest::FakeGuestOptions guest = {};  // guest.root set: run instances' user data (FakeGuest, see above)
};

class FakeCloud {
 public:
  explicit FakeCloud(FakeCloudOptions opts);
  ~FakeCloud();

  // See LoopbackServer::start.
  Result<std::uint16_t> start();
  void stop();
  const std::string& base_url() const { return server_.base_url(); }

  void inject(const Fault& f) { faults_.add(f); }
  int pending_faults() const { return faults_.pending(); }

  // Authenticated requests per action (faulted ones included), and requests refused for their signature.
  int requests(std::string_view action) const;
  int rejected() const;

  std::vector<FakeInstance> instances() const { return ec2_.instances(); }
  Status guest_shutdown(std::string_view id);

 private:
  http::LoopbackReply handle(const http::LoopbackRequest& req);
  http::LoopbackReply fault_reply(FaultKind kind, bool pricing);
  void sync_guests();
  FakeAnswer dispatch(const std::string& action, const Fields& params, const http::LoopbackRequest& req);

  FakeCloudOptions opts_;
  SystemClock system_clock_;
  const Clock& clock_;
  FakeEc2 ec2_;
  FaultPlan faults_;
  mutable std::mutex mu_;
  std::map<std::string, int, std::less<>> requests_;
  int rejected_ = 0;
  std::optional<fake_guest::FakeGuest> guest_;  // outlives the server, whose thread syncs it
  http::LoopbackServer server_;
};

}  // namespace tsum::providers::aws::fake
