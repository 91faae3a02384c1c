// Which ssh host is held by which instance, on disk so it survives a daemon crash. One file per host,
// <dir>/<host>.json, created exclusively: a host runs one instance at a time. A host whose agent could not be
// stopped (it was unreachable at terminate) also has <dir>/<host>.cleanup naming the remote directory left
// behind; the host is not handed out again until that cleanup has succeeded.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::providers::ssh {

struct Reservation {
  std::string id = {};                 // the instance id
  std::string host = {};               // SshHost::name
  std::string run_id = {};
  std::string tag = {};
  std::string idempotency_token = {};
  std::string work = {};               // the instance's directory on the host
  bool touched = false;           // files or processes may be on the host (the copy began)
  int tunnel_pid = 0;             // the daemon's ssh process holding the tunnel and the agent's session
  uint64_t tunnel_ticks = 0;      // its start time, against pid reuse
  std::optional<std::string> ended = {};  // why the session ended, once describe has seen it end

  nlohmann::json to_json() const;
  static Reservation from_json(const nlohmann::json& j);
};

class ReservationStore {
 public:
  explicit ReservationStore(std::string dir);  // created by the first claim

  // already_exists when the host is held (by anyone); the caller reads it to tell who.
  Status claim(const Reservation& r);
  // Overwrites the host's reservation (atomically). not_found if the host is not held.
  Status update(const Reservation& r);
  std::optional<Reservation> find(const std::string& host) const;
  std::vector<Reservation> all() const;
  Status release(const std::string& host);

  // The remote directory a host still needs cleaned, if any.
  std::optional<std::string> pending_cleanup(const std::string& host) const;
  Status set_pending_cleanup(const std::string& host, const std::string& work);
  void clear_pending_cleanup(const std::string& host);

 private:
  std::string path(const std::string& host, const char* ext) const;
  std::string dir_;
};

}  // namespace tsum::providers::ssh
