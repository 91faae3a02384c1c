// The room api/cli/ owns tsumd's client commands: argument parsing, the spec file (JSON or YAML), packing a folder
// job's folder, and each command's output. It talks to a daemon over HTTP (api/http/) and uses of the daemon only the
// spec's checks, the tar writer and the names of statuses and phases.
//
// tsumd's client commands: they talk to a running daemon over HTTP (api/cli/cli_http.h) and print tables, or the
// daemon's JSON with --json. Exit codes are api::ExitCode (docs/cli.md).
//
// client_usage() lists them; every command takes --url URL, --token TOKEN and --json. A spec file (-f) is JSON,
// or YAML by its suffix (api/cli/spec_file.h).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tsum::api {

// True when `args` (without the program name) is a client command rather than a local one: `token create
// --db` and `plan --from-csv` stay local.
bool is_client_command(const std::vector<std::string>& args);

// The client commands' usage, as `tsumd --help` and a usage error print it.
const char* client_usage();

// Runs one client command. `interactive`: stdout is a terminal, so --wait redraws live progress lines.
int run_client(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, bool interactive);

}  // namespace tsum::api
