// The agent's events at the door (daemon/agent/agent_event.h): a figure no machine could have measured is left out, the
// mark and its other figures kept.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "daemon/agent/agent_event.h"

using namespace tsum::daemon;

TEST_CASE("stats: a negative or disordered figure is left out; the mark and the rest are kept") {
  auto ev = parse_agent_event(nlohmann::json::parse(R"({"phase": "save", "mark": "end", "mono_s": 12.5, "stats": {
      "cpu_pct": {"min": -5025, "avg": -5025, "max": -5025}, "read_bps": {"min": 5, "avg": 1, "max": 9},
      "write_bps": {"min": 0, "avg": 0, "max": 0}, "rss_bytes": {"min": 1e8, "avg": 2e8, "max": 3e8}}})"));
  REQUIRE_MESSAGE(ev.ok(), ev.error().detail);
  CHECK(ev->mono_s == 12.5);
  CHECK(ev->stats.count("cpu_pct") == 0);   // -5025 % is not a figure
  CHECK(ev->stats.count("read_bps") == 0);  // min above avg
  CHECK(ev->stats.count("write_bps") == 1);
  CHECK(ev->stats.at("rss_bytes").avg == 2e8);
}
