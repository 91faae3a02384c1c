// RunManager (daemon/runs/run_manager_parts.h): preparing and creating a run's machines, moving it to another offer
// when capacity runs out, and the environment its agents start with.
#include "daemon/runs/run_manager_parts.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <utility>

#include "billing/planner.h"
#include "common/embedded.h"
#include "daemon/runs/recovery.h"
#include "daemon/runs/startup_deadline.h"
#include "providers/node_group.h"

namespace tsum::daemon {

namespace asio = boost::asio;
using providers::InstanceHandle;
using providers::InstanceState;
using std::chrono::milliseconds;

asio::awaitable<RunManager::Outcome> RunManager::provision_and_watch(LiveRun& live) {
  for (int moves = 0;; ++moves) {
    Launch launch;
    if (auto failed = co_await prepare_launch(live, launch)) co_return *failed;
    if (auto failed = co_await warm_machine_cache(live, launch)) co_return *failed;
    auto failed = co_await create_machines(live, launch);
    if (!failed) co_return co_await watch(live, launch);
    if (!launch.no_capacity || moves >= 16) co_return *failed;
    // The offer's capacity ran out before any machine was had: the attempt goes to the next offer its policy
    // allows (the one that failed is passed over now), in place.
    auto to = co_await next_attempt_of(live.id, /*same_attempt=*/true);
    if (!to) co_return Outcome{RunStatus::failed, failed->second + "; " + to.error().detail};
    const nlohmann::json skipped = {{"offer", offer_key(launch.offer, launch.row.market)},
                                    {"error", launch.no_capacity->detail}};
    if (auto st = s_.ledger.move_attempt(live.id, *to, skipped); !st)
      co_return Outcome{RunStatus::failed, failed->second + "; " + st.error().detail};
    (void)s_.tokens.revoke_run(live.id);  // prepare_launch makes the attempt's token again
    log_line("run " + std::to_string(live.id) + ": " + offer_key(launch.offer, launch.row.market) +
             " has no capacity; trying " + to->provider + " " + (to->region.empty() ? "" : to->region + " ") +
             to->instance_type + " " + to->market);
  }
}

asio::awaitable<std::optional<RunManager::Outcome>> RunManager::prepare_launch(LiveRun& live, Launch& l) {
  auto row = s_.store.run(live.id);
  if (!row) co_return Outcome{RunStatus::failed, row.error().detail};
  l.row = *row;
  l.provider = s_.providers.get(row->provider);
  if (!l.provider) co_return Outcome{RunStatus::failed, "provider '" + row->provider + "' is not configured"};
  auto exp = s_.store.experiment(row->experiment_id);
  if (!exp) co_return Outcome{RunStatus::failed, exp.error().detail};
  l.run_deadline = exp->spec.deadline_s ? std::chrono::seconds(*exp->spec.deadline_s) : opts_.run_deadline;
  if (auto st = s_.ledger.advance(live.id, RunStatus::provisioning, "dispatched"); !st)  // e.g. the disk is full:
    co_return Outcome{st.error().code == Code::unavailable ? RunStatus::queued : RunStatus::failed,  // try later
                      st.error().detail};

  // Named, not a temporary: GCC 12 mishandles temporaries inside co_await expressions.
  const providers::Requirements wanted{.instance_type = row->instance_type};
  auto offers = co_await l.provider->offers(wanted);
  if (!offers || offers->empty())
    co_return Outcome{RunStatus::failed, "no offer for " + row->instance_type +
                                             (offers ? "" : ": " + offers.error().detail)};
  // The run's region (a recovery's pick), else the provider's default: its first offer's.
  auto in_region = std::find_if(offers->begin(), offers->end(),
                                [&](const providers::Offer& o) { return row->region.empty() || o.region == row->region; });
  if (in_region == offers->end())
    co_return Outcome{RunStatus::failed, "no offer for " + row->instance_type + " in region " + row->region};
  l.offer = *in_region;
  const auto variant = static_cast<size_t>(row->config_index);
  if (variant >= exp->spec.variants())
    co_return Outcome{RunStatus::failed, "run names configuration " + std::to_string(variant) + " of " +
                                             std::to_string(exp->spec.variants())};
  const Workload& workload = exp->spec.workload_of(variant);
  const RunConfig& config = exp->spec.config_of(variant);
  l.spot_config = config.market == "spot";
  // Attempt k of a spot run in spot_recovery.zones[(k - 1) % n]: a recovery moves on from where it was taken back.
  const auto& zones = config.spot_recovery.zones;
  const std::string zone = !row->zone.empty() ? row->zone
                           : zones.empty()    ? ""
                                              : zones[static_cast<size_t>(row->attempt - 1) % zones.size()];
  if (auto st = s_.ledger.begin_attempt(live.id, {row->provider, row->instance_type, row->market, row->hourly_price, zone,
                                                  l.offer.region, l.offer.currency});
      !st)
    co_return Outcome{RunStatus::failed, st.error().detail};
  auto env = agent_env(*l.provider, workload, l.offer.gpus);
  if (!env) co_return Outcome{RunStatus::failed, env.error().detail};
  if (row->market == "spot" || row->attempt > 1) {
    // A spot run checkpoints on the notice and every checkpoint_every_s; a later attempt resumes the last one.
    (*env)["TSUM_ATTEMPT"] = std::to_string(row->attempt);
    (*env)["TSUM_CHECKPOINT_EVERY"] = std::to_string(config.spot_recovery.checkpoint_every_s);
    // Each node its own rank's checkpoint, all at one step (create_machines); one machine the newest.
    auto ck = s_.ledger.resume_checkpoints(live.id, row->nodes);
    if (!ck) co_return Outcome{RunStatus::failed, ck.error().detail};
    for (const auto& c : *ck)
      l.resume.push_back({"/v1/runs/" + std::to_string(live.id) + "/artifacts/" + c.artifact, c.sha256});
    if (l.resume.size() == 1) {
      (*env)["TSUM_RESUME_URL"] = l.resume.front().first;
      (*env)["TSUM_RESUME_SHA256"] = l.resume.front().second;
    }
  }
  auto token = s_.tokens.create_for_run(live.id);
  if (!token) co_return Outcome{RunStatus::failed, token.error().detail};

  providers::LaunchSpec& spec = l.spec;
  spec.run_id = std::to_string(live.id);
  spec.tag = opts_.tag;
  // Each attempt its own token: a cloud answers a repeated one with the first attempt's (gone) machine.
  spec.idempotency_token = "run" + std::to_string(live.id) + "-" + opts_.tag +
                           (row->attempt > 1 ? "-a" + std::to_string(row->attempt) : "");
  spec.agent_script = std::string(find_embedded(agent_files(), "tsum-agent.sh"));
  spec.agent_sha256 = opts_.agent_sha256;
  spec.market = row->market;
  spec.zone = zone;
  spec.env = std::move(*env);
  spec.env["TSUM_RUN_ID"] = spec.run_id;
  spec.env["TSUM_TOKEN"] = *token;
  // A job runs in Docker when it names an image (a command job always does); a folder job without one runs on
  // the machine itself.
  if (config.runtime == "docker" || (workload.kind == "job" && !workload.image.empty())) {
    spec.runtime = "docker";
    spec.env["TSUM_RUNTIME"] = "docker";
    spec.env["TSUM_IMAGE"] = workload.image;
    // Registry credentials, when the daemon has them (tsumd's environment, as for the clouds' secrets).
    for (const char* k : {"TSUM_REGISTRY_USER", "TSUM_REGISTRY_PASSWORD"})
      if (const char* v = std::getenv(k); v && *v) spec.env[k] = v;
  }
  if (row->nodes > 1) {
    spec.env["TSUM_NODES"] = std::to_string(row->nodes);
    spec.env["TSUM_DIST"] = config.dist;
  }
  co_return std::nullopt;
}

asio::awaitable<std::optional<RunManager::Outcome>> RunManager::warm_machine_cache(LiveRun& live, Launch& l) {
  if (!l.provider->capabilities().machine_cache || l.row.nodes > 1) co_return std::nullopt;
  providers::LaunchSpec spec = l.spec;
  spec.env["TSUM_WARM_ONLY"] = "1";
  spec.idempotency_token += "-warm";
  auto h = co_await l.provider->create(l.offer, spec);
  if (!h) co_return Outcome{RunStatus::failed, "warming the machine's cache: create failed: " + h.error().detail};
  const auto deadline = std::chrono::steady_clock::now() + l.run_deadline;
  std::string detail = "the run's deadline passed";
  bool ok = false;
  for (milliseconds backoff(50);; backoff = std::min(backoff * 2, milliseconds(500))) {
    if (live.cancel_reason) {
      detail.clear();
      break;
    }
    auto st = co_await l.provider->describe(*h);
    if (st && st->state != InstanceState::running && st->state != InstanceState::pending) {
      detail = st->detail;
      ok = st->exit_status == 0;
      break;
    }
    if (std::chrono::steady_clock::now() + backoff > deadline) break;
    co_await sleep_for(backoff);
  }
  (void)co_await l.provider->terminate(*h);
  if (live.cancel_reason) co_return Outcome{RunStatus::cancelled, *live.cancel_reason};
  // A warm-up is for comparability, not a gate: where it failed, the run goes on and meets the failure itself
  // (with its phases measured and its own reason), or measures a cold install.
  if (!ok) log_line("run " + std::to_string(live.id) + ": the warm-up of the machine's cache failed (" + detail +
                    "; its output is in the run's log); the run goes on");
  co_return std::nullopt;
}

asio::awaitable<std::optional<RunManager::Outcome>> RunManager::create_machines(LiveRun& live, Launch& l) {
  const int nodes = l.row.nodes;
  l.t0 = std::chrono::steady_clock::now();
  (void)s_.ledger.record_mark(live.id, Phase::startup, Mark::begin, s_.clock.now_s(), ClockDomain::daemon);
  // One create per node, each node's startup timed from its own; a gang provider makes them all in one.
  const bool gang = l.provider->capabilities().gang_nodes;
  std::vector<InstanceHandle> created;
  for (int node = 0; node < (gang ? 1 : nodes); ++node) {
    providers::LaunchSpec node_spec = l.spec;
    node_spec.deadline_s = static_cast<double>(l.run_deadline.count());  // from t0, this create
    if (gang) {
      node_spec.nodes = nodes;
    } else if (nodes > 1) {
      node_spec.env["TSUM_NODE"] = std::to_string(node);
      node_spec.idempotency_token += "-n" + std::to_string(node);
      if (l.resume.size() == static_cast<size_t>(nodes)) {  // its rank's checkpoint
        node_spec.env["TSUM_RESUME_URL"] = l.resume[static_cast<size_t>(node)].first;
        node_spec.env["TSUM_RESUME_SHA256"] = l.resume[static_cast<size_t>(node)].second;
      }
    }
    for (int n = gang ? 0 : node; n < (gang ? nodes : node + 1) && nodes > 1; ++n)
      (void)s_.ledger.record_node_mark(live.id, n, Phase::startup, Mark::begin, s_.clock.now_s(), ClockDomain::daemon);
    auto handle = co_await l.provider->create(l.offer, node_spec);
    if (!handle) {
      const std::string why = "create failed" + (nodes > 1 ? " for node " + std::to_string(node) : "") + ": " +
                              handle.error().detail;
      if (l.spot_config && no_capacity(handle.error())) {
        // Passed over by every run's recoveries for a while. With no machine had yet, the attempt moves in place
        // (provision_and_watch); with some nodes up, they go and the run goes on as after an interruption.
        no_capacity_[offer_key(l.offer, l.row.market)] = std::chrono::steady_clock::now();
        if (created.empty()) {
          l.no_capacity = handle.error();
          co_return Outcome{RunStatus::failed, why};
        }
        co_return interrupted(live, why);
      }
      co_return Outcome{RunStatus::failed, why};
    }
    // Fault injection for the leak-guard tests: die as kill -9 would, after the create and before its commit.
    if (const char* f = std::getenv("TSUM_FAULT_EXIT_AFTER_CREATE"); f && std::string_view(f) == "1") _exit(137);
    created.push_back(*handle);
    auto st = gang || nodes == 1 ? s_.ledger.set_instance(live.id, handle->to_json())
                                 : s_.ledger.extend_instance(live.id, providers::make_node_group(l.row.provider, created).to_json());
    if (!st) {
      // Not in the ledger, so run_one would not terminate it: terminate it here (a failure leaves it to the next
      // start's sweep of tagged instances).
      auto t = co_await l.provider->terminate(*handle);
      std::string reason = "could not record instance " + handle->id + ": " + st.error().detail;
      reason += t ? "; it was terminated" : "; terminating it failed: " + t.error().detail;
      co_return Outcome{RunStatus::failed, reason};
    }
  }
  l.instance = gang || nodes == 1 ? created.front() : providers::make_node_group(l.row.provider, created);
  (void)s_.ledger.advance(live.id, RunStatus::booting,
                          nodes > 1 ? std::to_string(nodes) + " nodes created (" + l.instance.id + ")"
                                    : "instance " + l.instance.id + " created");
  co_return std::nullopt;
}

Result<std::map<std::string, std::string>> RunManager::agent_env(providers::Provider& p, const Workload& w, int gpus) {
  std::map<std::string, std::string> env;
  std::string url = opts_.daemon_url;
  if (!p.capabilities().reaches_daemon) {
    if (opts_.public_url.empty())
      return make_error(Code::invalid_argument,
                        "provider " + std::string(p.name()) + " runs machines elsewhere, and they cannot reach this "
                        "daemon's " + opts_.daemon_url + ": start tsumd with --public-url URL (or daemon.public_url "
                        "in the config file), an address those machines reach");
    url = opts_.public_url;
  }
  env["TSUM_URL"] = url;
  if (url.starts_with("https://") && !opts_.ca_pem.empty()) env["TSUM_CA_PEM"] = opts_.ca_pem;
  // Paths under TSUM_URL are the daemon's own: the agent prefixes them, and sends its token only there.
  env["TSUM_TRAINER_URL"] = opts_.trainer_url.empty() ? "/v1/blobs/" + opts_.trainer_sha256 : opts_.trainer_url;
  env["TSUM_TRAINER_SHA256"] = opts_.trainer_sha256;
  if (w.dataset.empty()) {
    // Reads no data set: resnet50's synthetic data, or the inference sweep and a serving client sending JPEGs,
    // which make their JPEGs in load_data.
    if (w.kind == "infer" || (w.kind == "serve" && w.input == "jpeg")) {  // infer: both sources read JPEGs
      int most = w.kind == "serve" ? w.batch.value_or(1) : 1;
      for (int b : w.batches) most = std::max(most, b);
      const int side = w.model.starts_with("mnist") ? 28
                       : w.model.starts_with("cifar") ? 32
                       : w.model == "delay"           ? 8
                                                      : 224;  // its input
      env["TSUM_GEN_IMAGES"] = "--n " + std::to_string(std::max(64, 2 * most)) + " --size " + std::to_string(side);
    }
  } else if (!w.dataset_url.empty()) {
    env["TSUM_DATA_URL"] = w.dataset_url;
    env["TSUM_DATA_SHA256"] = w.dataset_sha256;
    env["TSUM_DATA_FORMAT"] = w.dataset_format;
    env["TSUM_DATA_NAME"] = w.dataset;
  } else {
    auto d = s_.datasets.get(w.dataset);
    if (!d) return make_error(Code::invalid_argument, "data set '" + w.dataset + "': " + d.error().detail);
    env["TSUM_DATA_URL"] = "/v1/blobs/" + d->sha256;
    env["TSUM_DATA_SHA256"] = d->sha256;
    env["TSUM_DATA_FORMAT"] = d->format;
    env["TSUM_DATA_NAME"] = d->name;
  }
  env["TSUM_KIND"] = w.kind;
  if (w.kind == "job") {
    // The job's argv and environment as shell words (single-quoted), for the agent's `eval "set -- ..."`.
    auto quoted = [](const std::string& v) {
      std::string q = "'";
      for (char c : v) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      return q + "'";
    };
    std::string argv, vars;
    for (const auto& a : w.command) argv += (argv.empty() ? "" : " ") + quoted(a);
    for (const auto& [k, v] : w.env) vars += (vars.empty() ? "" : " ") + std::string("-e ") + quoted(k + "=" + v);
    if (!w.command.empty()) env["TSUM_JOB_COMMAND"] = argv;
    env["TSUM_JOB_ENV"] = vars;
    if (!w.run.empty()) env["TSUM_JOB_RUN"] = w.run;
    if (!w.setup.empty()) env["TSUM_JOB_SETUP"] = w.setup;
    if (!w.workdir_sha256.empty()) {
      env["TSUM_WORKDIR_URL"] = "/v1/blobs/" + w.workdir_sha256;
      env["TSUM_WORKDIR_SHA256"] = w.workdir_sha256;
    }
  } else {
    env["TSUM_TRAIN_ARGS"] = w.train_args(gpus);
    if (w.kind == "serve") env["TSUM_LOAD_ARGS"] = w.load_args();
  }
  return env;
}

}  // namespace tsum::daemon
