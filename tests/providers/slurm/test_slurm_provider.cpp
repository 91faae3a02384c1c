// The Slurm provider against a real Slurm (tests/support/slurm_cluster.h): slurmctld on a login node reached
// over ssh, slurmd on compute nodes, every one a guest machine in a network namespace of its own. The agents
// here are small sh scripts that leave a proof on the compute node they ran on.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "providers/slurm/slurm_provider.h"
#include "support/run_sync.h"
#include "support/slurm_cluster.h"
#include "support/temp_dir.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::testing;
namespace fs = std::filesystem;

namespace {

constexpr const char* kTag = "tsum-slurmtest";
constexpr const char* kWork = "/srv/tsum";

// A cluster of `computes` nodes, a key root may log in to its login node with, and the provider's options.
struct SlurmLab {
  TestNetwork net;
  TempDir dir{"tsum-slurm"};
  std::string key = dir.file("id_test");
  std::unique_ptr<SlurmCluster> cluster;
  SlurmOptions options;

  int computes;

  explicit SlurmLab(int computes = 2, bool rest = false) : computes(computes) {
    if (geteuid() != 0) FAIL("the Slurm provider test needs root (guest machines); run it as root");
    REQUIRE(std::system(("ssh-keygen -q -t ed25519 -N '' -C tsum-test -f " + key).c_str()) == 0);
    cluster = std::make_unique<SlurmCluster>(net, SlurmClusterOptions{.computes = computes, .authorized_key = key + ".pub", .rest = rest});
    MESSAGE("Slurm cluster of " << computes << " compute nodes up in " << cluster->start_seconds() << " s");
    options.state_dir = dir.file("state");
    options.login.name = "ctl";
    options.login.address = cluster->login_address();
    options.login.user = "root";
    options.login.key_file = key;
    options.work_dir = kWork;
    options.partitions["batch"] = {.hourly_price = 0.4, .billing_rule = "step:1,min:900", .currency = "EUR"};
    options.connect_timeout = std::chrono::seconds(5);
    options.cancel_timeout = std::chrono::seconds(60);
  }

  // Lets the held agents of run `run` (spec() below) end, on every compute node.
  void release(const std::string& run) {
    for (int i = 0; i < computes; ++i) SlurmCluster::in_guest(cluster->compute(i), "touch /var/tmp/release-" + run);
  }

  // What the agents of run `run` wrote on the compute nodes (spec() below), one entry per node that has one.
  std::set<std::string> proofs(const std::string& run) {
    std::set<std::string> out;
    for (int i = 0; i < computes; ++i)
      if (auto proof = cluster->compute(i).read_file("/var/tmp/proof-" + run); proof.ok()) out.insert(*proof);
    return out;
  }

  // The job's state as squeue shows it ("" when it is not in the queue).
  std::string squeue(const std::string& id) {
    std::string out = cluster->ctl("squeue -h -j " + id + " -o %T 2>/dev/null");
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
};

// An agent that writes "<TSUM_NODE> <TSUM_NODES> <hostname> <TSUM_X>" to /var/tmp/proof-<run> on its node, then,
// when `hold`, stays running until the test releases it (SlurmLab::release; at most 300 s), and exits with `code`.
// A test that must see a job running holds it rather than sleeping past the moment it looks.
LaunchSpec spec(const std::string& run, int nodes = 1, bool hold = false, int code = 0) {
  LaunchSpec s;
  s.run_id = run;
  s.tag = kTag;
  s.idempotency_token = "token-" + run;
  s.nodes = nodes;
  s.agent_script = "#!/bin/sh\necho \"$TSUM_NODE $TSUM_NODES $(cat /proc/sys/kernel/hostname) $TSUM_X\" > /var/tmp/proof-" +
                   run + "\n" +
                   (hold ? "i=0\nwhile [ ! -e /var/tmp/release-" + run + " ] && [ $i -lt 1500 ]; do sleep 0.2; i=$((i+1)); done\n"
                         : std::string()) +
                   "exit " + std::to_string(code) + "\n";
  s.env = {{"TSUM_X", "it's $x"}, {"TSUM_RUN_ID", run}, {"TSUM_TOKEN", "secret-run-token"},
           {"TSUM_URL", "http://10.0.0.1:1"}};
  return s;
}

Offer partition(const std::string& name) {
  Offer o;
  o.provider = "slurm";
  o.instance_type = name;
  return o;
}

// describe until `done` holds or `limit` passes; the last status.
template <class F>
InstanceStatus describe_until(SlurmProvider& p, const InstanceHandle& h, F done, std::chrono::seconds limit) {
  InstanceStatus last;
  for (auto deadline = std::chrono::steady_clock::now() + limit;;) {
    auto st = run_sync(p.describe(h));
    REQUIRE_MESSAGE(st.ok(), st.error().detail);
    last = *st;
    if (done(last) || std::chrono::steady_clock::now() >= deadline) return last;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
}

bool has_ended(const InstanceStatus& s) { return s.state == InstanceState::exited || s.state == InstanceState::gone; }

}  // namespace

TEST_CASE("slurm: offers come from sinfo, priced per partition from the config; unpriced ones are flagged") {
  SlurmLab lab;
  SlurmProvider p(lab.options);
  CHECK(p.capabilities().gang_nodes);
  CHECK_FALSE(p.capabilities().reaches_daemon);
  auto offers = run_sync(p.offers({}));
  REQUIRE_MESSAGE(offers.ok(), offers.error().detail);
  REQUIRE(offers->size() == 2);
  const Offer& batch = (*offers)[0].instance_type == "batch" ? (*offers)[0] : (*offers)[1];
  const Offer& held = (*offers)[0].instance_type == "held" ? (*offers)[0] : (*offers)[1];
  CHECK(batch.instance_type == "batch");
  CHECK(batch.vcpus == 2);
  CHECK(batch.memory_gib == doctest::Approx(2000 / 1024.0));
  CHECK(batch.gpus == 0);
  CHECK(batch.hourly_price == 0.4);
  CHECK(batch.currency == "EUR");
  CHECK(batch.billing_rule == "step:1,min:900");
  CHECK(batch.note.find("2 nodes") != std::string::npos);
  CHECK(held.instance_type == "held");
  CHECK(held.hourly_price == 0);
  CHECK(held.note.find("unpriced") != std::string::npos);
  CHECK(held.note.find("partition down") != std::string::npos);
  auto filtered = run_sync(p.offers({.instance_type = "batch"}));
  REQUIRE(filtered.ok());
  CHECK(filtered->size() == 1);
  CHECK(run_sync(p.offers({.min_vcpus = 3}))->empty());
}

TEST_CASE("slurm: a single-node job runs the agent on a compute node with TSUM_NODE, is found again, and ends") {
  SlurmLab lab;
  SlurmProvider p(lab.options);
  const auto submitted = std::chrono::steady_clock::now();
  auto h = run_sync(p.create(partition("batch"), spec("11", 1, true)));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(h->provider == "slurm");
  CHECK(h->data["name"] == "tsum-tsum-slurmtest-11");
  CHECK(h->data["submitted_at"].get<double>() > 0);
  // The same token finds the same job, from the record and, without it, from squeue's name and comment.
  auto again = run_sync(p.create(partition("batch"), spec("11", 1, true)));
  REQUIRE(again.ok());
  CHECK(again->id == h->id);
  fs::remove_all(lab.options.state_dir + "/slurm/jobs");
  auto found = run_sync(p.create(partition("batch"), spec("11", 1, true)));
  REQUIRE_MESSAGE(found.ok(), found.error().detail);
  CHECK(found->id == h->id);
  // Nothing of the submission is left on the login node: its directory held the run token.
  CHECK(lab.cluster->ctl("ls -A " + std::string(kWork)) == "");
  auto tagged = run_sync(p.list_tagged(kTag));
  REQUIRE(tagged.ok());
  REQUIRE(tagged->size() == 1);
  CHECK((*tagged)[0].id == h->id);

  auto running = describe_until(p, *h, [](const auto& s) { return s.state != InstanceState::pending; }, std::chrono::seconds(30));
  INFO(running.detail);
  CHECK(running.state == InstanceState::running);
  CHECK((running.address == "c1" || running.address == "c2"));
  REQUIRE(running.queue_wait_s.has_value());
  MESSAGE("queue wait of a job on an idle cluster: " << *running.queue_wait_s << " s");
  CHECK(*running.queue_wait_s >= 0);
  // The wait ended before the test saw the job run (Slurm's times are whole seconds).
  CHECK(*running.queue_wait_s <= std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted).count() + 1);

  lab.release("11");
  auto done = describe_until(p, *h, has_ended, std::chrono::seconds(60));
  INFO(done.detail << "\n" << lab.cluster->logs());
  REQUIRE(done.state == InstanceState::exited);
  CHECK(done.detail.find("COMPLETED") != std::string::npos);
  CHECK(done.detail.find("exit status 0") != std::string::npos);
  auto& node = lab.cluster->compute(running.address == "c1" ? 0 : 1);
  auto proof = node.read_file("/var/tmp/proof-11");
  REQUIRE(proof.ok());
  CHECK(*proof == "0 1 " + running.address + " it's $x\n");
  // The task removed its directory on the node (it held the agent).
  CHECK(SlurmCluster::in_guest(node, "ls -d /tmp/tsum-*-* 2>/dev/null") == "");
  REQUIRE(run_sync(p.terminate(*h)).ok());
  CHECK(lab.squeue(h->id) == "");

  // A failing agent: its exit status is the job's.
  auto bad = run_sync(p.create(partition("batch"), spec("12", 1, false, 3)));
  REQUIRE_MESSAGE(bad.ok(), bad.error().detail);
  auto failed = describe_until(p, *bad, has_ended, std::chrono::seconds(60));
  INFO(failed.detail);
  CHECK(failed.state == InstanceState::exited);
  CHECK(failed.detail.find("FAILED") != std::string::npos);
  CHECK(failed.detail.find("exit status 3") != std::string::npos);
  REQUIRE(run_sync(p.terminate(*bad)).ok());
}

TEST_CASE("slurm: a 2-node job runs one agent per node with TSUM_NODE 0 and 1; a job behind it waits in the queue") {
  SlurmLab lab;
  SlurmProvider p(lab.options);
  auto h = run_sync(p.create(partition("batch"), spec("21", 2, true)));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  auto running = describe_until(p, *h, [](const auto& s) { return s.state != InstanceState::pending; }, std::chrono::seconds(30));
  REQUIRE(running.state == InstanceState::running);
  // Both nodes are taken (--exclusive): the next job queues until the first ends.
  auto next = run_sync(p.create(partition("batch"), spec("22", 1)));
  const auto next_submitted = std::chrono::steady_clock::now();  // it was in the queue by then
  REQUIRE_MESSAGE(next.ok(), next.error().detail);
  auto queued = run_sync(p.describe(*next));
  REQUIRE(queued.ok());
  INFO(queued->detail);
  CHECK(queued->state == InstanceState::pending);
  CHECK(queued->detail.starts_with("queued: "));
  CHECK_FALSE(queued->queue_wait_s.has_value());
  // describe_many: one squeue for both, the answers describe gives one job at a time.
  auto both = run_sync(p.describe_many({*h, *next}));
  REQUIRE(both.size() == 2);
  REQUIRE_MESSAGE(both[0].ok(), both[0].error().detail);
  REQUIRE_MESSAGE(both[1].ok(), both[1].error().detail);
  CHECK(both[0]->state == InstanceState::running);
  CHECK(both[0]->detail == running.detail);
  CHECK(both[0]->address == running.address);
  REQUIRE(both[0]->queue_wait_s.has_value());
  REQUIRE(running.queue_wait_s.has_value());
  CHECK(*both[0]->queue_wait_s == doctest::Approx(*running.queue_wait_s));
  CHECK(both[1]->state == InstanceState::pending);
  CHECK(both[1]->detail.starts_with("queued: "));
  CHECK_FALSE(both[1]->queue_wait_s.has_value());

  // Held for 3 s at least (however long the checks above took), so the queue wait has something to show.
  std::this_thread::sleep_until(next_submitted + std::chrono::seconds(3));
  lab.release("21");
  const double held_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - next_submitted).count();
  auto done = describe_until(p, *h, has_ended, std::chrono::seconds(60));
  INFO(done.detail << "\n" << lab.cluster->logs());
  REQUIRE(done.state == InstanceState::exited);
  CHECK(done.detail.find("COMPLETED") != std::string::npos);
  auto ended = run_sync(p.describe_many({*h}));  // no longer in squeue: asked about alone
  REQUIRE(ended.size() == 1);
  REQUIRE(ended[0].ok());
  CHECK(ended[0]->state == InstanceState::exited);
  CHECK(ended[0]->detail == done.detail);
  CHECK(lab.proofs("21") == std::set<std::string>{"0 2 c1 it's $x\n", "1 2 c2 it's $x\n"});
  REQUIRE(run_sync(p.terminate(*h)).ok());

  auto second = describe_until(p, *next, has_ended, std::chrono::seconds(60));
  const std::string raw = lab.cluster->ctl("scontrol show job -o " + next->id);
  INFO(second.detail << "\nscontrol right after: " << raw);
  CHECK(second.detail.find("COMPLETED") != std::string::npos);
  REQUIRE(second.queue_wait_s.has_value());
  MESSAGE("queue wait of a job behind a two-node job held " << held_s << " s: " << *second.queue_wait_s << " s");
  CHECK(*second.queue_wait_s >= held_s - 1);  // Slurm's times are whole seconds
  REQUIRE(run_sync(p.terminate(*next)).ok());
}

TEST_CASE("slurm: a job pending in the queue is cancelled by terminate and leaves the queue") {
  SlurmLab lab(1);
  SlurmProvider p(lab.options);
  auto h = run_sync(p.create(partition("held"), spec("31")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  auto st = describe_until(p, *h, [](const auto& s) { return s.detail.find("PartitionDown") != std::string::npos; },
                           std::chrono::seconds(20));
  INFO(st.detail);
  CHECK(st.state == InstanceState::pending);
  CHECK(st.detail == "queued: PartitionDown");
  CHECK(lab.squeue(h->id) == "PENDING");
  auto tagged = run_sync(p.list_tagged(kTag));
  REQUIRE(tagged.ok());
  REQUIRE(tagged->size() == 1);
  CHECK((*tagged)[0].id == h->id);

  REQUIRE(run_sync(p.terminate(*h)).ok());
  CHECK(lab.squeue(h->id) == "");
  CHECK(lab.cluster->ctl("scontrol show job -o " + h->id).find("JobState=CANCELLED") != std::string::npos);
  auto after = run_sync(p.describe(*h));  // the controller still remembers it, but terminate saw it leave
  REQUIRE(after.ok());
  CHECK(after->state == InstanceState::gone);
  CHECK(run_sync(p.list_tagged(kTag))->empty());
  CHECK(run_sync(p.terminate(*h)).ok());  // again: already gone is success
  CHECK(fs::is_empty(lab.options.state_dir + "/slurm/jobs"));
}

TEST_CASE("slurm: a compute node killed mid-run fails the job naming the node; nothing is left in the queue") {
  SlurmLab lab;
  SlurmProvider p(lab.options);
  auto h = run_sync(p.create(partition("batch"), spec("41", 1, true)));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  auto running = describe_until(p, *h, [](const auto& s) { return s.state != InstanceState::pending; }, std::chrono::seconds(30));
  REQUIRE(running.state == InstanceState::running);
  const std::string node = running.address;
  REQUIRE((node == "c1" || node == "c2"));
  lab.cluster->kill_compute(node == "c1" ? 0 : 1);
  const auto killed = std::chrono::steady_clock::now();

  auto st = describe_until(p, *h, has_ended, std::chrono::seconds(90));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  MESSAGE("node " << node << " killed; describe said exited after " << seconds << " s: " << st.detail);
  INFO(lab.cluster->logs());
  REQUIRE(st.state == InstanceState::exited);
  CHECK(st.detail.find("NODE_FAIL") != std::string::npos);
  CHECK(st.detail.find("node " + node) != std::string::npos);
  REQUIRE(run_sync(p.terminate(*h)).ok());
  CHECK(lab.squeue(h->id) == "");
  CHECK(run_sync(p.list_tagged(kTag))->empty());
}

TEST_CASE("slurm: the REST path (slurmrestd v0.0.38, JWT): offers, a 2-node job, a failing one, a pending one cancelled") {
  SlurmLab lab(2, true);
  SlurmOptions o = lab.options;
  o.rest_url = "http://" + lab.cluster->login_address() + ":6820";
  o.rest_user = "root";
  o.rest_token = lab.cluster->token();
  REQUIRE_FALSE(o.rest_token.empty());
  o.login.address = "192.0.2.1";  // the login node is not used on this path
  SlurmProvider p(o);
  auto offers = run_sync(p.offers({.instance_type = "batch"}));
  REQUIRE_MESSAGE(offers.ok(), offers.error().detail);
  REQUIRE(offers->size() == 1);
  CHECK((*offers)[0].vcpus == 2);
  CHECK((*offers)[0].memory_gib == doctest::Approx(2000 / 1024.0));
  CHECK((*offers)[0].hourly_price == 0.4);
  CHECK((*offers)[0].note.find("2 nodes") != std::string::npos);

  auto h = run_sync(p.create(partition("batch"), spec("51", 2)));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(run_sync(p.list_tagged(kTag))->size() == 1);
  auto done = describe_until(p, *h, has_ended, std::chrono::seconds(60));
  INFO(done.detail << "\n" << lab.cluster->logs());
  REQUIRE(done.state == InstanceState::exited);
  CHECK(done.detail.find("COMPLETED on c[1-2]") != std::string::npos);
  REQUIRE(done.queue_wait_s.has_value());
  CHECK(lab.proofs("51") == std::set<std::string>{"0 2 c1 it's $x\n", "1 2 c2 it's $x\n"});
  REQUIRE(run_sync(p.terminate(*h)).ok());

  auto bad = run_sync(p.create(partition("batch"), spec("52", 1, false, 3)));
  REQUIRE_MESSAGE(bad.ok(), bad.error().detail);
  auto failed = describe_until(p, *bad, has_ended, std::chrono::seconds(60));
  INFO(failed.detail);
  CHECK(failed.detail.find("FAILED") != std::string::npos);
  CHECK(failed.detail.find("exit status 3") != std::string::npos);
  REQUIRE(run_sync(p.terminate(*bad)).ok());

  auto held = run_sync(p.create(partition("held"), spec("53")));
  REQUIRE_MESSAGE(held.ok(), held.error().detail);
  auto st = describe_until(p, *held, [](const auto& s) { return s.detail.find("PartitionDown") != std::string::npos; },
                           std::chrono::seconds(20));
  CHECK(st.state == InstanceState::pending);
  CHECK(st.detail == "queued: PartitionDown");
  auto many = run_sync(p.describe_many({*held, *bad}));  // one GET jobs: the pending one from it, the ended alone
  REQUIRE(many.size() == 2);
  REQUIRE(many[0].ok());
  CHECK(many[0]->detail == "queued: PartitionDown");
  REQUIRE(many[1].ok());
  CHECK(many[1]->state == InstanceState::gone);  // terminate saw it leave
  REQUIRE(run_sync(p.terminate(*held)).ok());
  CHECK(lab.squeue(held->id) == "");
  CHECK(run_sync(p.list_tagged(kTag))->empty());
  CHECK(run_sync(p.terminate(*held)).ok());

  o.rest_token = "not-a-token";
  SlurmProvider refused(o);
  auto denied = run_sync(refused.offers({}));
  REQUIRE_FALSE(denied.ok());
  CHECK(denied.error().detail.find("slurmrestd") != std::string::npos);
}

TEST_CASE("slurm: when the login node does not answer, describe_many gives every job the listing's error") {
  TempDir dir{"tsum-slurm-dead"};
  SlurmOptions o;
  o.state_dir = dir.file("state");
  o.login.name = "ctl";
  o.login.address = "192.0.2.1";  // TEST-NET-1: nothing answers there
  o.login.user = "root";
  o.login.key_file = dir.file("no-key");
  o.work_dir = kWork;
  o.connect_timeout = std::chrono::seconds(2);
  SlurmProvider p(o);
  const InstanceHandle a{"slurm", "5", {{"name", "tsum-x-5"}}}, b{"slurm", "6", {{"name", "tsum-x-6"}}};
  auto st = run_sync(p.describe_many({a, b}));
  REQUIRE(st.size() == 2);
  REQUIRE_FALSE(st[0].ok());
  REQUIRE_FALSE(st[1].ok());
  INFO(st[0].error().detail);
  CHECK(st[0].error().detail == st[1].error().detail);
  CHECK(st[0].error().detail.find("192.0.2.1") != std::string::npos);
}
