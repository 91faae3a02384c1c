// A multi-node run's machines as the one handle the ledger stores (runs.instance): the handle of each node's
// create, in node order, inside
//   {"provider": P, "id": "<node 0's id>+<N-1>", "data": {"nodes": [handle, ...]}}.
// A provider that makes every node in one create (Capabilities::gang_nodes: one Slurm job) has one handle and
// no group. The ledger lets a group grow as its nodes are created (Ledger::extend_instance), so a crash between
// two creates leaves every created node on record for the reconciler.
#pragma once

#include <string>
#include <vector>

#include "providers/provider.h"

namespace tsum::providers {

inline InstanceHandle make_node_group(const std::string& provider, const std::vector<InstanceHandle>& nodes) {
  InstanceHandle group{provider, nodes.empty() ? "" : nodes.front().id + "+" + std::to_string(nodes.size() - 1),
                       {{"nodes", nlohmann::json::array()}}};
  for (const auto& n : nodes) group.data["nodes"].push_back(n.to_json());
  return group;
}

inline bool is_node_group(const InstanceHandle& h) {
  return h.data.is_object() && h.data.contains("nodes") && h.data["nodes"].is_array();
}

// The machines behind a handle: a group's nodes, or the handle itself.
inline std::vector<InstanceHandle> node_handles(const InstanceHandle& h) {
  if (!is_node_group(h)) return {h};
  std::vector<InstanceHandle> out;
  for (const auto& n : h.data["nodes"]) out.push_back(InstanceHandle::from_json(n));
  return out;
}

}  // namespace tsum::providers
