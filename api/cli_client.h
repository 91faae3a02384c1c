// tsumd's client commands: they talk to a running daemon over HTTP (api/cli_http.h) and print tables, or the
// daemon's JSON with --json. Exit codes are api::ExitCode (docs/cli.md).
//
//   experiment create -f SPEC.json [--wait [--timeout S]]   experiment list | show ID | cancel ID
//   experiment export ID [--format csv|json]                runs list [--experiment ID] [--status S]
//   plan --experiment ID [--objective O] [--deadline S] [--budget B] [--repetitions N] [--billing RULE]
//   schedule create -f SPEC.json | list | delete ID        token create [--scope admin|metrics] | revoke ID
// Every command takes --url URL, --token TOKEN and --json.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tsum::api {

// True when `args` (without the program name) is a client command rather than a local one: `token create
// --db` and `plan --from-csv` stay local.
bool is_client_command(const std::vector<std::string>& args);

// Runs one client command. `interactive`: stdout is a terminal, so --wait redraws live progress lines.
int run_client(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, bool interactive);

}  // namespace tsum::api
