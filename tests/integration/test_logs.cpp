// A run's output over REST (GET/POST /v1/runs/{id}/logs) and a folder job (POST /v1/workdirs, workload workdir,
// setup and run) on the local provider: the lines arrive while the job runs, in order; a kill -9 of the daemon
// in the middle loses none (the restarted daemon takes the run back and the agent resends from the daemon's
// number); the folder's setup runs once per machine; and the door refuses what it should.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "daemon/artifacts/tar_archive.h"
#include "integration/daemon_process.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

// The run's lines, read page by page from the start.
json all_lines(const DaemonProcess& d, const std::string& admin, int64_t run) {
  json out = json::array();
  int64_t after = 0;
  for (;;) {
    auto page = d.call("GET", "/v1/runs/" + std::to_string(run) + "/logs?after=" + std::to_string(after), admin);
    REQUIRE(page.status == 200);
    json j = page.json();
    if (j["lines"].empty()) return out;
    for (auto& l : j["lines"]) out.push_back(l);
    after = j["after"].get<int64_t>();
  }
}

std::string texts(const json& lines) {
  std::string s;
  for (const auto& l : lines) s += l["text"].get<std::string>() + "\n";
  return s;
}

// A folder of FILES (name, text), packed as `tsumd experiment create` would, and uploaded: its "sha256:..." name.
std::string upload_files(const DaemonProcess& d, const std::string& admin, TempDir& dir,
                         const std::vector<std::pair<std::string, std::string>>& files) {
  static int uploads = 0;
  const std::string name = "job" + std::to_string(++uploads);
  const auto folder = dir.path() / name;
  std::filesystem::create_directories(folder);
  std::vector<daemon::TarMember> members;
  for (const auto& [name, text] : files) {
    std::ofstream(folder / name) << text;
    members.push_back({name, (folder / name).string()});
  }
  const std::string archive = dir.file(name + ".tar.gz");
  REQUIRE(daemon::write_tar_gz(archive, members));
  std::ifstream in(archive, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  auto up = d.call("POST", "/v1/workdirs", admin, bytes);
  REQUIRE(up.status == 201);
  const std::string sha = up.json()["sha256"];
  CHECK(up.json()["files"] == files.size());
  CHECK(d.call("GET", "/v1/workdirs/" + sha, admin).status == 200);
  CHECK(d.call("POST", "/v1/workdirs", admin, bytes).json()["sha256"] == sha);  // the same bytes, the same record
  return "sha256:" + sha;
}

// A folder with setup.sh and run.sh. setup leaves a file in the folder that run reads: the folder as setup left it
// is what run sees. run prints, waits for the test's go-ahead (a file the local machine sees), then prints 50 more
// lines.
std::string upload_folder(const DaemonProcess& d, const std::string& admin, TempDir& dir) {
  return upload_files(d, admin, dir,
                      {{"run.sh", "echo first: $(cat prepared.txt)\n"
                                  "while [ ! -e \"$GO\" ]; do sleep 0.1; done\n"
                                  "i=1; while [ $i -le 50 ]; do echo second $i; i=$((i + 1)); done\n"
                                  "echo to stderr >&2\n"},
                       {"setup.sh", "echo setting up; echo prepared > prepared.txt\n"}});
}

json folder_job(const std::string& workdir, const std::string& go) {
  return {{"name", "folder"},
          {"workload", {{"workdir", workdir}, {"setup", "sh setup.sh"}, {"run", "sh run.sh"}, {"env", {{"GO", go}}}}},
          {"configs", {{{"provider", "local"}, {"instance_type", "local-1c"}}}},
          {"repetitions", 1}};
}

}  // namespace

TEST_CASE("a folder job's output arrives while it runs, in order, and a kill -9 of the daemon loses no line") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  const std::string admin = d.admin_token();
  d.start();
  const std::string workdir = upload_folder(d, admin, dir);
  const std::string go = dir.file("go");
  const int64_t exp = submit_experiment(d, admin, folder_job(workdir, go));
  const int64_t run = d.call("GET", "/v1/experiments/" + std::to_string(exp), admin).json()["runs"][0]["id"];

  // Live: the first line is there while the job waits (a long poll answers as soon as a line comes).
  json seen = json::array();
  int64_t after = 0;
  bool first = eventually([&] {
    auto page = d.call("GET", "/v1/runs/" + std::to_string(run) + "/logs?wait=5&after=" + std::to_string(after), admin);
    if (page.status != 200) return false;
    const json j = page.json();
    for (const auto& l : j["lines"]) seen.push_back(l);
    after = j["after"].get<int64_t>();
    return texts(seen).find("first: prepared\n") != std::string::npos;
  }, std::chrono::seconds(120));
  INFO(texts(seen));
  INFO(d.call("GET", "/v1/runs/" + std::to_string(run), admin).body);
  INFO(d.log());
  REQUIRE(first);
  // Unmarked, the job is all learn once it ends; until then the run is starting (its start has not ended).
  CHECK(d.call("GET", "/v1/runs/" + std::to_string(run), admin).json()["status"] == "starting");
  CHECK(texts(seen).find("setting up\n") < texts(seen).find("first: prepared\n"));  // setup's output came first

  // kill -9 while the job waits; it prints the rest while no daemon listens; then the daemon comes back.
  REQUIRE(d.stop(SIGKILL).has_value());
  std::ofstream(go) << "go\n";
  d.start();
  bool done = eventually([&] {
    return d.call("GET", "/v1/runs/" + std::to_string(run), admin).json()["status"] == "done";
  }, std::chrono::seconds(180));
  json r = d.call("GET", "/v1/runs/" + std::to_string(run), admin).json();
  INFO(r.dump(2));
  INFO(d.log());
  REQUIRE(done);
  CHECK(d.log().find("reconcile: run " + std::to_string(run) + " (starting) goes on on instance") != std::string::npos);
  // The job marks nothing: all of it is learn, and start and verify took no time of their own (unmarked, not 0 s).
  for (const char* p : {"startup", "install", "load_data", "learn", "save", "poweroff"}) {
    CAPTURE(p);
    CHECK(r["phases"][p].is_number());
  }
  CHECK(r["unmarked"] == json{"start", "verify"});
  CHECK(r["t_sum"].is_number());
  // setup ran in the warm-up before the run (source w1 of its log), which the run found in the machine's cache.
  CHECK(r["metrics"]["install"]["setup"] == "cached");
  CHECK(r["metrics"]["install"]["workdir"]["sha256"] == workdir.substr(7));

  // Every line, once, numbered without a gap, in the order written.
  const json every = all_lines(d, admin, run);
  json lines = json::array(), warm = json::array();
  for (const auto& l : every) (l["source"] == "w1" ? warm : lines).push_back(l);
  CHECK(texts(warm).find("setting up\n") != std::string::npos);
  CHECK(texts(warm).find("cache is warm: install (none), data (none), setup (ran)") != std::string::npos);
  const std::string text = texts(lines);
  INFO(text);
  int64_t n = 0;
  for (const auto& l : lines) {
    CHECK(l["source"] == "a1n0");
    CHECK(l["n"] == n++);
  }
  size_t at = text.find("first: prepared\n");
  REQUIRE(at != std::string::npos);
  for (int i = 1; i <= 50; ++i) {
    size_t next = text.find("second " + std::to_string(i) + "\n", at);
    CHECK_MESSAGE(next != std::string::npos, "second " << i);
    if (next != std::string::npos) at = next;
  }
  CHECK(text.find("to stderr\n") != std::string::npos);
  auto page = d.call("GET", "/v1/runs/" + std::to_string(run) + "/logs", admin).json();
  CHECK(page["done"] == true);
  CHECK(page["dropped"] == 0);

  // The stream of a finished run: its lines, then its end.
  auto stream = d.call("GET", "/v1/runs/" + std::to_string(run) + "/logs?follow=1&after=" +
                                  std::to_string(every[every.size() - 3]["seq"].get<int64_t>()), admin);
  CHECK(stream.status == 200);
  CHECK(stream.header("Content-Type").starts_with("application/x-ndjson"));
  CHECK(stream.body.ends_with("{\"end\":\"done\"}\n"));
  CHECK(std::count(stream.body.begin(), stream.body.end(), '\n') == 3);

  // The same folder and setup again on the same machine: setup's result comes from the machine's cache.
  const int64_t exp2 = submit_experiment(d, admin, folder_job(workdir, go));
  json again = wait_experiment(d, admin, exp2, std::chrono::seconds(180));
  REQUIRE(again["runs"][0]["status"] == "done");
  const int64_t run2 = again["runs"][0]["id"];
  json r2 = d.call("GET", "/v1/runs/" + std::to_string(run2), admin).json();
  CHECK(r2["metrics"]["install"]["setup"] == "cached");
  const std::string text2 = texts(all_lines(d, admin, run2));
  CHECK(text2.find("first: prepared\n") != std::string::npos);
  CHECK(text2.find("setting up\n") == std::string::npos);  // its warm-up found setup's result cached
  CHECK(text2.find("setup (cached)") != std::string::npos);
}

TEST_CASE("a failed setup's every line, and why it failed, are in the run's log (issue 63)") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  const std::string admin = d.admin_token();
  d.start();
  // A setup that prints, then fails with a traceback of several lines: the reason quotes them.
  const std::string workdir = upload_files(d, admin, dir,
      {{"setup.sh", "echo hello from setup\n"
                    "printf 'Traceback (most recent call last):\\n  File x\\nModuleNotFoundError: no_such_module\\n' >&2\n"
                    "exit 3\n"},
       {"run.sh", "echo never\n"}});
  json spec = folder_job(workdir, "/nonexistent");
  spec["repetitions"] = 2;
  const int64_t exp = submit_experiment(d, admin, spec);
  json done = wait_experiment(d, admin, exp, std::chrono::seconds(180));
  INFO(d.log());
  REQUIRE(done["runs"].size() == 2);
  for (const auto& run : done["runs"]) {
    const int64_t id = run["id"];
    CAPTURE(id);
    const json r = d.call("GET", "/v1/runs/" + std::to_string(id), admin).json();
    INFO(r.dump(2));
    CHECK(r["status"] == "failed");
    CHECK(r["reason"].get<std::string>().find("install failed: setup exited with status 3") != std::string::npos);
    // Both the warm-up (w1) and the run's own attempt (a1n0) hold the setup's lines and why it failed.
    json by_source = json::object();
    for (const auto& l : all_lines(d, admin, id)) {
      const std::string source = l["source"];
      by_source[source] = by_source.value(source, std::string()) + l["text"].get<std::string>() + "\n";
    }
    for (const char* source : {"w1", "a1n0"}) {
      CAPTURE(source);
      const std::string text = by_source.value(source, std::string());
      INFO(text);
      CHECK(text.find("hello from setup\n") != std::string::npos);
      CHECK(text.find("ModuleNotFoundError: no_such_module\n") != std::string::npos);
      CHECK(text.find("install failed: setup exited with status 3") != std::string::npos);
    }
    CHECK(r["phases"]["learn"].is_null());  // nothing after install ran
  }
}

TEST_CASE("the logs door: resends, gaps, bad bodies, the cap, and folders it does not have") {
  Daemon dp;
  DaemonProcess& d = dp.d;
  const std::string admin = dp.admin;
  const int64_t exp = submit_experiment(d, admin, json::parse(tiny_experiment(200, 100)));
  json done = wait_experiment(d, admin, exp, std::chrono::seconds(180));
  REQUIRE(done["runs"][0]["status"] == "done");
  const std::string run = std::to_string(done["runs"][0]["id"].get<int64_t>());
  const std::string logs = "/v1/runs/" + run + "/logs";

  // tsum-train's output was shipped: its events as it wrote them.
  const json shipped = all_lines(d, admin, std::stoll(run));
  CHECK(texts(shipped).find("\"event\":\"learn_end\"") != std::string::npos);

  // A source's lines from 0; the same again adds nothing; a send past the held lines is told where to resume.
  auto sent = d.call("POST", logs + "?source=a7n0&from=0&now=100", admin, "99.5 one\n99.75 two\n");
  CHECK(sent.status == 200);
  CHECK(sent.json()["next"] == 2);
  CHECK(d.call("POST", logs + "?source=a7n0&from=0&now=100", admin, "99.5 one\n99.75 two\n").json()["next"] == 2);
  CHECK(d.call("POST", logs + "?source=a7n0&from=1&now=100", admin, "99.75 two\n100 three").json()["next"] == 3);
  auto gap = d.call("POST", logs + "?source=a7n0&from=9&now=100", admin, "100 ten\n");
  CHECK(gap.status == 409);
  CHECK(gap.json()["next"] == 3);
  json mine = json::array();
  for (const auto& l : all_lines(d, admin, std::stoll(run)))
    if (l["source"] == "a7n0") mine.push_back(l);
  REQUIRE(mine.size() == 3);
  CHECK(texts(mine) == "one\ntwo\nthree\n");
  CHECK(mine[0]["time"].get<double>() < mine[2]["time"].get<double>());  // written half a second apart

  // What the door refuses.
  CHECK(d.call("POST", logs + "?source=a7n0&from=3&now=100", admin, "no stamp\n").status == 422);
  CHECK(d.call("POST", logs + "?source=a7n0&from=3&now=100", admin, "nan x\n").status == 422);
  CHECK(d.call("POST", logs + "?source=A!&from=3&now=100", admin, "1 x\n").status == 422);
  CHECK(d.call("POST", logs + "?source=a7n0&from=-1&now=100", admin, "1 x\n").status == 422);
  CHECK(d.call("POST", logs + "?source=a7n0&from=3&now=1e10", admin, "1 x\n").status == 422);
  CHECK(d.call("POST", logs + "?source=a7n0&from=3&now=100", "tsum_wrong", "1 x\n").status == 401);
  CHECK(d.call("POST", "/v1/runs/999/logs?source=a7n0&from=0&now=100", admin, "1 x\n").status == 404);
  CHECK(d.call("GET", logs + "?limit=0", admin).status == 422);
  CHECK(d.call("GET", logs + "?wait=61", admin).status == 422);
  CHECK(d.call("GET", logs + "?tail=5", admin).status == 422);
  CHECK(d.call("GET", "/v1/runs/999/logs", admin).status == 404);
  // A line over 8 KiB is cut, saying by how much.
  CHECK(d.call("POST", logs + "?source=a7n0&from=3&now=100", admin, "100 " + std::string(9000, 'x') + "\n").status == 200);
  json long_line = all_lines(d, admin, std::stoll(run)).back();
  CHECK(long_line["text"].get<std::string>().ends_with("[... 808 more bytes]"));

  // The cap: 12,000 lines more keep the run's first 1,000 and its last 10,000.
  for (int chunk = 0; chunk < 12; ++chunk) {
    std::string body;
    for (int i = 0; i < 1000; ++i) body += "200 bulk " + std::to_string(chunk * 1000 + i) + "\n";
    REQUIRE(d.call("POST", logs + "?source=a8n0&from=" + std::to_string(chunk * 1000) + "&now=200", admin, body).status == 200);
  }
  const json kept = all_lines(d, admin, std::stoll(run));
  CHECK(kept.size() == 11000);
  CHECK(kept[0] == shipped[0]);  // the head
  CHECK(kept.back()["text"] == "bulk 11999");  // the tail
  const int64_t received = static_cast<int64_t>(shipped.size()) + 4 + 12000;
  CHECK(d.call("GET", logs, admin).json()["dropped"] == received - 11000);

  // Folders: what is not a tar.gz, a hash it has not seen, a path where a hash belongs.
  CHECK(d.call("POST", "/v1/workdirs", admin, "not a tar").status == 422);
  CHECK(d.call("GET", "/v1/workdirs/" + std::string(64, 'a'), admin).status == 404);
  json spec = folder_job("sha256:" + std::string(64, 'a'), "/nonexistent");
  auto unknown = d.call("POST", "/v1/experiments", admin, spec.dump());
  CHECK(unknown.status == 422);
  CHECK(unknown.json()["detail"].get<std::string>().find("POST /v1/workdirs") != std::string::npos);
  spec["workload"]["workdir"] = "./job";
  auto path = d.call("POST", "/v1/experiments", admin, spec.dump());
  CHECK(path.status == 422);
  CHECK(path.json()["detail"].get<std::string>().find("tsumd experiment create") != std::string::npos);
  spec["workload"].erase("run");
  CHECK(d.call("POST", "/v1/experiments", admin, spec.dump()).status == 422);
}

TEST_CASE("--keep-logs refuses what is not a number of days, and db compact refuses a database a daemon serves") {
  TempDir dir;
  const std::string serve = std::string(TSUMD_BIN) + " serve --db " + dir.file("t.db") + " --listen 127.0.0.1:0";
  for (const char* bad : {"-1", "abc", "nan", "36501", "1e9", "1e308", "2147483648"}) {
    CAPTURE(bad);
    std::string out = run_capture(serve + " --keep-logs " + bad + " 2>&1; echo rc=$?");
    CHECK(out.find("--keep-logs must be a number of days from 0 to 36500") != std::string::npos);
    CHECK(out.find("rc=2") != std::string::npos);
  }
  const std::string compact = std::string(TSUMD_BIN) + " db compact --db " + dir.file("t.db") + " 2>&1; echo rc=$?";
  DaemonProcess d(dir.file("t.db"));
  d.start({"--keep-logs", "0"});
  std::string out = run_capture(compact);
  CHECK(out.find("in use by another tsumd") != std::string::npos);
  CHECK(out.find("rc=1") != std::string::npos);
  d.stop(SIGTERM);
  out = run_capture(compact);
  CHECK(out.find(" bytes") != std::string::npos);
  CHECK(out.find("rc=0") != std::string::npos);
}
