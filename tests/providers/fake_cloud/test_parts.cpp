// The small shared parts of the fakes: pages, lifecycles, the call book, targets and timestamps.
#include <doctest/doctest.h>

#include "tests/fakes/cloud/call_book.h"
#include "tests/fakes/cloud/lifecycle.h"
#include "tests/fakes/cloud/pagination.h"
#include "tests/fakes/cloud/request.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::fake_cloud;

TEST_CASE("pages: min(asked, page size) items, offset tokens with the cloud's prefix, forged tokens refused") {
  auto first = page_at_token(5, std::nullopt, "nt-", 1000, 2);
  REQUIRE(first);
  CHECK(first->begin == 0);
  CHECK(first->end == 2);
  CHECK(first->next_token("nt-") == "nt-2");
  auto last = page_at_token(5, "nt-4", "nt-", 1000, 2);
  REQUIRE(last);
  CHECK(last->begin == 4);
  CHECK(last->end == 5);
  CHECK_FALSE(last->next);
  CHECK(last->next_token("nt-").empty());
  CHECK(page_at_token(5, "", "nt-", 3, 10)->end == 3);  // an empty token: the first page; asked 3 of at most 10
  CHECK(page_at_token(5, "2", "", 0, 10)->end == 3);    // at least one item a page
  CHECK(page_at_token(5, "5", "", 2, 2)->begin == 5);   // the end: an empty page
  for (const char* forged : {"pt-2", "nt-", "nt-6", "nt-x", "nt-2x", "nt--1"}) CHECK_MESSAGE(!page_at_token(5, forged, "nt-", 2, 2), forged);
  CHECK(page_from(3, 9, 2, 2).begin == 3);

  CHECK(last_page(0, 25) == 1);
  CHECK(last_page(51, 25) == 3);
  auto third = numbered_page(51, 3, 25);
  CHECK(third.begin == 50);
  CHECK(third.end == 51);
  CHECK_FALSE(third.next);
  CHECK(numbered_page(51, 1, 25).next == 25u);

  const Query q{{"n", "7"}, {"bad", "7x"}, {"empty", ""}};
  CHECK(number_param(q, "n", 1, 10, 5) == 7);
  CHECK(number_param(q, "absent", 1, 10, 5) == 5);
  CHECK_FALSE(number_param(q, "n", 8, 10, 5));
  CHECK_FALSE(number_param(q, "bad", 1, 10, 5));
  CHECK_FALSE(number_param(q, "empty", 1, 10, 5));
}

TEST_CASE("lifecycles: boot phases by time, then teardown to gone or halt; a delete outranks a halt") {
  const Lifecycle life{.boot = {{"pending", 2}, {"running"}},
                       .teardown = {{"shutting-down", 2}, {"terminated", 10}},
                       .halt = {{"stopping", 1}, {"stopped"}}};
  Timeline t{.created_at_s = 100};
  CHECK(state_at(life, t, 100) == "pending");
  CHECK(state_at(life, t, 101.9) == "pending");
  CHECK(state_at(life, t, 102) == "running");
  CHECK(state_at(life, t, 1e9) == "running");
  CHECK(booted(t, 150));
  t.halted_at_s = 200;
  CHECK(state_at(life, t, 199) == "running");
  CHECK(state_at(life, t, 200.5) == "stopping");
  CHECK(state_at(life, t, 1e9) == "stopped");
  CHECK_FALSE(booted(t, 200));
  t.deleted_at_s = 300;
  CHECK(state_at(life, t, 301) == "shutting-down");
  CHECK(state_at(life, t, 303) == "terminated");
  CHECK(state_at(life, t, 312).empty());  // gone
  const Lifecycle hetzner{.boot = {{"initializing", 1}, {"running"}}, .teardown = {{"deleting", 2}}, .halt = {{"off"}}};
  CHECK(state_at(hetzner, {.created_at_s = 0, .deleted_at_s = 5}, 6.9) == "deleting");
  CHECK(state_at(hetzner, {.created_at_s = 0, .deleted_at_s = 5}, 7).empty());
  CHECK(state_at(hetzner, {.created_at_s = 0, .halted_at_s = 5}, 1e9) == "off");
}

TEST_CASE("the call book counts per method, issues tokens that expire or are revoked, and remembers them all") {
  CallBook book;
  book.count("instances.get");
  book.count("instances.get");
  CHECK(book.requests("instances.get") == 2);
  CHECK(book.requests("instances.list") == 0);
  book.reject();
  CHECK(book.rejected() == 1);
  const std::string a = book.issue("ya29.fake-", 100);
  CHECK(a.starts_with("ya29.fake-"));
  CHECK(a.size() == 10 + 32);
  CHECK(book.valid(a, 99));
  CHECK_FALSE(book.valid(a, 100));  // expired
  CHECK_FALSE(book.valid("ya29.fake-made-up", 0));
  book.revoke_all();
  CHECK_FALSE(book.valid(a, 0));
  const std::string b = book.issue("t1.", 100);
  CHECK(b != a);
  CHECK(book.valid(b, 0));
  book.revoke_all(/*refuse_new=*/true);
  const std::string c = book.issue("t1.", 100);
  CHECK_FALSE(book.valid(c, 0));
  CHECK(book.issued() == 3);
  CHECK(book.tokens().size() == 3);

  http::LoopbackRequest req{.method = "GET", .target = "/", .headers = {{"authorization", "Bearer tok en"}}};
  CHECK(CallBook::bearer(req) == "tok en");
  req.headers = {{"Authorization", "Basic xyz"}};
  CHECK_FALSE(CallBook::bearer(req));
}

TEST_CASE("targets split into path and decoded query; paths into segments; timestamps as clouds print them") {
  auto t = parse_target({.method = "GET", .target = "/v1/servers?label_selector=tsum%3D%3Dx&per_page=2&a+b=c+d&a+b=e"});
  REQUIRE(t.ok());
  CHECK(t->path == "/v1/servers");
  CHECK(t->query.at("label_selector") == "tsum==x");
  CHECK(t->query.at("per_page") == "2");
  CHECK(t->query.at("a b") == "c d");  // the first of a repeated name
  CHECK(parse_target({.method = "GET", .target = "/x"})->query.empty());
  CHECK(parse_target({.method = "GET", .target = "/x?a=%zz"}).code() == Code::invalid_argument);
  CHECK(split_path("/compute/v1//projects/p/") == std::vector<std::string>{"compute", "v1", "projects", "p"});
  CHECK(iso8601(1704067200.75) == "2024-01-01T00:00:00.000Z");
  CHECK(rfc3339(1704067200.25) == "2024-01-01T00:00:00.250000Z");
}
