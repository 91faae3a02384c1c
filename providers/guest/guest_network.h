// GuestNetwork: the network guest machines (guest_machine.h) join: a Linux bridge in this (the root) network
// namespace whose IPv4 address is the guests' gateway, e.g. 10.213.7.1/24. The daemon listens on that
// address; each machine gets one address of the subnet (a lease), a network namespace of its own and a veth
// pair whose host end is a port of the bridge, and reaches this host only through the bridge.
//
// Leases are files under kLeaseDir/<bridge>/<address>, made atomically (written aside, then linked into
// place) and holding the owner process (pid and start time) and a note (the machine's directory), so that
// processes sharing a bridge never get one address twice, and the leases of a process that is gone (killed
// before it halted its machines) can be found and swept (GuestMachine::sweep_stale).
// Names derive from the bridge and the address's index in the subnet: network namespace tsumg-<bridge>-<i>,
// host end of the veth <bridge>-<i> (bridge names are at most kMaxBridgeName characters, so it fits IFNAMSIZ).
//
// create_bridge/remove_bridge make and delete a bridge (for tests and single-host setups); a bridge is plain
// L2 with no NAT or forwarding set up here. Everything needs root and iproute2.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::providers::guest {

struct AddressLease {
  std::string address;  // e.g. "10.213.7.2"
  int index = 0;        // the address's offset in the subnet (2 for 10.213.7.2/24)
  std::string netns;    // the machine's network namespace: tsumg-<bridge>-<index>
  std::string veth;     // the host end of its veth pair: <bridge>-<index>
  std::string file;     // the lease file
};

struct LeaseRecord {
  AddressLease lease;
  std::string note;          // what the owner wrote when it took the lease
  bool owner_alive = false;  // whether the process that took it still runs
};

class GuestNetwork {
 public:
  static constexpr const char* kLeaseDir = "/run/tsum-guest";
  static constexpr std::size_t kMaxBridgeName = 10;

  // Creates the bridge with gateway_cidr (e.g. "10.213.7.1/24", prefix 8..30) as its address and brings it
  // up. invalid_argument for a bad name (letters and digits, at most kMaxBridgeName) or address;
  // already_exists when an interface of that name exists; internal when ip fails.
  static Status create_bridge(const std::string& bridge, const std::string& gateway_cidr);
  // Deletes the bridge and its lease directory. Idempotent; machines still attached lose their link.
  static void remove_bridge(const std::string& bridge);

  // An existing bridge: its first IPv4 address is the gateway. not_found when there is no such bridge,
  // invalid_argument when it is not a bridge or has no IPv4 address.
  static Result<GuestNetwork> open(const std::string& bridge);

  const std::string& bridge() const { return bridge_; }
  const std::string& gateway() const { return gateway_; }  // e.g. "10.213.7.1"
  int prefix_length() const { return prefix_; }
  // "address/prefix" for an address of this subnet.
  std::string cidr(const std::string& address) const { return address + "/" + std::to_string(prefix_); }

  // Takes the lowest free address (not the network's, the gateway's or the broadcast's) for this process;
  // `note` is kept in the lease (one line). unavailable when every address is leased.
  Result<AddressLease> lease(const std::string& note) const;
  // Gives the address back. Idempotent.
  void release(const AddressLease& lease) const;
  // Every lease taken on this bridge, by any process.
  std::vector<LeaseRecord> leases() const;

 private:
  GuestNetwork(std::string bridge, std::uint32_t gateway, int prefix);
  AddressLease lease_at(int index) const;

  std::string bridge_;
  std::string gateway_;
  std::uint32_t gateway_ip_ = 0;  // host byte order
  int prefix_ = 24;
};

}  // namespace tsum::providers::guest
