// providers.kubernetes in the config file: the Kubernetes provider's API server, credentials (files, or a
// kubeconfig and its context), namespace, prices and timeouts (providers/kubernetes/kube_options.h).
// docs/kubernetes.md documents every field.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "providers/kubernetes/kube_options.h"

namespace tsum::daemon {

// A kubeconfig the section names, read by read_kubernetes_credentials when the config is loaded. Neither it
// nor api_url: the user's own (KUBECONFIG's files, else ~/.kube/config), at `context` or the current one.
struct KubeconfigRef {
  std::string path;  // absolute
  std::string context;
};

// Parses providers.kubernetes into *out and its startup_deadline_s. `dir` resolves relative paths. Pure.
Status parse_kubernetes_section(const nlohmann::json& j, const std::string& dir, providers::KubernetesOptions* out,
                                std::chrono::seconds* startup_deadline, KubeconfigRef* kubeconfig);

// Reads the kubeconfig (if any) into *out and checks the credential files: the token file and the client key
// must not be readable by group or others; an API URL must be known by then.
Status read_kubernetes_credentials(const KubeconfigRef& ref, providers::KubernetesOptions* out);

}  // namespace tsum::daemon
