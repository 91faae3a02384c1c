// The Kubernetes API's objects as the provider reads and writes them: quantities, nodes and the shapes they
// form, Pods' states, and the manifests of a run's Secret, headless Service and Pods. Pure: no I/O.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::providers::kube {

// A resource quantity ("4", "3500m", "16Gi", "16384Ki", "1e9", "1.5G") as a number in the unit's base (cores,
// bytes, devices); nullopt when it is not one.
std::optional<double> parse_quantity(std::string_view q);

// An RFC 3339 time of the API server ("2026-11-27T08:14:25Z", fractions and offsets allowed) as unix seconds.
std::optional<double> parse_time(std::string_view t);

// The labels that name a node's GPU model, first found wins: GPU feature discovery's, GKE's, EKS's.
inline constexpr std::string_view kGpuProductLabels[] = {"nvidia.com/gpu.product", "cloud.google.com/gke-accelerator",
                                                         "k8s.amazonaws.com/accelerator", "accelerator"};
inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";
inline constexpr std::string_view kManagedBy = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kTagLabel = "tsum.dev/tag";
inline constexpr std::string_view kInstanceLabel = "tsum.dev/instance";
inline constexpr std::string_view kNodeLabel = "tsum.dev/node";
inline constexpr std::string_view kRunLabel = "tsum.dev/run";

// What a Pod (or a node's Pods together) asks for.
struct Resources {
  double cpu = 0;     // cores
  double memory = 0;  // bytes
  double gpus = 0;
};

struct KubeNode {
  std::string name;
  Resources allocatable;
  std::string gpu_product;    // from kGpuProductLabels; empty: none named
  std::string instance_type;  // node.kubernetes.io/instance-type, where the cluster sets it
  bool schedulable = true;    // Ready, not cordoned, no NoSchedule/NoExecute taint
  std::string cpu_model;      // feature.node.kubernetes.io/cpu-model.* is not a name; left empty unless labelled
};

// The nodes of a NodeList. invalid_argument when it is not one.
Result<std::vector<KubeNode>> parse_nodes(const nlohmann::json& list);

// What the Pods of a PodList that hold resources (bound to a node, not Succeeded or Failed) request, by node
// name: the node's own Pods (a DaemonSet's or the node's static Pods: every node of a pool has them), or every
// other Pod (runs, tsum's and other tenants').
enum class PodsOf { node, workloads };
std::map<std::string, Resources> requests_by_node(const nlohmann::json& pods, PodsOf which);

// One node shape: nodes with the same allocatable resources and GPU model (or the same instance-type label).
struct KubeNodeShape {
  std::string name;         // the instance-type label, else e.g. "4c-15g" or "8c-61g-1xnvidia-a100"
  bool from_label = false;  // name is node.kubernetes.io/instance-type's value (a Pod is placed by that label)
  int vcpus = 0;            // what a Pod of this shape requests: what an idle node gives, apart from its own Pods
  double memory_gib = 0;    // (whole MiB)
  int gpus = 0;
  std::string gpu_type;
  int nodes = 0;  // ready and schedulable nodes of the shape
  int free = 0;   // of them, those with room for such a Pod now
  std::vector<std::string> node_names;
};

// The shapes of `nodes`, given every Pod the cluster reports (PodList JSON), sorted by name.
std::vector<KubeNodeShape> node_shapes(const std::vector<KubeNode>& nodes, const nlohmann::json& pods);

// A Pod's state as the provider needs it.
struct PodState {
  std::string name;
  int node = 0;               // the tsum.dev/node label
  std::string phase;          // Pending, Running, Succeeded, Failed, Unknown
  bool deleting = false;      // metadata.deletionTimestamp set
  std::string unschedulable;  // the scheduler's message while PodScheduled is False (reason Unschedulable)
  std::string waiting_reason, waiting_message;  // the container's, while it waits (ErrImagePull, ...)
  std::string reason, message;                  // the Pod's own (DeadlineExceeded, Evicted)
  std::optional<int> exit_code;                 // the container's, once terminated
  std::string terminated_reason;
  std::optional<double> created, started;  // unix seconds (creation; container start)
  std::string pod_ip;
};

PodState parse_pod(const nlohmann::json& pod);

// True for a container waiting reason that means its image cannot be pulled.
bool image_pull_failure(std::string_view waiting_reason);

// The names of a run's objects: "tsum-" + the token made a DNS label (lowercase letters, digits, '-'), at most
// 56 characters (a hash of the token at its end when it had to be cut), so "<base>-<node>" fits 63.
std::string object_base_name(std::string_view token);

// What the manifests are made of.
struct PodPlan {
  std::string base;  // object_base_name
  std::string namespace_;
  std::string tag, run_id;
  std::string image;
  std::string bootstrap;  // the container's command: /bin/sh -c <bootstrap>
  Resources requests;     // requests = limits
  int nodes = 1;
  long active_deadline_s = 0;
  std::string image_pull_secret;
  // Where the Pods may go: the shape's nodes, by the instance-type label (a shape named by it) or by name.
  std::string instance_type_label;
  std::vector<std::string> node_names;
};

nlohmann::json labels_of(const PodPlan& plan);
// The Secret (type Opaque, stringData) with the run's environment.
nlohmann::json secret_manifest(const PodPlan& plan, const std::map<std::string, std::string>& env);
// The headless Service (clusterIP None) a multi-node run's Pods meet behind: <base>, selecting its Pods.
nlohmann::json service_manifest(const PodPlan& plan);
// Pod `node` (0-based) of the run: <base>-<node>.
nlohmann::json pod_manifest(const PodPlan& plan, int node);

// A quantity as the API writes it: whole cores as "4" (else millicores), memory in Mi.
std::string cpu_quantity(double cores);
std::string memory_quantity(double bytes);

// The Status object's message of an error response (kind Status), else the body's first 300 bytes.
std::string status_message(std::string_view body);

}  // namespace tsum::providers::kube
