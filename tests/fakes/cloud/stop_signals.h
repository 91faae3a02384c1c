// StopSignals: how a fake's process ends. Construct it before starting the server: from then on SIGINT and
// SIGTERM are blocked in this thread and every thread it starts, so only wait() receives them.
#pragma once

#include <signal.h>

#include <string>

namespace tsum::providers::fake_cloud {

class StopSignals {
 public:
  StopSignals();
  // Prints "<program>: listening on <url> (<about>)" on stdout (tests and scripts wait for that line), waits
  // for SIGINT or SIGTERM and prints "<program>: stopped by signal N". Returns 0, the exit status.
  int announce_and_wait(const std::string& program, const std::string& url, const std::string& about);

 private:
  sigset_t set_;
};

}  // namespace tsum::providers::fake_cloud
