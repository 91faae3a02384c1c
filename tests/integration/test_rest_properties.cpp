// Property tests at the REST door (RapidCheck, which shrinks a failure to its smallest body): every POST and PUT
// route, and GET /v1/plan's numbers, get generated requests grown from a valid one by one to three mutations:
// a value replaced by a boundary (0, -1, 2^31 +/- 1, 2^53, 2^64 - 1, 1e308, 1e-308), a wrong kind, a huge array
// or string, a field removed or an unknown one added, or the text itself broken. Each answer is 2xx or 4xx, never
// 5xx, and the daemon keeps answering. Afterwards nothing they started is left in a state that never ends: every
// run reaches an end, every search stops.
//
// One daemon serves every case: it replays a trace (no machines), under a monthly budget too small for any run,
// so what a case starts is refused by the budget at once and the suite's time goes to the door, not to runs.
#include <doctest/doctest.h>
#include <rapidcheck.h>

#include <fstream>
#include <set>

#include "integration/daemon_process.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

const char* kTrace =
    "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,save,"
    "poweroff\n"
    "t-2c,trace,t-2c,2,0,0.10,10,20,10,5,800,5,5,10\n"
    "t-4c,trace,t-4c,4,0,0.12,10,20,10,5,400,5,5,10\n";

// The daemon every case talks to, started once.
struct Door {
  TempDir dir;
  DaemonProcess d{dir.file("t.db")};
  std::string admin;
  std::set<int64_t> searches;  // the searches the cases started
  Door() {
    std::ofstream(dir.file("trace.csv")) << kTrace;
    admin = d.admin_token();
    d.start({"--trace", dir.file("trace.csv"), "--trace-speed", "1000", "--monthly-budget", "0.000001"});
  }
};
Door& door() {
  static Door door;
  return door;
}

const json kWorkload = {{"model", "mnist_cnn"}, {"dataset", "fashion-mnist"}, {"epochs", 1}};
const json kExperiment = {{"name", "door"}, {"workload", kWorkload},
                          {"configs", {{{"provider", "trace"}, {"instance_type", "t-2c"}}}}, {"repetitions", 1}};

// A valid body for each route that takes JSON.
const std::vector<std::pair<std::string, json>>& valid_bodies() {
  static const std::vector<std::pair<std::string, json>> all = {
      {"POST /v1/experiments", kExperiment},
      {"POST /v1/schedules", {{"name", "nightly"}, {"cron", "0 2 * * *"}, {"timezone", "UTC"},
                              {"experiment", kExperiment}, {"budget", 1}, {"missed", "skip"}, {"enabled", false}}},
      {"PUT /v1/schedules/1", {{"cron", "0 3 * * *"}, {"experiment", kExperiment}, {"enabled", false}}},
      {"POST /v1/searches", {{"workload", kWorkload},
                             {"candidates", {{{"provider", "trace"}, {"instance_type", "t-2c"}},
                                             {{"provider", "trace"}, {"instance_type", "t-4c"}}}},
                             {"objective", "cost"}, {"probe_budget", 1}, {"max_probes", 2}, {"future_runs", 10},
                             {"tolerance", 0.05}, {"confidence", 1}, {"billing", "per_second_60s_min"}}},
      {"POST /v1/tokens", {{"scope", "metrics"}}},
      {"POST /v1/presets/no-such-preset", json::object()},
      {"POST /v1/runs/1/events", {{"phase", "learn"}, {"mark", "end"}, {"mono_s", 12.5},
                                  {"attrs", {{"epoch", 1}}},
                                  {"stats", {{"cpu_pct", {{"min", 1}, {"avg", 2}, {"max", 3}}}}}, {"node", 0}}},
      {"POST /v1/runs/1/rendezvous", {{"address", "10.0.0.1"}, {"port", 29500}}},
  };
  return all;
}

// The numbers a field may be set to: the edges of int32, int64, double and the documented ranges.
json boundary_number(int pick) {
  static const json kNumbers[] = {0, -1, 1, 2147483647, 2147483648LL, -2147483649LL, 9007199254740992LL,
                                  18446744073709551615ULL, 1e308, -1e308, 1e-308, 0.5, 1e9, 1e6, 2592000, 2592001};
  return kNumbers[static_cast<size_t>(pick) % std::size(kNumbers)];
}

// A value a field may be set to: a boundary number, another kind, a huge string or array, or text a parser
// must refuse ("1e999").
json boundary_value(int pick, const json& old) {
  switch (pick) {
    case 16: return true;
    case 17: return nullptr;
    case 18: return "";
    case 19: return std::string(100000, 'x');
    case 20: return json::array();
    case 21: return json::object();
    case 22: return json::array({old, old});
    case 23: return std::string("\xe2\x80\xae\x00\x01", 5);
    case 24: {  // a huge array of the old value
      json big = json::array();
      const bool small = old.is_number() || old.is_boolean() || old.is_null() || (old.is_string() && old.size() < 64);
      for (int i = 0; i < 20000; ++i) big.push_back(small ? old : json(i));
      return big;
    }
    case 25: return "1e999";
    default: return boundary_number(pick);  // 0-15
  }
}
constexpr int kBoundaryValues = 26;

// Every place in `j` a mutation may touch, as JSON pointers (the root included).
void places(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  out.push_back(at);
  if (j.is_object())
    for (const auto& [k, v] : j.items()) places(v, at / k, out);
  else if (j.is_array())
    for (size_t i = 0; i < j.size() && i < 4; ++i) places(j[i], at / i, out);
}

// Every number in `j` set to a boundary number, each its own (drawn from `picks`).
void numbers_to_boundaries(json& j, const std::vector<int>& picks, size_t& next) {
  if (j.is_number()) j = boundary_number(picks[next++ % picks.size()]);
  else if (j.is_structured())
    for (auto& v : j) numbers_to_boundaries(v, picks, next);
}

// One mutation of `body`, chosen by the generated numbers: most often a value at one place, or every number.
void mutate(json& body, int where, int how, int value, const std::vector<int>& picks) {
  std::vector<json::json_pointer> all;
  places(body, json::json_pointer(), all);
  const auto& at = all[static_cast<size_t>(where) % all.size()];
  json& target = body[at];
  switch (how % 10) {
    case 0: case 1: case 2: target = boundary_value(value % kBoundaryValues, target); break;
    case 3:  // removed, where it is a member
      if (!at.empty()) {
        json& parent = body[at.parent_pointer()];
        if (parent.is_array()) parent.erase(std::stoul(at.back()));
        else parent.erase(at.back());
      }
      break;
    case 4:  // an unknown field in it, or beside it
      if (json& in = target.is_object() ? target : body; in.is_object())
        in["zz_unknown_" + std::to_string(value % 3)] = boundary_value(value % kBoundaryValues, 1);
      break;
    case 5: body = boundary_value(value % kBoundaryValues, body); break;  // the whole body of another kind
    default: {
      size_t next = 0;
      numbers_to_boundaries(body, picks, next);
    }
  }
}

// The text sent: the JSON, or (now and then) the JSON broken in a way a parser must refuse or read as it can.
std::string text_of(const json& body, int breakage) {
  std::string s = body.dump(-1, ' ', false, json::error_handler_t::replace);
  switch (breakage % 40) {
    case 0: return s.substr(0, s.size() / 2);                       // truncated
    case 1: return s + s;                                           // two documents
    case 2: return std::string(2000, '[') + s;                      // deep
    case 3: {                                                       // a number the parser cannot hold
      auto at = s.find_first_of("0123456789");
      return at == std::string::npos ? s : s.substr(0, at) + "1e999" + s.substr(at + 1);
    }
    case 4: return "";
    default: return s;
  }
}

api::HttpResult send(const std::string& route, const std::string& text) {
  auto space = route.find(' ');
  return door().d.call(route.substr(0, space), route.substr(space + 1), door().admin, text);
}

bool answered(const api::HttpResult& r) { return r.status >= 200 && r.status < 500; }

}  // namespace

TEST_CASE("every POST and PUT route answers generated bodies with 2xx or 4xx, never 5xx") {
  door();
  const bool ok = rc::check("a mutated body gets 2xx or 4xx", [] {
    const auto& [route, valid] = valid_bodies()[*rc::gen::inRange<size_t>(0, valid_bodies().size())];
    json body = valid;
    const int mutations = *rc::gen::inRange(1, 3);
    for (int i = 0; i < mutations; ++i)
      mutate(body, *rc::gen::inRange(0, 1000), *rc::gen::inRange(0, 10), *rc::gen::inRange(0, 1000),
             *rc::gen::container<std::vector<int>>(8, rc::gen::inRange(0, 1000)));
    std::string text = text_of(body, *rc::gen::inRange(0, 1000));
    // Mutations compound (a huge array of huge strings is 2 GB): past every route's limit, more bytes only cost the
    // test time and memory. The cut keeps it over the limit, which the door must answer with 413.
    if (text.size() > (16u << 20)) text.resize(16u << 20);
    std::string target = route;
    if (*rc::gen::inRange(0, 4) == 0) {  // the path's id too: 0, -1, 2^31, 2^63, words
      const std::string ids[] = {"0", "-1", "2147483648", "9223372036854775808", "abc", "1e9", "%00"};
      const std::string id = *rc::gen::elementOf(std::vector<std::string>(std::begin(ids), std::end(ids)));
      for (const char* with_id : {"/schedules/", "/runs/"})
        if (auto at = target.find(with_id); at != std::string::npos) {
          auto end = target.find('/', at + std::string(with_id).size());
          target = target.substr(0, at + std::string(with_id).size()) + id +
                   (end == std::string::npos ? "" : target.substr(end));
        }
    }
    const auto r = send(target, text);
    RC_LOG() << route << " -> " << target << " (" << text.size() << " bytes) " << text.substr(0, 400) << "\n=> " << r.status << " "
             << r.body.substr(0, 400) << r.error;
    RC_ASSERT(answered(r));
    if (route == "POST /v1/searches" && r.status == 202) door().searches.insert(r.json()["id"].get<int64_t>());
  });
  CHECK(ok);
}

TEST_CASE("uploads, a join's end, GET /v1/plan's and a page's numbers answer 2xx or 4xx, never 5xx") {
  door();
  const bool ok = rc::check("raw bodies and query numbers get 2xx or 4xx", [] {
    const std::vector<std::string> numbers = {"0", "-1", "1", "2147483647", "2147483648", "9007199254740992",
                                              "1e308", "1e999", "inf", "nan", "-0", "0x10", "", "1,2", "abc"};
    const int which = *rc::gen::inRange(0, 4);
    api::HttpResult r;
    std::string what;
    if (which == 0) {  // a data set of generated bytes, under generated names and formats
      const std::string bytes = *rc::gen::container<std::string>(rc::gen::arbitrary<char>());
      const std::string name = *rc::gen::elementOf(std::vector<std::string>{"ok", "", "..", "a%2Fb", "x.tar"});
      const std::string format = *rc::gen::elementOf(std::vector<std::string>{"idx", "files", "nope", ""});
      what = "POST /v1/datasets?name=" + name + "&format=" + format;
      r = send(what, bytes);
    } else if (which == 1) {
      const std::string id = *rc::gen::elementOf(numbers);
      what = "PUT /v1/runs/" + id + "/artifacts/model.pt";
      r = send(what, *rc::gen::container<std::string>(rc::gen::arbitrary<char>()));
      if (r.status == 404 || r.status == 401) {
        what = "POST /v1/join/" + id + "/left";
        r = send(what, "");
      }
    } else if (which == 3) {  // a page of runs or experiments, its numbers and cursor generated
      std::string q = *rc::gen::elementOf(std::vector<std::string>{"GET /v1/runs?", "GET /v1/experiments?"});
      for (const char* key : {"limit", "experiment", "schedule", "created_after", "created_before"})
        if (*rc::gen::inRange(0, 3) == 0) q += std::string(key) + "=" + *rc::gen::elementOf(numbers) + "&";
      if (*rc::gen::inRange(0, 3) == 0)
        q += "cursor=" + *rc::gen::elementOf(std::vector<std::string>{"cnVuczphc2M6MQ", "cnVuczphc2M6LTE", "", "%00",
                                                                       "ZXhwZXJpbWVudHM6ZGVzYzo5OTk5OTk5OTk5OTk5OTk5OTk5"}) + "&";
      what = q;
      r = send(what, "");
    } else {
      std::string q = "GET /v1/plan?experiment=" + *rc::gen::elementOf(numbers);
      for (const char* key : {"deadline", "budget", "repetitions", "interruptions_per_hour", "p99_ms", "rate",
                              "hours", "nodes"})
        if (*rc::gen::inRange(0, 3) == 0) q += std::string("&") + key + "=" + *rc::gen::elementOf(numbers);
      if (*rc::gen::inRange(0, 2) == 0)
        q += "&objective=" + *rc::gen::elementOf(std::vector<std::string>{"cost", "time", "serve", "budget", "x"});
      what = q;
      r = send(what, "");
    }
    RC_LOG() << what << "\n=> " << r.status << " " << r.body.substr(0, 400) << r.error;
    RC_ASSERT(answered(r));
  });
  CHECK(ok);
}

TEST_CASE("after the generated requests, nothing they started is left without an end, and the listings answer") {
  Door& d = door();
  // Searches stop: each probe is refused by the budget, or ends; runs end.
  const bool settled = eventually([&] {
    // Every run, however many pages: none is left in a status before the end.
    auto live = d.d.call("GET", "/v1/runs?limit=1&status=queued,provisioning,booting,installing,loading,starting,"
                                "learning,verifying,saving,terminating", d.admin);
    if (live.status != 200 || live.json()["total"] != 0) return false;
    for (int64_t id : d.searches)
      if (d.d.call("GET", "/v1/searches/" + std::to_string(id), d.admin).json()["status"] == "running") return false;
    return true;
  }, std::chrono::seconds(300));
  INFO(d.d.log().substr(0, 20000));
  CHECK(settled);
  MESSAGE(d.searches.size() << " searches were started by the generated requests");
  CHECK(d.d.call("GET", "/v1/runs", d.admin).status == 200);
  CHECK(d.d.call("GET", "/v1/experiments", d.admin).status == 200);
  auto schedules = d.d.call("GET", "/v1/schedules", d.admin);
  CHECK(schedules.status == 200);
  for (const auto& s : schedules.json()["schedules"])  // none of them may fire after the suite
    CHECK(d.d.call("DELETE", "/v1/schedules/" + s["id"].dump(), d.admin).status == 200);
  CHECK(d.d.call("GET", "/healthz", "").status == 200);
}
