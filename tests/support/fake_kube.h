// The fake Kubernetes API server (tests/fakes/kubernetes/fake_kube.py) as a child process for a test: over TLS
// (a CA and a certificate for 127.0.0.1 made with openssl), with a bearer token in a mode-0600 file, on a free
// loopback port; with docker_network set its kubelet runs Pods as containers of that Docker network.
//
//   FakeKube kube({.nodes = R"([{"name": "n1", "cpu": "2", "memory": "4Gi"}])"});
//   auto opts = kube.options();      // api_url, ca_file, token_file for the provider
//   kube.get("/api/v1/namespaces/default/pods")   // the fake's state, as JSON (curl)
// The destructor stops it (SIGTERM: it removes its containers), then SIGKILL after 20 s.
#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "providers/kubernetes/kube_options.h"
#include "support/temp_dir.h"

namespace tsum::testing {

struct FakeKubeOptions {
  std::string nodes;                // JSON: [{"name", "cpu", "memory", "gpus", "labels", "taints", "pods"}]
  std::string docker_network = {};  // empty: Pods run without containers
  std::string docker_subnet = {};   // the network's first three octets, e.g. "10.231.5"
  std::string docker_host = {};
  std::string token = "t0ken-of-the-fake";
  bool client_certs = false;  // also take a client certificate the CA signed (client_cert_file())
};

class FakeKube {
 public:
  explicit FakeKube(FakeKubeOptions o) : opts_(std::move(o)), dir_("tsum-fake-kube") {
    const std::string d = dir_.path().string();
    auto sh = [](const std::string& cmd) { REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, cmd.c_str()); };
    sh("cd " + d +
       " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
       "-subj /CN=tsum-fake-kube-ca >/dev/null 2>&1 && openssl req -newkey rsa:2048 -nodes -keyout srv.key "
       "-out srv.csr -subj /CN=127.0.0.1 >/dev/null 2>&1 && printf 'subjectAltName=IP:127.0.0.1\\n' > ext && "
       "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 "
       "-extfile ext >/dev/null 2>&1");
    if (opts_.client_certs)
      sh("cd " + d + " && openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=tsum "
         ">/dev/null 2>&1 && openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
         "-out client.pem -days 2 >/dev/null 2>&1 && chmod 600 client.key");
    std::ofstream(dir_.file("nodes.json")) << opts_.nodes;
    std::ofstream(dir_.file("token")) << opts_.token << "\n";
    chmod(dir_.file("token").c_str(), 0600);
    std::vector<std::string> args = {"/usr/bin/python3", TSUM_FAKE_KUBE,       "--nodes",   dir_.file("nodes.json"),
                                     "--port-file",      dir_.file("port"),    "--token",   opts_.token,
                                     "--tls-cert",       dir_.file("srv.pem"), "--tls-key", dir_.file("srv.key")};
    if (opts_.client_certs) args.insert(args.end(), {"--client-ca", dir_.file("ca.pem")});
    if (!opts_.docker_network.empty())
      for (const std::string& a :
           {std::string("--docker-network"), opts_.docker_network, std::string("--docker-subnet"), opts_.docker_subnet,
            std::string("--docker-host"), opts_.docker_host})
        args.push_back(a);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      const int log = ::open(dir_.file("fake.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (log >= 0) dup2(log, 1), dup2(log, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!std::ifstream(dir_.file("port")) && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream in(dir_.file("port"));
    std::string port;
    in >> port;
    const std::string why = "the fake API server did not start: " + log();
    REQUIRE_MESSAGE(!port.empty(), why);
    url_ = "https://127.0.0.1:" + port;
  }
  ~FakeKube() { stop(); }
  FakeKube(const FakeKube&) = delete;
  FakeKube& operator=(const FakeKube&) = delete;

  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 200; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  const std::string& url() const { return url_; }
  std::string ca_file() const { return dir_.file("ca.pem"); }
  std::string token_file() const { return dir_.file("token"); }
  std::string client_cert_file() const { return dir_.file("client.pem"); }
  std::string client_key_file() const { return dir_.file("client.key"); }
  std::string dir() const { return dir_.path().string(); }
  std::string log() const {
    std::ifstream in(dir_.file("fake.log"));
    return {std::istreambuf_iterator<char>(in), {}};
  }

  providers::KubernetesOptions options() const {
    providers::KubernetesOptions o;
    o.api_url = url_;
    o.ca_file = ca_file();
    o.token_file = token_file();
    o.namespace_ = "default";
    o.request_timeout = std::chrono::seconds(10);
    o.delete_timeout = std::chrono::seconds(60);
    return o;
  }

  // A GET (or DELETE) of the API server through curl, as JSON; null when curl fails.
  nlohmann::json call(const std::string& method, const std::string& path) const {
    const std::string cmd = "curl -sS -X " + method + " --cacert " + ca_file() + " -H 'Authorization: Bearer " +
                            opts_.token + "' '" + url_ + path + "'";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[4096];
      while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
      pclose(p);
    }
    auto j = nlohmann::json::parse(out, nullptr, false);
    return j.is_discarded() ? nlohmann::json() : j;
  }
  nlohmann::json get(const std::string& path) const { return call("GET", path); }
  // Arms a fault (fake_kube.py's /fake/faults: method, path, status, retry_after, lose_answer, times).
  void fault(const nlohmann::json& f) const {
    const std::string cmd = "curl -sS -o /dev/null --cacert " + ca_file() + " -H 'Content-Type: application/json' -d '" +
                            f.dump() + "' '" + url_ + "/fake/faults'";
    REQUIRE(std::system(cmd.c_str()) == 0);
  }
  // The items of a namespace's list of `kind` (pods, services, secrets).
  nlohmann::json items(const std::string& kind, const std::string& ns = "default") const {
    auto j = get("/api/v1/namespaces/" + ns + "/" + kind);
    return j.is_object() ? j.value("items", nlohmann::json::array()) : nlohmann::json::array();
  }

 private:
  FakeKubeOptions opts_;
  TempDir dir_;
  pid_t pid_ = -1;
  std::string url_;
};

}  // namespace tsum::testing
