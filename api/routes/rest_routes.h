// The room api/routes/ owns the REST API: each route group (runs, experiments, logs, artifacts, plan, searches,
// schedules, tokens), paging and the run stream. It turns requests into calls on the daemon's rooms and their answers
// into JSON; it calls api/http/, daemon/ and billing/.
//
// The /v1 REST API on top of the daemon's services. Every /v1 route needs "Authorization: Bearer <token>";
// an admin token reaches all of them, a run token only POST /v1/runs/{its id}/events.
//
//   GET    /healthz                   {"status":"ok"}, no auth
//   GET    /v1/offers                 offers of every configured provider, with hourly price; per provider
//                                     its price catalog's as_of date, source, currency and note; and
//                                     "errors": [{"provider", "detail"}] for each provider whose price API
//                                     failed (empty when none), its offers left out
//   POST   /v1/experiments            experiment body → 201 {"id": ...}
//   GET    /v1/experiments?limit=N&cursor=C&order=asc|desc&schedule=ID&search=ID&created_after=T&created_before=T
//                                     a page of compact rows (status, counts by status, machines, spend)
//   GET    /v1/experiments/{id}       status, progress, summary (kept in SQL) and a page of its runs
//   DELETE /v1/experiments/{id}       cancel every unfinished run → 202, the experiment (no runs) + cancelled_runs
//   GET    /v1/experiments/{id}/export?format=csv|json   one row per run (phases, t_sum, cost, resources)
//   GET    /v1/runs?limit=N&cursor=C&order=asc|desc&experiment=ID&status=S[,S]&provider=P&config=TYPE&schedule=ID
//          &created_after=T&created_before=T   a page of runs, without epochs and stats; {"runs", "total",
//                                     "limit", "next_cursor"} (api/routes/paging.h)
//   GET    /v1/runs/{id}              one run
//   GET    /v1/runs/{id}/samples.csv  the run's resource samples over time, dstat-like
//   GET    /v1/runs/{id}/stream       Server-Sent Events: the run now and after each change (see run_stream.h)
//   POST   /v1/runs/{id}/events       agent marks (idempotent by run, phase and mark)
//   DELETE /v1/runs/{id}              cancel: terminate the instance, mark the run cancelled
//
// Errors are {"error": code, "detail": text}: 400 malformed JSON, 401 missing/wrong token, 404 unknown
// resource, 409 state conflict (e.g. a finished run), 422 a well-formed body with invalid content.
#pragma once

#include <vector>

#include "api/http/router.h"
#include "billing/prices/catalog.h"
#include "daemon/artifacts/run_artifacts.h"
#include "daemon/schedules/budget.h"
#include "daemon/store/group_commit.h"
#include "daemon/runs/ledger.h"
#include "daemon/views/listing.h"
#include "daemon/views/metrics.h"
#include "daemon/config/provider_registry.h"
#include "daemon/runs/run_manager.h"
#include "daemon/runs/run_watch.h"
#include "daemon/store/store.h"
#include "daemon/store/token_store.h"
#include "daemon/views/totals.h"
#include "daemon/views/views.h"

namespace tsum::api {

struct RestContext {
  daemon::Store& store;
  daemon::Views& views;
  daemon::Ledger& ledger;
  daemon::TokenStore& tokens;
  daemon::RunManager& runs;
  daemon::ProviderRegistry& providers;
  daemon::Datasets& datasets;       // what workloads name
  daemon::RunArtifacts& artifacts;  // what runs uploaded in save
  daemon::RunWatch& watch;
  const std::vector<billing::Catalog>& catalogs;  // the providers' price catalogs, for their metadata
  const daemon::Db& db;                            // /healthz reports a database that cannot be written
  daemon::GroupCommit& commits;                    // agents' events, many to a transaction
  daemon::Listing& listing;                        // the paged lists
  daemon::Totals& totals;                          // the sums kept as runs finish
};

void add_rest_routes(Router& router, RestContext ctx);

// GET /metrics, Prometheus text format (daemon/views/metrics.h). An admin or a metrics-scope token may read it.
struct MetricsContext {
  daemon::Db& db;
  daemon::Totals& totals;
  daemon::TokenStore& tokens;
  const daemon::ProviderCallMetrics& calls;
  daemon::Budget& budget;
  const daemon::WalCheckpointer* wal = nullptr;
};
void add_metrics_route(Router& router, MetricsContext ctx);

}  // namespace tsum::api
