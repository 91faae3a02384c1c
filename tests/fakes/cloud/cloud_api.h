// FakeCloudApi: what one cloud's fake implements behind the shared FakeServer (fake_server.h): its routes,
// its auth scheme, its answers and error bodies. Everything else (serving, booking, faults, guests) is the
// server's.
#pragma once

#include <functional>
#include <optional>

#include "common/result.h"
#include <string>
#include <vector>

#include "tests/fakes/guest/fake_guest.h"
#include "tests/fakes/http/loopback_server.h"

namespace tsum::providers::fake_cloud {

// Where a request goes: to an API method (booked, subject to faults, then carried out by call), or answered
// on the spot (an unknown route, a malformed request, refused credentials).
struct Route {
  std::string method = {};                         // the API method, e.g. "instances.insert"
  std::function<http::LoopbackReply()> call = {};  // carries the method out
  std::optional<http::LoopbackReply> answer = {};  // set: answered without a method
  bool refused = false;                            // the answer refuses the caller's credentials

  static Route to(std::string method, std::function<http::LoopbackReply()> call) {
    return {.method = std::move(method), .call = std::move(call)};
  }
  static Route reply(http::LoopbackReply r) { return {.answer = std::move(r)}; }
  static Route refuse(http::LoopbackReply r) { return {.answer = std::move(r), .refused = true}; }
};

class FakeCloudApi {
 public:
  virtual ~FakeCloudApi() = default;

  // Authenticates and routes one request. Runs on the server's thread, one request at a time.
  virtual Route route(const http::LoopbackRequest& req) = 0;
  // The cloud's error answer for an injected fault on `method`: status 429, 503 or 500 (the server adds
  // Retry-After to a 429).
  virtual http::LoopbackReply fault_answer(int status, const std::string& method) const = 0;
  // The instances whose guests should be up now (booting or running), each under its guest id.
  virtual std::vector<fake_guest::LiveInstance> live_guests() const = 0;

  // Spot capacity taken back, as the cloud does it: the notice shows on the instance's metadata service now and
  // the cloud deletes the instance notice_s later (nullopt: the cloud's own notice period); with notice_s 0 it
  // goes at once, without a notice. not_found: no such instance; invalid_argument: not a spot instance, or a
  // cloud that sells none. Called on the server's thread.
  virtual Status interrupt(const std::string& id, std::optional<double> notice_s) {
    (void)id, (void)notice_s;
    return make_error(Code::invalid_argument, "this cloud sells no spot capacity");
  }
  // Spot capacity per region (POST /_fake/capacity/<region>?spot=N): the spot machines `region` can still start
  // (nullopt: as many as asked); at 0 a spot create gets the cloud's own capacity error. not_found: a region the
  // fake does not serve; invalid_argument: a cloud that sells no spot.
  virtual Status set_spot_capacity(const std::string& region, std::optional<int> left) {
    (void)region, (void)left;
    return make_error(Code::invalid_argument, "this cloud sells no spot capacity");
  }
  // The metadata service's answer to a request from inside instance `id` ("" when the caller is no instance's
  // guest). Called on the metadata server's thread: the state it reads must be locked.
  virtual http::LoopbackReply metadata(const http::LoopbackRequest& req, const std::string& id) {
    (void)req, (void)id;
    return {.status = 404, .body = "not found"};
  }
};

}  // namespace tsum::providers::fake_cloud
