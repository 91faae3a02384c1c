// Guest machines are machines of their own: the stock root, their own loopback, PID namespace and hostname,
// this host's files out of reach, a server on the bridge address reachable; halt and sweeps leave nothing.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "providers/guest/host_command.h"
#include "tests/fakes/http/loopback_server.h"
#include "support/guest_net.h"
#include "support/guest_probe.h"
#include "support/temp_dir.h"

using namespace tsum;
using namespace tsum::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
namespace guest = tsum::providers::guest;

namespace {

using Clock = std::chrono::steady_clock;

// The file's contents inside the guest once they end with `end` (a whole line), waiting at most `limit`.
std::string guest_line(guest::GuestMachine& m, const std::string& path, std::chrono::milliseconds limit,
                       const std::string& end = "\n") {
  for (auto deadline = Clock::now() + limit;;) {
    auto text = m.read_file(path);
    if (text && text->ends_with(end)) return *text;
    if (Clock::now() >= deadline) return {};
    std::this_thread::sleep_for(10ms);
  }
}

// Processes of this host whose PID namespace is `ns` (a /proc/<pid>/ns/pid link text).
int processes_in(const std::string& ns) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    std::error_code lec;
    auto link = fs::read_symlink(e.path() / "ns" / "pid", lec);
    if (!lec && link.string() == ns) ++n;
  }
  return n;
}

std::string pid_ns_of(pid_t pid) {
  std::error_code ec;
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", ec).string();
}

bool interface_exists(const std::string& name) { return fs::exists("/sys/class/net/" + name); }
bool netns_exists(const std::string& name) { return fs::exists("/run/netns/" + name); }

// What a halted machine must not leave: a process, its netns, veth, directory or lease.
void check_gone(const TestNetwork& net, const std::string& ns, const std::string& netns, const std::string& veth,
                const std::string& dir) {
  CHECK(processes_in(ns) == 0);
  CHECK_FALSE(netns_exists(netns));
  CHECK_FALSE(interface_exists(veth));
  CHECK_FALSE(fs::exists(dir));
  CHECK(net.network().leases().empty());
}

// A plain TCP listener on this host's 127.0.0.1 that counts the connections it accepts.
struct LoopbackListener {
  int fd = -1;
  int port = 0;
  LoopbackListener() {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(fd, 8) == 0);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~LoopbackListener() { close(fd); }
  int accepted() {
    int n = 0;
    for (int c; (c = accept(fd, nullptr, nullptr)) >= 0; ++n) close(c);
    return n;
  }
};

}  // namespace

TEST_CASE("a guest is the stock root in namespaces of its own; this host's files are out of its reach") {
  TestNetwork net;
  TempDir secret_dir("tsum-secret");
  const std::string secret = secret_dir.file("secret.txt");
  std::ofstream(secret) << "host secret\n";

  const auto t0 = Clock::now();
  guest_image();  // extracted once per process, before the clock starts
  auto m = net.machine("g1");
  auto made = Clock::now();
  REQUIRE(m->write_file("/opt/probe.sh",
                        "exec > /tmp/facts 2>&1\n"
                        "echo pid=$$ host=$(hostname) etc=$(cat /etc/hostname) home=$HOME pwd=$(pwd)\n"
                        "test -e " + secret + " && echo SECRET-VISIBLE || echo secret-absent\n"
                        "test -e " + secret_dir.path().string() + " && echo DIR-VISIBLE || echo dir-absent\n"
                        "test -e /work && echo WORK-VISIBLE || echo work-absent\n"
                        "echo ifaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ,)\n"
                        "echo null=$(head -c 3 /dev/zero | wc -c) rand=$(head -c 4 /dev/urandom | wc -c)\n"
                        "sha256sum /etc/hostname >/dev/null && echo sha-ok\n"
                        "echo up=$(cut -d' ' -f1 /proc/uptime | cut -d. -f1)\n"
                        "echo done\n"
                        "exec sleep 1000\n",
                        0755)
              .ok());
  auto started = m->start({"/bin/sh", "/opt/probe.sh"});
  REQUIRE_MESSAGE(started.ok(), started.error().detail);
  const std::string facts = guest_line(*m, "/tmp/facts", 120s, "done\n");
  const auto booted = Clock::now();
  INFO(facts);
  CHECK(facts.find("pid=1 host=g1 etc=g1 home=/root pwd=/\n") != std::string::npos);
  CHECK(facts.find("secret-absent") != std::string::npos);
  CHECK(facts.find("dir-absent") != std::string::npos);
  CHECK(facts.find("work-absent") != std::string::npos);
  CHECK(facts.find("ifaces=eth0,lo,\n") != std::string::npos);
  CHECK(facts.find("null=3 rand=4\n") != std::string::npos);
  CHECK(facts.find("sha-ok\n") != std::string::npos);
  CHECK(facts.find("up=") != std::string::npos);
  CHECK(facts.ends_with("done\n"));

  CHECK(m->running());
  const std::string& gw = net.listen_address();
  CHECK(m->address() == gw.substr(0, gw.rfind('.')) + ".2");  // the first address after the bridge's
  CHECK(interface_exists(m->veth()));
  CHECK(netns_exists(m->netns()));
  const auto disk = guest::run_command({"du", "-skx", m->dir()}, 10s);  // -x: not the image under the overlay
  const std::string mode = m->disk() == guest::DiskMode::overlay ? "overlay" : "copy";
  MESSAGE("disk " << mode << ": create "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(made - t0).count() << " ms, create to "
                  << "first command's output " << std::chrono::duration_cast<std::chrono::milliseconds>(booted - t0).count()
                  << " ms, " << (disk ? disk->output.substr(0, disk->output.find('\t')) : "?") << " KiB on this host");

  const std::string ns = pid_ns_of(m->init_pid()), netns = m->netns(), veth = m->veth(), dir = m->dir();
  REQUIRE_FALSE(ns.empty());
  CHECK(processes_in(ns) == 1);  // init: the script exec'd sleep
  m->halt();
  CHECK_FALSE(m->running());
  check_gone(net, ns, netns, veth, dir);
  m->halt();  // idempotent
  CHECK(read_all(secret) == "host secret\n");
}

TEST_CASE("a guest reaches a server on the bridge address, and not this host's 127.0.0.1") {
  TestNetwork net;
  providers::http::LoopbackServer server([](const providers::http::LoopbackRequest& req) {
    if (req.target.starts_with("/v1/join/"))  // a join script, as for a bring-your-own machine
      return providers::http::LoopbackReply{.status = 200, .body = "echo joined $(hostname) > /tmp/joined\n"};
    return providers::http::LoopbackReply{.status = 200, .body = "hello " + req.target + "\n"};
  });
  auto port = server.start({.host = net.listen_address()});
  REQUIRE_MESSAGE(port.ok(), port.error().detail);
  LoopbackListener local;
  const std::string cmd = "curl -fsS --max-time 5 " + net.url(*port) + "/from-guest > /tmp/got.tmp; echo rc=$? >> /tmp/got.tmp;"
                          " curl -sS --max-time 3 http://127.0.0.1:" + std::to_string(local.port) +
                          "/ > /dev/null 2>&1; echo local=$? >> /tmp/got.tmp; mv /tmp/got.tmp /tmp/got; exec sleep 1000";
  auto m = net.boot_shell("web1", cmd);
  auto m2 = net.boot_shell("web2", cmd);  // the next address on the bridge
  const std::string got = guest_line(*m, "/tmp/got", 120s);
  CHECK(got == "hello /from-guest\nrc=0\nlocal=7\n");  // curl 7: connection refused by the guest's own loopback
  CHECK(guest_line(*m2, "/tmp/got", 120s) == got);
  CHECK(local.accepted() == 0);
  CHECK(m2->address() != m->address());

  auto byo = net.boot_shell("byo1", "curl -fsSL " + net.url(*port) + "/v1/join/abc | sh; exec sleep 1000");
  CHECK(guest_line(*byo, "/tmp/joined", 120s) == "joined byo1\n");
}

TEST_CASE("writes from this host stay inside the guest's root, whatever links the guest made") {
  TestNetwork net;
  TempDir victim_dir("tsum-victim");
  const std::string victim = victim_dir.file("victim");
  std::ofstream(victim) << "untouched\n";
  auto m = net.machine("w1");
  fs::create_symlink(victim, m->root() + "/opt/link");
  fs::create_symlink("../../../../../../../../" + victim_dir.path().string(), m->root() + "/opt/up");
  CHECK_FALSE(m->write_file("/opt/link", "overwritten\n").ok());  // resolves to <root>/tmp/...: no such dir
  CHECK(m->write_file("/opt/up/victim", "overwritten\n").code() == Code::not_found);
  CHECK(read_all(victim) == "untouched\n");
  CHECK(m->write_file("/opt/../etc/x", "x").code() == Code::invalid_argument);
  REQUIRE(m->write_file("/srv/new/dir/file", "made\n", 0640).ok());
  CHECK(m->read_file("/srv/new/dir/file").value() == "made\n");
  CHECK((fs::status(m->root() + "/srv/new/dir/file").permissions() & fs::perms::all) == fs::perms(0640));
  CHECK(m->read_file("/etc/hostname").value() == "w1\n");
  CHECK(m->read_file("/etc/hosts").value().find(m->address() + "\tw1\n") != std::string::npos);
  CHECK(m->read_file("/etc/resolv.conf").value().find("nameserver") == std::string::npos);
  CHECK(m->read_file("/no/such").code() == Code::not_found);
}

TEST_CASE("a command that is not there fails the machine; a copied disk boots like an overlay") {
  TestNetwork net;
  auto bad = net.machine("bad1");
  auto started = bad->start({"/usr/bin/no-such-command"});
  if (started.ok()) {  // the launcher got as far as exec: init exits at once
    for (int i = 0; i < 500 && bad->running(); ++i) std::this_thread::sleep_for(10ms);
    CHECK_FALSE(bad->running());
  }
  CHECK(bad->start({"/bin/true"}).code() == Code::invalid_argument);  // once only

  const auto t0 = Clock::now();
  auto copy = net.machine("copy1", kGuestImage, guest::DiskMode::copy);
  CHECK(copy->disk() == guest::DiskMode::copy);
  REQUIRE(copy->start({"/bin/sh", "-c", "echo copied $(hostname) > /tmp/ok; exec sleep 1000"}).ok());
  CHECK(guest_line(*copy, "/tmp/ok", 120s) == "copied copy1\n");
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  const auto disk = guest::run_command({"du", "-skx", copy->dir()}, 30s);
  MESSAGE("disk copy: create to first command's output " << ms << " ms, "
                                                         << (disk ? disk->output.substr(0, disk->output.find('\t')) : "?")
                                                         << " KiB on this host");
  const std::string dir = copy->dir();
  copy->halt();
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("the machines of a process that died are swept: processes, netns, veth, mount, directory, lease") {
  TestNetwork net;
  const std::string dir = net.machine_dir("orphan");
  std::string netns, veth;
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // makes a machine and dies without halting it
    close(ready[0]);
    auto m = guest::GuestMachine::create(guest_image(), net.network(), {.dir = dir, .name = "orphan"});
    if (!m || !(*m)->start({"/bin/sh", "-c", "sleep 1000 & exec sleep 1000"}).ok()) _exit(1);
    const std::string names = (*m)->netns() + " " + (*m)->veth() + "\n";
    (void)!write(ready[1], names.data(), names.size());
    _exit(0);  // no destructor runs: what it made stays but its processes die with it (parent-death signal)
  }
  close(ready[1]);
  char buf[256] = {};
  (void)!read(ready[0], buf, sizeof buf - 1);
  close(ready[0]);
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  std::istringstream(buf) >> netns >> veth;
  CHECK(netns_exists(netns));
  CHECK(interface_exists(veth));
  CHECK(fs::exists(dir + "/root/etc/hostname"));  // the overlay is still mounted
  CHECK(net.network().leases().size() == 1);
  CHECK(guest::GuestMachine::sweep_stale(net.network()) == 1);
  CHECK_FALSE(netns_exists(netns));
  CHECK_FALSE(interface_exists(veth));
  CHECK_FALSE(fs::exists(dir));
  CHECK(net.network().leases().empty());
}
