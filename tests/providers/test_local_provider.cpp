// The local provider with real processes: sandboxes, affinity, process groups, pidfiles.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "billing/prices/catalog.h"
#include "providers/local/local_provider.h"
#include "providers/local/process_group.h"
#include "support/run_sync.h"
#include "support/temp_dir.h"

using namespace tsum;
using namespace tsum::providers;
using tsum::testing::run_sync;
namespace fs = std::filesystem;

namespace {

LocalProvider make_provider(const std::string& state, std::vector<int> cpus = {}) {
  auto cat = billing::parse_catalog(find_embedded(billing::embedded_catalogs(), "local.json"));
  REQUIRE(cat.ok());
  LocalOptions o{.state_dir = state, .catalog = *cat, .cpus = std::move(cpus)};
  o.kill_grace = std::chrono::milliseconds(500);
  return LocalProvider(o);
}

// An "agent" that starts a child in its own group and writes both pids, then waits.
const char* kSleeper = R"(#!/bin/sh
sleep 300 &
echo $! > child.pid
grep Cpus_allowed_list /proc/self/status > cpus.txt
echo "$TSUM_HELLO" > hello.txt
wait
)";

LaunchSpec spec(const std::string& run, const std::string& script = kSleeper) {
  return {.run_id = run, .tag = "tsum-test", .idempotency_token = "tok-" + run, .agent_script = script,
          .env = {{"TSUM_HELLO", "hi " + run}}};
}

Offer offer(const std::string& type) { return {.provider = "local", .instance_type = type}; }

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

template <class F>
bool eventually(F f, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return f();
}

bool pid_alive(pid_t pid) { return local::process_start_ticks(pid).has_value(); }

}  // namespace

TEST_CASE("offers list local-1c..local-<N>c priced from the catalog; larger types are refused") {
  testing::TempDir dir;
  auto p = make_provider(dir.path().string(), {0, 1});
  auto offers = run_sync(p.offers({}));
  REQUIRE(offers.ok());
  REQUIRE(offers->size() == 2);
  CHECK((*offers)[0].instance_type == "local-1c");
  CHECK((*offers)[1].hourly_price == doctest::Approx(0.085));
  CHECK(run_sync(p.offers({.instance_type = "local-3c"}))->empty());
  auto big = run_sync(p.create(offer("local-3c"), spec("1")));
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().code == Code::invalid_argument);
  CHECK(big.error().detail.find("larger than this host") != std::string::npos);
  CHECK(LocalProvider::cores_of("local-12c") == 12);
  CHECK(LocalProvider::cores_of("local-c") == 0);
  CHECK(LocalProvider::cores_of("aws-2c") == 0);
}

TEST_CASE("a host with GPUs also offers local-<N>c-<G>g; an instance holds its GPUs alone and sees only them") {
  testing::TempDir dir;
  auto cat = billing::parse_catalog(find_embedded(billing::embedded_catalogs(), "local.json"));
  REQUIRE(cat.ok());
  LocalProvider p(LocalOptions{.state_dir = dir.path().string(), .catalog = *cat, .cpus = {0, 1},
                               .gpus = {{.index = 0, .name = "GPU A"}, {.index = 1, .name = "GPU B"}}});
  CHECK(p.capabilities().gpus);
  auto offers = run_sync(p.offers({}));
  REQUIRE(offers.ok());
  REQUIRE(offers->size() == 2 * 3);  // 1 or 2 cores, each with 0, 1 or 2 GPUs
  std::map<std::string, Offer> by_type;
  for (const auto& o : *offers) by_type[o.instance_type] = o;
  REQUIRE(by_type.count("local-2c-1g"));
  CHECK(by_type["local-2c-1g"].gpus == 1);
  CHECK(by_type["local-2c-1g"].gpu_type == "GPU A");
  CHECK(by_type["local-2c-1g"].hourly_price == doctest::Approx(0.085));
  CHECK(by_type["local-1c-2g"].gpus == 2);
  CHECK(by_type["local-1c"].gpus == 0);
  CHECK(run_sync(p.offers({.gpus = 2}))->size() == 2);
  CHECK(LocalProvider::cores_of("local-4c-2g") == 4);
  CHECK(LocalProvider::gpus_of("local-4c-2g") == 2);
  CHECK(LocalProvider::gpus_of("local-4c") == 0);
  for (const char* bad : {"local-4c-", "local-4c-g", "local-4c-0g", "local-4c-2gx", "local-4cc", "local--2g"}) {
    CAPTURE(bad);
    CHECK(LocalProvider::cores_of(bad) == 0);
    CHECK(LocalProvider::gpus_of(bad) == 0);
  }
  CHECK(run_sync(p.create(offer("local-1c-3g"), spec("big"))).code() == Code::invalid_argument);

  const char* env_agent = "#!/bin/sh\necho \"$CUDA_VISIBLE_DEVICES|$CUDA_DEVICE_ORDER\" > gpus.txt\nexec sleep 300\n";
  auto first = run_sync(p.create(offer("local-1c-1g"), spec("g1", env_agent)));
  REQUIRE(first.ok());
  auto second = run_sync(p.create(offer("local-1c-1g"), spec("g2", env_agent)));
  REQUIRE(second.ok());
  // Both GPUs are held now: a third GPU instance waits, a CPU-only one needs none (but both cores are taken).
  CHECK(run_sync(p.create(offer("local-1c-1g"), spec("g3", env_agent))).code() == Code::unavailable);
  fs::path s1 = first->data["sandbox"].get<std::string>();
  fs::path s2 = second->data["sandbox"].get<std::string>();
  REQUIRE(eventually([&] { return !read_file(s1 / "gpus.txt").empty() && !read_file(s2 / "gpus.txt").empty(); }));
  CHECK(read_file(s1 / "gpus.txt") == "0|PCI_BUS_ID\n");
  CHECK(read_file(s2 / "gpus.txt") == "1|PCI_BUS_ID\n");
  REQUIRE(run_sync(p.terminate(*first)).ok());
  auto cpu_only = run_sync(p.create(offer("local-1c"), spec("c1", env_agent)));
  REQUIRE(cpu_only.ok());
  fs::path s3 = cpu_only->data["sandbox"].get<std::string>();
  REQUIRE(eventually([&] { return !read_file(s3 / "gpus.txt").empty(); }));
  CHECK(read_file(s3 / "gpus.txt") == "|PCI_BUS_ID\n");  // no GPU for a CPU instance
  REQUIRE(run_sync(p.terminate(*second)).ok());
  REQUIRE(run_sync(p.terminate(*cpu_only)).ok());
}

TEST_CASE("an instance is a sandbox, a pinned core set and a process group; terminate removes all of it") {
  testing::TempDir dir;
  auto p = make_provider(dir.path().string(), {0});
  auto h = run_sync(p.create(offer("local-1c"), spec("7")));
  REQUIRE(h.ok());
  fs::path sandbox = h->data["sandbox"].get<std::string>();
  REQUIRE(eventually([&] { return fs::exists(sandbox / "hello.txt") && fs::exists(sandbox / "cpus.txt"); }));
  CHECK(read_file(sandbox / "hello.txt") == "hi 7\n");
  CHECK(read_file(sandbox / "cpus.txt").find("\t0\n") != std::string::npos);  // pinned to CPU 0

  auto st = run_sync(p.describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::running);
  pid_t agent = h->data["pid"].get<int>();
  REQUIRE(eventually([&] { return fs::exists(sandbox / "child.pid") && !read_file(sandbox / "child.pid").empty(); }));
  pid_t child = std::stoi(read_file(sandbox / "child.pid"));
  CHECK(getpgid(child) == agent);  // the agent's child is in the agent's group

  // Idempotent create: the same token gives the same instance, no second process.
  auto again = run_sync(p.create(offer("local-1c"), spec("7")));
  REQUIRE(again.ok());
  CHECK(again->id == h->id);
  // The only core is taken: another instance is refused until this one is gone.
  auto busy = run_sync(p.create(offer("local-1c"), spec("8")));
  CHECK(busy.code() == Code::unavailable);

  REQUIRE(run_sync(p.terminate(*h)).ok());
  CHECK_FALSE(fs::exists(sandbox));
  CHECK(eventually([&] { return !pid_alive(child) && !pid_alive(agent); }));
  CHECK(run_sync(p.describe(*h))->state == InstanceState::gone);
  CHECK(run_sync(p.terminate(*h)).ok());  // idempotent
  CHECK(run_sync(p.create(offer("local-1c"), spec("8"))).ok());
}

TEST_CASE("an agent that ignores SIGTERM is killed after the grace period") {
  testing::TempDir dir;
  auto p = make_provider(dir.path().string(), {0});
  auto h = run_sync(p.create(offer("local-1c"), spec("1", "trap '' TERM\necho > trapped\nwhile :; do sleep 1; done\n")));
  REQUIRE(h.ok());
  // Its trap is set before it says so: a SIGTERM before that would end it at once, however slow the machine.
  const fs::path sandbox = h->data["sandbox"].get<std::string>();
  REQUIRE(eventually([&] { return fs::exists(sandbox / "trapped"); }, std::chrono::seconds(120)));
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(run_sync(p.terminate(*h)).ok());
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(400));
  CHECK_FALSE(pid_alive(h->data["pid"].get<int>()));
}

TEST_CASE("an agent that exits is reported as exited with its status") {
  testing::TempDir dir;
  auto p = make_provider(dir.path().string(), {0});
  auto h = run_sync(p.create(offer("local-1c"), spec("1", "exit 3\n")));
  REQUIRE(h.ok());
  REQUIRE(eventually([&] { return run_sync(p.describe(*h))->state == InstanceState::exited; }));
  CHECK(run_sync(p.describe(*h))->detail == "agent exited with status 3");
  CHECK(run_sync(p.terminate(*h)).ok());
}

TEST_CASE("describe_many (the contract's default) answers per handle, in order, as describe does") {
  testing::TempDir dir;
  auto p = make_provider(dir.path().string(), {0, 1});
  auto exits = run_sync(p.create(offer("local-1c"), spec("1", "exit 3\n")));
  auto sleeps = run_sync(p.create(offer("local-1c"), spec("2")));
  REQUIRE(exits.ok());
  REQUIRE(sleeps.ok());
  REQUIRE(eventually([&] { return run_sync(p.describe(*exits))->state == InstanceState::exited; }));
  REQUIRE(eventually([&] { return run_sync(p.describe(*sleeps))->state == InstanceState::running; }));
  InstanceHandle unknown{"local", "no-such-instance", {{"sandbox", (dir.path() / "no-such-sandbox").string()}}};
  const std::vector<InstanceHandle> asked = {*sleeps, unknown, *exits};
  auto all = run_sync(p.describe_many(asked));
  REQUIRE(all.size() == 3);
  REQUIRE(all[0].ok());
  CHECK(all[0]->state == InstanceState::running);
  REQUIRE(all[1].ok());
  CHECK(all[1]->state == InstanceState::gone);
  REQUIRE(all[2].ok());
  CHECK(all[2]->detail == "agent exited with status 3");
  CHECK(run_sync(p.describe_many({})).empty());
  CHECK(run_sync(p.terminate(*exits)).ok());
  CHECK(run_sync(p.terminate(*sleeps)).ok());
}

TEST_CASE("list_tagged finds the instances another provider object (a crashed daemon) left behind") {
  testing::TempDir dir;
  InstanceHandle left;
  {
    auto first = make_provider(dir.path().string(), {0, 1});
    auto h = run_sync(first.create(offer("local-1c"), spec("5")));
    REQUIRE(h.ok());
    left = *h;
  }
  auto second = make_provider(dir.path().string(), {0, 1});
  auto found = run_sync(second.list_tagged("tsum-test"));
  REQUIRE(found.ok());
  REQUIRE(found->size() == 1);
  CHECK((*found)[0].id == left.id);
  CHECK(run_sync(second.list_tagged("someone-else"))->empty());
  REQUIRE(run_sync(second.terminate((*found)[0])).ok());
  CHECK(run_sync(second.list_tagged("tsum-test"))->empty());
  CHECK_FALSE(pid_alive(left.data["pid"].get<int>()));
}

TEST_CASE("a recorded pid that now belongs to another process is never signalled") {
  pid_t me = getpid();
  auto ticks = local::process_start_ticks(me);
  REQUIRE(ticks.has_value());
  CHECK_FALSE(local::group_alive(me, *ticks + 12345));
}

TEST_CASE("a group whose only member is a zombie is not running, though kill(-pgid, 0) still finds it") {
  testing::TempDir dir;
  auto s = local::spawn_session({.argv = {"/bin/sleep", "300"}, .cwd = dir.path().string(),
                                 .log_path = dir.file("log")});
  REQUIRE(s.ok());
  CHECK(local::group_has_live_member(s->pid));
  REQUIRE(kill(s->pid, SIGKILL) == 0);
  // Not reaped yet: the killed leader is a zombie child of ours.
  REQUIRE(eventually([&] { return !local::process_start_ticks(s->pid).has_value(); }));
  CHECK(kill(-s->pid, 0) == 0);
  CHECK_FALSE(local::group_has_live_member(s->pid));
  std::optional<int> status;
  CHECK_FALSE(local::group_alive(s->pid, s->start_ticks, &status));  // reaps it
  CHECK(status == 128 + SIGKILL);
  CHECK(kill(-s->pid, 0) == -1);
}
