// One namespace's tsum Pods, kept current by a watch: a thread of its own streams
//   GET /api/v1/namespaces/<ns>/pods?watch=1&labelSelector=app.kubernetes.io/managed-by=tsum&resourceVersion=RV
// (libcurl, the provider's CA, token or client certificate) and applies each ADDED, MODIFIED and DELETED event to
// its copy of the Pods, reconnecting from the last resourceVersion it saw when the server ends the stream
// (timeoutSeconds). An ERROR event (410 Expired: the server no longer has that resourceVersion) or a failed
// connection makes the copy stale until the next reset() from a list. The provider lists when snapshot() says
// the copy is stale, and at least every kMaxAge, so a stream that went silent cannot hold an old state long.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "providers/kubernetes/kube_options.h"

namespace tsum::providers::kube {

class PodWatch {
 public:
  static constexpr std::chrono::seconds kMaxAge{300};

  PodWatch(KubernetesOptions opts, std::string ns);
  ~PodWatch();  // aborts the stream and joins the thread
  PodWatch(const PodWatch&) = delete;
  PodWatch& operator=(const PodWatch&) = delete;

  // Takes a list's Pods and resourceVersion as the copy and watches from there.
  void reset(const nlohmann::json& pod_list);
  // The copy as a PodList while it is current: the stream is connected and has had no error since the last
  // reset, which is younger than kMaxAge. nullopt otherwise.
  std::optional<nlohmann::json> snapshot() const;
  // Events applied since the start (for tests and logs).
  long events() const { return events_; }

 private:
  void run();
  bool stream(const std::string& from_rv);  // one watch request; false on an error that needs a new list
  void apply(const std::string& line);

  KubernetesOptions opts_;
  std::string ns_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, nlohmann::json> pods_;  // by name
  std::string rv_;                              // the last resourceVersion seen
  bool current_ = false;                        // connected, no error since the last reset
  bool wanted_ = false;                         // a reset asked for a (new) stream
  std::chrono::steady_clock::time_point reset_at_{};
  long generation_ = 0;  // resets so far
  std::atomic<bool> stopping_{false};
  std::atomic<bool> interrupt_{false};  // ends the stream in flight (a reset, or the destructor)
  std::atomic<long> events_{0};
  std::string partial_;  // the stream's bytes after its last newline
  std::thread thread_;
};

}  // namespace tsum::providers::kube
