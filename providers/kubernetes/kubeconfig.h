// A kubeconfig file (kubectl's ~/.kube/config) read into the provider's options: the context's cluster (server,
// certificate-authority or -data) and user (token, tokenFile, client-certificate/-key or their -data) and its
// namespace. Fields the caller already set win (the daemon's config names them explicitly). Relative paths are
// relative to the kubeconfig's folder. Users that run a command or an auth plugin (exec, auth-provider) are
// refused with a message saying so: tsum makes no process to get a token.
#pragma once

#include <string>

#include "common/result.h"
#include "providers/kubernetes/kube_options.h"

namespace tsum::providers::kube {

// `context` empty: the file's current-context. invalid_argument naming what is missing or malformed.
Status apply_kubeconfig(const std::string& path, const std::string& context, KubernetesOptions* out);

}  // namespace tsum::providers::kube
