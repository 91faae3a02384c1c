#include "providers/slurm/slurm_text.h"

#include <ctime>
#include <iomanip>
#include <map>
#include <sstream>

namespace tsum::providers::slurm {

namespace {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t from = 0;
  for (;;) {
    auto at = s.find(sep, from);
    out.emplace_back(s.substr(from, at == std::string_view::npos ? std::string_view::npos : at - from));
    if (at == std::string_view::npos) return out;
    from = at + 1;
  }
}

// The tagged lines of `text`: those starting with "<tag>|", split on '|' without the tag.
std::vector<std::vector<std::string>> tagged(std::string_view text, std::string_view tag) {
  std::vector<std::vector<std::string>> out;
  for (const auto& line : split(text, '\n')) {
    std::string l = line;
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (l.size() <= tag.size() || !l.starts_with(tag) || l[tag.size()] != '|') continue;
    auto fields = split(std::string_view(l).substr(tag.size() + 1), '|');
    out.push_back(std::move(fields));
  }
  return out;
}

// The leading integer of "4", "4+", "16000(x)"; 0 when none.
long leading_int(std::string_view s) {
  long v = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) v = v * 10 + (s[i] - '0');
  return v;
}

std::optional<std::time_t> parse_time(std::string_view s) {
  std::tm tm{};
  std::istringstream in{std::string(s)};
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return std::nullopt;
  return timegm(&tm);  // both stamps are the controller's local time: their difference is what counts
}

}  // namespace

int gres_gpus(std::string_view gres, std::string* type) {
  int total = 0;
  for (auto item : split(gres, ',')) {
    if (auto paren = item.find('('); paren != std::string::npos) item.resize(paren);
    auto parts = split(item, ':');
    if (parts.empty() || parts[0] != "gpu") continue;
    if (parts.size() == 1) {
      total += 1;
      continue;
    }
    total += static_cast<int>(leading_int(parts.back()));
    if (parts.size() >= 3 && type && type->empty()) *type = parts[1];
  }
  return total;
}

std::vector<PartitionInfo> parse_sinfo(std::string_view text) {
  std::vector<PartitionInfo> out;
  std::map<std::string, size_t> index;
  for (const auto& f : tagged(text, "P")) {
    if (f.size() < 6 || f[0].empty()) continue;
    PartitionInfo p;
    p.name = f[0];
    p.cpus = static_cast<int>(leading_int(f[1]));
    p.memory_gib = static_cast<double>(leading_int(f[2])) / 1024.0;
    p.gpus = gres_gpus(f[3], &p.gpu_type);
    p.nodes = static_cast<int>(leading_int(f[4]));
    p.up = f.size() < 6 || f[5] == "up";
    auto [it, fresh] = index.emplace(p.name, out.size());
    if (fresh) {
      out.push_back(std::move(p));
      continue;
    }
    auto& q = out[it->second];  // another group of nodes of the same partition: the smallest node counts
    q.cpus = std::min(q.cpus, p.cpus);
    q.memory_gib = std::min(q.memory_gib, p.memory_gib);
    if (p.gpus < q.gpus) q.gpus = p.gpus, q.gpu_type = p.gpu_type;
    q.nodes += p.nodes;
  }
  return out;
}

std::optional<JobInfo> parse_scontrol_job(std::string_view text) {
  std::map<std::string, std::string> kv;
  for (const auto& line : split(text, '\n'))
    for (const auto& word : split(line, ' ')) {
      auto eq = word.find('=');
      if (eq == std::string::npos || eq == 0) continue;
      kv.emplace(word.substr(0, eq), word.substr(eq + 1));
    }
  if (!kv.count("JobId")) return std::nullopt;
  JobInfo j;
  j.id = kv["JobId"];
  j.name = kv["JobName"];
  j.comment = kv["Comment"];
  j.state = kv["JobState"];
  j.reason = kv["Reason"];
  j.node_list = kv["NodeList"];
  j.batch_host = kv["BatchHost"];
  j.submit_time = kv["SubmitTime"];
  j.start_time = kv["StartTime"];
  auto code = split(kv["ExitCode"], ':');
  j.exit_status = static_cast<int>(leading_int(code[0]));
  if (code.size() > 1) j.exit_signal = static_cast<int>(leading_int(code[1]));
  if (j.node_list == "(null)") j.node_list.clear();
  if (j.batch_host == "(null)") j.batch_host.clear();
  return j;
}

std::vector<JobInfo> parse_squeue(std::string_view text) {
  std::vector<JobInfo> out;
  for (const auto& f : tagged(text, "J")) {
    if (f.size() < 5 || f[0].empty()) continue;
    JobInfo j;
    j.id = f[0];
    j.name = f[1];
    j.comment = f[2] == "(null)" ? "" : f[2];
    j.state = f[3];
    const auto field = [&](size_t k) { return k < f.size() && f[k] != "(null)" && f[k] != "N/A" ? f[k] : ""; };
    j.node_list = field(4);
    j.reason = field(5);
    j.batch_host = field(6);
    j.submit_time = field(7);
    j.start_time = field(8);
    out.push_back(std::move(j));
  }
  return out;
}

std::string first_host(std::string_view hostlist) {
  if (hostlist.empty() || hostlist == "(null)") return {};
  std::string out;
  for (size_t i = 0; i < hostlist.size(); ++i) {
    char c = hostlist[i];
    if (c == ',') break;
    if (c != '[') {
      out += c;
      continue;
    }
    auto close = hostlist.find(']', i);
    std::string_view range = hostlist.substr(i + 1, close == std::string_view::npos ? std::string_view::npos : close - i - 1);
    auto cut = range.find_first_of(",-");
    out += std::string(range.substr(0, cut));
    if (close == std::string_view::npos) break;
    i = close;
  }
  return out;
}

std::optional<double> seconds_between(std::string_view start, std::string_view end) {
  auto a = parse_time(start), b = parse_time(end);
  if (!a || !b) return std::nullopt;
  return std::difftime(*b, *a);
}

bool pending(std::string_view state) {
  return state == "PENDING" || state == "REQUEUED" || state == "REQUEUE_HOLD" || state == "REQUEUE_FED" ||
         state == "CONFIGURING" || state == "RESV_DEL_HOLD";
}

bool ended(std::string_view state) {
  return !pending(state) && state != "RUNNING" && state != "SUSPENDED" && state != "STOPPED" &&
         state != "RESIZING" && state != "SIGNALING" && state != "STAGE_OUT" && state != "COMPLETING";
}

std::string batch_script() {
  return R"SH(#!/bin/sh
# Submitted by tsum's Slurm provider: runs the agent once on every node of this job (srun, one task per node).
# No shared file system is assumed: the agent comes in the job's environment (TSUM_AGENT_B64); each task writes
# it into a directory of its own node and removes that directory when it ends.
exec srun --ntasks-per-node=1 --kill-on-bad-exit=1 /bin/sh -c '
W="/tmp/tsum-$SLURM_JOB_ID-$SLURM_NODEID"
umask 077
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 125
trap "cd /; rm -rf \"$W\"" EXIT
trap "exit 143" TERM INT
printf %s "$TSUM_AGENT_B64" | base64 -d > agent.sh || exit 125
unset TSUM_AGENT_B64
TSUM_NODE=$SLURM_NODEID TSUM_NODES=$SLURM_JOB_NUM_NODES
export TSUM_NODE TSUM_NODES
sh ./agent.sh < /dev/null
'
)SH";
}

}  // namespace tsum::providers::slurm
