// Docker's engine on a guest machine, started as a VM's service manager starts docker.io's: the snippet a
// guest's init runs before its own work. It mounts the cgroup v1 hierarchies the kernel has (controllers it
// keeps together mounted together, as a VM's /sys/fs/cgroup has them), starts dockerd (the image's docker.io:
// vfs driver, no bridge, no iptables; containers run with --network none) trusting `insecure_registry` (a
// plain-HTTP registry, HOST:PORT; empty: none), and waits up to 30 s for its socket. dockerd's log goes to
// /var/log/dockerd.log inside the guest.
#pragma once

#include <string>

namespace tsum::providers::guest {

// Shell text ending in "&& " (or ";" when nothing is to be chained), to prefix the guest's command.
std::string docker_engine_boot(const std::string& insecure_registry);

}  // namespace tsum::providers::guest
