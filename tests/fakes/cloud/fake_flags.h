// FakeFlags: the command line every fake's executable shares, and the cloud's own flags next to it.
// Shared (into FakeServerOptions):
//   --listen HOST:PORT   address to serve on (default 127.0.0.1:0, an ephemeral port); --port N: on 127.0.0.1
//   --cert FILE          with the TLS key flag (--key FILE; Yandex, whose --key is its authorized key, says
//                        --key-pem FILE): serve HTTPS with this PEM certificate chain and key (default: HTTP)
//   --guest-root DIR, --guest-image TAR, --guest-network BRIDGE   boot each instance's user data in a guest
//                        machine under DIR/<id> until it is deleted (guest_hook.h); --guest-registry HOST:PORT
//                        a plain-HTTP registry their Docker engines trust
//   --faults SPEC        faults injected from the start (faults.h)
//   --hang-ms MS, --retry-after-s S   how a timeout fault holds the connection, a 429's Retry-After
// A cloud adds its credentials, state timings and page sizes with text(), seconds(), count() and toggle();
// the usage text lists them all, numbers with their defaults.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/fakes/cloud/fake_server.h"

namespace tsum::providers::fake_cloud {

class FakeFlags {
 public:
  // program: "tsum-fake-gce"; server: where the shared flags go; faults_example: a --faults spec naming this
  // cloud's methods, for the usage text.
  FakeFlags(std::string program, FakeServerOptions* server, std::string faults_example);
  FakeFlags(const FakeFlags&) = delete;  // its flags point into itself
  FakeFlags& operator=(const FakeFlags&) = delete;

  void text(std::string flag, std::string value_name, std::string* field, std::string help);
  void seconds(std::string flag, double* field, std::string help);  // a number >= 0
  void count(std::string flag, int* field, std::string help);       // a whole number >= 1
  void toggle(std::string flag, bool* field, std::string help);     // takes no value
  // Renames the TLS key flag (--key) for a cloud that needs --key itself.
  void rename_tls_key(std::string flag);
  // Text after the flags in the usage line, e.g. "--client-secret SECRET" for a required flag.
  void set_synopsis(std::string synopsis) { synopsis_ = std::move(synopsis); }

  // Parses argv. nullopt: go on; else the exit status to return: 0 after --help (usage on stdout), 2 for a
  // bad command line (the reason and the usage on stderr).
  std::optional<int> parse(int argc, char** argv);
  // "<program>: <message>" on stderr; returns status.
  int fail(const std::string& message, int status = 1) const;
  const std::string& program() const { return program_; }
  std::string usage() const;

 private:
  struct Flag {
    std::string name, value_name, help;
    std::function<std::string(std::string_view)> apply;  // the error, "" when fine; null: a toggle
    bool* toggle = nullptr;
  };
  void add(Flag f) { flags_.push_back(std::move(f)); }
  Flag* find(std::string_view name);

  std::string program_;
  std::string synopsis_ = "[flags]";
  FakeServerOptions* server_;
  std::string tls_key_ = "--key";
  std::vector<Flag> flags_;
};

}  // namespace tsum::providers::fake_cloud
