// The Slurm provider's parsers and its batch script (providers/slurm/slurm_text.h): no Slurm needed. The
// provider against a real Slurm is tests/providers/slurm/.
#include <doctest/doctest.h>

#include "providers/slurm/slurm_text.h"

using namespace tsum::providers::slurm;

TEST_CASE("sinfo: one partition per name, the smallest node's figures, GPUs from gres, noise ignored") {
  auto parts = parse_sinfo(
      "Warning: something the login shell said\n"
      "P|cpu|64|257000|(null)|10|up\n"
      "P|gpu|32|515000|gpu:a100:4(S:0-1)|2|up\n"
      "P|gpu|16+|256000|gpu:a100:2,shard:8|3|up\n"
      "P|held|2|2000|(null)|2|down\n");
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].name == "cpu");
  CHECK(parts[0].cpus == 64);
  CHECK(parts[0].memory_gib == doctest::Approx(257000 / 1024.0));
  CHECK(parts[0].gpus == 0);
  CHECK(parts[1].cpus == 16);
  CHECK(parts[1].gpus == 2);
  CHECK(parts[1].gpu_type == "a100");
  CHECK(parts[1].nodes == 5);
  CHECK_FALSE(parts[2].up);
  CHECK(gres_gpus("gpu:3") == 3);
  CHECK(gres_gpus("gpu") == 1);
  CHECK(gres_gpus("(null)") == 0);
}

TEST_CASE("scontrol show job -o: state, reason, nodes, times and the exit code") {
  auto j = parse_scontrol_job(
      "JobId=42 JobName=tsum-t-7 UserId=root(0) Priority=1 JobState=NODE_FAIL Reason=NodeDown Dependency=(null) "
      "ExitCode=0:9 SubmitTime=2024-05-01T10:00:00 StartTime=2024-05-01T10:01:05 NodeList=c[1-2] BatchHost=c1 "
      "Comment=tok-1");
  REQUIRE(j);
  CHECK(j->id == "42");
  CHECK(j->name == "tsum-t-7");
  CHECK(j->state == "NODE_FAIL");
  CHECK(j->reason == "NodeDown");
  CHECK(j->node_list == "c[1-2]");
  CHECK(j->batch_host == "c1");
  CHECK(j->comment == "tok-1");
  CHECK(j->exit_status == 0);
  CHECK(j->exit_signal == 9);
  CHECK(seconds_between(j->submit_time, j->start_time) == doctest::Approx(65));
  CHECK_FALSE(seconds_between("Unknown", j->start_time));
  CHECK_FALSE(parse_scontrol_job("slurm_load_jobs error: Invalid job id specified"));
}

TEST_CASE("squeue lines, hostlists and job states") {
  auto jobs = parse_squeue("J|5|tsum-a-1|tok|RUNNING|c1\nJ|6|other|(null)|PENDING|\n");
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].comment == "tok");
  CHECK(jobs[1].comment.empty());
  CHECK(jobs[1].state == "PENDING");
  CHECK(jobs[1].node_list.empty());
  CHECK(jobs[1].reason.empty());
  auto full = parse_squeue("J|7|tsum-a-7|tok|RUNNING|c[1-2]|None|c1|2026-11-26T06:00:00|2026-11-26T06:01:05\n"
                           "J|8|tsum-a-8|tok|PENDING|(null)|Resources|(null)|2026-11-26T06:02:00|N/A\n");
  REQUIRE(full.size() == 2);
  CHECK(full[0].batch_host == "c1");
  CHECK(seconds_between(full[0].submit_time, full[0].start_time) == doctest::Approx(65));
  CHECK(full[1].reason == "Resources");
  CHECK(full[1].batch_host.empty());
  CHECK(full[1].start_time.empty());
  CHECK(first_host("c[3-5,7],d1") == "c3");
  CHECK(first_host("gpu-node12") == "gpu-node12");
  CHECK(first_host("(null)").empty());
  CHECK(pending("PENDING"));
  CHECK(pending("CONFIGURING"));
  CHECK_FALSE(ended("RUNNING"));
  CHECK_FALSE(ended("COMPLETING"));  // its nodes are still held
  CHECK(ended("NODE_FAIL"));
  CHECK(ended("CANCELLED"));
}

TEST_CASE("the batch script runs the agent once per node with TSUM_NODE and TSUM_NODES, from the job's environment") {
  std::string s = batch_script();
  CHECK(s.find("srun --ntasks-per-node=1") != std::string::npos);
  CHECK(s.find("TSUM_NODE=$SLURM_NODEID") != std::string::npos);
  CHECK(s.find("TSUM_NODES=$SLURM_JOB_NUM_NODES") != std::string::npos);
  CHECK(s.find("unset TSUM_AGENT_B64") != std::string::npos);
}
