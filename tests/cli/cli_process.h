// Runs `tsumd <client command>` as a child process and captures its stdout, stderr and exit code.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace tsum::testing {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

// A shell word, single-quoted.
inline std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs TSUMD_BIN with `args` and `env` (NAME=value pairs added to a clean HOME in `dir`), stdin closed.
inline CliResult run_cli(const TempDir& dir, const std::vector<std::string>& args,
                         const std::map<std::string, std::string>& env = {}) {
  std::string cmd = "env -u TSUM_URL -u TSUM_TOKEN -u XDG_CONFIG_HOME HOME=" + quote(dir.path().string());
  for (const auto& [k, v] : env) cmd += " " + k + "=" + quote(v);
  cmd += " " + quote(TSUMD_BIN);
  for (const auto& a : args) cmd += " " + quote(a);
  const std::string err_file = dir.file("cli.stderr");
  cmd += " 2>" + quote(err_file) + " </dev/null";
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_file);
  r.err.assign(std::istreambuf_iterator<char>(in), {});
  return r;
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

}  // namespace tsum::testing
