#include "providers/kubernetes/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "providers/http/codec.h"

namespace tsum::providers::kube {

namespace {

// yaml-cpp throws when a node that is not a map is indexed: every lookup checks first.
std::string scalar(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap()) return {};
  const YAML::Node v = n[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

std::string relative_to(const std::string& path, const std::string& file) {
  if (file.empty() || file[0] == '/') return file;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? file : path.substr(0, slash + 1) + file;
}

Status set_pem(const YAML::Node& n, const char* key, const std::string& path, std::string* out) {
  if (!out->empty()) return {};
  const std::string data = scalar(n, key);
  if (data.empty()) return {};
  auto pem = http::base64_decode(data);
  if (!pem) return make_error(Code::invalid_argument, "kubeconfig " + path + ": " + key + " is not base64");
  *out = *pem;
  return {};
}

}  // namespace

std::vector<std::string> kubeconfig_paths(const http::LoginEnvironment& env) {
  std::vector<std::string> out;
  if (!env.has("KUBECONFIG") || env.get("KUBECONFIG").empty()) return {env.home + "/.kube/config"};
  const std::string list = env.get("KUBECONFIG");
  for (std::size_t at = 0; at <= list.size();) {
    std::size_t colon = list.find(':', at);
    if (colon == std::string::npos) colon = list.size();
    std::string p = list.substr(at, colon - at);
    if (!p.empty() && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    at = colon + 1;
  }
  return out;
}

Status apply_kubeconfig(const std::string& path, const std::string& context, KubernetesOptions* out) {
  return apply_kubeconfig(std::vector<std::string>{path}, context, out);
}

Status apply_kubeconfig(const std::vector<std::string>& paths, const std::string& context, KubernetesOptions* out) {
  std::string shown;
  for (const auto& p : paths) shown += (shown.empty() ? "" : ":") + p;
  auto bad = [&shown](const std::string& what) {
    return make_error(Code::invalid_argument, "kubeconfig " + shown + ": " + what);
  };
  // kubectl's merge: the first file to set current-context, or to name a cluster, user or context, wins; a
  // listed file that is not there is skipped. Each entry keeps its file, for its relative paths.
  struct Entry {
    YAML::Node node;
    std::string file;
  };
  std::map<std::string, Entry> clusters, users, contexts;
  std::string current;
  int read = 0;
  for (const auto& path : paths) {
    if (!std::filesystem::is_regular_file(path)) continue;
    YAML::Node doc;
    try {
      doc = YAML::LoadFile(path);
    } catch (const std::exception& e) {
      return make_error(Code::invalid_argument, "kubeconfig " + path + ": " + e.what());
    }
    if (doc.IsNull()) continue;
    if (!doc.IsMap()) return make_error(Code::invalid_argument, "kubeconfig " + path + ": not a kubeconfig (a YAML map)");
    ++read;
    if (current.empty()) current = scalar(doc, "current-context");
    for (auto [list, inner, into] : {std::tuple{"clusters", "cluster", &clusters}, {"users", "user", &users},
                                     {"contexts", "context", &contexts}}) {
      const YAML::Node l = doc[list];
      if (!l || !l.IsSequence()) continue;
      for (const auto& e : l)
        if (e.IsMap() && !scalar(e, "name").empty()) into->try_emplace(scalar(e, "name"), Entry{e[inner], path});
    }
  }
  if (read == 0) return bad("not there; run 'kubectl config set-cluster' (or your cloud's get-credentials), or set KUBECONFIG");
  const std::string ctx_name = context.empty() ? current : context;
  if (ctx_name.empty()) return bad("no context named and no current-context; run 'kubectl config use-context NAME'");
  auto ctx_it = contexts.find(ctx_name);
  if (ctx_it == contexts.end() || !ctx_it->second.node.IsMap()) return bad("no context '" + ctx_name + "'");
  const YAML::Node ctx = ctx_it->second.node;
  const std::string cluster_name = scalar(ctx, "cluster"), user_name = scalar(ctx, "user");
  auto cluster_it = clusters.find(cluster_name);
  if (cluster_it == clusters.end() || !cluster_it->second.node.IsMap())
    return bad("context '" + ctx_name + "' names no cluster '" + cluster_name + "'");
  const YAML::Node cluster = cluster_it->second.node;
  const std::string& path = cluster_it->second.file;
  if (out->api_url.empty()) out->api_url = scalar(cluster, "server");
  if (out->api_url.empty()) return bad("cluster '" + cluster_name + "' has no server");
  if (scalar(cluster, "insecure-skip-tls-verify") == "true")
    return bad("cluster '" + cluster_name + "' skips TLS verification; tsum needs its CA (certificate-authority)");
  if (out->ca_file.empty() && out->ca_pem.empty())
    out->ca_file = relative_to(path, scalar(cluster, "certificate-authority"));
  if (out->ca_file.empty())
    if (auto s = set_pem(cluster, "certificate-authority-data", path, &out->ca_pem); !s) return s;
  if (const std::string ns = scalar(ctx, "namespace"); !ns.empty() && out->namespace_.empty()) out->namespace_ = ns;
  auto user_it = users.find(user_name);
  if (!user_name.empty() && user_it == users.end())  // as kubectl: "cannot locate user"
    return bad("context '" + ctx_name + "' names no user '" + user_name + "'");
  const YAML::Node user = user_it == users.end() ? YAML::Node() : user_it->second.node;
  const std::string& user_path = user_it == users.end() ? path : user_it->second.file;
  if (!user_name.empty() && user && user.IsMap()) {
    if (user["exec"] || user["auth-provider"])
      return bad("user '" + user_name +
                 "' gets its credentials from a command or plugin (exec/auth-provider); "
                 "give tsum a token file or a client certificate instead");
    const bool have = !out->token.empty() || !out->token_file.empty() || !out->client_cert_file.empty() ||
                      !out->client_cert_pem.empty();
    if (!have) {
      out->token = scalar(user, "token");
      out->token_file = relative_to(user_path, scalar(user, "tokenFile"));
      out->client_cert_file = relative_to(user_path, scalar(user, "client-certificate"));
      out->client_key_file = relative_to(user_path, scalar(user, "client-key"));
      if (auto s = set_pem(user, "client-certificate-data", user_path, &out->client_cert_pem); !s) return s;
      if (auto s = set_pem(user, "client-key-data", user_path, &out->client_key_pem); !s) return s;
    }
  }
  return {};
}

}  // namespace tsum::providers::kube
