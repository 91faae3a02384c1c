// tsum-fake-cloud: the fake AWS cloud (fake_aws_cloud.h) as a process, for trying tsum's AWS provider or the
// daemon end to end without an AWS account. The shared flags (listen address, TLS, faults, guest root) are
// fake_cloud/fake_flags.h's. Prints "listening on <base URL>" and serves until SIGINT or SIGTERM.
#include "tests/fakes/aws/fake_aws_cloud.h"
#include "tests/fakes/cloud/fake_flags.h"
#include "tests/fakes/cloud/stop_signals.h"

using namespace tsum::providers;
using namespace tsum::providers::aws::fake;

int main(int argc, char** argv) {
  FakeAwsCloudOptions o;
  fake_cloud::FakeFlags flags("tsum-fake-cloud", &o.server, "RunInstances:lost,DescribeInstances:429:2");
  flags.text("--access-key", "ID", &o.credentials.access_key_id, "credentials requests must be signed with");
  flags.text("--secret-key", "SECRET", &o.credentials.secret_access_key, "  (default AKIDTSUMFAKE / tsum-fake-secret-key)");
  flags.text("--session-token", "TOKEN", &o.credentials.session_token, "require this session token as well");
  std::string regions;
  flags.text("--region", "REGION[,REGION...]", &regions, "the EC2 regions requests are scoped to (default us-east-1)");
  flags.seconds("--pending-s", &o.ec2.pending_s, "pending -> running");
  flags.seconds("--shutting-down-s", &o.ec2.shutting_down_s, "shutting-down -> terminated");
  flags.seconds("--terminated-visible-s", &o.ec2.terminated_visible_s, "how long terminated instances stay listed");
  flags.seconds("--visibility-delay-s", &o.ec2.visibility_delay_s, "how long a new instance is unknown to Describe");
  flags.count("--page-size", &o.ec2.page_size, "most items per page of any listing");
  flags.text("--sso-access-token", "TOKEN", &o.sso_access_token, "the SSO portal takes this access token (aws sso login's)");
  flags.seconds("--vcpu-quota", &o.standard_vcpu_quota, "Service Quotas' On-Demand Standard vCPUs (L-1216C47A)");
  flags.text("--instance-role", "NAME", &o.instance_role, "the host's IMDSv2 hands out this instance role's credentials");
  if (auto exit = flags.parse(argc, argv)) return *exit;
  for (std::size_t at = 0; !regions.empty() && at <= regions.size();) {
    const auto comma = std::min(regions.find(',', at), regions.size());
    const std::string r = regions.substr(at, comma - at);
    if (r.empty()) return flags.fail("--region: an empty region in " + regions);
    if (at == 0) o.ec2.region = r;
    else o.more_regions.push_back(r);
    at = comma + 1;
  }

  fake_cloud::StopSignals stop;  // before the server's thread starts
  FakeAwsCloud cloud(o);
  if (auto port = cloud.start(); !port) return flags.fail(port.error().detail);
  return stop.announce_and_wait(flags.program(), cloud.server().base_url(),
                                "region " + o.ec2.region + ", access key " + o.credentials.access_key_id);
}
