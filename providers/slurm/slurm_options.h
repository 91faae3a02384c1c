// What the Slurm provider is configured with: the cluster's login node (an ssh host), the price of each
// partition, and how jobs are submitted. Plain data, filled by the daemon's config file parser
// (daemon/config/config.h, providers.slurm) or by a test.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "providers/ssh/ssh_options.h"

namespace tsum::providers {

// What one node of a partition costs: a cluster's internal rate, billed by `billing_rule` (billing/: a rule
// name such as per_second_60s_min, or "step:S,min:M" for a cluster's own step and minimum charge).
struct SlurmPartitionPrice {
  double hourly_price = 0;  // per node
  std::string billing_rule = "per_second_60s_min";
  std::string currency = "USD";
};

struct SlurmOptions {
  std::string state_dir;   // required: idempotency records, known_hosts, logs (under <state_dir>/slurm)
  SshHost login;           // the login node: address, port, user, key_file (its name is the cluster's, for messages)
  std::string work_dir = "/var/tmp/tsum";  // on the login node: each submission's files, removed once submitted
  std::map<std::string, SlurmPartitionPrice> partitions;  // by partition name; sinfo's others are listed unpriced
  std::vector<std::string> sbatch_args;  // added to every sbatch, e.g. "--account=ml", "--time=04:00:00"
  bool docker = false;     // the compute nodes have a Docker engine the job's user may use
  // slurmrestd (REST API v0.0.38) instead of the command line tools, where set: its base URL, the user jobs
  // run as (X-SLURM-USER-NAME) and a JWT of that user (X-SLURM-USER-TOKEN, e.g. from `scontrol token`).
  // The login node is then not used.
  std::string rest_url;
  std::string rest_user;
  std::string rest_token;
  std::string known_hosts; // empty: <state_dir>/slurm/known_hosts
  std::chrono::seconds connect_timeout{10};  // ssh ConnectTimeout to the login node
  std::chrono::seconds command_timeout{60};  // each sinfo, squeue, scontrol, sbatch, scancel (over ssh)
  std::chrono::seconds push_timeout{120};    // copying the agent and its environment to the login node
  std::chrono::seconds cancel_timeout{120};  // terminate: scancel until the job has left the queue
};

}  // namespace tsum::providers
