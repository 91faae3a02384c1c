// The ssh provider's parts that need no sshd: quoting, command lines, bounded child processes, host
// reservations, offers and the create paths that fail before the agent starts (real ssh client, closed port).
// The whole provider against real sshd is tests/integration/test_ssh.cpp.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "providers/local/process_group.h"
#include "providers/ssh/host_reservation.h"
#include "providers/ssh/ssh_command.h"
#include "providers/ssh/ssh_provider.h"
#include "support/run_sync.h"
#include "support/temp_dir.h"

using namespace tsum;
using namespace tsum::providers;
using tsum::testing::run_sync;
using tsum::testing::TempDir;
namespace fs = std::filesystem;

namespace {

// A loopback port nobody listens on (bound, then closed).
int closed_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

SshOptions options(const TempDir& d) {
  SshOptions o;
  o.state_dir = d.path().string();
  SshHost h;
  h.name = "box";
  h.address = "127.0.0.1";
  h.port = closed_port();
  h.user = "nobody";
  h.key_file = d.file("id");
  h.cores = 4;
  h.hourly_price = 0.3;
  h.billing = "per_hour";
  o.hosts.push_back(h);
  o.connect_timeout = std::chrono::seconds(2);
  o.boot_timeout = std::chrono::seconds(2);
  return o;
}

LaunchSpec spec_for(const std::string& run) {
  LaunchSpec s;
  s.run_id = run;
  s.tag = "tsum-test";
  s.idempotency_token = "run" + run + "-tsum-test";
  s.agent_script = "#!/bin/sh\n";
  s.env = {{"TSUM_URL", "http://127.0.0.1:1"}, {"TSUM_RUN_ID", run}, {"TSUM_TOKEN", "secret-token"}};
  return s;
}

}  // namespace

TEST_CASE("shell_quote makes one word of anything, as sh reads it back") {
  for (std::string s : {"plain", "two words", "it's", "$(rm -rf /)", "'\"\\`", ""}) {
    CAPTURE(s);
    std::vector<std::string> argv = {"/bin/sh", "-c", "printf %s " + ssh::shell_quote(s)};
    TempDir d;
    auto r = run_sync(ssh::run_bounded(argv, ssh::child_env(), d.file("log"), std::chrono::seconds(10)));
    REQUIRE(r);
    CHECK(r->exit_code == 0);
    CHECK(r->output == s);
  }
}

TEST_CASE("ssh and scp command lines carry the safety options and the host's key, port and user") {
  TempDir d;
  auto o = options(d);
  o.known_hosts = "/state/known_hosts";
  auto argv = ssh::ssh_argv(o, o.hosts[0], {"-R", "1:2"}, "true");
  auto has = [&](const std::vector<std::string>& v, const std::string& a) { return std::find(v.begin(), v.end(), a) != v.end(); };
  for (const char* a : {"BatchMode=yes", "StrictHostKeyChecking=accept-new", "UserKnownHostsFile=/state/known_hosts",
                        "ConnectTimeout=2", "ServerAliveInterval=5", "ServerAliveCountMax=3", "IdentitiesOnly=yes"})
    CHECK(has(argv, a));
  CHECK(has(argv, o.hosts[0].key_file));
  CHECK(has(argv, "nobody@127.0.0.1"));
  CHECK(argv.back() == "true");
  CHECK(argv[argv.size() - 2] == "--");
  auto scp = ssh::scp_argv(o, o.hosts[0], {"/a", "REMOTE:/w/r/*"}, "REMOTE:/w/");
  CHECK(has(scp, "nobody@127.0.0.1:/w/r/*"));
  CHECK(scp.back() == "nobody@127.0.0.1:/w/");
  CHECK(has(scp, "-P"));
  o.hosts[0].address = "::1";
  CHECK(ssh::scp_argv(o, o.hosts[0], {"/a"}, "REMOTE:/w").back() == "nobody@[::1]:/w");
}

TEST_CASE("run_bounded reports exit status and output, and kills a command that outlives its deadline") {
  TempDir d;
  const std::vector<std::string> fails = {"/bin/sh", "-c", "echo one; echo two >&2; exit 3"};
  auto r = run_sync(ssh::run_bounded(fails, ssh::child_env(), d.file("log"), std::chrono::seconds(10)));
  REQUIRE(r);
  CHECK(r->exit_code == 3);
  CHECK(r->output == "one\ntwo");
  CHECK(ssh::last_line(d.file("log")) == "two");

  const std::vector<std::string> hangs = {"/bin/sh", "-c", "sleep 300 & echo $! > " + d.file("child") + "; wait"};
  auto t = run_sync(ssh::run_bounded(hangs, ssh::child_env(), d.file("log"), std::chrono::milliseconds(500)));
  REQUIRE_FALSE(t);
  CHECK(t.code() == Code::timeout);
  std::ifstream in(d.file("child"));
  pid_t child = 0;
  in >> child;
  REQUIRE(child > 0);
  CHECK_FALSE(local::process_start_ticks(child));  // the whole group went, not only the shell
}

TEST_CASE("reservations: one holder per host, pending cleanups, listed for the sweep") {
  TempDir d;
  ssh::ReservationStore store(d.file("hosts"));
  ssh::Reservation r{.id = "i1", .host = "box", .tag = "t"};
  REQUIRE(store.claim(r));
  auto again = store.claim(ssh::Reservation{.id = "i2", .host = "box"});
  REQUIRE_FALSE(again);
  CHECK(again.code() == Code::already_exists);
  r.tunnel_pid = 4242;
  REQUIRE(store.update(r));
  CHECK(store.find("box")->tunnel_pid == 4242);
  CHECK(store.all().size() == 1);
  REQUIRE(store.release("box"));
  CHECK_FALSE(store.find("box"));
  CHECK(store.update(r).code() == Code::not_found);
  CHECK_FALSE(store.pending_cleanup("box"));
  REQUIRE(store.set_pending_cleanup("box", "/var/tmp/tsum/i1"));
  CHECK(store.pending_cleanup("box") == "/var/tmp/tsum/i1");
  store.clear_pending_cleanup("box");
  CHECK_FALSE(store.pending_cleanup("box"));
}

TEST_CASE("ssh offers: one per host with its price and billing rule, filtered by the requirements") {
  TempDir d;
  SshProvider p(options(d));
  auto all = run_sync(p.offers(Requirements{}));
  REQUIRE(all);
  REQUIRE(all->size() == 1);
  CHECK((*all)[0].provider == "ssh");
  CHECK((*all)[0].instance_type == "box");
  CHECK((*all)[0].vcpus == 4);
  CHECK((*all)[0].hourly_price == 0.3);
  CHECK((*all)[0].billing_rule == "per_hour");
  CHECK(run_sync(p.offers(Requirements{.instance_type = "other"}))->empty());
  CHECK(run_sync(p.offers(Requirements{.min_vcpus = 5}))->empty());
  CHECK(run_sync(p.offers(Requirements{.gpus = 1}))->empty());
  CHECK(fs::is_empty(d.path()));  // listing touches no state
}

TEST_CASE("ssh create fails cleanly: unknown host, busy host, failing power_on, unreachable sshd") {
  TempDir d;
  auto o = options(d);
  std::ofstream(d.file("id")) << "not a key\n";
  fs::permissions(d.file("id"), fs::perms::owner_read | fs::perms::owner_write);
  Offer box{.provider = "ssh", .instance_type = "box"};

  SUBCASE("unknown host") {
    SshProvider p(o);
    Offer other{.provider = "ssh", .instance_type = "nope"};
    CHECK(run_sync(p.create(other, spec_for("1"))).code() == Code::invalid_argument);
  }
  SUBCASE("busy host, and the same token gets the same instance") {
    SshProvider p(o);
    ssh::ReservationStore store(d.file("ssh/hosts"));
    REQUIRE(store.claim(ssh::Reservation{.id = "ssh-box-9", .host = "box", .idempotency_token = "run9-tsum-test"}));
    auto busy = run_sync(p.create(box, spec_for("1")));
    REQUIRE_FALSE(busy);
    CHECK(busy.code() == Code::unavailable);
    CHECK(busy.error().detail.find("busy with instance ssh-box-9") != std::string::npos);
    auto same = run_sync(p.create(box, spec_for("9")));
    REQUIRE(same);
    CHECK(same->id == "ssh-box-9");
  }
  SUBCASE("power_on fails: the host is released and the command is not repeated") {
    o.hosts[0].power_on = "echo password123 >/dev/null; exit 3";
    o.hosts[0].power_off = "touch " + d.file("powered-off");
    SshProvider p(o);
    auto r = run_sync(p.create(box, spec_for("1")));
    REQUIRE_FALSE(r);
    CHECK(r.error().detail.find("power_on of ssh host box (127.0.0.1:") != std::string::npos);
    CHECK(r.error().detail.find("exited with status 3") != std::string::npos);
    CHECK(r.error().detail.find("password123") == std::string::npos);
    CHECK(fs::exists(d.file("powered-off")));  // create undid itself through terminate
    CHECK(fs::is_empty(d.file("ssh/hosts")));  // released, and no cleanup pending: nothing reached the host
  }
  SUBCASE("nothing listens: create gives up after boot_timeout and releases the host") {
    SshProvider p(o);
    auto r = run_sync(p.create(box, spec_for("1")));
    REQUIRE_FALSE(r);
    CHECK(r.code() == Code::unavailable);
    CHECK(r.error().detail.find("ssh host box (127.0.0.1:") != std::string::npos);
    CHECK(r.error().detail.find("did not answer within 2 s") != std::string::npos);
    CHECK_FALSE(fs::exists(d.file("ssh/hosts/box.json")));
    auto gone = run_sync(p.describe(InstanceHandle{"ssh", "ssh-box-1-run1-tsu", {{"host", "box"}}}));
    REQUIRE(gone);
    CHECK(gone->state == InstanceState::gone);
    CHECK(run_sync(p.terminate(InstanceHandle{"ssh", "ssh-box-1-run1-tsu", {{"host", "box"}}})));
  }
}
