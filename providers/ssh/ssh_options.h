// What the ssh provider is configured with: the hosts it may use and how it talks to them. Plain data,
// filled by the daemon's config file parser (daemon/config/config.h) or by a test.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace tsum::providers {

struct SshHost {
  std::string name;                 // the offer's instance type; [A-Za-z0-9_.-], unique
  std::string address;              // host name or IP the daemon connects to
  int port = 22;
  std::string user;
  std::string key_file;             // private key, mode 0600 or stricter
  int cores = 1;
  int gpus = 0;
  std::string gpu_type;
  double memory_gib = 0;
  double hourly_price = 0;          // USD
  std::string billing = "step:1";   // the billing rule this host is priced by (default: per second)
  std::string power_on;             // sh command run on the daemon host before the first ssh; may be empty
  std::string power_off;            // sh command run on the daemon host after the agent is stopped
  std::string work_dir = "/var/tmp/tsum";  // absolute; each instance gets <work_dir>/<instance id>
  bool docker = false;              // the host has a Docker engine the user may use: runs of runtime docker
};

struct SshOptions {
  std::string state_dir;            // required: reservations, known_hosts, staging, tunnel logs
  std::vector<SshHost> hosts;
  std::string known_hosts;          // empty: <state_dir>/ssh/known_hosts
  std::chrono::seconds connect_timeout{10};       // ssh ConnectTimeout
  std::chrono::seconds alive_interval{5};         // ServerAliveInterval; dead after interval * count
  int alive_count = 3;                            // ServerAliveCountMax
  std::chrono::seconds boot_timeout{300};         // power_on until sshd answers
  std::chrono::seconds push_timeout{600};         // copying the agent, trainer and data
  std::chrono::seconds power_timeout{300};        // each power_on / power_off command
  std::chrono::seconds command_timeout{60};       // any other remote command (mkdir, kill, cleanup)
};

}  // namespace tsum::providers
