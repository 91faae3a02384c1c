// The Server-Sent Events body of GET /v1/runs/{id}/stream: the run's JSON (as GET /v1/runs/{id} returns it)
// at once, then again whenever the run changes (a status transition, a phase mark, an epoch sample), and
// "event: end" after the run is terminal, when the stream closes. Between changes a comment line
// (": heartbeat") goes out every `heartbeat`, so proxies keep the connection and a dead peer is noticed.
//
//   event: run
//   data: {"id":5,"status":"learning","phases":{...},...}
//
//   : heartbeat
//
//   event: end
//   data: {"status":"done"}
//
// Every write has `write_timeout`; a failed write (peer gone, server stopping) ends the stream, and so does
// RunWatch::close() at daemon shutdown.
#pragma once

#include <chrono>
#include <cstdint>

#include "api/http/http_types.h"
#include "daemon/runs/run_watch.h"
#include "daemon/views/views.h"

namespace tsum::api {

struct RunStreamOptions {
  std::chrono::milliseconds heartbeat{15000};
  std::chrono::milliseconds write_timeout{10000};
};

// The streamer for run_id. `views` and `watch` must outlive the stream.
Streamer run_event_stream(daemon::Views& views, daemon::RunWatch& watch, int64_t run_id, RunStreamOptions opts = {});

}  // namespace tsum::api
