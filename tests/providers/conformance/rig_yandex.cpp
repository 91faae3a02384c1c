// The Yandex rig: the Compute adapter on the fake Yandex Cloud (a PS256 JWT for an IAM token, then bearer
// tokens); operations finish after one poll.
#include "providers/conformance/cloud_rig.h"
#include "providers/gce/jwt.h"
#include "tests/fakes/yandex/fake_yandex_cloud.h"
#include "providers/yandex/yandex_provider.h"
#include "support/provider_fixtures.h"

namespace tsum::conformance {

namespace {

using namespace std::chrono_literals;
using namespace providers;
using namespace providers::yandex;

// One authorized key per test process (RSA key generation takes a moment).
const AuthorizedKey& test_key() {
  static const AuthorizedKey key{.id = "ajefakekey0000000001", .service_account_id = "ajefakesa00000000001",
                                 .private_key_pem = gce::generate_rsa_key_pem().value()};
  return key;
}

class YandexRig final : public CloudRig {
 public:
  explicit YandexRig(const RigOptions& o)
      : fake_({.server = {.listen = {.cert_file = tls_.cert_file(), .key_file = tls_.key_file()}, .hang = 3s,
                          .guest = o.guest, .clock = &clock_},
               .public_key_pem = test_key().private_key_pem,
               .compute = {.page_size = o.page_size > 0 ? o.page_size : 1000},
               .sku_page_size = o.page_size > 0 ? o.page_size : 1000}) {
    REQUIRE(fake_.start().ok());
    provider_ = make(test_key());
  }

  std::string name() const override { return "yandex"; }
  Provider& provider() override { return *provider_; }
  fake_cloud::FakeServer& server() override { return fake_.server(); }
  Methods methods() const override {
    return {"instances.create", "instances.get", "instances.delete", "instances.list", {"skus.list"}};
  }
  Offer offer() const override { return {.provider = "yandex", .instance_type = "standard-v3-2c-8g"}; }
  std::unique_ptr<Provider> with_wrong_credential() override {
    AuthorizedKey wrong = test_key();
    wrong.private_key_pem = gce::generate_rsa_key_pem().value();
    return make(wrong);
  }
  std::vector<std::string> secrets() const override { return {"PRIVATE KEY", "eyJ"}; }
  std::string refusal_code() const override { return "UNAUTHENTICATED"; }
  double token_lifetime_s() const override { return 12 * 3600; }

  int created() const override { return fake_.created(); }
  int existing() const override { return static_cast<int>(fake_.instances().size()); }
  std::string user_data(const InstanceHandle& h) const override {
    for (const auto& i : fake_.instances())
      if (i.id == h.id) return i.user_data;
    return {};
  }
  std::string market(const InstanceHandle& h) const override {
    for (const auto& i : fake_.instances())
      if (i.id == h.id) return i.preemptible ? "preemptible" : "on-demand";
    return {};
  }

 private:
  std::unique_ptr<YandexProvider> make(const AuthorizedKey& key) {
    YandexOptions o{.key = key, .folder_id = fake_.folder_id(), .subnet_id = "e9bfakesubnet", .image_id = "fd8fakeimage",
                    .iam_endpoint = fake_.iam_url(), .compute_endpoint = fake_.compute_url(),
                    .operation_endpoint = fake_.operation_url(), .billing_endpoint = fake_.billing_url(),
                    .http = testing::fake_http(tls_.ca_file()),
                    .attempt_timeout = 1000ms, .operation_deadline = 5s, .delete_deadline = 5s, .operation_poll = 5ms, .clock = &clock_};
    auto p = YandexProvider::make(o);
    REQUIRE_MESSAGE(p.ok(), p.error().detail);
    return std::move(*p);
  }

  yandex::fake::FakeYandexCloud fake_;
  std::unique_ptr<YandexProvider> provider_;
};

}  // namespace

std::unique_ptr<CloudRig> make_yandex_rig(const RigOptions& o) { return std::make_unique<YandexRig>(o); }

}  // namespace tsum::conformance
