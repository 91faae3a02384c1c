#include "providers/cloud_init/cloud_init.h"

#include <algorithm>

#include "providers/http/codec.h"

namespace tsum::providers {

namespace {

bool valid_env_name(std::string_view n) {
  if (n.empty() || (n[0] >= '0' && n[0] <= '9')) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool valid_dir(std::string_view d) {
  return d.starts_with('/') && d.size() > 1 && std::all_of(d.begin(), d.end(), [](char c) {
           return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '/' ||
                  c == '_' || c == '.' || c == '-';
         });
}

std::string single_quoted(std::string_view v) {
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string start_script(const std::string& dir, std::chrono::minutes max_lifetime) {
  std::string s = "#!/bin/sh\n# Started once by cloud-init: the tsum agent, in the background, with its environment.\n";
  s += "mkdir -p " + dir + "/work && cd " + dir + "/work || exit 1\n";
  if (max_lifetime.count() > 0)
    s += "shutdown -P +" + std::to_string(max_lifetime.count()) + " 'tsum: instance reached its maximum lifetime'\n";
  s += "set -a\n. " + dir + "/agent.env\nset +a\n";
  s += "nohup setsid /bin/sh " + dir + "/agent.sh >" + dir + "/agent.log 2>&1 </dev/null &\n";
  return s;
}

}  // namespace

std::string bootstrap_script(const std::string& dir, const std::string& sha256) {
  std::string s = R"sh(#!/bin/sh
# tsum: fetches the agent by its sha256 from the daemon, checks it and runs it.
set -u
u="$TSUM_URL/v1/blobs/@SHA@"
set -- -fsS --connect-timeout 10 -H "Authorization: Bearer $TSUM_TOKEN"
if [ -n "${TSUM_CA_PEM:-}" ]; then printf '%s\n' "$TSUM_CA_PEM" > @DIR@/ca.pem; set -- "$@" --cacert @DIR@/ca.pem; fi
w=1; t=0
while [ $t -lt "${TSUM_BOOT_FETCH_S:-600}" ]; do
  if curl "$@" --max-time 120 -o @DIR@/agent-full.part "$u" 2>@DIR@/fetch.err; then
    [ "$(sha256sum @DIR@/agent-full.part | cut -d' ' -f1)" = @SHA@ ] &&
      mv @DIR@/agent-full.part @DIR@/agent-full.sh && exec /bin/sh @DIR@/agent-full.sh
    echo "its sha256 is not @SHA@" > @DIR@/fetch.err
  fi
  sleep $w; t=$((t + w)); [ $w -ge 30 ] || w=$((w * 2))
done
e=$(tr -d '\000-\037"\\' < @DIR@/fetch.err | head -c 300)
curl "$@" --max-time 30 -H 'Content-Type: application/json' --data-binary \
  "{\"phase\":\"install\",\"mark\":\"error\",\"mono_s\":$(cut -d' ' -f1 /proc/uptime),\"attrs\":{\"detail\":\"the agent could not be fetched from $u: $e\"}}" \
  "$TSUM_URL/v1/runs/$TSUM_RUN_ID/events"
exit 1
)sh";
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"@SHA@", sha256}, {"@DIR@", dir}})
    for (std::size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + value.size()))
      s.replace(at, key.size(), value);
  return s;
}

namespace {

// A write_files entry; gzipped first where that is what fits a script carried whole in EC2's 16 KiB.
std::string write_file(const std::string& path, const char* mode, std::string_view content, bool gzip = false) {
  return "  - path: " + path + "\n    permissions: '" + mode + "'\n    encoding: " + (gzip ? "gz+b64" : "b64") +
         "\n    content: " + http::base64_encode(gzip ? http::gzip_compress(content) : std::string(content)) + "\n";
}

}  // namespace

Result<std::string> cloud_init_user_data(const LaunchSpec& spec, const CloudInitOptions& opts) {
  if (!valid_dir(opts.dir))
    return make_error(Code::invalid_argument, "cloud-init dir '" + opts.dir + "' must be an absolute, plain path");
  std::map<std::string, std::string> vars = spec.env;
  if (spec.market == "spot" && !opts.spot_notice.empty()) {
    vars["TSUM_SPOT_NOTICE"] = opts.spot_notice;
    if (!opts.metadata_url.empty()) vars["TSUM_METADATA_URL"] = opts.metadata_url;
  }
  std::string env;
  for (const auto& [name, value] : vars) {
    if (!valid_env_name(name)) return make_error(Code::invalid_argument, "environment name '" + name + "' is not valid");
    env += name + "=" + single_quoted(value) + "\n";
  }
  if (spec.runtime != "native" && spec.runtime != "docker")
    return make_error(Code::invalid_argument, "runtime '" + spec.runtime + "' is neither native nor docker");
  std::string doc = "#cloud-config\n";
  // Docker from the image's own repository (Debian/Ubuntu: docker.io), installed before the agent starts, so
  // it counts in startup; the agent's install phase pulls the workload image.
  if (spec.runtime == "docker") doc += "package_update: true\npackages:\n  - docker.io\n";
  doc += "write_files:\n";
  if (spec.agent_sha256.empty())
    doc += write_file(opts.dir + "/agent.sh", "0755", spec.agent_script, true);
  else if (http::sha256_hex(spec.agent_script) != spec.agent_sha256)
    return make_error(Code::invalid_argument, "agent_sha256 " + spec.agent_sha256 + " is not the agent script's");
  else
    doc += write_file(opts.dir + "/agent.sh", "0755", bootstrap_script(opts.dir, spec.agent_sha256));
  doc += write_file(opts.dir + "/agent.env", "0600", env);
  doc += write_file(opts.dir + "/start.sh", "0755", start_script(opts.dir, opts.max_lifetime));
  doc += "runcmd:\n  - [/bin/sh, " + opts.dir + "/start.sh]\n";
  if (doc.size() > kMaxUserDataBytes)
    return make_error(Code::invalid_argument, "user data is " + std::to_string(doc.size()) + " bytes, over the limit of " +
                                                  std::to_string(kMaxUserDataBytes) + " (agent script too large)");
  return doc;
}

}  // namespace tsum::providers
