// A kubeconfig (kubectl's ~/.kube/config, or KUBECONFIG's files merged) read into the provider's options: the context's cluster (server,
// certificate-authority or -data) and user (token, tokenFile, client-certificate/-key or their -data) and its
// namespace. Fields the caller already set win (the daemon's config names them explicitly). Relative paths are
// relative to the kubeconfig's folder. Users that run a command or an auth plugin (exec, auth-provider) are
// refused with a message saying so: tsum makes no process to get a token.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "providers/http/login_env.h"
#include "providers/kubernetes/kube_options.h"

namespace tsum::providers::kube {

// The files kubectl reads: KUBECONFIG's list (':'-separated, duplicates dropped), else ~/.kube/config.
std::vector<std::string> kubeconfig_paths(const http::LoginEnvironment& env);

// `context` empty: the current-context. Several files merge as kubectl merges them: the first to set
// current-context, or to name a cluster, user or context, wins; a listed file that is not there is skipped (none
// there: an error with the fix). invalid_argument naming what is missing or malformed.
Status apply_kubeconfig(const std::vector<std::string>& paths, const std::string& context, KubernetesOptions* out);
Status apply_kubeconfig(const std::string& path, const std::string& context, KubernetesOptions* out);

}  // namespace tsum::providers::kube
