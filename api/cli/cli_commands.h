// The pieces tsumd's client commands share (api/cli/cli_client.cpp: the usage, parsing, dispatch and the helpers
// below; cli_experiments.cpp: presets, experiments, runs and their logs; cli_plan.cpp: plan, schedule, token, offers
// and search). Nothing outside api/cli/ includes it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/cli/cli_context.h"

namespace tsum::api::cli_detail {

using nlohmann::json;

// A command line: its words, and its flags by name.
struct Args {
  std::vector<std::string> words;  // the command words and positional arguments
  std::map<std::string, std::string> flags;
  bool json = false;
  bool wait = false;
  bool all = false;     // a list: every page, following next_cursor
  bool follow = false;  // runs logs -f
};

// The rows of a paged list and what its last page said of the rest (list_pages).
struct Listed {
  json rows = json::array();
  int64_t total = 0;
  std::string next_cursor;
};

// cli_client.cpp
int usage(std::ostream& err, const std::string& msg);
bool positive_id(const std::string& s);
// Percent-encodes a query value.
std::string encode(const std::string& s);
std::string local_time(const json& unix_s);
// The JSON of a spec file (JSON, or YAML by its suffix): exit 2 naming the file, and where it does not parse the
// line and column.
std::optional<json> read_spec(const Args& a, std::ostream& err, int* code);
// --wait's --timeout in seconds (default a day); nullopt when it is not a positive number.
std::optional<double> wait_timeout(const Args& a);
void print_json(cli::Context& c, const json& j);
// A paged list (GET /v1/runs, /v1/experiments): `base` with the page flags (--limit, --cursor, --order) and
// `filters` from the flags; one page, or with --all every page, following next_cursor. The rows under `key`, and
// what the last page said of the rest.
std::optional<Listed> list_pages(cli::Context& c, const Args& a, const std::string& base, const char* key,
                                 std::initializer_list<const char*> filters, int* code);
// After a page that is not the last: how many more there are and how to get them.
void more_hint(cli::Context& c, const Listed& l, const char* what);

// cli_experiments.cpp
// `experiment create --preset NAME`: POST /v1/presets/NAME, which creates the preset's experiments.
int preset_create(cli::Context& c, const Args& a, const std::string& name);
int preset_list(cli::Context& c);
int experiment_create(cli::Context& c, const Args& a);
// A spec whose workload.workdir names a folder (a path, relative to the spec file's directory, not "sha256:..."):
// the folder is packed (api/cli/workdir_pack.h), uploaded unless the daemon has those bytes already, and named by its
// hash in the spec sent. kExitOk, or the exit code after the message.
int upload_workdir(cli::Context& c, const Args& a, json& spec);
int runs_list(cli::Context& c, const Args& a);
// tsumd runs join ID: the one-liner that joins a machine to a waiting byo run.
int runs_join(cli::Context& c, const std::string& id);
int experiment(cli::Context& c, const Args& a);
// `runs logs ID [-f]`: the run's output as the daemon holds it; with -f, long polls (wait=20) until the run has
// ended and every line is out. Lines of a run with several sources (nodes, attempts) are prefixed with theirs; a
// jump in a source's line numbers (the middle a long log does not keep) is said where it is.
int runs_logs(cli::Context& c, const Args& a, const std::string& id);

// cli_plan.cpp
int plan(cli::Context& c, const Args& a);
int schedule(cli::Context& c, const Args& a);
int token(cli::Context& c, const Args& a);
// tsumd offers [--provider NAME]: what the daemon's providers offer now (GET /v1/offers), spot beside on-demand.
int offers(cli::Context& c, const Args& a);
int search(cli::Context& c, const Args& a);

}  // namespace tsum::api::cli_detail
