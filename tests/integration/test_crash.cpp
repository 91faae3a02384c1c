// Crash and shutdown: a killed daemon takes its runs back once it is back (no machine left unwatched), and
// SIGTERM terminates instances before the daemon exits.
#include <doctest/doctest.h>

#include "integration/daemon_process.h"
#include "providers/local/process_group.h"

using namespace tsum;
using namespace tsum::testing;
using tsum::providers::local::group_has_live_member;

namespace {
// Starts a long run and waits until it is learning. Returns the agent's process group.
int start_learning_run(DaemonProcess& d, const std::string& admin) {
  REQUIRE(d.call("POST", "/v1/experiments", admin, tiny_experiment(30000, 2000)).status == 201);
  bool learning = eventually([&] { return d.call("GET", "/v1/runs/1", admin).json()["status"] == "learning"; },
                             std::chrono::seconds(240));
  INFO(d.log());
  REQUIRE(learning);
  int pgid = d.call("GET", "/v1/runs/1", admin).json()["instance"]["data"]["pid"].get<int>();
  REQUIRE(pgid > 1);
  REQUIRE(group_has_live_member(pgid));
  return pgid;
}
}  // namespace

TEST_CASE("kill -9 while learning, restart on the same database: the run is taken back and finishes, the queue "
          "goes on") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"), {"--max-concurrent", "1"});
  std::string admin = d.admin_token();
  d.start();
  int pgid = start_learning_run(d, admin);
  // A second experiment waits in the queue behind it (one run at a time).
  REQUIRE(d.call("POST", "/v1/experiments", admin, tiny_experiment(200, 100)).status == 201);
  REQUIRE(d.call("GET", "/v1/runs/2", admin).json()["status"] == "queued");

  auto status = d.stop(SIGKILL);
  REQUIRE(status.has_value());
  CHECK(WIFSIGNALED(*status));
  REQUIRE(group_has_live_member(pgid));  // the orphaned agent and trainer are still running, still "paid"

  // The restarted daemon finds the machine running and watches it again: the agent's spooled events arrive,
  // the run finishes on the machine it began on, and the machine is terminated (poweroff timed).
  d.start();
  bool finished = eventually([&] {
    auto run = d.call("GET", "/v1/runs/1", admin).json();
    return !group_has_live_member(pgid) && (run["status"] == "done" || run["status"] == "failed");
  }, std::chrono::seconds(300));
  auto run = d.call("GET", "/v1/runs/1", admin).json();
  INFO(run.dump(2));
  INFO(d.log());
  CHECK(finished);
  CHECK(run["status"] == "done");
  CHECK(d.log().find("reconcile: run 1 (learning) goes on on instance") != std::string::npos);
  CHECK(run["phases"]["poweroff"].get<double>() >= 0);
  CHECK(run["phases"]["learn"].get<double>() > 0);
  CHECK(run["attempt"] == 1);

  // The queue survived the crash: the waiting run starts and finishes on the restarted daemon.
  bool queued_ran = eventually([&] { return d.call("GET", "/v1/runs/2", admin).json()["status"] == "done"; },
                               std::chrono::seconds(120));
  INFO(d.call("GET", "/v1/runs/2", admin).json().dump(2));
  CHECK(queued_ran);
}

TEST_CASE("SIGTERM cancels live runs, terminates their instances and exits cleanly") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  d.start();
  int pgid = start_learning_run(d, admin);
  auto status = d.stop(SIGTERM);
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  CHECK(!group_has_live_member(pgid));
  d.start();  // the reconciler has nothing left to do
  auto run = d.call("GET", "/v1/runs/1", admin).json();
  CHECK(run["status"] == "cancelled");
  CHECK(run["reason"] == "daemon shutting down");
}

TEST_CASE("one daemon per database: a second serve refuses, naming the holder, and starts once the holder is "
          "killed -9") {
  TempDir dir;
  DaemonProcess first(dir.file("t.db"));
  std::string admin = first.admin_token();
  first.start();
  int pgid = start_learning_run(first, admin);

  // The second daemon refuses before it opens the database: the first one's live run is left alone.
  const std::string refused = run_capture(std::string(TSUMD_BIN) + " serve --db " + dir.file("t.db") +
                                          " --listen 127.0.0.1:0 2>&1; echo \"exit=$?\"");
  INFO(refused);
  CHECK(refused.find("is in use by another tsumd (pid " + std::to_string(first.pid()) + ")") != std::string::npos);
  CHECK(refused.find(dir.file("t.db") + ".lock") != std::string::npos);
  CHECK(refused.find("exit=0") == std::string::npos);
  auto run = first.call("GET", "/v1/runs/1", admin).json();
  CHECK(run["status"] == "learning");
  CHECK(group_has_live_member(pgid));

  // The kernel lets the lock go with the process: after kill -9 the next daemon starts, takes the run back (its
  // machine still runs), and a cancel terminates it.
  first.stop(SIGKILL);
  DaemonProcess second(dir.file("t.db"));
  second.start();
  CHECK(second.call("GET", "/healthz", "").status == 200);
  CHECK(eventually([&] { return second.log().find("reconcile: run 1 (learning) goes on") != std::string::npos; },
                   std::chrono::seconds(60)));
  CHECK(second.call("DELETE", "/v1/runs/1", admin).status == 202);
  CHECK(eventually([&] { return second.call("GET", "/v1/runs/1", admin).json()["status"] == "cancelled"; },
                   std::chrono::seconds(60)));
  CHECK(eventually([&] { return !group_has_live_member(pgid); }, std::chrono::seconds(60)));
}
