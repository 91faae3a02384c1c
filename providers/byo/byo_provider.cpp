#include "providers/byo/byo_provider.h"

#include <openssl/rand.h>

#include <filesystem>
#include <fstream>

namespace tsum::providers {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::system_clock;

namespace {

double unix_now() { return std::chrono::duration<double>(system_clock::now().time_since_epoch()).count(); }

std::string random_code() {
  unsigned char raw[16];
  RAND_bytes(raw, sizeof raw);
  std::string out;
  for (unsigned char b : raw) out += "0123456789abcdef"[b >> 4], out += "0123456789abcdef"[b & 15];
  return out;
}

bool is_code(std::string_view c) {
  return c.size() == 32 && c.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string single_quoted(std::string_view v) {
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Result<json> read_state(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return make_error(Code::not_found, "no such join");
  auto j = json::parse(in, nullptr, false);
  if (!j.is_object()) return make_error(Code::internal, p.string() + " is not a JSON object");
  return j;
}

Status write_state(const fs::path& p, const json& j) {
  fs::path tmp = p;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump() << "\n";
    if (!out.flush()) return make_error(Code::internal, "write " + tmp.string());
  }
  fs::permissions(tmp, fs::perms::owner_read | fs::perms::owner_write);  // it holds the run token
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) return make_error(Code::internal, "rename " + tmp.string() + ": " + ec.message());
  return {};
}

InstanceHandle byo_handle(const json& s) {
  return {"byo", s.value("id", ""),
          {{"code", s.value("code", "")}, {"command", s.value("command", "")}, {"expires_at", s.value("expires_at", 0.0)}}};
}

}  // namespace

std::string byo_join_script(const std::string& id, const std::string& code, const std::string& agent_script,
                            const std::map<std::string, std::string>& env) {
  const std::string dir = "/var/lib/tsum/" + id;
  std::string s = "#!/bin/sh\n# tsum: this machine joins as " + id + " and performs its run here, then cleans up.\n";
  s += "set -eu\n";
  s += "[ \"$(id -u)\" = 0 ] || { echo 'tsum: run this as root (sudo sh)' >&2; exit 1; }\n";
  s += "command -v curl >/dev/null || { echo 'tsum: this machine needs curl' >&2; exit 1; }\n";
  s += "if command -v dnf >/dev/null 2>&1 && ! command -v apt-get >/dev/null 2>&1; then\n"
       "  echo 'tsum: note: a RedHat-like machine; tsum supports Debian 12 and Ubuntu 22.04/24.04 (the native "
       "trainer bundle carries its own libraries and may still run)' >&2\nfi\n";
  s += "umask 077\nmkdir -p " + dir + "/work\n";
  s += "cat > " + dir + "/agent.env <<'TSUM_ENV_EOF'\n";
  for (const auto& [k, v] : env) s += k + "=" + single_quoted(v) + "\n";
  s += "TSUM_POWEROFF=none\nTSUM_JOIN_CODE=" + code + "\nTSUM_ENV_EOF\n";
  s += "cat > " + dir + "/agent.sh <<'TSUM_AGENT_EOF'\n" + agent_script;
  if (!agent_script.ends_with("\n")) s += "\n";
  s += "TSUM_AGENT_EOF\n";
  s += "cd " + dir + "/work\nset -a\n. " + dir + "/agent.env\nset +a\n";
  s += "echo \"tsum: running $TSUM_RUN_ID here; output in " + dir + "/agent.log\" >&2\n";
  s += "set +e\n( sh " + dir + "/agent.sh; echo $? > " + dir + "/agent.rc ) 2>&1 | tee " + dir + "/agent.log\n";
  s += "rc=$(cat " + dir + "/agent.rc 2>/dev/null || echo 1)\n";
  s += "cd / && rm -rf " + dir + "\n";
  s += "curl -fsS ${TSUM_CA_PEM:+--cacert /dev/stdin} -X POST \"$TSUM_URL/v1/join/$TSUM_JOIN_CODE/left\" "
       "<<TSUM_CA_EOF >/dev/null 2>&1 || true\n${TSUM_CA_PEM:-}\nTSUM_CA_EOF\n";
  s += "echo \"tsum: run $TSUM_RUN_ID finished here (agent status $rc); nothing of it is left on this machine\" >&2\n";
  s += "exit $rc\n";
  return s;
}

ByoProvider::ByoProvider(ByoOptions opts) : opts_(std::move(opts)) {
  std::error_code ec;
  fs::create_directories(dir(), ec);
  fs::permissions(dir(), fs::perms::owner_all, ec);
}

std::string ByoProvider::dir() const { return opts_.state_dir + "/byo"; }

Task<Result<std::vector<Offer>>> ByoProvider::offers(const Requirements& req) {
  Offer o{.provider = "byo", .instance_type = "any", .hourly_price = opts_.hourly_price, .region = "wherever it joins",
          .note = "any machine that joins with one command", .billing_rule = opts_.billing_rule};
  if (!req.instance_type.empty() && req.instance_type != "any") co_return std::vector<Offer>{};
  co_return std::vector<Offer>{o};
}

Task<Result<InstanceHandle>> ByoProvider::create(const Offer&, const LaunchSpec& spec) {
  if (spec.idempotency_token.empty()) co_return make_error(Code::invalid_argument, "create needs an idempotency token");
  auto url = spec.env.find("TSUM_URL");
  if (url == spec.env.end() || url->second.empty())
    co_return make_error(Code::invalid_argument, "byo needs the daemon's public URL (TSUM_URL)");
  std::lock_guard lock(mu_);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir(), ec)) {
    auto s = read_state(e.path());
    if (s && s->value("idempotency_token", "") == spec.idempotency_token) co_return byo_handle(*s);
  }
  const std::string code = random_code();
  const std::string id = "byo-" + spec.run_id + "-" + code.substr(0, 8);
  const double now = unix_now();
  json s = {{"id", id}, {"code", code}, {"run_id", spec.run_id}, {"tag", spec.tag},
            {"idempotency_token", spec.idempotency_token}, {"env", spec.env}, {"agent_script", spec.agent_script},
            {"state", "waiting"}, {"created_at", now}, {"expires_at", now + static_cast<double>(opts_.code_ttl.count())},
            {"command", "curl -fsSL " + url->second + "/v1/join/" + code + " | sh"}};
  if (auto w = write_state(fs::path(dir()) / (id + ".json"), s); !w) co_return w.error();
  co_return byo_handle(s);
}

Task<Result<InstanceStatus>> ByoProvider::describe(const InstanceHandle& h) {
  std::lock_guard lock(mu_);
  auto s = read_state(fs::path(dir()) / (h.id + ".json"));
  if (!s) co_return InstanceStatus{InstanceState::gone, "join record is gone", ""};
  const std::string state = s->value("state", "");
  const double now = unix_now();
  if (state == "waiting")
    co_return now > s->value("expires_at", 0.0)
        ? InstanceStatus{InstanceState::gone, "no machine joined before the code expired", ""}
        : InstanceStatus{InstanceState::pending, "waiting for a machine to join: " + s->value("command", ""), ""};
  if (state == "joined") co_return InstanceStatus{InstanceState::running, "machine joined", s->value("address", "")};
  if (state == "leaving" && now < s->value("terminate_at", 0.0) + static_cast<double>(opts_.leave_grace.count()))
    co_return InstanceStatus{InstanceState::running, "waiting for the machine's clean-up report", ""};
  co_return InstanceStatus{InstanceState::gone, state == "left" ? "the machine cleaned up and left" : state, ""};
}

Task<Status> ByoProvider::terminate(const InstanceHandle& h) {
  std::lock_guard lock(mu_);
  const fs::path p = fs::path(dir()) / (h.id + ".json");
  auto s = read_state(p);
  if (!s) co_return Status{};
  const std::string state = s->value("state", "");
  if (state == "waiting") (*s)["state"] = "revoked";
  else if (state == "joined") (*s)["state"] = "leaving", (*s)["terminate_at"] = unix_now();
  else co_return Status{};
  (*s)["env"] = json::object();  // the run token is no use any more: do not keep it
  co_return write_state(p, *s);
}

Task<Result<std::vector<InstanceHandle>>> ByoProvider::list_tagged(std::string_view tag) {
  std::lock_guard lock(mu_);
  std::vector<InstanceHandle> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir(), ec)) {
    auto s = read_state(e.path());
    if (!s || s->value("tag", "") != tag) continue;
    const std::string state = s->value("state", "");
    if (state == "waiting" || state == "joined") out.push_back(byo_handle(*s));
  }
  co_return out;
}

Result<std::pair<fs::path, json>> ByoProvider::find_code(const std::string& code) const {
  if (!is_code(code)) return make_error(Code::not_found, "no such join code");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir(), ec))
    if (auto s = read_state(e.path()); s && s->value("code", "") == code) return std::pair{e.path(), std::move(*s)};
  return make_error(Code::not_found, "no such join code");
}

Result<std::string> ByoProvider::join(const std::string& code) {
  std::lock_guard lock(mu_);
  auto found = find_code(code);
  if (!found) return found.error();
  auto& [path, s] = *found;
  const std::string state = s.value("state", "");
  if (state != "waiting")
    return make_error(state == "revoked" ? Code::not_found : Code::already_exists,
                      state == "revoked" ? "this join code was revoked (the run ended)"
                                         : "this join code was used already; each run takes one machine");
  if (unix_now() > s.value("expires_at", 0.0)) return make_error(Code::timeout, "this join code expired");
  std::map<std::string, std::string> env = s.value("env", std::map<std::string, std::string>{});
  std::string script = byo_join_script(s.value("id", ""), code, s.value("agent_script", ""), env);
  s["state"] = "joined";
  s["joined_at"] = unix_now();
  if (auto w = write_state(path, s); !w) return w.error();
  return script;
}

Status ByoProvider::left(const std::string& code) {
  std::lock_guard lock(mu_);
  auto found = find_code(code);
  if (!found) return found.error();
  auto& [path, s] = *found;
  const std::string state = s.value("state", "");
  if (state != "joined" && state != "leaving") return make_error(Code::not_found, "this machine has not joined");
  s["state"] = "left";
  s["env"] = json::object();
  s["left_at"] = unix_now();
  return write_state(path, s);
}

}  // namespace tsum::providers
