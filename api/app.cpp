#include "api/app.h"

#include "daemon/config/check_cmd.h"

#include <openssl/rand.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "api/routes/artifact_routes.h"
#include "api/routes/log_routes.h"
#include "api/openapi_route.h"
#include "api/routes/plan_route.h"
#include "api/routes/rest_routes.h"
#include "api/routes/schedule_routes.h"
#include "api/routes/search_routes.h"
#include "api/routes/token_routes.h"
#include "api/http/web_routes.h"
#include "billing/prices/catalog.h"
#include "common/embedded.h"
#include "daemon/config/check_cmd.h"
#include "daemon/planning/past_runs.h"
#include "providers/byo/byo_provider.h"
#include "daemon/runs/startup_deadline.h"
#include "providers/local/local_provider.h"
#include "providers/kubernetes/kubernetes_provider.h"
#include "providers/slurm/slurm_provider.h"
#include "providers/ssh/ssh_provider.h"
#include "providers/trace/trace_provider.h"
#include "sql/migrations.h"
#include "workload/machine/nvml.h"

namespace tsum::web {
std::span<const EmbeddedFile> assets();  // the bundled dashboard, compiled in from web/ (target tsum_web_assets)
}

namespace tsum::daemon {
std::span<const EmbeddedFile> agent_files();  // compiled in from daemon/agent/
}  // namespace tsum::daemon

namespace tsum::api {

namespace fs = std::filesystem;

std::string executable_dir() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

namespace {
// This host's GPUs through the driver's NVML (TSUM_NVML_LIBRARY, else libnvidia-ml.so.1), restricted to the
// daemon's own CUDA_VISIBLE_DEVICES: the local provider's local-<N>c-<G>g offers. None where there is no driver.
std::vector<providers::LocalGpu> local_gpus() {
  std::vector<providers::LocalGpu> out;
  auto nvml = workload::Nvml::open();
  if (!nvml.ok()) return out;
  auto samples = (*nvml)->sample();
  if (!samples.ok()) return out;
  const auto visible = workload::cuda_visible_indices();
  for (const auto& s : *samples)
    if (!visible || visible->count(s.index)) out.push_back({.index = s.index, .name = s.name});
  return out;
}

// A random id kept in the database: instances are tagged with it, so two daemons with different
// databases never sweep each other's instances.
Result<std::string> instance_tag(daemon::Db& db) {
  auto get = db.prepare("SELECT value FROM meta WHERE key = 'instance_id'");
  if (!get) return get.error();
  auto row = get->step();
  if (!row) return row.error();
  if (*row) return "tsum-" + get->text(0);
  unsigned char raw[6];
  RAND_bytes(raw, sizeof raw);
  std::string id;
  for (unsigned char b : raw) id += "0123456789abcdef"[b >> 4], id += "0123456789abcdef"[b & 15];
  auto put = db.prepare("INSERT INTO meta (key, value) VALUES ('instance_id', ?)");
  if (!put) return put.error();
  if (auto s = put->bind(id).run(); !s) return s.error();
  return "tsum-" + id;
}
}  // namespace

Status add_configured_providers(daemon::DaemonConfig& config, const std::string& state_dir,
                                daemon::ProviderRegistry& registry, daemon::ProviderCallMetrics* metrics) {
  auto clouds = daemon::make_cloud_providers(config.clouds);
  if (!clouds) return clouds.error();
  daemon::log_logins(config.clouds, std::cerr);
  std::vector<std::unique_ptr<providers::Provider>> all = std::move(*clouds);
  if (config.ssh) {
    config.ssh->state_dir = state_dir;
    if (auto s = daemon::materialize_env_keys(config); !s) return s;
    all.push_back(std::make_unique<providers::SshProvider>(*config.ssh));
  }
  if (config.slurm) {
    config.slurm->state_dir = state_dir;
    all.push_back(std::make_unique<providers::SlurmProvider>(*config.slurm));
  }
  if (config.kubernetes) all.push_back(std::make_unique<providers::KubernetesProvider>(*config.kubernetes));
  for (auto& p : all) {
    if (metrics) registry.add(std::make_unique<daemon::MeteredProvider>(std::move(p), *metrics));
    else registry.add(std::move(p));
  }
  return {};
}

Status check_public_url(const AppOptions& o) {
  if (o.tls_cert.empty() != o.tls_key.empty())
    return make_error(Code::invalid_argument, "--tls-cert and --tls-key go together");
  if (o.public_url.empty()) return {};
  const std::string& u = o.public_url;
  const bool https = u.starts_with("https://");
  if (!https && !u.starts_with("http://"))
    return make_error(Code::invalid_argument, "--public-url " + u + " must start with http:// or https://");
  if (https != !o.tls_cert.empty())
    return make_error(Code::invalid_argument, "--public-url " + u + (https ? " is https, but tsumd has no --tls-cert"
                                                                           : " is plain http, but tsumd serves HTTPS"));
  std::string host = u.substr(u.find("//") + 2);
  host = host.substr(0, host.find_first_of("/"));
  if (host.empty() || u.find_first_of(" '\"\\`$") != std::string::npos)
    return make_error(Code::invalid_argument, "--public-url " + u + " has no host");
  if (host.ends_with("/")) host.pop_back();
  const bool loopback = host.starts_with("127.") || host.starts_with("localhost") || host.starts_with("[::1]");
  if (!https && !loopback) {
    if (!o.insecure_agents)
      return make_error(Code::invalid_argument,
                        "--public-url " + u + " is plain HTTP to a non-loopback address: run tokens, data sets and "
                        "results would cross the network in clear. Serve HTTPS (--tls-cert/--tls-key), or accept "
                        "that with --insecure-agents");
    std::cerr << "tsumd: warning: agents reach this daemon over plain HTTP at " << u
              << " (--insecure-agents): their tokens and data can be read on the way\n";
  }
  return {};
}

Result<std::unique_ptr<App>> App::create(boost::asio::io_context& io, AppOptions opts) {
  if (opts.db_path.empty()) return make_error(Code::invalid_argument, "--db is required");
  if (auto s = check_public_url(opts); !s) return s.error();
  while (opts.public_url.ends_with("/")) opts.public_url.pop_back();
  if (opts.state_dir.empty()) opts.state_dir = opts.db_path + ".state";
  std::error_code abs_ec;
  opts.state_dir = fs::absolute(opts.state_dir, abs_ec).string();
  if (opts.bundle_path.empty()) opts.bundle_path = executable_dir() + "/../bundle/tsum-bundle.tar.gz";
  std::unique_ptr<App> app(new App(io, std::move(opts)));
  auto& o = app->opts_;

  auto lock = daemon::DbLock::acquire(o.db_path);  // before the database is opened or migrated
  if (!lock) return lock.error();
  app->lock_.emplace(std::move(*lock));
  auto db = daemon::Db::open(o.db_path);
  if (!db) return db.error();
  app->db_ = std::move(*db);
  if (auto v = app->db_->migrate(sql::migrations()); !v) return v.error();
  auto checkpointer = daemon::WalCheckpointer::start(o.db_path);
  if (!checkpointer) return checkpointer.error();
  app->checkpointer_ = std::move(*checkpointer);
  auto tag = instance_tag(*app->db_);
  if (!tag) return tag.error();
  app->tag_ = *tag;

  std::error_code ec;
  if (!o.web_dir.empty() && !fs::is_regular_file(fs::path(o.web_dir) / "index.html", ec))
    return make_error(Code::invalid_argument, "--web-dir " + o.web_dir + " has no index.html");
  fs::create_directories(o.state_dir, ec);
  if (ec) return make_error(Code::unavailable, "state dir " + o.state_dir + ": " + ec.message());

  auto catalog = billing::parse_catalog(find_embedded(billing::embedded_catalogs(), "local.json"));
  if (!catalog) return catalog.error();
  app->catalogs_.push_back(*catalog);
  app->providers_.add(std::make_unique<daemon::MeteredProvider>(
      std::make_unique<providers::LocalProvider>(providers::LocalOptions{
          .state_dir = o.state_dir, .catalog = *catalog, .cpus = {}, .gpus = local_gpus()}),
      app->provider_calls_));
  if (auto s = add_configured_providers(o.config, o.state_dir, app->providers_, &app->provider_calls_); !s)
    return s.error();
  auto byo = std::make_unique<providers::ByoProvider>(providers::ByoOptions{
      .state_dir = o.state_dir, .hourly_price = o.config.byo_hourly_price, .billing_rule = o.config.byo_billing});
  app->byo_ = byo.get();
  app->providers_.add(std::make_unique<daemon::MeteredProvider>(std::move(byo), app->provider_calls_));

  app->startup_deadlines_ = o.config.startup_deadlines();
  if (!o.trace_csv.empty() || !o.trace_db.empty())
    if (auto st = app->add_trace_provider(); !st) return st.error();

  app->ledger_ = std::make_unique<daemon::Ledger>(*app->db_, app->clock_);
  app->commits_ = std::make_unique<daemon::GroupCommit>(*app->db_, io.get_executor());
  app->store_ = std::make_unique<daemon::Store>(*app->db_, app->clock_);
  app->tokens_ = std::make_unique<daemon::TokenStore>(*app->db_, app->clock_);
  app->views_ = std::make_unique<daemon::Views>(*app->store_, *app->ledger_);
  app->budget_ = std::make_unique<daemon::Budget>(
      *app->db_, app->clock_, daemon::BudgetOptions{.monthly = o.monthly_budget,
                                                   .run_deadline = daemon::RunManagerOptions{}.run_deadline});
  app->listing_ = std::make_unique<daemon::Listing>(*app->db_, *app->store_);
  app->totals_ = std::make_unique<daemon::Totals>(*app->db_, *app->views_, *app->budget_);
  app->blobs_ = std::make_unique<daemon::BlobStore>(o.state_dir + "/blobs");
  app->datasets_ = std::make_unique<daemon::Datasets>(*app->db_, *app->blobs_, app->clock_);
  app->logs_ = std::make_unique<daemon::RunLogs>(*app->db_, app->clock_);
  app->artifacts_ = std::make_unique<daemon::RunArtifacts>(*app->db_, *app->blobs_, o.state_dir + "/uploads/partial",
                                                           app->clock_);
  if (auto s = app->add_artifacts(); !s) return s.error();
  app->watch_ = std::make_unique<daemon::RunWatch>(io.get_executor());
  app->ledger_->set_observer([watch = app->watch_.get(), views = app->views_.get()](int64_t run_id) {
    views->forget(run_id);  // before the watchers read it again
    watch->notify(run_id);
  });
  return app;
}

App::~App() = default;

Status App::add_artifacts() {
  auto bundle = blobs_->add_copy(opts_.bundle_path);
  if (!bundle)
    return make_error(Code::invalid_argument, "the trainer bundle " + opts_.bundle_path + " cannot be read (" +
                                                  bundle.error().detail + "); build it (make build) or pass --bundle");
  bundle_ = *bundle;
  const std::string agent_tmp = blobs_->temp_path("agent");
  {
    std::ofstream out(agent_tmp, std::ios::binary);
    out << find_embedded(daemon::agent_files(), "tsum-agent.sh");
  }
  auto agent = blobs_->adopt(agent_tmp);
  if (!agent) return make_error(Code::internal, "the agent script cannot be stored: " + agent.error().detail);
  agent_ = *agent;
  std::vector<std::string> idx;
  for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                        "t10k-labels-idx1-ubyte"}) {
    std::error_code ec;
    fs::path p = fs::path(opts_.data_dir) / f;
    if (fs::exists(p.string() + ".gz", ec)) idx.push_back(p.string() + ".gz");
    else if (fs::exists(p, ec)) idx.push_back(p.string());
  }
  if (idx.size() == 4) {
    if (auto s = datasets_->ensure("fashion-mnist", "idx", idx); !s)
      return make_error(s.code(), "registering fashion-mnist from " + opts_.data_dir + ": " + s.error().detail);
  } else {
    std::cerr << "tsumd: " << opts_.data_dir << " holds no Fashion-MNIST (install dataset-fashion-mnist); the data "
              << "set fashion-mnist is not registered\n";
  }
  return {};
}

Result<std::vector<billing::CsvRun>> App::trace_runs() const {
  if (!opts_.trace_db.empty()) {
    std::vector<billing::Catalog> shipped;  // for the cores and GPUs of past cloud runs (daemon/planning/past_runs.h)
    for (const auto& f : billing::embedded_catalogs())
      if (auto c = billing::parse_catalog(f.data)) shipped.push_back(std::move(*c));
    return daemon::read_past_runs(opts_.trace_db, opts_.trace_experiments, shipped);
  }
  std::ifstream in(opts_.trace_csv);
  if (!in) return make_error(Code::invalid_argument, "cannot be read");
  std::string text{std::istreambuf_iterator<char>(in), {}};
  return billing::parse_runs_csv(text);
}

Status App::add_trace_provider() {
  const std::string source = opts_.trace_db.empty() ? "--trace " + opts_.trace_csv : "--trace-db " + opts_.trace_db;
  auto runs = trace_runs();
  if (!runs) return make_error(Code::invalid_argument, source + ": " + runs.error().detail);
  // The stand-in agent waits out the recorded startup (divided by the speed) before its first event.
  double longest_startup_s = 0;
  for (const auto& r : *runs) longest_startup_s = std::max(longest_startup_s, r.run.phases[billing::kStartup]);
  startup_deadlines_["trace"] = daemon::default_startup_deadline("trace") +
                                std::chrono::seconds(static_cast<int64_t>(std::ceil(longest_startup_s / opts_.trace_speed)));
  auto trace = providers::TraceProvider::create(
      io_.get_executor(),
      providers::TraceOptions{.runs = std::move(*runs), .speed = opts_.trace_speed, .billing = opts_.trace_billing});
  if (!trace) return make_error(Code::invalid_argument, source + ": " + trace.error().detail);
  providers_.add(std::make_unique<daemon::MeteredProvider>(std::move(*trace), provider_calls_));
  return {};
}

boost::asio::awaitable<Result<uint16_t>> App::start() {
  ServerOptions so;
  so.upload_dir = opts_.state_dir + "/uploads/incoming";
  so.upload_limit = opts_.upload_limit;
  so.tls_cert_file = opts_.tls_cert;
  so.tls_key_file = opts_.tls_key;
  server_ = std::make_unique<HttpServer>(io_, router_, so, opts_.network);
  // The run manager needs the bound port for the agents' URL, and the routes need the run manager.
  auto port = server_->listen(opts_.listen_host, opts_.listen_port);
  if (!port) co_return port.error();
  port_ = *port;
  std::string host = opts_.listen_host == "0.0.0.0" || opts_.listen_host == "::" ? "127.0.0.1" : opts_.listen_host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  daemon::RunManagerOptions ro;
  const std::string scheme = opts_.tls_cert.empty() ? "http://" : "https://";
  ro.daemon_url = scheme + host + ":" + std::to_string(port_);
  ro.public_url = opts_.public_url;
  if (!opts_.tls_cert.empty()) {
    std::ifstream cert(opts_.tls_cert);
    ro.ca_pem.assign(std::istreambuf_iterator<char>(cert), {});
  }
  ro.tag = tag_;
  ro.trainer_sha256 = bundle_.sha256;
  ro.agent_sha256 = agent_.sha256;
  ro.limits = opts_.limits;
  ro.startup_deadlines = startup_deadlines_;
  if (ro.limits.local_cores <= 0) ro.limits.local_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<std::string> names;
  for (const auto* p : providers_.all()) names.emplace_back(p->name());
  daemon::default_caps(ro.limits, names);
  std::cerr << "tsumd: " << daemon::describe_limits(ro.limits, names) << "\n";
  runs_ = std::make_unique<daemon::RunManager>(
      io_, daemon::Services{*db_, *ledger_, *store_, *tokens_, providers_, clock_, *budget_, *datasets_}, ro);
  schedules_ = std::make_unique<daemon::Scheduler>(io_, *db_, *store_, providers_, *datasets_, clock_,
                                                   [this] { runs_->notify(); });
  add_rest_routes(router_, {*store_, *views_, *ledger_, *tokens_, *runs_, providers_, *datasets_, *artifacts_, *watch_,
                            catalogs_, *db_, *commits_, *listing_, *totals_});
  add_artifact_routes(router_, {*datasets_, *artifacts_, *blobs_, *tokens_, *store_, bundle_.sha256, agent_.sha256, 0});
  add_log_routes(router_, {*logs_, *ledger_, *tokens_, *watch_, *commits_});
  add_join_routes(router_, *byo_);
  searches_ = std::make_unique<daemon::SearchRunner>(
      io_, daemon::SearchServices{*db_, *store_, *views_, providers_, *datasets_, clock_, [this] { runs_->notify(); }});
  add_schedule_routes(router_, *schedules_, *tokens_);
  add_search_routes(router_, *searches_, *tokens_);
  add_plan_route(router_, *db_, *store_, *totals_, *tokens_, providers_);
  add_token_routes(router_, *tokens_);
  add_openapi_route(router_);
  add_metrics_route(router_, {*db_, *totals_, *tokens_, provider_calls_, *budget_, checkpointer_.get()});
  add_web_routes(router_, {web::assets(), opts_.web_dir});
  server_->accept();  // every route is in place
  co_await runs_->reconcile();
  runs_->start();
  boost::asio::co_spawn(io_, schedules_->run(), boost::asio::detached);
  boost::asio::co_spawn(io_, settle_loop(), boost::asio::detached);
  boost::asio::co_spawn(io_, ask_quotas(), boost::asio::detached);
  co_return port_;
}

// Each cloud whose cap no flag named takes the account's quota as its cap, asked once after start (in the
// background: a slow cloud delays nothing); one that reports none, or cannot be asked, keeps the default.
boost::asio::awaitable<void> App::ask_quotas() {
  for (auto* p : providers_.all()) {
    const std::string name(p->name());
    if (!runs_->limits().defaulted.count(name)) continue;
    auto quota = co_await p->machine_quota();
    if (stopping_) co_return;
    if (quota) {
      runs_->set_provider_cap(name, quota->machines);
      std::cerr << "tsumd: " << name << ": " << quota->machines << " machines at once (" << quota->source << ")\n";
    } else if (quota.code() != Code::not_found && quota.code() != Code::invalid_argument) {  // a login's error is logged already
      std::cerr << "tsumd: " << name << ": its quota could not be read (" << quota.error().detail << "); "
                << runs_->limits().per_provider.at(name) << " machines at once\n";
    }
  }
}

boost::asio::awaitable<void> App::settle_loop() {
  settle_timer_.emplace(io_);
  while (!stopping_) {
    // A batch at a time, so requests and agents' events are served between batches.
    auto n = totals_->settle();
    if (!n) std::cerr << "tsumd: settling finished runs' costs: " << n.error().detail << "\n";
    if (n && *n > 0) {
      co_await boost::asio::post(io_, boost::asio::use_awaitable);
      continue;
    }
    if (let_go_batch()) {
      co_await boost::asio::post(io_, boost::asio::use_awaitable);
      continue;
    }
    settle_timer_->expires_after(std::chrono::seconds(1));
    auto [ec] = co_await settle_timer_->async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    if (ec) break;
  }
}

bool App::let_go_batch() {
  if (!opts_.keep_logs_days || std::chrono::steady_clock::now() < next_let_go_) return false;
  constexpr int kBatch = 200;
  const double cutoff = clock_.now_s() - *opts_.keep_logs_days * 86400;
  auto gone = daemon::let_go(*db_, blobs_.get(), {bundle_.sha256, agent_.sha256}, cutoff, kBatch);
  if (!gone) std::cerr << "tsumd: letting go of old runs' logs: " << gone.error().detail << "\n";
  if (gone && (gone->runs > 0 || gone->tokens > 0))
    std::cerr << "tsumd: let go of " << gone->lines << " log lines, " << gone->artifacts << " artifacts ("
              << gone->blob_bytes << " bytes) and " << gone->tokens << " tokens of runs finished over "
              << *opts_.keep_logs_days << " days ago\n";
  // A full batch: more is due at once (after the requests waiting). Else the next pass is in an hour.
  if (gone && gone->runs >= kBatch) return true;
  next_let_go_ = std::chrono::steady_clock::now() + std::chrono::hours(1);
  return false;
}

boost::asio::awaitable<void> App::shutdown() {
  stopping_ = true;
  if (settle_timer_) settle_timer_->cancel();
  if (schedules_) schedules_->stop();
  if (searches_) searches_->stop();
  if (runs_) co_await runs_->shutdown(opts_.shutdown_grace);
  if (watch_) watch_->close();
  if (server_) server_->stop();
}

}  // namespace tsum::api
