// StatusPoller against the real local provider, its calls counted by MeteredProvider (as the daemon wires
// it): one describe_many per interval for every watched instance, none per instance, and the loop ends with
// the last watch.
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <map>
#include <regex>

#include "billing/prices/catalog.h"
#include "daemon/views/metrics.h"
#include "daemon/runs/status_poller.h"
#include "providers/local/local_provider.h"
#include "support/temp_dir.h"

using namespace tsum;
using namespace tsum::daemon;
using namespace std::chrono_literals;

namespace {

// The count of provider calls `op` in ProviderCallMetrics' text (0 when it never ran).
int calls_of(const ProviderCallMetrics& m, const std::string& op) {
  std::string text;
  m.render(text);
  std::smatch found;
  const std::regex line("tsum_provider_call_seconds_count\\{provider=\"local\",op=\"" + op + "\"\\} ([0-9]+)");
  return std::regex_search(text, found, line) ? std::stoi(found[1]) : 0;
}

}  // namespace

TEST_CASE("one describe_many per interval for all watched instances; each watcher hears its own; ends when unwatched") {
  testing::TempDir dir;
  auto catalog = billing::parse_catalog(find_embedded(billing::embedded_catalogs(), "local.json"));
  REQUIRE(catalog.ok());
  ProviderCallMetrics metrics;
  MeteredProvider provider(std::make_unique<providers::LocalProvider>(
                               providers::LocalOptions{.state_dir = dir.path().string(), .catalog = *catalog, .cpus = {0}}),
                           metrics);
  boost::asio::io_context io;
  auto poller = StatusPoller::make(io, provider, 200ms);

  std::map<int64_t, int> heard;
  std::map<int64_t, std::string> detail;
  for (int64_t run : {1, 2, 3})  // instances that do not exist: describe says gone, which is all this needs
    poller->watch(run, {"local", "x" + std::to_string(run), {{"sandbox", dir.file("none-" + std::to_string(run))}}},
                  [&, run](const Result<providers::InstanceStatus>& st) {
                    ++heard[run];
                    if (st) detail[run] = std::string(providers::state_name(st->state)) + ": " + st->detail;
                  });
  // Polls are counted, not timed: the loop runs until it has polled three times, and however slow the machine,
  // it never polls more often than once an interval (plus the first, at once).
  const auto run_until = [&](auto done) {
    const auto t0 = std::chrono::steady_clock::now();
    io.restart();
    while (!done() && std::chrono::steady_clock::now() - t0 < 120s) io.run_one_for(1s);
    return std::chrono::steady_clock::now() - t0;
  };
  // Stopped between handlers once run 3 heard its third answer: the loop waits for its next interval then.
  const auto took = run_until([&] { return heard[3] >= 3; });
  const int64_t polls = poller->polls();
  REQUIRE(polls >= 3);
  CHECK(polls <= 2 + took / 200ms);
  CHECK(calls_of(metrics, "describe_many") == polls);
  CHECK(calls_of(metrics, "describe") == 0);  // never once per instance
  for (int64_t run : {1, 2, 3}) {
    CAPTURE(run);
    CHECK(heard[run] == polls);
    CHECK(detail[run] == "gone: sandbox is gone");
  }

  poller->unwatch(1);
  poller->unwatch(2);
  run_until([&] { return heard[3] >= polls + 2; });
  CHECK(heard[1] == polls);  // unwatched: nothing more
  CHECK(heard[2] == polls);
  CHECK(heard[3] == poller->polls());
  CHECK(poller->watched() == 1);

  poller->unwatch(3);
  io.restart();
  const auto t0 = std::chrono::steady_clock::now();
  io.run_for(120s);  // returns once the loop has ended by itself: nothing is watched
  CHECK(std::chrono::steady_clock::now() - t0 < 60s);
  const int64_t last = poller->polls();

  poller->watch(4, {"local", "x4", {{"sandbox", dir.file("none-4")}}}, [&](const Result<providers::InstanceStatus>&) {
    ++heard[4];
    poller->unwatch(4);  // a callback may unwatch itself
  });
  io.restart();
  io.run_for(120s);  // returns once the loop has ended again
  CHECK(poller->polls() == last + 1);  // a new watch restarts the loop, which ends again after the unwatch
  CHECK(heard[4] == 1);
}
