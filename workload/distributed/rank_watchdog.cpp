#include "workload/distributed/rank_watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tsum::workload {
namespace {

using Clock = std::chrono::steady_clock;

std::string hb_key(int rank) { return "hb/" + std::to_string(rank); }
std::string done_key(int rank) { return "done/" + std::to_string(rank); }
constexpr const char* kVerdictKey = "verdict";

std::string seconds_text(Clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", std::chrono::duration<double>(d).count());
  return buf;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// A Gloo error that means the peer's end of a connection went away (the process exited or was
// killed), as opposed to a peer that is there but silent (Gloo's timeout).
bool connection_lost(const std::string& what) {
  for (const char* s : {"closed", "reset", "Broken pipe", "EOF", "refused"}) {
    if (what.find(s) != std::string::npos) return true;
  }
  return false;
}

// How long a rank must be silent before a failed collective blames it: a few beats, so a killed
// rank (whose connections close at once) is found quickly, yet no rank is blamed for a late beat.
Clock::duration blame_silence(std::chrono::milliseconds timeout) {
  return std::min<Clock::duration>(timeout / 2, RankWatchdog::kBeat * 8);
}

}  // namespace

RankWatchdog::RankWatchdog(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                           std::chrono::milliseconds timeout, std::string master)
    : store_(std::move(store)),
      rank_(rank),
      world_size_(world_size),
      timeout_(timeout),
      master_(std::move(master)),
      beats_(static_cast<std::size_t>(world_size), 0),
      changed_(static_cast<std::size_t>(world_size), Clock::now()),
      done_(static_cast<std::size_t>(world_size), false) {}

RankWatchdog::~RankWatchdog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (beat_thread_.joinable()) beat_thread_.join();
  if (monitor_thread_.joinable()) monitor_thread_.join();
}

void RankWatchdog::start() {
  last_ok_ns_ = now_ns();
  {
    std::lock_guard lock(mu_);
    std::fill(changed_.begin(), changed_.end(), Clock::now());
  }
  beat_once();
  beat_thread_ = std::thread([this] { beat_loop(); });
  monitor_thread_ = std::thread([this] { monitor_loop(); });
}

bool RankWatchdog::beat_once() {
  try {
    store_->add(hb_key(rank_), 1);
    std::vector<std::int64_t> beats(static_cast<std::size_t>(world_size_), 0);
    std::vector<bool> done(static_cast<std::size_t>(world_size_), false);
    for (int q = 0; q < world_size_; ++q) {
      if (q == rank_) continue;
      beats[q] = store_->add(hb_key(q), 0);
      done[q] = store_->check({done_key(q)});
    }
    std::string verdict;
    if (store_->check({kVerdictKey})) {
      const auto v = store_->get(kVerdictKey);
      verdict.assign(v.begin(), v.end());
    }
    const auto now = Clock::now();
    std::lock_guard lock(mu_);
    for (int q = 0; q < world_size_; ++q) {
      if (beats[q] != beats_[q]) changed_[q] = now;
      beats_[q] = beats[q];
      done_[q] = done_[q] || done[q];
    }
    if (verdict_.empty()) verdict_ = verdict;
    last_ok_ns_ = now_ns();
    return true;
  } catch (const std::exception& e) {
    std::lock_guard lock(mu_);
    store_failed_ = true;
    store_error_ = e.what();
    return false;
  }
}

void RankWatchdog::beat_loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (stop_cv_.wait_for(lock, kBeat, [this] { return stop_; })) return;
    }
    if (!beat_once()) {
      if (rank_ == 0) continue;  // the store is in this process; nothing to learn from a failure
      exit_with("rank 0 exited (its store at " + master_ + " closed the connection)", false);
    }
    std::string failure;
    {
      std::lock_guard lock(mu_);
      if (!verdict_.empty()) {
        failure = verdict_;
      } else {
        failure = stale_rank_message(timeout_, false);
      }
    }
    if (!failure.empty()) abort(failure);
  }
}

void RankWatchdog::monitor_loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (stop_cv_.wait_for(lock, kBeat, [this] { return stop_; })) return;
    }
    const auto silent = std::chrono::nanoseconds(now_ns() - last_ok_ns_.load());
    if (rank_ != 0 && silent > timeout_) {
      exit_with("rank 0 stopped answering (its store at " + master_ + " silent for " +
                    seconds_text(silent) + ")",
                false);
    }
  }
}

// Call with mu_ held. The rank silent longest, if at least `min_silence`; "" when none.
std::string RankWatchdog::stale_rank_message(Clock::duration min_silence, bool exited) const {
  const auto now = Clock::now();
  int worst = -1;
  Clock::duration worst_silence{};
  for (int q = 0; q < world_size_; ++q) {
    if (q == rank_ || done_[q]) continue;
    const auto silence = now - changed_[q];
    if (silence >= min_silence && silence > worst_silence) {
      worst = q;
      worst_silence = silence;
    }
  }
  if (worst < 0) return "";
  const std::string name = "rank " + std::to_string(worst);
  if (beats_[worst] == 0) return name + " never joined (waited " + seconds_text(worst_silence) + ")";
  if (exited) return name + " exited (its connections closed)";
  return name + " stopped answering (no heartbeat for " + seconds_text(worst_silence) + ")";
}

std::string RankWatchdog::diagnose(const std::string& what) {
  const bool exited = connection_lost(what);
  const auto silence = blame_silence(timeout_);
  const auto deadline = Clock::now() + silence + 4 * kBeat;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (!verdict_.empty()) return verdict_;
      if (store_failed_ && rank_ != 0) {
        return "rank 0 exited (its store at " + master_ + " closed the connection)";
      }
      std::string blamed = stale_rank_message(silence, exited);
      if (!blamed.empty()) return blamed;
    }
    if (Clock::now() > deadline) break;
    std::this_thread::sleep_for(kBeat / 2);
  }
  return "rank " + std::to_string(rank_) + ": a collective failed and no rank was silent: " + what;
}

std::vector<int> RankWatchdog::missing_ranks() {
  std::vector<int> missing;
  for (int q = 0; q < world_size_; ++q) {
    try {
      if (q != rank_ && store_->add(hb_key(q), 0) == 0) missing.push_back(q);
    } catch (const std::exception&) {
      break;
    }
  }
  return missing;
}

void RankWatchdog::finish() {
  try {
    store_->set(done_key(rank_), std::vector<std::uint8_t>{'o', 'k'});
  } catch (const std::exception&) {
    // The store is gone; the others no longer need the mark.
  }
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (beat_thread_.joinable()) beat_thread_.join();
  if (monitor_thread_.joinable()) monitor_thread_.join();
  if (rank_ != 0) return;
  std::vector<std::string> keys;
  for (int q = 1; q < world_size_; ++q) keys.push_back(done_key(q));
  try {
    store_->wait(keys, timeout_);
  } catch (const std::exception&) {
    // A rank that never marks itself done after a successful run loses nothing by our leaving.
  }
}

void RankWatchdog::abort(const std::string& message) {
  std::string verdict = message;
  try {
    const std::vector<std::uint8_t> mine(message.begin(), message.end());
    const auto stored = store_->compareSet(kVerdictKey, {}, mine);
    verdict.assign(stored.begin(), stored.end());
  } catch (const std::exception&) {
    // No store: say it ourselves.
  }
  exit_with(verdict, true);
}

void RankWatchdog::exit_with(const std::string& message, bool store_usable) {
  if (exiting_.exchange(true)) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // another thread is exiting
  }
  std::fprintf(stderr, "tsum-train: unavailable: %s\n", message.c_str());
  std::fflush(nullptr);
  if (store_usable) {
    try {
      store_->set(done_key(rank_), std::vector<std::uint8_t>{'f', 'a', 'i', 'l'});
    } catch (const std::exception&) {
    }
    if (rank_ == 0) linger();
  }
  std::fflush(nullptr);
  ::_exit(1);
}

// Rank 0 after a failure: the other ranks read the verdict from the store held here, within a beat
// or two; wait until every rank is done or a bounded while has passed (dead ranks never mark).
void RankWatchdog::linger() {
  const auto deadline = Clock::now() + std::min<Clock::duration>(timeout_, std::chrono::seconds(3));
  while (Clock::now() < deadline) {
    bool all_done = true;
    for (int q = 1; q < world_size_ && all_done; ++q) {
      try {
        all_done = store_->check({done_key(q)});
      } catch (const std::exception&) {
        return;
      }
    }
    if (all_done) return;
    std::this_thread::sleep_for(kBeat / 2);
  }
}

}  // namespace tsum::workload
