// The fake guest boots real user data: cloud_init_user_data's document runs its agent under the guest
// root, in a PID namespace that halt() empties; and user data it cannot do is refused or skipped by name.
#include <doctest/doctest.h>

#include "providers/cloud_init/cloud_init.h"
#include "providers/fake_guest/fake_guest.h"
#include "providers/http/codec.h"
#include "support/guest_probe.h"
#include "support/temp_dir.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::fake_guest;
using namespace std::chrono_literals;
using tsum::testing::count_argv;
using tsum::testing::count_within;
using tsum::testing::gone_within;
using tsum::testing::processes_with;
using tsum::testing::read_all;
using tsum::testing::TempDir;
using tsum::testing::wait_for_line;

namespace {

std::string user_data(const std::string& run, const std::string& x) {
  auto doc = cloud_init_user_data(testing::guest_spec(run, x), {});
  REQUIRE_MESSAGE(doc.ok(), doc.error().detail);
  return *doc;
}

const std::vector<std::string> kSleep{"sleep", "1000"};

}  // namespace

TEST_CASE("cloud_init_user_data boots: the agent runs relocated with its environment; halt leaves no process") {
  TempDir root("tsum-guest");
  const std::string marker = root.path().string();
  FakeGuest guest(root.path().string());
  REQUIRE(guest.boot("i-0001", user_data("1", "it's x 1")).ok());
  const std::string home = marker + "/i-0001";
  CHECK(wait_for_line(home + "/opt/tsum/work/x.out", 10s) == "it's x 1\n");
  CHECK(read_all(home + "/opt/tsum/start.sh").find(home + "/opt/tsum/agent.env") != std::string::npos);
  CHECK(read_all(home + "/opt/tsum/start.sh").find(" /opt/tsum") == std::string::npos);
  CHECK(guest.running("i-0001"));
  CHECK(count_within(marker, kSleep, 2, 5s));  // the agent's background child and the agent's own sleep
  CHECK(count_argv(processes_with(marker), {"/bin/sh", home + "/opt/tsum/agent.sh"}) == 1);

  guest.halt("i-0001");
  CHECK(gone_within(marker, 5s));
  CHECK_FALSE(guest.running("i-0001"));
  guest.halt("i-0001");  // idempotent
}

TEST_CASE("boot twice with one id is one instance; another id is another; the destructor halts both") {
  TempDir root("tsum-guest");
  const std::string marker = root.path().string();
  {
    FakeGuest guest(root.path().string());
    REQUIRE(guest.boot("vm-a", user_data("2", "a")).ok());
    REQUIRE(guest.boot("vm-a", user_data("2", "a again")).ok());
    REQUIRE(guest.boot("vm-b", user_data("3", "b")).ok());
    CHECK(wait_for_line(marker + "/vm-a/opt/tsum/work/x.out", 10s) == "a\n");
    CHECK(wait_for_line(marker + "/vm-b/opt/tsum/work/x.out", 10s) == "b\n");
    CHECK(count_within(marker, kSleep, 4, 5s));
    auto ps = processes_with(marker);
    CHECK(count_argv(ps, {"/bin/sh", marker + "/vm-a/opt/tsum/agent.sh"}) == 1);
    CHECK(count_argv(ps, {"/bin/sh", marker + "/vm-b/opt/tsum/agent.sh"}) == 1);
  }
  CHECK(gone_within(marker, 5s));
}

TEST_CASE("sync boots the live instances and halts those no longer live") {
  TempDir root("tsum-guest");
  const std::string marker = root.path().string();
  FakeGuest guest(root.path().string());
  guest.sync({{"s-1", user_data("4", "one")}, {"s-2", user_data("5", "two")}});
  CHECK(wait_for_line(marker + "/s-1/opt/tsum/work/x.out", 10s) == "one\n");
  CHECK(wait_for_line(marker + "/s-2/opt/tsum/work/x.out", 10s) == "two\n");
  guest.sync({{"s-2", user_data("5", "two")}});
  CHECK_FALSE(guest.running("s-1"));
  CHECK(guest.running("s-2"));
  CHECK(gone_within(marker + "/s-1", 5s));
  CHECK_FALSE(processes_with(marker + "/s-2").empty());
  guest.sync({});
  CHECK(gone_within(marker, 5s));
}

TEST_CASE("write_files and runcmd as cloud-init reads them: plain and base64 content, modes, string commands") {
  TempDir root("tsum-guest");
  const std::string home = root.path().string() + "/g1";
  const std::string doc = "#cloud-config\npackage_update: true\npackages: [curl]\nwrite_files:\n"
                          "  - path: /srv/app/note.txt\n    content: \"see /srv/app/data, not /srv/apple\\n\"\n"
                          "  - path: /srv/app/bin/run\n    permissions: '0750'\n    encoding: base64\n    content: " +
                          http::base64_encode("#!/bin/sh\necho ran in /srv/app > /srv/app/ran\n") +
                          "\n    owner: root:root\nruncmd:\n  - /srv/app/bin/run\n  - [cp, /srv/app/note.txt, /srv/app/copy]\n";
  auto parsed = parse_cloud_config(doc);
  REQUIRE_MESSAGE(parsed.ok(), parsed.error().detail);
  CHECK(parsed->skipped == std::vector<std::string>{"package_update", "packages", "write_files.owner"});
  REQUIRE(parsed->runcmd.size() == 2);
  CHECK(parsed->runcmd[0] == std::vector<std::string>{"/bin/sh", "-c", "/srv/app/bin/run"});

  FakeGuest guest(root.path().string());
  REQUIRE(guest.boot("g1", doc).ok());
  CHECK(wait_for_line(home + "/srv/app/ran", 10s) == "ran in " + home + "/srv/app\n");
  CHECK(wait_for_line(home + "/srv/app/copy", 10s) == "see " + home + "/srv/app/data, not /srv/apple\n");
  CHECK((std::filesystem::status(home + "/srv/app/bin/run").permissions() & std::filesystem::perms::all) ==
        std::filesystem::perms(0750));
  CHECK((std::filesystem::status(home + "/srv/app/note.txt").permissions() & std::filesystem::perms::all) ==
        std::filesystem::perms(0644));
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

  TempDir root("tsum-guest");
  FakeGuest guest(root.path().string());
  auto bad = guest.boot("f-1", "#cloud-config\nwrite_files: [\n");
  CHECK(bad.code() == Code::invalid_argument);
  CHECK(guest.boot("f-1", user_data("6", "x")).code() == Code::invalid_argument);  // the first boot's result
  CHECK_FALSE(guest.running("f-1"));
  CHECK(guest.boot("../up", user_data("7", "x")).code() == Code::invalid_argument);
  CHECK_FALSE(std::filesystem::exists(root.path() / "f-1"));
}
