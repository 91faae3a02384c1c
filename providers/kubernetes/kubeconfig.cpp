#include "providers/kubernetes/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include "providers/http/codec.h"

namespace tsum::providers::kube {

namespace {

// yaml-cpp throws when a node that is not a map is indexed: every lookup checks first.
std::string scalar(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap()) return {};
  const YAML::Node v = n[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

// The entry named `name` of a kubeconfig list (clusters, users, contexts), its inner map (cluster, user, context).
YAML::Node named(const YAML::Node& list, const std::string& name, const char* inner) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const auto& e : list)
    if (e.IsMap() && scalar(e, "name") == name) return e[inner];
  return YAML::Node();
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

Status apply_kubeconfig(const std::string& path, const std::string& context, KubernetesOptions* out) {
  auto bad = [&path](const std::string& what) {
    return make_error(Code::invalid_argument, "kubeconfig " + path + ": " + what);
  };
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    return bad(e.what());
  }
  if (!doc.IsMap()) return bad("not a kubeconfig (a YAML map)");
  const std::string ctx_name = context.empty() ? scalar(doc, "current-context") : context;
  if (ctx_name.empty()) return bad("no context named and no current-context");
  const YAML::Node ctx = named(doc["contexts"], ctx_name, "context");
  if (!ctx || !ctx.IsMap()) return bad("no context '" + ctx_name + "'");
  const std::string cluster_name = scalar(ctx, "cluster"), user_name = scalar(ctx, "user");
  const YAML::Node cluster = named(doc["clusters"], cluster_name, "cluster");
  if (!cluster || !cluster.IsMap()) return bad("context '" + ctx_name + "' names no cluster '" + cluster_name + "'");
  if (out->api_url.empty()) out->api_url = scalar(cluster, "server");
  if (out->api_url.empty()) return bad("cluster '" + cluster_name + "' has no server");
  if (scalar(cluster, "insecure-skip-tls-verify") == "true")
    return bad("cluster '" + cluster_name + "' skips TLS verification; tsum needs its CA (certificate-authority)");
  if (out->ca_file.empty() && out->ca_pem.empty())
    out->ca_file = relative_to(path, scalar(cluster, "certificate-authority"));
  if (out->ca_file.empty())
    if (auto s = set_pem(cluster, "certificate-authority-data", path, &out->ca_pem); !s) return s;
  if (const std::string ns = scalar(ctx, "namespace"); !ns.empty() && out->namespace_.empty()) out->namespace_ = ns;
  const YAML::Node user = named(doc["users"], user_name, "user");
  if (!user_name.empty() && user && user.IsMap()) {
    if (user["exec"] || user["auth-provider"])
      return bad("user '" + user_name +
                 "' gets its credentials from a command or plugin (exec/auth-provider); "
                 "give tsum a token file or a client certificate instead");
    const bool have = !out->token.empty() || !out->token_file.empty() || !out->client_cert_file.empty() ||
                      !out->client_cert_pem.empty();
    if (!have) {
      out->token = scalar(user, "token");
      out->token_file = relative_to(path, scalar(user, "tokenFile"));
      out->client_cert_file = relative_to(path, scalar(user, "client-certificate"));
      out->client_key_file = relative_to(path, scalar(user, "client-key"));
      if (auto s = set_pem(user, "client-certificate-data", path, &out->client_cert_pem); !s) return s;
      if (auto s = set_pem(user, "client-key-data", path, &out->client_key_pem); !s) return s;
    }
  }
  return {};
}

}  // namespace tsum::providers::kube
