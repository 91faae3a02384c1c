// Bytes over the network through a real tsumd: a local run downloads the trainer bundle and the data set by hash
// and uploads its results; data sets are uploaded, listed, fetched by hash with Range and refused when bad.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "daemon/artifacts/blob_store.h"
#include "daemon/artifacts/tar_archive.h"
#include "integration/daemon_process.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

api::HttpResult upload(const DaemonProcess& d, const std::string& admin, const std::string& target,
                       const std::string& body) {
  return api::http_call("127.0.0.1", d.port(), "POST", target, body,
                        {{"Authorization", "Bearer " + admin}, {"Content-Type", "application/gzip"}});
}

}  // namespace

TEST_CASE("a local run downloads trainer and data by hash and uploads its results; they download again") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  const std::string admin = d.admin_token();
  d.start();

  auto sets = d.call("GET", "/v1/datasets", admin);
  REQUIRE(sets.status == 200);
  REQUIRE(sets.json()["datasets"].size() == 1);
  const json fm = sets.json()["datasets"][0];
  CHECK(fm["name"] == "fashion-mnist");
  CHECK(fm["format"] == "idx");
  CHECK(fm["files"].size() == 4);

  auto created = d.call("POST", "/v1/experiments", admin, tiny_experiment(300, 200));
  REQUIRE(created.status == 201);
  json exp = wait_experiment(d, admin, created.json()["id"].get<int64_t>(), std::chrono::seconds(240));
  REQUIRE(exp["status"] == "done");
  const json run = exp["runs"][0];
  const std::string rid = std::to_string(run["id"].get<int64_t>());
  // Before the run, the warm-up downloaded the bundle and the data set into the machine's cache (its lines, in
  // the run's log, say so); the run's install and load_data found them there, and their marks say which.
  CHECK(run["metrics"]["install"]["method"] == "cached");
  CHECK(run["metrics"]["data"]["method"] == "cached");
  CHECK(run["metrics"]["data"]["sha256"] == fm["sha256"]);
  const std::string rlog = d.call("GET", "/v1/runs/" + std::to_string(run["id"].get<int64_t>()) + "/logs", admin).body;
  CHECK(rlog.find("this machine's cache is warm: install (bundle), data (download)") != std::string::npos);
  CHECK(rlog.find("\"source\":\"w1\"") != std::string::npos);

  auto listed = d.call("GET", "/v1/runs/" + rid + "/artifacts", admin);
  REQUIRE(listed.status == 200);
  const json listing = listed.json();  // named: a range-for over a member of a temporary would dangle
  std::map<std::string, json> arts;
  for (const auto& a : listing["artifacts"]) arts[a["name"].get<std::string>()] = a;
  REQUIRE(arts.count("model.pt"));
  REQUIRE(arts.count("events.jsonl"));
  REQUIRE(arts.count("samples.csv"));
  auto model = d.call("GET", "/v1/runs/" + rid + "/artifacts/model.pt", admin);
  REQUIRE(model.status == 200);
  CHECK(model.body.size() == arts["model.pt"]["bytes"].get<size_t>());
  std::ofstream(dir.file("model.pt"), std::ios::binary) << model.body;
  CHECK(daemon::hash_file(dir.file("model.pt"))->sha256 == arts["model.pt"]["sha256"]);
  auto events = d.call("GET", "/v1/runs/" + rid + "/artifacts/events.jsonl", admin);
  CHECK(events.body.find("\"event\":\"learn_end\"") != std::string::npos);
  auto tail = api::http_call("127.0.0.1", d.port(), "GET", "/v1/runs/" + rid + "/artifacts/model.pt", "",
                             {{"Authorization", "Bearer " + admin}, {"Range", "bytes=100-"}});
  CHECK(tail.status == 206);
  CHECK(tail.body == model.body.substr(100));
  CHECK(d.call("GET", "/v1/runs/" + rid + "/samples.csv", admin).body.starts_with("mono_s,cpu_pct"));
  CHECK(d.call("GET", "/v1/runs/" + rid + "/artifacts/nope", admin).status == 404);
  // Nothing of the daemon's disk reached the agent: its environment names no path, only URLs and hashes.
  CHECK(d.log().find("TSUM_TRAIN_SRC") == std::string::npos);
}

TEST_CASE("every local run links the trainer bundle and the data set from the machine's cache, warmed before the "
          "first") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  const std::string admin = d.admin_token();
  d.start();
  std::vector<json> runs;
  for (int i = 0; i < 2; ++i) {  // one after the other: the first's warm-up fills the cache
    auto created = d.call("POST", "/v1/experiments", admin, tiny_experiment(300, 200));
    REQUIRE(created.status == 201);
    json exp = wait_experiment(d, admin, created.json()["id"].get<int64_t>(), std::chrono::seconds(240));
    INFO(exp.dump(2));
    REQUIRE(exp["status"] == "done");
    runs.push_back(exp["runs"][0]);
  }
  // Both runs measured the same path: warm. The first's warm-up downloaded, the second's found all there.
  for (const auto& r : runs) {
    CHECK(r["metrics"]["install"]["method"] == "cached");
    CHECK(r["metrics"]["data"]["method"] == "cached");
    CHECK(r["metrics"]["test_accuracy"].get<double>() > 0.1);
  }
  CHECK(runs[1]["metrics"]["install"]["sha256"] == runs[0]["metrics"]["install"]["sha256"]);
  CHECK(runs[1]["metrics"]["data"]["sha256"] == runs[0]["metrics"]["data"]["sha256"]);
  auto warmed = [&](const json& r) {
    return d.call("GET", "/v1/runs/" + std::to_string(r["id"].get<int64_t>()) + "/logs", admin).body;
  };
  CHECK(warmed(runs[0]).find("cache is warm: install (bundle), data (download)") != std::string::npos);
  CHECK(warmed(runs[1]).find("cache is warm: install (cached), data (cached)") != std::string::npos);
  CHECK(d.call("GET", "/v1/runs/" + std::to_string(runs[1]["id"].get<int64_t>()) + "/artifacts/model.pt", admin)
            .status == 200);
  // One entry of each kind, outside every sandbox (those are gone with their runs).
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.file("t.db") + ".state/cache")) {
    const auto name = e.path().filename().string();
    CHECK((name.starts_with("trainer-") || name.starts_with("data-")));
    ++entries;
  }
  CHECK(entries == 2);
}

TEST_CASE("data sets: upload streamed to disk, fetched by hash with Range, refused when bad, big or in use") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"), {"--upload-limit", "0.0002"});  // about 210 KB
  const std::string admin = d.admin_token();
  d.start();

  // A small valid IDX data set: 5 images of 28x28 and their labels, both splits.
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  std::vector<std::string> files;
  for (auto [name, images] : {std::pair{"train-images-idx3-ubyte", true}, {"train-labels-idx1-ubyte", false},
                              {"t10k-images-idx3-ubyte", true}, {"t10k-labels-idx1-ubyte", false}}) {
    std::string bytes = images ? be32(0x0803) + be32(5) + be32(28) + be32(28) + std::string(5 * 784, '\3')
                               : be32(0x0801) + be32(5) + std::string(5, '\1');
    std::ofstream(dir.file(name), std::ios::binary) << bytes;
    files.push_back(dir.file(name));
  }
  REQUIRE(daemon::write_tar_gz(dir.file("tiny.tar.gz"), files).ok());
  const std::string tar = read_file(dir.file("tiny.tar.gz"));

  auto up = upload(d, admin, "/v1/datasets?name=tiny&format=idx", tar);
  REQUIRE(up.status == 201);
  CHECK(up.json()["name"] == "tiny");
  CHECK(up.json()["bytes"] == tar.size());
  const std::string sha = up.json()["sha256"];
  CHECK(sha == daemon::hash_file(dir.file("tiny.tar.gz"))->sha256);
  CHECK(upload(d, admin, "/v1/datasets?name=tiny&format=idx", tar).status == 409);
  CHECK(d.call("GET", "/v1/datasets", admin).json()["datasets"].size() == 2);

  auto blob = d.call("GET", "/v1/blobs/" + sha, admin);
  REQUIRE(blob.status == 200);
  CHECK(blob.body == tar);
  auto part = api::http_call("127.0.0.1", d.port(), "GET", "/v1/blobs/" + sha, "",
                             {{"Authorization", "Bearer " + admin}, {"Range", "bytes=10-19"}});
  CHECK(part.status == 206);
  CHECK(part.body == tar.substr(10, 10));
  CHECK(d.call("GET", "/v1/blobs/" + sha, "").status == 401);

  // Truncated: the archive cut in the middle of a member. Unknown format. Missing query. Over the limit.
  auto cut = upload(d, admin, "/v1/datasets?name=cut&format=idx", tar.substr(0, tar.size() / 2));
  CHECK(cut.status == 422);
  CHECK(cut.json()["detail"].get<std::string>().find("truncated") != std::string::npos);
  CHECK(upload(d, admin, "/v1/datasets?name=x&format=csv", tar).status == 422);
  CHECK(upload(d, admin, "/v1/datasets?name=x", tar).status == 400);
  CHECK(upload(d, admin, "/v1/datasets?name=big&format=files", std::string(300 * 1024, 'b')).status == 413);
  CHECK(d.call("GET", "/v1/datasets/cut", admin).status == 404);
  CHECK(d.call("GET", "/v1/datasets/big", admin).status == 404);

  CHECK(d.call("DELETE", "/v1/datasets/tiny", admin).status == 204);
  CHECK(d.call("GET", "/v1/blobs/" + sha, admin).status == 404);
  CHECK(d.call("DELETE", "/v1/datasets/tiny", admin).status == 404);
}

TEST_CASE("a data set whose bytes do not match its hash fails load_data naming it; no public URL, no remote run") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  const std::string admin = d.admin_token();
  d.start();
  const json fm = d.call("GET", "/v1/datasets/fashion-mnist", admin).json();
  const std::string url = "http://127.0.0.1:" + std::to_string(d.port()) + "/v1/blobs/" + fm["sha256"].get<std::string>();
  json body = json::parse(tiny_experiment(300, 200));
  body["workload"]["dataset"] = {{"url", url}, {"sha256", std::string(64, 'a')}, {"format", "idx"}, {"name", "wrong"}};
  auto created = d.call("POST", "/v1/experiments", admin, body.dump());
  REQUIRE(created.status == 201);
  json exp = wait_experiment(d, admin, created.json()["id"].get<int64_t>(), std::chrono::seconds(120));
  REQUIRE(exp["runs"][0]["status"] == "failed");
  const std::string reason = exp["runs"][0]["reason"];
  CHECK(reason.find("load_data failed") != std::string::npos);
  CHECK(reason.find("expected " + std::string(64, 'a')) != std::string::npos);
  CHECK(exp["runs"][0]["phases"]["install"].is_number());  // what was measured stays

  body = json::parse(tiny_experiment(300, 200));
  body["configs"] = {{{"provider", "byo"}, {"instance_type", "any"}}};
  created = d.call("POST", "/v1/experiments", admin, body.dump());
  REQUIRE(created.status == 201);
  exp = wait_experiment(d, admin, created.json()["id"].get<int64_t>(), std::chrono::seconds(30));
  CHECK(exp["runs"][0]["status"] == "failed");
  CHECK(exp["runs"][0]["reason"].get<std::string>().find("--public-url") != std::string::npos);
}
