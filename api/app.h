// App wires one tsumd together: the SQLite database (migrated at open), the ledger, the providers, the run
// manager and the HTTP server with the REST routes and the dashboard. `tsumd serve` and `tsumd quickstart`
// both run one.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/http/http_server.h"
#include "api/http/router.h"
#include "common/clock.h"
#include "daemon/artifacts/blob_store.h"
#include "daemon/artifacts/datasets.h"
#include "daemon/artifacts/run_artifacts.h"
#include "daemon/schedules/budget.h"
#include "daemon/config/config.h"
#include "daemon/store/db.h"
#include "daemon/store/db_lock.h"
#include "daemon/store/group_commit.h"
#include "daemon/runs/ledger.h"
#include "daemon/views/listing.h"
#include "daemon/views/metrics.h"
#include "daemon/config/provider_registry.h"
#include "daemon/store/retention.h"
#include "billing/prices/catalog.h"
#include "billing/plan_csv.h"
#include "daemon/runs/run_manager.h"
#include "daemon/schedules/scheduler.h"
#include "daemon/planning/search_runner.h"
#include "daemon/agent/run_logs.h"
#include "daemon/runs/run_watch.h"
#include "daemon/store/store.h"
#include "daemon/store/token_store.h"
#include "daemon/views/totals.h"
#include "daemon/views/views.h"
#include "daemon/store/wal_checkpointer.h"
#include "providers/byo/byo_provider.h"

namespace tsum::api {

struct AppOptions {
  std::string db_path;                 // required
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 0;            // 0: any free port
  std::string state_dir;               // default: <db_path>.state
  std::string bundle_path;             // the trainer bundle; default: <exe dir>/../bundle/tsum-bundle.tar.gz
  std::string data_dir = "/usr/share/datasets/fashion-mnist";  // registered as the data set fashion-mnist
  std::string public_url;              // --public-url: where machines elsewhere reach this daemon
  std::string tls_cert, tls_key;       // --tls-cert/--tls-key: serve HTTPS; agents get the certificate as CA
  bool insecure_agents = false;        // allow a plain-http public URL that is not loopback
  std::uint64_t upload_limit = std::uint64_t{16} << 30;  // largest data set or artifact upload
  daemon::QueueLimits limits;          // local_cores 0: this host's CPU count
  std::string web_dir;                 // serve the dashboard from here; default: the files built into tsumd
  std::optional<double> monthly_budget;  // spend cap per calendar month (UTC) over every run
  // --keep-logs DAYS: what finished runs grew besides their facts is let go after this long (daemon/store/retention.h);
  // absent: kept for ever.
  std::optional<double> keep_logs_days;
  daemon::DaemonConfig config;         // --config FILE: providers beyond local (daemon/config/config.h)
  std::string trace_csv;               // register the trace provider replaying this CSV (providers/trace/)
  std::string trace_db;                // … or replaying the done runs of this tsum database (daemon/planning/past_runs.h)
  std::vector<int64_t> trace_experiments;  // with trace_db: only these experiments' runs; empty: all
  double trace_speed = 1;              // its time compression: wall seconds = recorded seconds / speed
  std::string trace_billing = "per_second_60s_min";  // the billing rule its offers name
  // --grace: on SIGTERM, how long live runs get to terminate their instances before the daemon exits anyway
  // (what is left, the next start settles). Below Docker's and systemd's stop timeouts (10 s, 90 s) by default.
  std::chrono::milliseconds shutdown_grace{8000};
  // Where connections are read, parsed and written when not on the daemon's own io_context: io_contexts that
  // other threads run, one each (api/http/http_server.h); empty: all on one thread. tsumd serve gives one per core.
  std::vector<boost::asio::io_context*> network;
};

// Adds the providers the config file names (ssh and the clouds) to `registry`, keeping their state under state_dir.
Status add_configured_providers(daemon::DaemonConfig& config, const std::string& state_dir,
                                daemon::ProviderRegistry& registry, daemon::ProviderCallMetrics* metrics);

// The --public-url/--tls-* combination: http(s)://HOST[:PORT]; https exactly when tsumd serves TLS; plain http to a
// non-loopback host only with insecure_agents (and a warning). invalid_argument with the reason otherwise.
Status check_public_url(const AppOptions& o);

class App {
 public:
  // Opens and migrates the database and builds every part. Nothing listens or runs yet.
  static Result<std::unique_ptr<App>> create(boost::asio::io_context& io, AppOptions opts);
  ~App();

  // Binds the listener, reconciles what a previous daemon left, then starts dispatching runs.
  boost::asio::awaitable<Result<uint16_t>> start();
  // Cancels live runs (terminating their instances) for at most shutdown_grace, ends the run streams, then stops
  // the HTTP server.
  boost::asio::awaitable<void> shutdown();

  daemon::TokenStore& tokens() { return *tokens_; }
  // The routes, once start() has registered them (the OpenAPI test compares them with the document).
  const Router& router() const { return router_; }
  uint16_t port() const { return port_; }

 private:
  App(boost::asio::io_context& io, AppOptions opts) : io_(io), opts_(std::move(opts)) {}
  // Reads opts_.trace_csv or opts_.trace_db and registers the trace provider; invalid_argument names the
  // flag and the file (and the CSV line).
  Status add_trace_provider();
  // Stores the trainer bundle and registers the built-in data set (fashion-mnist from data_dir).
  Status add_artifacts();
  Result<std::vector<billing::CsvRun>> trace_runs() const;
  // Settles finished runs' costs into the sums (daemon/views/totals.h) every second until shutdown.
  boost::asio::awaitable<void> settle_loop();
  boost::asio::awaitable<void> ask_quotas();
  // One batch of retention (AppOptions::keep_logs_days); false when nothing more is due.
  bool let_go_batch();

  boost::asio::io_context& io_;
  AppOptions opts_;
  SystemClock clock_;
  std::optional<daemon::DbLock> lock_;  // first in, last out: held while anything below may write
  std::unique_ptr<daemon::Db> db_;
  std::unique_ptr<daemon::WalCheckpointer> checkpointer_;  // copies db_'s log into the file off the event loop
  std::unique_ptr<daemon::GroupCommit> commits_;  // agents' events share transactions
  std::unique_ptr<daemon::Ledger> ledger_;
  std::unique_ptr<daemon::Store> store_;
  std::unique_ptr<daemon::TokenStore> tokens_;
  std::unique_ptr<daemon::Views> views_;
  std::unique_ptr<daemon::Budget> budget_;
  std::unique_ptr<daemon::Listing> listing_;  // the paged lists
  std::unique_ptr<daemon::Totals> totals_;    // the sums /metrics and the lists read
  std::optional<boost::asio::steady_timer> settle_timer_;
  std::chrono::steady_clock::time_point next_let_go_{};  // the settle loop's next retention pass
  bool stopping_ = false;
  std::unique_ptr<daemon::BlobStore> blobs_;
  std::unique_ptr<daemon::Datasets> datasets_;
  std::unique_ptr<daemon::RunArtifacts> artifacts_;
  std::unique_ptr<daemon::RunLogs> logs_;  // what runs print
  daemon::BlobInfo bundle_;
  daemon::BlobInfo agent_;  // the agent script, which cloud machines fetch by hash (their boot payload is small)
  providers::ByoProvider* byo_ = nullptr;  // owned by providers_; its join routes need it
  daemon::ProviderCallMetrics provider_calls_;  // before providers_: the metered providers refer to it
  std::unique_ptr<daemon::RunWatch> watch_;
  std::vector<billing::Catalog> catalogs_;
  daemon::ProviderRegistry providers_;
  std::unique_ptr<daemon::RunManager> runs_;
  std::unique_ptr<daemon::Scheduler> schedules_;
  std::unique_ptr<daemon::SearchRunner> searches_;  // after runs_: its threads stop before the run manager goes
  Router router_;
  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
  std::string tag_;
  // By provider name: the config file's startup_deadline_s fields, and the trace provider's (its default
  // beyond the longest recorded startup, compressed by --trace-speed).
  std::map<std::string, std::chrono::seconds> startup_deadlines_;
};

// Directory of the running executable (/proc/self/exe), for finding tsum-train beside tsumd.
std::string executable_dir();

}  // namespace tsum::api
