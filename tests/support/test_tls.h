// A throwaway certificate authority and a server certificate for 127.0.0.1 / localhost, made with the
// openssl command line at test time, so loopback HTTPS servers can be verified like real ones.
#pragma once

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "support/temp_dir.h"

namespace tsum::testing {

class TestTls {
 public:
  TestTls() : dir_("tsum-tls") {
    {
      std::ofstream ext(dir_.file("server.ext"));
      ext << "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
             "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n";
    }
    const std::string d = dir_.path().string();
    const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    run("openssl req -x509" + ec + " -keyout " + d + "/ca.key -out " + d + "/ca.pem -days 2 -subj '/CN=tsum test CA'" +
        " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign");
    run("openssl req" + ec + " -keyout " + d + "/server.key -out " + d + "/server.csr -subj /CN=127.0.0.1");
    run("openssl x509 -req -in " + d + "/server.csr -CA " + d + "/ca.pem -CAkey " + d + "/ca.key -CAcreateserial" +
        " -out " + d + "/server.pem -days 2 -extfile " + d + "/server.ext");
  }

  std::string ca_file() const { return dir_.file("ca.pem"); }
  std::string cert_file() const { return dir_.file("server.pem"); }
  std::string key_file() const { return dir_.file("server.key"); }

 private:
  static void run(const std::string& cmd) {
    if (std::system((cmd + " >/dev/null 2>&1").c_str()) != 0)
      throw std::runtime_error("test TLS setup failed (is openssl installed?): " + cmd);
  }

  TempDir dir_;
};

}  // namespace tsum::testing
