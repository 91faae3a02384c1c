// GET /metrics's body on a known database: the Prometheus text format line by line, and every family the
// daemon promises (runs by status, queue depth, phase histograms, provider calls, spend, billed, budget).
#include <doctest/doctest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "daemon/schedules/budget.h"
#include "daemon/fixture.h"
#include "daemon/views/metrics.h"
#include "daemon/views/totals.h"
#include "daemon/views/views.h"

using namespace tsum;
using namespace tsum::daemon;

namespace {

struct Parsed {
  std::map<std::string, std::string> type;  // family → TYPE
  std::map<std::string, double> samples;    // full series text → value
};

// Parses the exposition, checking its grammar: HELP and TYPE before a family's samples, sample lines as
// `name{label="value",...} number`, histogram buckets cumulative up to le="+Inf", which equals _count.
Parsed parse_exposition(const std::string& text) {
  static const std::regex kSample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? (-?[0-9.eE+-]+|\+Inf|NaN)$)");
  static const std::regex kType(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)");
  Parsed p;
  std::map<std::string, double> last_bucket;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    CAPTURE(line);
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (std::regex_match(line, m, kType)) {
      CHECK(p.type.count(m[1]) == 0);  // one TYPE per family
      p.type[m[1]] = m[2];
      continue;
    }
    REQUIRE(std::regex_match(line, m, kSample));
    std::string name = m[1];
    std::string family = std::regex_replace(name, std::regex("_(bucket|sum|count)$"), "");
    CHECK((p.type.count(name) == 1 || (p.type.count(family) == 1 && p.type[family] == "histogram")));
    double v = std::stod(line.substr(line.rfind(' ') + 1));
    p.samples[line.substr(0, line.rfind(' '))] = v;
    if (name.ends_with("_bucket")) {
      std::string series = line.substr(0, line.find("le=\""));
      if (last_bucket.count(series)) CHECK(v >= last_bucket[series]);
      last_bucket[series] = v;
      if (line.find("le=\"+Inf\"") != std::string::npos) {
        std::string labels = series.substr(series.find('{') + 1);
        if (!labels.empty() && labels.back() == ',') labels.pop_back();
        std::string count = family + "_count" + (labels.empty() ? "" : "{" + labels + "}");
        CHECK(text.find(count + " " + std::to_string(static_cast<long long>(v)) + "\n") != std::string::npos);
      }
    }
  }
  return p;
}

}  // namespace

TEST_CASE("/metrics is valid Prometheus text with runs, queue, phases, provider calls, spend and budget") {
  testing::DaemonFixture f;
  f.clock.set(1'700'000'000);
  Views views(f.store, f.ledger);
  Budget budget(*f.db, f.clock, {.monthly = 10.0});
  Totals totals(*f.db, views, budget);
  ProviderCallMetrics calls;
  calls.record("local", "create", 0.02, true);
  calls.record("local", "describe", 0.3, false);
  // Run 1 finished with every phase 10 s long on the daemon clock (80 s up: 2 steps of 60 s at 0.085/h).
  REQUIRE(f.ledger.advance(1, RunStatus::provisioning, "").ok());
  double t = f.clock.now_s();
  for (auto name : kPhaseNames) {
    Phase ph = *parse_phase(name);
    REQUIRE(f.ledger.record_mark(1, ph, Mark::begin, t, ClockDomain::daemon).ok());
    REQUIRE(f.ledger.record_mark(1, ph, Mark::end, t + 10, ClockDomain::daemon).ok());
    t += 10;
  }
  f.clock.set(t);
  REQUIRE(f.ledger.advance(1, RunStatus::terminating, "").ok());
  REQUIRE(f.ledger.advance(1, RunStatus::done, "").ok());

  auto body = render_metrics(*f.db, totals, calls, budget);
  REQUIRE_MESSAGE(body.ok(), body.error().detail);
  Parsed p = parse_exposition(*body);
  CHECK(p.type["tsum_runs"] == "gauge");
  CHECK(p.samples["tsum_runs{status=\"done\"}"] == 1);
  CHECK(p.samples["tsum_runs{status=\"queued\"}"] == 1);
  CHECK(p.samples["tsum_queue_depth"] == 1);
  CHECK(p.type["tsum_phase_seconds"] == "histogram");
  CHECK(p.samples["tsum_phase_seconds_count{phase=\"learn\"}"] == 1);
  CHECK(p.samples["tsum_phase_seconds_bucket{phase=\"learn\",le=\"5\"}"] == 0);
  CHECK(p.samples["tsum_phase_seconds_bucket{phase=\"learn\",le=\"10\"}"] == 1);
  CHECK(p.type["tsum_provider_call_seconds"] == "histogram");
  CHECK(p.samples["tsum_provider_call_seconds_count{provider=\"local\",op=\"describe\"}"] == 1);
  CHECK(p.samples["tsum_provider_call_errors_total{provider=\"local\",op=\"describe\"}"] == 1);
  CHECK(p.samples["tsum_provider_call_errors_total{provider=\"local\",op=\"create\"}"] == 0);
  CHECK(p.type["tsum_spend_total"] == "counter");
  // per_hour bills one hour: 0.085.
  CHECK(p.samples["tsum_spend_total{rule=\"per_hour\",currency=\"USD\"}"] == doctest::Approx(0.085));
  // The fixture's experiment bills per_second_60s_min first: 80 s at 0.085/h.
  CHECK(p.type["tsum_billed_total"] == "counter");
  CHECK(p.samples["tsum_billed_total{provider=\"local\",currency=\"USD\"}"] == doctest::Approx(80 * 0.085 / 3600));
  CHECK(p.samples["tsum_month_billed"] == doctest::Approx(80 * 0.085 / 3600));
  CHECK(p.samples["tsum_monthly_budget"] == 10);

  // The figures are the database's sums, so a daemon started again on it reads the same ones.
  auto again = testing::open_migrated(f.dir.file("t.db"));
  Store store2(*again, f.clock);
  Ledger ledger2(*again, f.clock);
  Views views2(store2, ledger2);
  Budget budget2(*again, f.clock, {.monthly = 10.0});
  Totals totals2(*again, views2, budget2);
  auto body2 = render_metrics(*again, totals2, ProviderCallMetrics{}, budget2);
  REQUIRE(body2.ok());
  Parsed p2 = parse_exposition(*body2);
  for (const char* series : {"tsum_runs{status=\"done\"}", "tsum_phase_seconds_count{phase=\"learn\"}",
                             "tsum_spend_total{rule=\"per_hour\",currency=\"USD\"}",
                             "tsum_billed_total{provider=\"local\",currency=\"USD\"}", "tsum_month_billed"}) {
    CAPTURE(series);
    CHECK(p2.samples[series] == doctest::Approx(p.samples[series]));
  }
}
