// providers.slurm in the config file: the Slurm provider's login node, partition prices and timeouts
// (providers/slurm/slurm_options.h). docs/slurm.md documents every field.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "providers/slurm/slurm_options.h"

namespace tsum::daemon {

// Parses providers.slurm into *out (state_dir left empty: the daemon fills it) and its startup_deadline_s.
// `dir` resolves a relative key_file or known_hosts. Pure: no file is read.
// Where slurmrestd's token comes from (providers.slurm.slurmrestd.token_env / token_file): read by
// read_slurm_token when the config is loaded, never by the parser.
struct SlurmTokenRef {
  std::string env;
  std::string file;  // absolute
};

Status parse_slurm_section(const nlohmann::json& j, const std::string& dir, providers::SlurmOptions* out,
                           std::chrono::seconds* startup_deadline, SlurmTokenRef* token);

// Reads the token into out->rest_token: the variable must be set, the file must not be readable by group or
// others. Nothing to do when slurmrestd is not configured.
Status read_slurm_token(const SlurmTokenRef& ref, providers::SlurmOptions* out);

}  // namespace tsum::daemon
