// A run's output (daemon/agent/run_logs.h) over REST:
//
//   POST /v1/runs/{id}/logs?source=a1n0&from=N&now=MONO_S   (the run's token) body: lines "MONO_S TEXT\n"
//        200 {"next": N}; 409 {"error": "already_exists", "next": N} when `from` is past the lines held
//   GET  /v1/runs/{id}/logs?after=SEQ&limit=N&wait=S          (admin)
//        200 {"lines": [{"seq", "source", "n", "time", "text"}], "after": SEQ, "dropped": D, "status": STATUS,
//             "done": true once the run has ended and every line it sent has been read};
//        wait=S (at most 60) holds the answer until a line comes, the run ends or S seconds pass (a long poll)
//   GET  /v1/runs/{id}/logs?follow=1&after=SEQ                 (admin)
//        application/x-ndjson: each line as it comes, one JSON object per line, and last {"end": STATUS} once
//        the run has ended (a blank line every 15 s keeps proxies from closing an idle stream)
#pragma once

#include "api/http/router.h"
#include "daemon/store/group_commit.h"
#include "daemon/runs/ledger.h"
#include "daemon/agent/run_logs.h"
#include "daemon/runs/run_watch.h"
#include "daemon/store/token_store.h"

namespace tsum::api {

struct LogContext {
  daemon::RunLogs& logs;
  daemon::Ledger& ledger;  // the run's status: a follower stops once it has ended
  daemon::TokenStore& tokens;
  daemon::RunWatch& watch;  // woken by each append and by the run's own changes
  daemon::GroupCommit& commits;
};

void add_log_routes(Router& router, LogContext ctx);

}  // namespace tsum::api
