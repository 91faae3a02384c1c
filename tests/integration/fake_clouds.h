// The five fake clouds as child processes (tsum-fake-cloud, -gce, -azure, -hetzner, -yandex) over HTTPS on
// loopback, each with credentials of its own and the tsumd config section that points the daemon at it.
#pragma once

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/guest/fake_guest.h"
#include "support/temp_dir.h"
#include "support/test_tls.h"

namespace tsum::testing {

// The names a fake gives a cloud's create and delete calls in its --faults spec.
struct CloudCalls {
  std::string create, remove;
};

inline CloudCalls calls_of(const std::string& cloud) {
  if (cloud == "aws") return {"RunInstances", "TerminateInstances"};
  if (cloud == "gce") return {"instances.insert", "instances.delete"};
  if (cloud == "azure") return {"virtualMachines.createOrUpdate", "resourceGroups.delete"};
  if (cloud == "hetzner") return {"servers.create", "servers.delete"};
  return {"instances.create", "instances.delete"};  // yandex
}

inline const std::vector<std::string> kClouds = {"aws", "gce", "azure", "hetzner", "yandex"};

class FakeCloud {
 public:
  // Starts the fake of `cloud` with files under dir. `faults`: its --faults spec; `guest`: boot instances'
  // user data in guest machines (--guest-root, --guest-image, --guest-network), no root for records only.
  // metadata_host: serve the instances' metadata service (spot notices) there, an address the guests reach; the
  // section's metadata_url points the agents at it.
  // extra: more flags for the fake (e.g. --region A,B for the fake AWS's regions).
  FakeCloud(const std::string& cloud, const TempDir& dir, const TestTls& tls, const std::string& faults = "",
            const providers::fake_guest::FakeGuestOptions& guest = {}, const std::string& metadata_host = "",
            const std::vector<std::string>& extra = {})
      : cloud_(cloud), log_(dir.file("fake-" + cloud + ".log")) {
    const std::string secret = "s3cret-" + cloud + "-Zq9Xw";  // distinctive, so a leak in any output is found
    std::vector<std::string> args;
    const std::string d = dir.path().string();
    if (cloud == "aws") {
      args = {FAKE_AWS_BIN, "--cert", tls.cert_file(), "--key", tls.key_file(), "--access-key", "AKIDTSUMTEST",
              "--secret-key", secret, "--pending-s", "1", "--shutting-down-s", "1"};
    } else if (cloud == "gce") {
      args = {FAKE_GCE_BIN, "--cert", tls.cert_file(), "--key", tls.key_file(), "--account-out", d + "/gce-account.json",
              "--provisioning-s", "0.5", "--staging-s", "0.5", "--stopping-s", "1"};
    } else if (cloud == "azure") {
      args = {FAKE_AZURE_BIN, "--cert", tls.cert_file(), "--key", tls.key_file(), "--client-secret", secret,
              "--starting-s", "1", "--operation-s", "1"};
    } else if (cloud == "hetzner") {
      args = {FAKE_HETZNER_BIN, "--cert", tls.cert_file(), "--key", tls.key_file(), "--token", secret,
              "--initializing-s", "0.5", "--starting-s", "0.5", "--deleting-s", "1"};
    } else {
      args = {FAKE_YANDEX_BIN, "--cert", tls.cert_file(), "--key-pem", tls.key_file(), "--key-out", d + "/yc-key.json",
              "--provisioning-s", "0.5", "--starting-s", "0.5", "--operation-s", "1"};
    }
    if (!faults.empty()) args.insert(args.end(), {"--faults", faults});
    if (!guest.root.empty())
      args.insert(args.end(), {"--guest-root", guest.root, "--guest-image", guest.image, "--guest-network", guest.network});
    if (!guest.insecure_registry.empty()) args.insert(args.end(), {"--guest-registry", guest.insecure_registry});
    if (!guest.boot_hook.empty()) args.insert(args.end(), {"--guest-boot-hook", guest.boot_hook});
    if (!metadata_host.empty()) args.insert(args.end(), {"--metadata-listen", metadata_host + ":0"});
    args.insert(args.end(), extra.begin(), extra.end());
    start(args);
    if (!metadata_host.empty()) {
      const std::string text = log();
      auto at = text.find("metadata service on ");
      REQUIRE(at != std::string::npos);
      metadata_url_ = text.substr(at + 20, text.find_first_of(" \n", at + 20) - at - 20);
    }

    secret_ = secret;
    const std::string secret_file = d + "/" + cloud + ".secret";
    const std::string& url = base_url_;
    if (cloud == "aws") {
      write_secret(secret_file, secret);
      section_ = {{"region", "us-east-1"}, {"image_id", "ami-0tsum0test"}, {"access_key_id", "AKIDTSUMTEST"},
                  {"secret_access_key_file", secret_file}, {"ec2_endpoint", url}, {"pricing_endpoint", url}};
    } else if (cloud == "gce") {
      chmod((d + "/gce-account.json").c_str(), 0600);
      secret_ = "";  // the key file is the secret; its private key is checked below in the outputs
      section_ = {{"service_account_file", d + "/gce-account.json"}, {"project", "tsum-fake"},
                  {"compute_endpoint", url + "/compute/v1"}, {"billing_endpoint", url + "/v1"},
                  {"token_endpoint", url + "/token"}, {"operation_poll_ms", 200}};
    } else if (cloud == "azure") {
      write_secret(secret_file, secret);
      section_ = {{"tenant_id", "11111111-2222-4333-8444-555555555555"},
                  {"client_id", "66666666-7777-4888-9999-000000000000"},
                  {"subscription_id", "00000000-0000-4000-8000-000000000001"}, {"client_secret_file", secret_file},
                  {"login_endpoint", url}, {"management_endpoint", url}, {"prices_endpoint", url + "/api/retail/prices"},
                  {"operation_poll_ms", 200}};
    } else if (cloud == "hetzner") {
      write_secret(secret_file, secret);
      section_ = {{"token_file", secret_file}, {"endpoint", url + "/v1"}};
    } else {
      chmod((d + "/yc-key.json").c_str(), 0600);
      secret_ = "";
      section_ = {{"key_file", d + "/yc-key.json"}, {"folder_id", "b1gfakefolder0000001"}, {"subnet_id", "e9bfakesubnet"},
                  {"image_id", "fd8fakeimage"}, {"iam_endpoint", url + "/iam/v1/tokens"},
                  {"compute_endpoint", url + "/compute/v1"}, {"operation_endpoint", url + "/operations"},
                  {"billing_endpoint", url + "/billing/v1"}, {"operation_poll_ms", 200}};
    }
    section_["ca_file"] = tls.ca_file();
    if (!metadata_url_.empty()) section_["metadata_url"] = metadata_url_;
  }
  ~FakeCloud() { stop(); }
  FakeCloud(const FakeCloud&) = delete;
  FakeCloud& operator=(const FakeCloud&) = delete;

  const std::string& name() const { return cloud_; }
  const std::string& base_url() const { return base_url_; }
  // The config section for providers.<name>; callers may change fields (e.g. cloud_init_dir) before writing it.
  nlohmann::json& section() { return section_; }
  // A secret the fake holds (empty for key-file clouds), which must never show in tsumd's output.
  const std::string& secret() const { return secret_; }
  std::string log() const {
    std::ifstream in(log_);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  // Takes spot instance `id` back as the cloud does (POST /_fake/interrupt): its notice now, gone notice_s later
  // (negative: the cloud's own period; 0: at once, without notice). The fake's answer, or why it failed.
  std::string interrupt(const std::string& id, const std::string& ca_file, double notice_s = -1) const {
    std::string url = base_url_ + "/_fake/interrupt/" + id;
    if (notice_s >= 0) url += "?notice_s=" + std::to_string(notice_s);
    return post(url, ca_file);
  }
  // The spot machines `region` still starts (POST /_fake/capacity; -1: no limit). The fake's answer.
  std::string spot_capacity(const std::string& region, int left, const std::string& ca_file) const {
    return post(base_url_ + "/_fake/capacity/" + region + "?spot=" + std::to_string(left), ca_file);
  }
  std::string post(const std::string& url, const std::string& ca_file) const {
    std::string cmd = "curl -sS -X POST --cacert '" + ca_file + "' '" + url + "' 2>&1";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[512];
      for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
      pclose(p);
    }
    return out;
  }
  const std::string& metadata_url() const { return metadata_url_; }

  // A cloud that no longer answers: the process is stopped (SIGSTOP), so connections are accepted by the kernel
  // and then nothing comes back; resume() lets it go on where it was.
  void pause() { if (pid_ > 0) kill(pid_, SIGSTOP); }
  void resume() { if (pid_ > 0) kill(pid_, SIGCONT); }

  void stop() {
    if (pid_ <= 0) return;
    resume();
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (kill(pid_, 0) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
    pid_ = 0;
  }

 private:
  static void write_secret(const std::string& path, const std::string& secret) {
    std::ofstream(path) << secret << "\n";
    chmod(path.c_str(), 0600);
  }

  // Starts the fake with stdout and stderr in its log; it prints "... listening on <base URL> ..." when up.
  void start(const std::vector<std::string>& args) {
    fflush(nullptr);  // else the child's freopen writes out the parent's buffered output again
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      FILE* f = freopen(log_.c_str(), "a", stdout);
      f = freopen(log_.c_str(), "a", stderr);
      (void)f;
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    std::string::size_type at = std::string::npos;
    std::string text;
    while (at == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      text = log();
      at = text.find("listening on ");
    }
    if (at == std::string::npos) FAIL("fake " << cloud_ << " did not start:\n" << text);
    base_url_ = text.substr(at + 13);
    base_url_ = base_url_.substr(0, base_url_.find_first_of(" \n"));
  }

  std::string cloud_, log_, base_url_, secret_, metadata_url_;
  nlohmann::json section_;
  pid_t pid_ = 0;
};

// A config file with providers.<cloud> = section, mode 0600.
inline std::string write_cloud_config(const TempDir& dir, const std::string& cloud, const nlohmann::json& section) {
  const std::string path = dir.file("tsumd-" + cloud + ".json");
  std::ofstream(path) << nlohmann::json{{"providers", {{cloud, section}}}}.dump(2);
  chmod(path.c_str(), 0600);
  return path;
}

}  // namespace tsum::testing
