#include <doctest/doctest.h>

#include "daemon/fixture.h"
#include "daemon/store/token_store.h"

using namespace tsum;
using namespace tsum::daemon;

TEST_CASE("tokens: only the hash is stored; admin and run scopes; revocation") {
  testing::DaemonFixture f;
  TokenStore tokens(*f.db, f.clock);
  auto admin = tokens.create_admin();
  REQUIRE(admin.ok());
  CHECK(admin->starts_with("tsum_"));
  CHECK(admin->size() == 5 + 64);
  auto st = f.db->prepare("SELECT hash FROM tokens");
  REQUIRE(*st->step());
  CHECK(st->text(0) == TokenStore::sha256_hex(*admin));
  CHECK(st->text(0).find(admin->substr(5)) == std::string::npos);

  CHECK(tokens.authenticate(*admin)->admin);
  auto run = tokens.create_for_run(2);
  REQUIRE(run.ok());
  auto info = tokens.authenticate(*run);
  REQUIRE(info.ok());
  CHECK_FALSE(info->admin);
  CHECK(info->run_id == 2);
  CHECK(tokens.authenticate("tsum_nope").code() == Code::not_found);
  CHECK(tokens.authenticate("").code() == Code::not_found);

  REQUIRE(tokens.revoke_run(2).ok());
  CHECK(tokens.authenticate(*run).code() == Code::not_found);
  CHECK(tokens.authenticate(*admin).ok());
}

TEST_CASE("sha256 matches the known vector") {
  CHECK(TokenStore::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
