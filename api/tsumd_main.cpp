// tsumd: the tsum daemon and its command line.
//
//   tsumd serve --db PATH [--listen 127.0.0.1:8080] [--state-dir DIR] [--bundle FILE] [--data DIR]
//               [--public-url URL] [--tls-cert PEM --tls-key PEM] [--insecure-agents] [--upload-limit GIB]
//               [--max-concurrent N] [--max-per-provider P=N,...] [--max-per-type T=N,...] [--web-dir DIR]
//               [--monthly-budget USD] [--trace FILE.csv | --trace-db FILE.db [--trace-experiments ID,...]]
//               [--trace-speed N] [--trace-billing RULE]
//               [--config FILE]
//   tsumd offers --config FILE [--provider NAME] [--json] [--catalog-out FILE.json]   (docs/config.md)
//   tsumd check [--config FILE] [--json]   which clouds will work, with which login (daemon/config/check_cmd.h)
//   tsumd token create --db PATH [--scope admin|metrics]
//   tsumd quickstart [--db PATH] [--epochs N] [--limit N] [--test-limit N]
//   tsumd experiment|runs|plan|schedule|token ...   client commands against a running daemon (api/cli/cli_client.h)
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/app.h"
#include "api/cli/cli_client.h"
#include "api/quickstart.h"
#include "daemon/config/config.h"
#include "daemon/config/check_cmd.h"
#include "daemon/config/offers_cmd.h"
#include "billing/plan_cli.h"
#include "sql/migrations.h"

namespace asio = boost::asio;
using namespace tsum;

namespace {

// io_contexts each run by a thread of its own (one per core, 1 to 4) until stop() (or destruction).
struct NetworkThreads {
  using Work = asio::executor_work_guard<asio::io_context::executor_type>;
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  std::vector<Work> work;
  std::vector<std::thread> threads;

  NetworkThreads() {
    const unsigned n = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    for (unsigned i = 0; i < n; ++i) {
      contexts.push_back(std::make_unique<asio::io_context>());
      work.emplace_back(contexts.back()->get_executor());
    }
    for (auto& c : contexts) threads.emplace_back([io = c.get()] { io->run(); });
  }
  std::vector<asio::io_context*> all() const {
    std::vector<asio::io_context*> out;
    for (const auto& c : contexts) out.push_back(c.get());
    return out;
  }
  void stop() {
    work.clear();
    for (auto& c : contexts) c->stop();
    for (auto& t : threads)
      if (t.joinable()) t.join();
  }
  ~NetworkThreads() { stop(); }
};

constexpr const char* kUsage = R"(usage:
  tsumd serve --db PATH [--listen HOST:PORT] [--state-dir DIR] [--bundle FILE] [--data DIR] [--max-concurrent N]
              [--public-url URL] [--tls-cert PEM --tls-key PEM] [--insecure-agents] [--upload-limit GIB]
              [--max-per-provider P=N,...] [--max-per-type T=N,...] [--web-dir DIR] [--monthly-budget USD]
              [--config FILE] [--trace FILE.csv | --trace-db FILE.db [--trace-experiments ID,ID,...]]
              [--trace-speed N] [--trace-billing RULE]   (replay recorded runs: docs/trace.md)
              [--grace S]   (on SIGTERM, live runs get S seconds (default 8) to terminate their instances;
                             a second signal stops at once; what is left, the next start settles)
              [--keep-logs DAYS]   (let go of finished runs' log lines and resource samples after DAYS;
                                    phases and costs are kept for ever: docs/limits.md)
  tsumd db compact --db PATH   (give the space let go back to the file system; with no daemon on PATH)
  tsumd offers --config FILE [--provider NAME] [--json] [--catalog-out FILE.json]   (docs/config.md)
  tsumd check [--config FILE] [--json]   (which clouds will work, with which login, and the fix when not)
  tsumd token create --db PATH [--scope admin|metrics]
  tsumd quickstart [--db PATH] [--epochs N] [--limit N] [--test-limit N]
  tsumd plan --from-csv FILE|- --objective cost|time|cost_under_deadline [--deadline S] [--billing RULE]
             [--repetitions N] [--json]
)";

int usage_error(const std::string& msg) {
  std::cerr << "tsumd: " << msg << "\n" << kUsage << api::client_usage();
  return 2;
}

// --key value pairs after the subcommand words. Unknown keys are reported by the caller.
bool parse_flags(const std::vector<std::string>& args, size_t from, std::map<std::string, std::string>& out,
                 std::string& err) {
  for (size_t i = from; i < args.size(); i += 2) {
    if (!args[i].starts_with("--") || i + 1 >= args.size()) {
      err = "expected --flag value, got '" + args[i] + "'";
      return false;
    }
    out[args[i].substr(2)] = args[i + 1];
  }
  return true;
}

bool only_known(const std::map<std::string, std::string>& flags, std::initializer_list<std::string_view> known,
                std::string& err) {
  for (const auto& [k, _] : flags) {
    bool ok = false;
    for (auto n : known) ok = ok || n == k;
    if (!ok) {
      err = "unknown flag --" + k;
      return false;
    }
  }
  return true;
}

bool to_int(const std::string& s, int& out) {
  try {
    size_t n = 0;
    out = std::stoi(s, &n);
    return n == s.size();
  } catch (...) {
    return false;
  }
}

bool to_non_negative(const std::string& s, double& out) {
  try {
    size_t n = 0;
    out = std::stod(s, &n);
    return n == s.size() && std::isfinite(out) && out >= 0;
  } catch (...) {
    return false;
  }
}

bool to_positive(const std::string& s, double& out) { return to_non_negative(s, out) && out > 0; }

// "1,4,7" → {1, 4, 7}: positive ids, comma-separated.
bool to_ids(const std::string& s, std::vector<int64_t>& out) {
  size_t start = 0;
  for (size_t end = 0; end != std::string::npos; start = end + 1) {
    end = s.find(',', start);
    int id = 0;
    if (!to_int(s.substr(start, end == std::string::npos ? end : end - start), id) || id < 1) return false;
    out.push_back(id);
  }
  return true;
}

// `tsumd serve`'s flags into o; the exit status when one is wrong (said on stderr), else nullopt.
std::optional<int> serve_options(std::map<std::string, std::string>& flags, api::AppOptions& o) {
  o.db_path = flags["db"];
  std::string listen = flags.count("listen") ? flags["listen"] : "127.0.0.1:8080";
  auto colon = listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !to_int(listen.substr(colon + 1), port) || port < 0 || port > 65535)
    return usage_error("--listen must be HOST:PORT");
  o.listen_host = listen.substr(0, colon);
  if (o.listen_host.size() > 2 && o.listen_host.front() == '[') o.listen_host = o.listen_host.substr(1, o.listen_host.size() - 2);
  o.listen_port = static_cast<uint16_t>(port);
  if (flags.count("state-dir")) o.state_dir = flags["state-dir"];
  if (flags.count("bundle")) o.bundle_path = flags["bundle"];
  if (flags.count("data")) o.data_dir = flags["data"];
  if (flags.count("tls-cert")) o.tls_cert = flags["tls-cert"];
  if (flags.count("tls-key")) o.tls_key = flags["tls-key"];
  o.insecure_agents = flags.count("insecure-agents") > 0;
  if (flags.count("upload-limit")) {
    double gib = 0;
    if (!to_positive(flags["upload-limit"], gib)) return usage_error("--upload-limit must be a positive number of GiB");
    o.upload_limit = static_cast<std::uint64_t>(gib * (1ull << 30));
  }
  if (flags.count("web-dir")) o.web_dir = flags["web-dir"];
  if (flags.count("config")) {
    auto config = daemon::load_config(flags["config"]);
    if (!config) {
      std::cerr << "tsumd: " << config.error().detail << "\n";
      return 1;
    }
    o.config = std::move(*config);
  }
  o.public_url = flags.count("public-url") ? flags["public-url"] : o.config.public_url;
  if (flags.count("max-concurrent") && (!to_int(flags["max-concurrent"], o.limits.global) || o.limits.global < 1))
    return usage_error("--max-concurrent must be a positive integer");
  if (flags.count("max-per-provider") && !daemon::parse_caps(flags["max-per-provider"], &o.limits.per_provider))
    return usage_error("--max-per-provider must look like local=1,aws=4");
  if (flags.count("max-per-type") && !daemon::parse_caps(flags["max-per-type"], &o.limits.per_type))
    return usage_error("--max-per-type must look like c6i.large=2,g5.xlarge=1");
  if (flags.count("keep-logs")) {
    double days = 0;
    if (!to_non_negative(flags["keep-logs"], days) || days > 36500)
      return usage_error("--keep-logs must be a number of days from 0 to 36500 (finished runs' log lines, resource "
                         "samples and event logs older than that are let go; phases and costs are kept)");
    o.keep_logs_days = days;
  }
  if (flags.count("monthly-budget")) {
    double cap = 0;
    if (!to_positive(flags["monthly-budget"], cap)) return usage_error("--monthly-budget must be a positive amount");
    o.monthly_budget = cap;
  }
  if (flags.count("trace")) o.trace_csv = flags["trace"];
  if (flags.count("trace-db")) o.trace_db = flags["trace-db"];
  if (flags.count("trace") && flags.count("trace-db"))
    return usage_error("--trace FILE.csv and --trace-db FILE.db exclude each other: replay one source");
  if (flags.count("trace-experiments") && !to_ids(flags["trace-experiments"], o.trace_experiments))
    return usage_error("--trace-experiments must be experiment ids like 1,4,7");
  if (flags.count("trace-experiments") && o.trace_db.empty())
    return usage_error("--trace-experiments needs --trace-db FILE.db");
  if (flags.count("trace-speed") && !to_positive(flags["trace-speed"], o.trace_speed))
    return usage_error("--trace-speed must be a positive number");
  if (flags.count("trace-billing")) o.trace_billing = flags["trace-billing"];
  if (flags.count("grace")) {
    double s = 0;
    if (!to_non_negative(flags["grace"], s) || s > 3600)
      return usage_error("--grace must be a number of seconds from 0 to 3600");
    o.shutdown_grace = std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
  }
  if (o.trace_csv.empty() && o.trace_db.empty() && (flags.count("trace-speed") || flags.count("trace-billing")))
    return usage_error("--trace-speed and --trace-billing need --trace FILE.csv or --trace-db FILE.db");
  return std::nullopt;
}

// Runs the daemon until a signal has cancelled its runs and terminated their instances (or a second signal).
int run_daemon(api::AppOptions o) {
  // Connections are read, parsed and written on threads of their own; the routes run on `io`, this thread
  // (api/http/http_server.h). Declared before `io`, so it outlives the routes still pending there.
  NetworkThreads network;
  o.network = network.all();
  // Every connection is a file: the soft limit (often 1024) goes up to the hard one, and the server caps its
  // connections below whatever it is (ServerOptions::max_connections).
  const auto open_files = api::raise_open_files_limit();
  std::cerr << "tsumd: open files: up to " << open_files << ", connections: up to " << api::open_files_cap(open_files)
            << "\n";
  asio::io_context io;
  auto app = api::App::create(io, o);
  if (!app) {
    std::cerr << "tsumd: " << app.error().detail << "\n";
    return 1;
  }
  int rc = 0;
  asio::signal_set signals(io, SIGTERM, SIGINT);
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    auto port = co_await (*app)->start();
    if (!port) {
      std::cerr << "tsumd: " << port.error().detail << "\n";
      rc = 1;
      signals.cancel();
      co_await (*app)->shutdown();
      co_return;
    }
    std::cerr << "tsumd: listening on " << o.listen_host << ":" << *port << "\n";
  }, asio::detached);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    std::cerr << "tsumd: signal " << sig << ": cancelling runs and terminating their instances (grace "
              << o.shutdown_grace.count() / 1000.0 << " s; a second signal stops at once)\n";
    signals.async_wait([&](const boost::system::error_code& again, int) {
      if (again) return;
      std::cerr << "tsumd: second signal: stopping now; the next start settles the runs left\n";
      io.stop();
    });
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
      co_await (*app)->shutdown();
      signals.cancel();
      io.stop();
    }, asio::detached);
  });
  io.run();
  network.stop();  // before the App goes: its sessions refer to the App's routes
  std::cerr << "tsumd: stopped\n";
  return rc;
}

int serve(std::map<std::string, std::string> flags) {
  api::AppOptions o;
  if (auto bad = serve_options(flags, o)) return *bad;
  return run_daemon(std::move(o));
}

// `tsumd db compact`: rewrites the database without its free pages (VACUUM) and empties its log. The whole file is
// rewritten, so no daemon may hold it: the lock a daemon takes (daemon/store/db_lock.h) is taken here too.
int db_compact(std::map<std::string, std::string> flags) {
  if (flags["db"].empty()) return usage_error("db compact needs --db PATH");
  const std::string path = flags["db"];
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    std::cerr << "tsumd: " << path << ": no such database\n";
    return 1;
  }
  auto lock = daemon::DbLock::acquire(path);
  if (!lock) {
    std::cerr << "tsumd: " << lock.error().detail << " (compacting rewrites the whole file)\n";
    return 1;
  }
  auto bytes = [&] {
    std::uintmax_t n = 0;
    for (const char* suffix : {"", "-wal"}) {
      std::error_code e;
      auto size = std::filesystem::file_size(path + suffix, e);
      if (!e) n += size;
    }
    return n;
  };
  const auto before = bytes();
  auto db = daemon::Db::open(path);
  if (!db) {
    std::cerr << "tsumd: " << db.error().detail << "\n";
    return 1;
  }
  if (auto s = (*db)->exec("PRAGMA wal_checkpoint(TRUNCATE); VACUUM; PRAGMA wal_checkpoint(TRUNCATE);"); !s) {
    std::cerr << "tsumd: compacting " << path << ": " << s.error().detail << "\n";
    return 1;
  }
  (*db).reset();  // closed: its log is checkpointed and removed
  const auto after = bytes();
  std::cout << path << ": " << before << " -> " << after << " bytes\n";
  return 0;
}

int token_create(std::map<std::string, std::string> flags) {
  if (flags["db"].empty()) return usage_error("token create needs --db PATH");
  auto db = daemon::Db::open(flags["db"]);
  if (!db) {
    std::cerr << "tsumd: " << db.error().detail << "\n";
    return 1;
  }
  if (auto v = (*db)->migrate(sql::migrations()); !v) {
    std::cerr << "tsumd: " << v.error().detail << "\n";
    return 1;
  }
  SystemClock clock;
  daemon::TokenStore tokens(**db, clock);
  std::string scope = flags.count("scope") ? flags["scope"] : "admin";
  if (scope != "admin" && scope != "metrics") return usage_error("--scope must be admin or metrics");
  auto t = scope == "admin" ? tokens.create_admin() : tokens.create_metrics();
  if (!t) {
    std::cerr << "tsumd: " << t.error().detail << "\n";
    return 1;
  }
  std::cout << *t << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage << api::client_usage();
    return args.empty() ? 2 : 0;
  }
  if (api::is_client_command(args)) return api::run_client(args, std::cout, std::cerr, isatty(STDOUT_FILENO) == 1);
  std::map<std::string, std::string> flags;
  std::string err;
  if (args[0] == "serve") {
    const bool insecure = std::erase(args, std::string("--insecure-agents")) > 0;
    if (!parse_flags(args, 1, flags, err) ||
        !only_known(flags, {"db", "listen", "state-dir", "bundle", "data", "max-concurrent", "max-per-provider",
                            "max-per-type", "web-dir", "monthly-budget", "config", "trace", "trace-speed",
                            "trace-billing", "trace-db", "trace-experiments", "public-url", "tls-cert", "tls-key",
                            "upload-limit", "grace", "keep-logs"},
                    err))
      return usage_error(err);
    if (insecure) flags["insecure-agents"] = "1";
    if (flags["db"].empty()) return usage_error("serve needs --db PATH");
    return serve(flags);
  }
  if (args[0] == "offers") {
    std::vector<std::string> rest(args.begin() + 1, args.end());
    bool json = false;
    std::erase_if(rest, [&](const std::string& a) { return a == "--json" && (json = true); });
    rest.insert(rest.begin(), "offers");
    if (!parse_flags(rest, 1, flags, err) || !only_known(flags, {"config", "provider", "catalog-out"}, err))
      return usage_error(err);
    if (flags["config"].empty()) return usage_error("offers needs --config FILE");
    if (flags.count("catalog-out") && flags["provider"].empty()) return usage_error("--catalog-out needs --provider NAME");
    return daemon::offers_command(flags["config"], flags["provider"], json, flags["catalog-out"]);
  }
  if (args[0] == "check") {
    std::vector<std::string> rest(args.begin() + 1, args.end());
    bool json = false;
    std::erase_if(rest, [&](const std::string& a) { return a == "--json" && (json = true); });
    rest.insert(rest.begin(), "check");
    if (!parse_flags(rest, 1, flags, err) || !only_known(flags, {"config"}, err)) return usage_error(err);
    return daemon::check_command(flags["config"], json);
  }
  if (args[0] == "db" && args.size() > 1 && args[1] == "compact") {
    if (!parse_flags(args, 2, flags, err) || !only_known(flags, {"db"}, err)) return usage_error(err);
    return db_compact(flags);
  }
  if (args[0] == "token" && args.size() > 1 && args[1] == "create") {
    if (!parse_flags(args, 2, flags, err) || !only_known(flags, {"db", "scope"}, err)) return usage_error(err);
    return token_create(flags);
  }
  if (args[0] == "plan") return billing::plan_main(std::vector<std::string>(args.begin() + 1, args.end()), std::cout,
                                                  std::cerr);
  if (args[0] == "quickstart") {
    if (!parse_flags(args, 1, flags, err) ||
        !only_known(flags, {"db", "epochs", "limit", "test-limit", "data", "bundle"}, err))
      return usage_error(err);
    api::QuickstartOptions q;
    if (flags.count("db")) q.db_path = flags["db"];
    if (flags.count("data")) q.data_dir = flags["data"];
    if (flags.count("bundle")) q.bundle_path = flags["bundle"];
    for (auto [key, dst] : {std::pair{"epochs", &q.epochs}, {"limit", &q.limit}, {"test-limit", &q.test_limit}})
      if (flags.count(key) && (!to_int(flags[key], *dst) || *dst < 1))
        return usage_error(std::string("--") + key + " must be a positive integer");
    return api::run_quickstart(q);
  }
  return usage_error("unknown command '" + args[0] + "'");
}
