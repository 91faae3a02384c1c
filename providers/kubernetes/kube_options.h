// What the Kubernetes provider is configured with: how to reach the API server (URL, CA, a bearer token or a
// client certificate, from files, or a kubeconfig and its context), the namespace its Pods go to, what a node
// shape costs and how runs are bounded. Plain data, filled by the daemon's config parser
// (daemon/config/kube_config.h, providers.kubernetes) or by a test. Secrets are file paths, never values.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace tsum::providers {

// The price of one machine of a node shape (a whole node's share: the Pod's requests), billed by billing_rule.
struct KubeShapePrice {
  double hourly_price = 0;
  std::string billing_rule = "step:1,min:0";  // by the second, no minimum
  std::string currency = "USD";
};

// A price by resource, for shapes the config does not name: vCPU-hours, GiB-hours and GPU-hours of the Pod's
// requests. Unset (all 0): such a shape is offered unpriced, with a note saying so.
struct KubeResourcePrices {
  double vcpu_hour = 0;
  double gib_hour = 0;
  double gpu_hour = 0;
  std::string billing_rule = "step:1,min:0";  // by the second, no minimum
  std::string currency = "USD";
  bool set() const { return vcpu_hour > 0 || gib_hour > 0 || gpu_hour > 0; }
};

struct KubernetesOptions {
  std::string api_url;           // https://host:6443 (or http:// for a local test server)
  std::string ca_file;           // the API server's CA (PEM); empty: the system store
  std::string token_file;        // a bearer token (a ServiceAccount's), read at every call
  std::string token;             // or the token itself, as a kubeconfig's user holds it (never printed)
  std::string client_cert_file;  // or a client certificate and its key (PEM)
  std::string client_key_file;
  // The same as PEM text, as a kubeconfig's certificate-authority-data, client-certificate-data and
  // client-key-data hold them (daemon/config/kube_config.h reads a kubeconfig into these).
  std::string ca_pem, client_cert_pem, client_key_pem;
  std::string namespace_;                        // empty: the kubeconfig context's, else "default"
  std::map<std::string, KubeShapePrice> shapes;  // by shape name (KubeNodeShape::name)
  KubeResourcePrices resources;
  // A Pod's safety net: the kubelet kills it after this long however the daemon fares (activeDeadlineSeconds).
  std::chrono::seconds active_deadline{6 * 3600};
  std::chrono::seconds request_timeout{30};  // each API call
  std::chrono::seconds delete_timeout{120};  // terminate: until the run's Pods are gone
  std::string image_pull_secret;  // the name of a Secret of type dockerconfigjson for the workload's registry
};

}  // namespace tsum::providers
