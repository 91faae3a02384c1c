// The Kubernetes provider: machines are Pods on a cluster's nodes, made through its API server
// (kube_api.h). One create makes a run's Pods together (capabilities().gang_nodes).
//
//   offers:    one per node shape (kube_json.h node_shapes: ready, schedulable nodes with the same allocatable
//              vCPU, memory, nvidia.com/gpu and GPU model, or the same instance-type label), sized to what one
//              idle node of the shape gives a Pod (allocatable minus its DaemonSets' and static Pods' requests),
//              with how many nodes of the shape have room for one now. Priced per shape, else per vCPU-, GiB-
//              and GPU-hour, from the config; a shape with no price is offered at 0 with a note saying so.
//   create:    the docker runtime only: the workload image runs the agent (TSUM_RUNTIME=container) through a
//              bootstrap that fetches it from the daemon by its sha256. Objects, all named <base> =
//              object_base_name(idempotency token) and labelled managed-by=tsum, tsum.dev/tag, instance and run:
//              a Secret with the run's environment (the Pods read it with envFrom: it is never in a Pod spec), a
//              headless Service <base> for a multi-node run's Pods (hostname <base>-<n>, subdomain <base>), and
//              Pods <base>-0 .. <base>-(N-1) on the shape's nodes (nodeSelector on the instance-type label, else
//              node affinity on their names) with requests = limits = the offer, restartPolicy Never,
//              activeDeadlineSeconds and TSUM_NODE_ADDRESS from status.podIP. An object that exists already
//              (409 AlreadyExists: a create repeated after a crash) is taken as made. A create that fails halfway
//              deletes what it made. The handle's id is <base>; its data holds the namespace, tag and nodes.
//   describe:  the run's Pods (one list by label): pending while any waits (detail: the scheduler's
//              "0/3 nodes are available: ..." while unschedulable, the container's waiting reason otherwise),
//              exited at once when an image cannot be pulled (the kubelet's reason and message), when any Pod
//              failed (its reason: DeadlineExceeded, Evicted, or the agent's exit code) or once all succeeded;
//              running otherwise (address: Pod 0's IP); gone when no Pod is left. queue_wait_s: the longest
//              time a Pod spent from creation to its container's start (scheduling and image pull), once all
//              have started, on the cluster's clock.
//   describe_many: every handle of a namespace answered from one copy of its tsum Pods (label managed-by=tsum),
//              as describe would: the copy a watch keeps current (pod_watch.h), else one list call, which
//              (re)starts the watch. A run the watch's copy does not hold yet is asked about alone.
//   terminate: deletes the Pods (grace 1 s), the Service and the Secret, then lists until the Pods are gone
//              (delete_timeout). Gone already is success.
//   list_tagged: the runs whose Pods, Services or Secrets carry tsum.dev/tag=<tag>.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "providers/kubernetes/kube_api.h"
#include "providers/kubernetes/kube_json.h"
#include "providers/kubernetes/kube_options.h"
#include "providers/kubernetes/pod_watch.h"
#include "providers/provider.h"

namespace tsum::providers {

class KubernetesProvider final : public Provider {
 public:
  explicit KubernetesProvider(KubernetesOptions opts);
  KubernetesProvider(const KubernetesProvider&) = delete;
  KubernetesProvider& operator=(const KubernetesProvider&) = delete;

  std::string_view name() const override { return "kubernetes"; }
  Capabilities capabilities() const override;
  Task<Result<std::vector<Offer>>> offers(const Requirements& req) override;
  Task<Result<InstanceHandle>> create(const Offer& offer, const LaunchSpec& spec) override;
  Task<Result<InstanceStatus>> describe(const InstanceHandle& h) override;
  Task<std::vector<Result<InstanceStatus>>> describe_many(const std::vector<InstanceHandle>& handles) override;
  Task<Status> terminate(const InstanceHandle& h) override;
  Task<Result<std::vector<InstanceHandle>>> list_tagged(std::string_view tag) override;

  const KubernetesOptions& options() const { return api_->options(); }

  // A run's state from the Pods a list returned (PodList JSON; those of other runs are skipped).
  static InstanceStatus status_of(const InstanceHandle& h, const nlohmann::json& pods);
  // Pod list calls describe_many has made (the watch answers the others).
  long pod_lists() const { return pod_lists_; }

 private:
  Task<Status> delete_objects(const std::string& ns, const std::string& base);
  Task<Result<std::vector<kube::KubeNodeShape>>> shapes();  // of the nodes and Pods the cluster reports now

  kube::PodWatch& watch_of(const std::string& ns);

  std::unique_ptr<kube::KubeApi> api_;
  std::mutex watches_mu_;
  std::map<std::string, std::unique_ptr<kube::PodWatch>> watches_;  // by namespace, made on first use
  std::atomic<long> pod_lists_{0};
};

}  // namespace tsum::providers
