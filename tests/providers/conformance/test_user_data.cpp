// Contract: the boot payload reaches the cloud whole and within its limits (the real agent script fits), an
// oversized one is refused before anything is launched, and with a guest root the fake boots it: the agent
// runs, and terminate ends it.
#include <filesystem>
#include <span>

#include "common/embedded.h"
#include "providers/cloud_init/cloud_init.h"
#include "providers/conformance/cloud_rig.h"
#include "tests/fakes/guest/fake_guest.h"
#include "providers/http/codec.h"
#include "support/guest_net.h"
#include "support/guest_probe.h"
#include "support/run_sync.h"
#include "support/temp_dir.h"

namespace tsum::daemon {
std::span<const EmbeddedFile> agent_files();  // compiled in from daemon/agent/
}

using namespace tsum;
using namespace tsum::conformance;
using namespace tsum::providers;
using namespace std::chrono_literals;
using tsum::testing::run_sync;

CONFORMANCE("the boot payload reaches the cloud whole and within the user data limit, the real agent included") {
  auto rig = Cloud::make();
  LaunchSpec spec = launch_spec("8");
  spec.agent_script = std::string(find_embedded(daemon::agent_files(), "tsum-agent.sh"));
  spec.agent_sha256 = http::sha256_hex(spec.agent_script);  // as the daemon launches: fetched by hash
  REQUIRE(spec.agent_script.size() > 1000);
  auto h = run_sync(rig->provider().create(rig->offer(), spec));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  const std::string ud = rig->user_data(*h);
  CHECK(ud.starts_with("#cloud-config\n"));
  CHECK(ud.size() <= 4096);  // a bootstrap, with room to grow under EC2's 16 KiB
  auto config = fake_guest::parse_cloud_config(ud);  // what the instance's cloud-init gets
  REQUIRE_MESSAGE(config.ok(), config.error().detail);
  std::map<std::string, std::string> files;
  for (const auto& f : config->files) files[f.path] = f.content;
  CHECK(files["/opt/tsum/agent.sh"].find("/v1/blobs/" + spec.agent_sha256) != std::string::npos);
  CHECK(files["/opt/tsum/agent.env"].find("TSUM_TOKEN='it'\\''s secret'") != std::string::npos);
  CHECK(config->runcmd.size() == 1);
}

CONFORMANCE("a payload over the limit is refused, naming the limit, and nothing is launched") {
  auto rig = Cloud::make();
  LaunchSpec spec = launch_spec("9");
  spec.agent_script.clear();  // incompressible: gzip cannot bring it under the limit
  for (unsigned x = 1; spec.agent_script.size() < 20000;) spec.agent_script += static_cast<char>((x = x * 1103515245u + 12345u) >> 23);
  auto h = run_sync(rig->provider().create(rig->offer(), spec));
  REQUIRE_FALSE(h.ok());
  CHECK(h.code() == Code::invalid_argument);
  CHECK(h.error().detail.find(std::to_string(kMaxUserDataBytes)) != std::string::npos);
  CHECK(rig->created() == 0);
}

CONFORMANCE("with a guest root the fake boots the user data (also when the create answer is lost); terminate ends it") {
  testing::TestNetwork net;
  testing::TempDir root("tsum-guest");
  const auto guests = net.guests();
  auto rig = Cloud::make({.guest = {.root = root.path().string(), .image = testing::kGuestImage, .network = net.bridge()}});
  rig->server().inject({.method = rig->methods().create, .kind = providers::fake_cloud::FaultKind::lost});
  auto h = run_sync(rig->provider().create(rig->offer(), testing::guest_spec("g1", rig->name() + " x")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  std::vector<std::filesystem::path> machines;
  for (const auto& e : std::filesystem::directory_iterator(root.path()))
    if (e.is_directory()) machines.push_back(e.path());
  REQUIRE(machines.size() == 1);  // one instance, one guest machine; its "/" is root/<id>/root
  CHECK(testing::wait_for_line((machines[0] / "root/opt/tsum/work/x.out").string(), 120s) == rig->name() + " x\n");
  CHECK(testing::count_within(guests, {"sleep", "1000"}, 2, 60s));  // one agent: its child and its own sleep
  REQUIRE(run_sync(rig->provider().terminate(*h)).ok());
  CHECK(testing::gone_within(guests, 60s));
}
