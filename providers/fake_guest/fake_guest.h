// FakeGuest: a stand-in for the operating system of the fake clouds' instances. boot() does what cloud-init
// does with our #cloud-config user data (cloud_init/cloud_init.h), on this machine, under root/<instance id>:
//   - the user data must start with a "#cloud-config" line and be a YAML mapping (parsed with yaml-cpp);
//   - write_files: each entry's content (plain, or encoding b64/base64) goes to root/<id>/<path> with its
//     permissions (octal string, default 0644); owner and other entry keys are skipped;
//   - runcmd: each entry (a list: the argv; a string: run with /bin/sh -c) goes, in order, into
//     root/<id>/var/lib/cloud/instance/scripts/runcmd, which runs as the instance's "init";
//   - every other top-level key (packages, package_update, ...) is skipped, named in a line on stderr;
//   - anything malformed (bad YAML, no header, a bad path, permissions or base64) is invalid_argument.
// Relocation: a written file's path P becomes root/<id>/P. The directory D holding the written files (their
// common parent, e.g. /opt/tsum) is relocated by textual replacement of D with root/<id>/D inside the
// written files' contents and the runcmd arguments, where D stands as a whole path (what follows it is
// not a letter, digit, '_', '.' or '-'); the start script names D. When the files share no directory below
// "/", only their paths move.
// The runcmd script runs under `unshare --pid --fork --kill-child --mount-proc`, in a PID namespace of its
// own, with root/<id> as working directory, a minimal environment (PATH, HOME=root/<id>), stdin /dev/null,
// stdout and stderr appended to root/<id>/console.log. After runcmd the namespace's init stays (exec sleep
// infinity), so whatever the instance started (the agent: nohup setsid, still in the namespace) lives until
// halt(), which SIGKILLs the namespace's init: the kernel then kills everything in the namespace. The
// unshare process runs with a parent-death signal (setpriv --pdeathsig KILL), so the guests also die when
// the thread that booted them ends (for the fakes, the server thread) or the process is killed.
// Every boot starts from an empty root/<id> (a fresh disk). Thread-safe; the destructor halts every guest.
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::providers::fake_guest {

// One file of write_files, decoded; its path as the user data names it.
struct GuestFile {
  std::string path;
  std::string content;
  unsigned permissions = 0644;
};

// What the guest does with a #cloud-config document.
struct CloudConfig {
  std::vector<GuestFile> files;
  std::vector<std::vector<std::string>> runcmd;  // argv of each command, in order
  std::vector<std::string> skipped;              // keys the guest cannot do, e.g. "packages"
};

// invalid_argument naming what is wrong: no #cloud-config header, YAML that does not parse, a document that
// is not a mapping, a write_files entry without an absolute path (or with a ".." in it), bad permissions,
// an unknown encoding or bad base64, a runcmd entry that is neither a string nor a list of strings.
Result<CloudConfig> parse_cloud_config(std::string_view user_data);

// An instance the cloud has up now, for FakeGuest::sync.
struct LiveInstance {
  std::string id;
  std::string user_data;
};

class FakeGuest {
 public:
  explicit FakeGuest(std::string root);
  ~FakeGuest();
  FakeGuest(const FakeGuest&) = delete;
  FakeGuest& operator=(const FakeGuest&) = delete;

  // Boots the instance: writes its files and starts runcmd. Idempotent per id: while the id is booted (or
  // its boot failed), another boot returns the first one's result and does nothing. invalid_argument for a
  // bad id (letters, digits, '.', '_', '-' only), a root that is not a plain path, or bad user data;
  // internal when the files cannot be written or the namespace does not start.
  Status boot(const std::string& instance_id, std::string_view user_data);
  // Kills everything the instance started and reaps it, waiting at most a few seconds. Idempotent.
  void halt(const std::string& instance_id);
  // Makes the guests follow the cloud: halts each booted id that is not in `up`, boots each one of `up` not
  // booted yet (a boot that fails is logged on stderr once).
  void sync(const std::vector<LiveInstance>& up);
  // Whether the instance's namespace is still there (booted, not halted, its init alive).
  bool running(const std::string& instance_id);
  const std::string& root() const { return root_; }

 private:
  struct Guest {
    pid_t unshare = -1;    // our child; -1 when the boot failed
    pid_t init = -1;       // the namespace's init (unshare's child), in our PID namespace
    Status booted = {};
  };

  Status start(const std::string& id, std::string_view user_data, Guest& g);
  void stop(const std::string& id, Guest& g);

  std::string root_;
  std::mutex mu_;
  std::map<std::string, Guest> guests_;
};

}  // namespace tsum::providers::fake_guest
