// The daemon's config file (tsumd.json): parse_config with its cloud, Slurm, Kubernetes and billing-rule sections;
// and the same bytes as a kubeconfig (YAML is a superset of JSON, so the config corpus seeds it too).
#include "daemon/config/config.h"
#include "fuzz_input.h"
#include "providers/kubernetes/kubeconfig.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static tsum::fuzz::InputFile kubeconfig(".kubeconfig");
  (void)tsum::daemon::parse_config(tsum::fuzz::text(data, size), "/nonexistent-tsum-fuzz");
  tsum::providers::KubernetesOptions options;
  (void)tsum::providers::kube::apply_kubeconfig(kubeconfig.write(data, size), "", &options);
  return 0;
}
