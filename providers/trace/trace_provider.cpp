#include "providers/trace/trace_provider.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <algorithm>
#include <cmath>

#include "billing/prices/billing_rule.h"

namespace tsum::providers {

namespace asio = boost::asio;
using nlohmann::json;

namespace {
constexpr std::string_view kBegin = "begin";  // named: GCC 12 mishandles temporaries inside co_await
constexpr std::string_view kEnd = "end";
}  // namespace

struct TraceProvider::Instance {
  Instance(asio::any_io_executor ex, const billing::CsvRun& r) : row(r), timer(std::move(ex)) {}
  std::string id, tag, token_key, url, run_id, run_token;
  const billing::CsvRun& row;
  InstanceState state = InstanceState::running;
  std::string detail = "stand-in agent running";
  bool stopped = false;  // terminate() was called
  double deadline_s = 0;     // LaunchSpec::deadline_s, on the recorded clock; 0: none
  double clock_s = 0;        // recorded seconds since create
  bool past_deadline = false;
  asio::steady_timer timer;

  InstanceHandle handle() const {
    const int nodes = std::max(1, row.run.cfg.nodes);  // the machine it stands for: all of them (offers())
    return {"trace", id, {{"config", row.run.cfg.config}, {"line", row.line}, {"run_id", run_id},
                          {"cores", row.run.cfg.cores * nodes}, {"gpus", row.run.cfg.gpus * nodes}}};
  }
};

Result<std::unique_ptr<TraceProvider>> TraceProvider::create(asio::any_io_executor ex, TraceOptions opts) {
  if (opts.runs.empty()) return make_error(Code::invalid_argument, "the trace has no runs");
  if (!(opts.speed > 0) || !std::isfinite(opts.speed))
    return make_error(Code::invalid_argument, "trace speed must be a positive number");
  if (auto rule = billing::parse_rule(opts.billing); !rule) return rule.error();
  std::map<std::string, std::string> config_of_type;
  for (const auto& r : opts.runs) {
    auto [it, fresh] = config_of_type.emplace(r.run.cfg.instance_type, r.run.cfg.config);
    if (!fresh && it->second != r.run.cfg.config)
      return make_error(Code::invalid_argument, "line " + std::to_string(r.line) + ": instance_type '" +
                                                    r.run.cfg.instance_type + "' belongs to config '" + it->second +
                                                    "' already; a trace needs one config per instance_type");
  }
  return std::unique_ptr<TraceProvider>(new TraceProvider(std::move(ex), std::move(opts)));
}

TraceProvider::TraceProvider(asio::any_io_executor ex, TraceOptions opts)
    : ex_(std::move(ex)), opts_(std::move(opts)),
      // A mark the daemon cannot take now (unreachable, 5xx: e.g. its disk is full) is retried for 10 minutes,
      // as the real agent's spool does (TSUM_DRAIN_S); a 4xx is final.
      // Connections are kept: a mark sent twice is taken once (the ledger's marks are write-once).
      // The stand-ins stand for machines that post side by side: with 4 transfers at once, 64 live runs' marks
      // queued behind each other (some 60 ms a phase on a 2-core machine, bench/scale.sh), which is the
      // stand-ins' limit, not the daemon's.
      http_(http::HttpClientOptions{.threads = 16,
                                    .reuse_connections = true,
                                    .retry = {.max_attempts = 100000, .base_delay = std::chrono::milliseconds(50),
                                              .max_delay = std::chrono::milliseconds(2000),
                                              .deadline = std::chrono::milliseconds(600000)}}) {
  for (const auto& r : opts_.runs) rows_by_type_[r.run.cfg.instance_type].push_back(&r);
}

TraceProvider::~TraceProvider() {
  for (auto& [_, inst] : instances_) {
    inst->stopped = true;
    inst->timer.cancel();
  }
}

Task<Result<std::vector<Offer>>> TraceProvider::offers(const Requirements& req) {
  std::vector<Offer> out;
  for (const auto& [type, rows] : rows_by_type_) {
    const auto& first = *rows.front();
    const auto& cfg = first.run.cfg;
    if (!req.instance_type.empty() && req.instance_type != type) continue;
    const int nodes = std::max(1, cfg.nodes);  // one instance stands for all of them
    if (cfg.cores * nodes < req.min_vcpus || cfg.gpus * nodes < req.gpus) continue;
    Offer o;
    o.provider = "trace";
    o.instance_type = type;
    o.vcpus = cfg.cores * nodes;
    o.gpus = cfg.gpus * nodes;
    o.gpu_type = cfg.gpu_type;
    o.memory_gib = cfg.memory_gib * nodes;
    o.family = cfg.cpu_family;
    o.cpu_model = cfg.cpu_model;
    o.hourly_price = first.price_per_hour;
    if (!first.currency.empty()) o.currency = first.currency;
    o.region = "trace";
    o.billing_rule = opts_.billing;
    o.note = "replays " + cfg.config + " (" + std::to_string(rows.size()) + " recorded runs" +
             (nodes > 1 ? ", a cluster of " + std::to_string(nodes) + " machines" : "") + "); billing " + opts_.billing;
    out.push_back(std::move(o));
  }
  co_return out;
}

const billing::CsvRun* TraceProvider::next_row(const std::string& instance_type) {
  auto it = rows_by_type_.find(instance_type);
  if (it == rows_by_type_.end()) return nullptr;
  size_t n = played_[instance_type]++;
  return it->second[n % it->second.size()];
}

Task<Result<InstanceHandle>> TraceProvider::create(const Offer& offer, const LaunchSpec& spec) {
  if (spec.idempotency_token.empty()) co_return make_error(Code::invalid_argument, "create needs an idempotency token");
  for (const auto& [_, inst] : instances_)
    if (inst->token_key == spec.idempotency_token) co_return inst->handle();
  auto env = [&](const char* k) {
    auto it = spec.env.find(k);
    return it == spec.env.end() ? std::string() : it->second;
  };
  if (env("TSUM_URL").empty() || env("TSUM_RUN_ID").empty() || env("TSUM_TOKEN").empty())
    co_return make_error(Code::invalid_argument, "trace create needs TSUM_URL, TSUM_RUN_ID and TSUM_TOKEN");
  const auto* row = next_row(offer.instance_type);
  if (!row)
    co_return make_error(Code::invalid_argument, "the trace has no instance type '" + offer.instance_type + "'");
  auto inst = std::make_shared<Instance>(ex_, *row);
  inst->id = "trace-" + spec.run_id + "-" + spec.idempotency_token.substr(0, 8);
  inst->tag = spec.tag;
  inst->token_key = spec.idempotency_token;
  inst->url = env("TSUM_URL") + "/v1/runs/" + env("TSUM_RUN_ID") + "/events";
  inst->run_id = env("TSUM_RUN_ID");
  inst->run_token = env("TSUM_TOKEN");
  if (std::isfinite(spec.deadline_s) && spec.deadline_s > 0) inst->deadline_s = spec.deadline_s;
  instances_[inst->id] = inst;
  asio::co_spawn(ex_, play(inst), asio::detached);
  co_return inst->handle();
}

// Sleeps recorded_s / speed of wall time. false once the instance was terminated.
Task<bool> TraceProvider::wait(Instance& inst, double recorded_s) {
  inst.timer.expires_after(std::chrono::microseconds(static_cast<int64_t>(recorded_s / opts_.speed * 1e6)));
  boost::system::error_code ec;
  co_await inst.timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  co_return !inst.stopped;
}

// Runs `recorded_s` of the recorded clock, or what its deadline leaves: there the instance exits past its deadline.
// false once it stopped (terminated, or at its deadline).
Task<bool> TraceProvider::run_for(Instance& inst, double recorded_s, std::string_view phase) {
  const double left = inst.deadline_s > 0 ? std::max(0.0, inst.deadline_s - inst.clock_s) : recorded_s;
  if (recorded_s <= left) {
    if (!co_await wait(inst, recorded_s)) co_return false;
    inst.clock_s += recorded_s;
    co_return true;
  }
  if (!co_await wait(inst, left)) co_return false;
  inst.clock_s = inst.deadline_s;
  inst.past_deadline = true;
  inst.state = InstanceState::exited;
  inst.detail = "stand-in agent stopped at the run's deadline of " + std::to_string(std::lround(inst.deadline_s)) +
                " s (recorded seconds), in " + std::string(phase) + " of line " + std::to_string(inst.row.line);
  co_return false;
}

Task<Status> TraceProvider::post_mark(Instance& inst, std::string_view phase, std::string_view mark, double mono_s) {
  http::HttpRequest req;
  req.method = "POST";
  req.url = inst.url;
  req.headers = {{"Authorization", "Bearer " + inst.run_token}, {"Content-Type", "application/json"}};
  req.body = json{{"phase", phase}, {"mark", mark}, {"mono_s", mono_s},
                  {"attrs", {{"trace_line", inst.row.line}, {"config", inst.row.run.cfg.config}}}}
                 .dump();
  req.timeout = std::chrono::milliseconds(5000);
  auto resp = co_await http_.send(req);
  if (!resp) co_return resp.error();
  if (resp->status / 100 != 2)
    co_return make_error(Code::unavailable, "daemon answered " + std::to_string(resp->status) + ": " + resp->body);
  co_return Status{};
}

// The stand-in agent: first sign of life after startup, then install … save with the recorded durations.
Task<void> TraceProvider::play(std::shared_ptr<Instance> inst) {
  const auto& p = inst->row.run.phases;
  if (!co_await run_for(*inst, p[billing::kStartup], billing::kPhaseNames[billing::kStartup])) co_return;
  double mono = 0;  // the stand-in's monotonic clock, advanced by exactly the recorded durations
  for (int i = billing::kInstall; i <= billing::kSave; ++i) {
    std::string_view phase = billing::kPhaseNames[i];
    auto begun = co_await post_mark(*inst, phase, kBegin, mono);
    if (begun && !co_await run_for(*inst, p[i], phase)) co_return;
    mono += p[i];
    Status ended = begun;
    if (begun) ended = co_await post_mark(*inst, phase, kEnd, mono);
    if (!ended) {
      inst->state = InstanceState::exited;
      inst->detail = "stand-in agent stopped at " + std::string(phase) + ": " + ended.error().detail;
      co_return;
    }
    if (inst->stopped) co_return;
  }
  inst->state = InstanceState::exited;
  inst->detail = "stand-in agent finished line " + std::to_string(inst->row.line);
}

Task<Result<InstanceStatus>> TraceProvider::describe(const InstanceHandle& h) {
  auto it = instances_.find(h.id);
  if (it == instances_.end()) co_return InstanceStatus{InstanceState::gone, "no such trace instance", ""};
  InstanceStatus st{it->second->state, it->second->detail, "trace"};
  st.past_deadline = it->second->past_deadline;
  co_return st;
}

Task<Status> TraceProvider::terminate(const InstanceHandle& h) {
  auto it = instances_.find(h.id);
  if (it == instances_.end()) co_return Status{};
  auto inst = it->second;
  if (!inst->stopped) {
    inst->stopped = true;
    inst->timer.cancel();
    asio::steady_timer poweroff(ex_, std::chrono::microseconds(static_cast<int64_t>(
                                         inst->row.run.phases[billing::kPoweroff] / opts_.speed * 1e6)));
    boost::system::error_code ec;
    co_await poweroff.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    instances_.erase(h.id);
  }
  co_return Status{};
}

Task<Result<std::vector<InstanceHandle>>> TraceProvider::list_tagged(std::string_view tag) {
  std::vector<InstanceHandle> out;
  for (const auto& [_, inst] : instances_)
    if (inst->tag == tag) out.push_back(inst->handle());
  co_return out;
}

}  // namespace tsum::providers
