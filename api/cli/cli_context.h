// Internals shared by the client's command files (cli_client.cpp, cli_context.cpp): one daemon call with its
// errors printed and mapped to an exit code, and plain-text tables.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "api/cli/cli_http.h"

namespace tsum::api::cli {

class Context {
 public:
  Context(CliHttp http, std::ostream& out, std::ostream& err, bool json, bool interactive)
      : out(out), err(err), json(json), interactive(interactive), http_(std::move(http)) {}

  // The reply when it is 2xx; otherwise the error is printed to err and *code set to its exit code.
  std::optional<Reply> call(const std::string& method, const std::string& target, int* code,
                            const std::string& body = "");

  // The exchange as it is, whatever its status (unavailable when the daemon cannot be reached).
  Result<Reply> raw(const std::string& method, const std::string& target, const std::string& body = "") {
    return http_.call(method, target, body);
  }

  std::ostream& out;
  std::ostream& err;
  const bool json;         // print the daemon's JSON instead of tables
  const bool interactive;  // stdout is a terminal

 private:
  CliHttp http_;
};

// Left-aligned columns separated by two spaces.
void print_table(std::ostream& out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows);

// A number with `digits` decimals, or "-" for null.
std::string fixed(const nlohmann::json& v, int digits);

// One row of the run table: RUN CONFIG REP STATUS T_SUM ACCURACY COST REASON, the cost under `rule`, followed
// by the rule's name when `name_rule`.
std::vector<std::string> run_row(const nlohmann::json& run, const std::string& rule, bool name_rule = false);
// A run's config as the dashboard names it (web/src/format.js configName), without the provider: its instance type,
// its nodes, market and runtime where not the default, and each workload field its variant sets
// ("local-1c mode=async").
std::string config_label(const nlohmann::json& config);
const std::vector<std::string>& run_header();

// "run 3 local-1c #1: learning (epoch 1/2)" (a training run; a sweep's or a serving run's learn says what it
// measures instead) and, once finished, its t_sum or reason.
std::string progress_line(const nlohmann::json& run, int epochs);

// Follows an experiment until every run finished or `timeout_s` passed: on a terminal one live line per run,
// redrawn; otherwise a line per status change. Exit code: 0 when every run is done, 1 otherwise.
int follow_experiment(Context& c, int64_t id, double timeout_s);

}  // namespace tsum::api::cli
