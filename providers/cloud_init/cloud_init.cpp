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

// A write_files entry; gzipped first where that is what fits the agent script in EC2's 16 KiB.
std::string write_file(const std::string& path, const char* mode, std::string_view content, bool gzip = false) {
  return "  - path: " + path + "\n    permissions: '" + mode + "'\n    encoding: " + (gzip ? "gz+b64" : "b64") +
         "\n    content: " + http::base64_encode(gzip ? http::gzip_compress(content) : std::string(content)) + "\n";
}

}  // namespace

std::string without_comment_lines(std::string_view script) {
  std::string out;
  bool first = true;
  while (!script.empty()) {
    const std::size_t end = script.find('\n');
    const std::string_view line = script.substr(0, end == std::string_view::npos ? script.size() : end + 1);
    script.remove_prefix(line.size());
    const std::size_t text = line.find_first_not_of(" \t");
    if (first || text == std::string_view::npos || line[text] != '#') out += line;
    first = false;
  }
  return out;
}

Result<std::string> cloud_init_user_data(const LaunchSpec& spec, const CloudInitOptions& opts) {
  if (!valid_dir(opts.dir))
    return make_error(Code::invalid_argument, "cloud-init dir '" + opts.dir + "' must be an absolute, plain path");
  std::string env;
  for (const auto& [name, value] : spec.env) {
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
  doc += write_file(opts.dir + "/agent.sh", "0755", without_comment_lines(spec.agent_script), true);
  doc += write_file(opts.dir + "/agent.env", "0600", env);
  doc += write_file(opts.dir + "/start.sh", "0755", start_script(opts.dir, opts.max_lifetime));
  doc += "runcmd:\n  - [/bin/sh, " + opts.dir + "/start.sh]\n";
  if (doc.size() > kMaxUserDataBytes)
    return make_error(Code::invalid_argument, "user data is " + std::to_string(doc.size()) + " bytes, over the limit of " +
                                                  std::to_string(kMaxUserDataBytes) + " (agent script too large)");
  return doc;
}

}  // namespace tsum::providers
