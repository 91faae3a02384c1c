#include "tests/fakes/cloud/stop_signals.h"

#include <pthread.h>

#include <iostream>

namespace tsum::providers::fake_cloud {

StopSignals::StopSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
}

int StopSignals::announce_and_wait(const std::string& program, const std::string& url, const std::string& about) {
  std::cout << program << ": listening on " << url << " (" << about << ")" << std::endl;
  int sig = 0;
  sigwait(&set_, &sig);
  std::cout << program << ": stopped by signal " << sig << std::endl;
  return 0;
}

}  // namespace tsum::providers::fake_cloud
