// One service account with a freshly generated RSA key per test process (2048-bit key generation takes a
// noticeable moment), for the GCE adapter's tests.
#pragma once

#include <stdexcept>

#include "providers/gce/jwt.h"

namespace tsum::testing {

inline const providers::gce::ServiceAccount& test_account() {
  static const providers::gce::ServiceAccount sa = [] {
    auto key = providers::gce::generate_rsa_key_pem();
    if (!key) throw std::runtime_error(key.error().detail);
    return providers::gce::ServiceAccount{.client_email = "runner@tsum-fake.iam.gserviceaccount.com",
                                          .private_key_id = "test-key-1", .private_key_pem = *key,
                                          .project_id = "tsum-fake"};
  }();
  return sa;
}

}  // namespace tsum::testing
