// The fake guest boots real user data in a guest machine of the stock root: cloud_init_user_data's
// document runs its agent at its real paths inside the guest, which reaches a server on the test network's
// bridge but neither this host's files nor its 127.0.0.1; halt() leaves nothing; user data it cannot do is
// refused or skipped by name.
#include <doctest/doctest.h>
#include <sys/socket.h>

#include <filesystem>
#include <fstream>

#include "providers/cloud_init/cloud_init.h"
#include "providers/http/codec.h"
#include "tests/fakes/guest/fake_guest.h"
#include "tests/fakes/http/loopback_server.h"
#include "support/guest_net.h"
#include "support/guest_probe.h"
#include "support/temp_dir.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::fake_guest;
using namespace std::chrono_literals;
using tsum::testing::count_argv;
using tsum::testing::count_within;
using tsum::testing::gone_within;
using tsum::testing::in_netns;
using tsum::testing::read_all;
using tsum::testing::TempDir;
using tsum::testing::TestNetwork;
using tsum::testing::wait_for_line;
namespace fs = std::filesystem;

namespace {

std::string user_data(const std::string& run, const std::string& x) {
  auto doc = cloud_init_user_data(testing::guest_spec(run, x), {});
  REQUIRE_MESSAGE(doc.ok(), doc.error().detail);
  return *doc;
}

const std::vector<std::string> kSleep{"sleep", "1000"};

// A fake guest on its own test network, with machines under a temporary root.
struct Rig {
  TestNetwork net;
  TempDir root{"tsum-guest"};
  FakeGuestOptions options() const { return {.root = root.path().string(), .image = testing::kGuestImage, .network = net.bridge()}; }
  // The instance's "/" on this host while it is up.
  std::string disk(const std::string& id) const { return root.path().string() + "/" + id + "/root"; }
  // What the instance's init printed (outside the guest).
  std::string console(const std::string& id) const { return read_all(root.path().string() + "/" + id + "/console.log"); }
};

bool exists(const std::string& p) { return fs::exists(p); }

// Network interfaces of this host on the bridge's side of guests' veth pairs (named <bridge>-<n>).
int veths_of(const TestNetwork& net) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/sys/class/net"))
    n += e.path().filename().string().starts_with(net.bridge() + "-");
  return n;
}

}  // namespace

TEST_CASE("cloud_init_user_data boots in a guest machine: the agent runs at its real paths; halt leaves nothing") {
  Rig rig;
  testing::guest_image();  // extracted before the boot, outside its timing
  FakeGuest guest(rig.options());
  REQUIRE(guest.boot("i-0001", user_data("1", "it's x 1")).ok());
  const std::string disk = rig.disk("i-0001");
  CHECK(wait_for_line(disk + "/opt/tsum/work/x.out", 120s) == "it's x 1\n");
  CHECK(read_all(disk + "/opt/tsum/start.sh").find(". /opt/tsum/agent.env") != std::string::npos);
  CHECK(read_all(disk + "/opt/tsum/start.sh").find(rig.root.path().string()) == std::string::npos);  // not relocated
  CHECK(guest.running("i-0001"));
  const std::string netns = guest.netns("i-0001"), address = guest.address("i-0001");
  const auto procs = in_netns(netns);
  CHECK(count_within(procs, kSleep, 2, 60s));  // the agent's background child and the agent's own sleep
  CHECK(count_argv(procs(), {"/bin/sh", "/opt/tsum/agent.sh"}) == 1);
  CHECK(count_argv(procs(), {"sleep", "infinity"}) == 1);  // init, once runcmd is done
  CHECK(address.starts_with(rig.net.listen_address().substr(0, rig.net.listen_address().rfind('.') + 1)));

  CHECK(veths_of(rig.net) == 1);
  guest.halt("i-0001");
  CHECK(gone_within(procs, 60s));
  CHECK(veths_of(rig.net) == 0);
  CHECK_FALSE(guest.running("i-0001"));
  CHECK_FALSE(exists("/run/netns/" + netns));
  CHECK_FALSE(exists(rig.root.file("i-0001")));
  CHECK(rig.net.network().leases().empty());
  guest.halt("i-0001");  // idempotent
}

TEST_CASE("boot twice with one id is one instance; another id is another; the destructor halts both") {
  Rig rig;
  const auto guests = rig.net.guests();
  {
    FakeGuest guest(rig.options());
    REQUIRE(guest.boot("vm-a", user_data("2", "a")).ok());
    REQUIRE(guest.boot("vm-a", user_data("2", "a again")).ok());
    REQUIRE(guest.boot("vm-b", user_data("3", "b")).ok());
    CHECK(wait_for_line(rig.disk("vm-a") + "/opt/tsum/work/x.out", 120s) == "a\n");
    CHECK(wait_for_line(rig.disk("vm-b") + "/opt/tsum/work/x.out", 120s) == "b\n");
    CHECK(count_within(guests, kSleep, 4, 60s));
    CHECK(count_argv(in_netns(guest.netns("vm-a"))(), {"/bin/sh", "/opt/tsum/agent.sh"}) == 1);
    CHECK(count_argv(in_netns(guest.netns("vm-b"))(), {"/bin/sh", "/opt/tsum/agent.sh"}) == 1);
    CHECK(guest.address("vm-a") != guest.address("vm-b"));
  }
  CHECK(gone_within(guests, 60s));
  CHECK(fs::is_empty(rig.root.path()));
}

TEST_CASE("sync boots the live instances and halts those no longer live") {
  Rig rig;
  FakeGuest guest(rig.options());
  guest.sync({{"s-1", user_data("4", "one")}, {"s-2", user_data("5", "two")}});
  CHECK(wait_for_line(rig.disk("s-1") + "/opt/tsum/work/x.out", 120s) == "one\n");
  CHECK(wait_for_line(rig.disk("s-2") + "/opt/tsum/work/x.out", 120s) == "two\n");
  const auto one = in_netns(guest.netns("s-1")), two = in_netns(guest.netns("s-2"));
  guest.sync({{"s-2", user_data("5", "two")}});
  CHECK_FALSE(guest.running("s-1"));
  CHECK(guest.running("s-2"));
  CHECK(gone_within(one, 60s));
  CHECK_FALSE(two().empty());
  guest.sync({});
  CHECK(gone_within(two, 60s));
}

TEST_CASE("write_files and runcmd as cloud-init reads them: plain and base64 content, modes, string commands") {
  Rig rig;
  const std::string doc = "#cloud-config\npackage_update: true\npackages: [curl, cowsay]\nwrite_files:\n"
                          "  - path: /srv/app/note.txt\n    content: \"see /srv/app/data\\n\"\n"
                          "  - path: /srv/app/bin/run\n    permissions: '0750'\n    encoding: base64\n    content: " +
                          http::base64_encode("#!/bin/sh\necho ran in $(pwd) as $(id -u) on $(hostname) > /srv/app/ran\n") +
                          "\n    owner: root:root\nruncmd:\n  - /srv/app/bin/run\n  - [cp, /srv/app/note.txt, /srv/app/copy]\n";
  auto parsed = parse_cloud_config(doc);
  REQUIRE_MESSAGE(parsed.ok(), parsed.error().detail);
  CHECK(parsed->skipped == std::vector<std::string>{"write_files.owner"});
  CHECK(parsed->packages == std::vector<std::string>{"curl", "cowsay"});
  CHECK_FALSE(parse_cloud_config("#cloud-config\npackages: ['curl; reboot']\n").ok());
  REQUIRE(parsed->runcmd.size() == 2);
  CHECK(parsed->runcmd[0] == std::vector<std::string>{"/bin/sh", "-c", "/srv/app/bin/run"});

  FakeGuest guest(rig.options());
  REQUIRE(guest.boot("g1", doc).ok());
  const std::string disk = rig.disk("g1");
  CHECK(wait_for_line(disk + "/srv/app/ran", 120s) == "ran in / as 0 on g1\n");
  CHECK(wait_for_line(disk + "/srv/app/copy", 120s) == "see /srv/app/data\n");
  CHECK((fs::status(disk + "/srv/app/bin/run").permissions() & fs::perms::all) == fs::perms(0750));
  CHECK((fs::status(disk + "/srv/app/note.txt").permissions() & fs::perms::all) == fs::perms(0644));
  CHECK(read_all(disk + "/var/lib/cloud/instance/scripts/runcmd").find("exec sleep infinity") != std::string::npos);
  CHECK_FALSE(exists("/srv/app/ran"));  // nothing of it on this host's own paths
  // The image has curl; a package it lacks is named on the console (a fake guest reaches no mirror).
  // (Its console has it before runcmd's marker file exists, which is waited for above.)
  CHECK(rig.console("g1").find("package cowsay is not in this image") != std::string::npos);
  CHECK(rig.console("g1").find("package curl ") == std::string::npos);
}

TEST_CASE("a guest reaches a server on the bridge, not this host's files or its 127.0.0.1") {
  Rig rig;
  http::LoopbackServer server([](const http::LoopbackRequest& req) {
    return http::LoopbackReply{.status = 200, .body = "marker for " + req.target + "\n"};
  });
  auto port = server.start({.host = rig.net.listen_address()});  // the bridge's address: not loopback
  REQUIRE_MESSAGE(port.ok(), port.error().detail);
  int local = socket(AF_INET, SOCK_STREAM, 0);  // a listener on this host's 127.0.0.1 the guest must not reach
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(local, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(listen(local, 4) == 0);
  socklen_t len = sizeof a;
  getsockname(local, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string secret = rig.root.file("secret.txt");
  std::ofstream(secret) << "host secret\n";

  const std::string doc = "#cloud-config\nruncmd:\n"
                          "  - curl -fsS --max-time 5 -o /root/marker " + rig.net.url(*port) + "/i-web\n"
                          "  - cat " + secret + " > /root/secret 2>&1; echo cat=$? >> /root/result\n"
                          "  - curl -sS --max-time 3 -o /dev/null http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) +
                          "/ 2>/dev/null; echo local=$? >> /root/result\n";
  FakeGuest guest(rig.options());
  REQUIRE(guest.boot("i-web", doc).ok());
  const std::string disk = rig.disk("i-web");
  CHECK(wait_for_line(disk + "/root/marker", 120s) == "marker for /i-web\n");
  for (int i = 0; i < 500 && read_all(disk + "/root/result").find("local=") == std::string::npos; ++i)
    std::this_thread::sleep_for(10ms);
  CHECK(read_all(disk + "/root/result") == "cat=1\nlocal=7\n");  // no such file; connection refused
  CHECK(read_all(disk + "/root/secret").find("No such file") != std::string::npos);
  fcntl(local, F_SETFL, O_NONBLOCK);
  CHECK(accept(local, nullptr, nullptr) < 0);  // nobody connected to this host's loopback listener
  close(local);
}

TEST_CASE("bad user data is a clear invalid_argument; a boot that failed stays failed") {
  auto error_of = [](const std::string& doc) {
    auto r = parse_cloud_config(doc);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == Code::invalid_argument);
    return r.error().detail;
  };
  CHECK(error_of("runcmd:\n  - [true]\n").find("#cloud-config") != std::string::npos);
  CHECK(error_of("#!/bin/sh\necho hi\n").find("#cloud-config") != std::string::npos);
  CHECK(error_of("#cloud-config\nwrite_files: [\n").find("not valid YAML") != std::string::npos);
  CHECK(error_of("#cloud-config\n- a\n- b\n").find("mapping") != std::string::npos);
  CHECK(error_of("#cloud-config\nwrite_files:\n  - path: /x/a\n    encoding: b64\n    content: '%%%'\n")
            .find("not valid base64") != std::string::npos);
  CHECK(error_of("#cloud-config\nwrite_files:\n  - path: /x/a\n    encoding: gzip\n    content: abc\n")
            .find("encoding 'gzip'") != std::string::npos);
  CHECK(error_of("#cloud-config\nwrite_files:\n  - path: x/a\n").find("absolute") != std::string::npos);
  CHECK(error_of("#cloud-config\nwrite_files:\n  - path: /x/../../etc/passwd\n").find("without ..") != std::string::npos);
  CHECK(error_of("#cloud-config\nwrite_files:\n  - content: abc\n").find("no path") != std::string::npos);
  CHECK(error_of("#cloud-config\nwrite_files:\n  - path: /x/a\n    permissions: '0999'\n").find("octal") != std::string::npos);
  CHECK(error_of("#cloud-config\nruncmd:\n  - {a: b}\n").find("runcmd entry") != std::string::npos);
  CHECK(error_of("#cloud-config\nruncmd: echo\n").find("runcmd must be a list") != std::string::npos);

  Rig rig;
  FakeGuest guest(rig.options());
  auto bad = guest.boot("f-1", "#cloud-config\nwrite_files: [\n");
  CHECK(bad.code() == Code::invalid_argument);
  CHECK(guest.boot("f-1", user_data("6", "x")).code() == Code::invalid_argument);  // the first boot's result
  CHECK_FALSE(guest.running("f-1"));
  CHECK(guest.boot("../up", user_data("7", "x")).code() == Code::invalid_argument);
  CHECK_FALSE(exists(rig.root.file("f-1")));

  FakeGuest no_image({.root = rig.root.path().string(), .image = rig.root.file("none.tar"), .network = rig.net.bridge()});
  auto missing = no_image.boot("n-1", user_data("8", "x"));
  CHECK(missing.code() == Code::not_found);
  CHECK(missing.error().detail.find("guest-rootfs.sh") != std::string::npos);
  FakeGuest no_network({.root = rig.root.path().string(), .image = testing::kGuestImage, .network = {}});
  CHECK(no_network.boot("n-2", user_data("9", "x")).code() == Code::invalid_argument);
  CHECK(rig.net.network().leases().empty());
}
