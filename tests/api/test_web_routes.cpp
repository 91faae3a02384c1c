// The dashboard's static files over real HTTP: content types, ETag revalidation, no auth, and no way out of
// the file set (embedded) or the directory (--web-dir).
#include <fstream>

#include "api/http/web_routes.h"
#include "support/temp_dir.h"
#include "tests/api/test_server.h"

using namespace tsum;
using namespace tsum::api;
using namespace tsum::api::testing;

namespace {

constexpr EmbeddedFile kFiles[] = {
    {"index.html", "<!doctype html><title>t</title>"},
    {"app.js", "console.log(1);"},
    {"app.css", "body{}"},
};

struct WebServer : TestServer {
  explicit WebServer(WebFiles files) { add_web_routes(router, std::move(files)); }
};

void write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

}  // namespace

TEST_CASE("web: / and /ui serve index.html; /ui/{name} the other files, each with its type") {
  WebServer s({kFiles, ""});
  for (const char* target : {"/", "/ui", "/ui/index.html"}) {
    CAPTURE(target);
    auto r = http_call(kHost, s.port, "GET", target);
    CHECK(r.status == 200);
    CHECK(r.header("Content-Type") == "text/html; charset=utf-8");
    CHECK(r.body == "<!doctype html><title>t</title>");
    CHECK(contains(r.header("Content-Security-Policy"), "default-src 'self'"));
  }
  auto js = http_call(kHost, s.port, "GET", "/ui/app.js");
  CHECK(js.status == 200);
  CHECK(js.header("Content-Type") == "text/javascript; charset=utf-8");
  CHECK(js.header("X-Content-Type-Options") == "nosniff");
  CHECK(js.header("Cache-Control") == "no-cache");
  CHECK(js.body == "console.log(1);");
  CHECK(http_call(kHost, s.port, "GET", "/ui/app.css").header("Content-Type") == "text/css; charset=utf-8");
}

TEST_CASE("web: the ETag names the content and If-None-Match gets 304 without a body") {
  WebServer s({kFiles, ""});
  auto first = http_call(kHost, s.port, "GET", "/ui/app.js");
  const std::string etag = first.header("ETag");
  REQUIRE(etag.size() == 18);
  CHECK(etag.front() == '"');
  CHECK(http_call(kHost, s.port, "GET", "/ui/app.css").header("ETag") != etag);

  auto again = http_call(kHost, s.port, "GET", "/ui/app.js", "", {{"If-None-Match", etag}});
  CHECK(again.status == 304);
  CHECK(again.body.empty());
  CHECK(again.header("ETag") == etag);
  auto stale = http_call(kHost, s.port, "GET", "/ui/app.js", "", {{"If-None-Match", "\"0000000000000000\""}});
  CHECK(stale.status == 200);
  CHECK(stale.body == "console.log(1);");
}

TEST_CASE("web: unknown names, dot files and traversal attempts get 404") {
  tsum::testing::TempDir dir;
  write(dir.path() / "index.html", "dir index");
  write(dir.path() / ".secret", "HIDDEN-CONTENT");
  write(dir.path().parent_path() / (dir.path().filename().string() + "-outside.txt"), "OUTSIDE-CONTENT");
  const std::string outside = "..%2F" + dir.path().filename().string() + "-outside.txt";
  for (const WebFiles& files : {WebFiles{kFiles, ""}, WebFiles{{}, dir.path().string()}}) {
    WebServer s(files);
    for (const std::string& target : std::vector<std::string>{"/ui/nope.js", "/ui/.secret", "/ui/..", "/ui/%2e%2e", "/ui/" + outside,
                               "/ui/%2Fetc%2Fpasswd", "/ui/a/b", "/ui/..%5Capp.js"}) {
      CAPTURE(target);
      auto r = http_call(kHost, s.port, "GET", target);
      CHECK(r.status == 404);
      CHECK(!contains(r.body, "OUTSIDE-CONTENT"));
      CHECK(!contains(r.body, "HIDDEN-CONTENT"));
    }
  }
  std::filesystem::remove(dir.path().parent_path() / (dir.path().filename().string() + "-outside.txt"));
}

TEST_CASE("web: with a directory, files are read at each request") {
  tsum::testing::TempDir dir;
  write(dir.path() / "index.html", "v1");
  std::filesystem::create_directory(dir.path() / "sub.js");  // a directory is not a file
  WebServer s({kFiles, dir.path().string()});
  CHECK(http_call(kHost, s.port, "GET", "/").body == "v1");
  write(dir.path() / "index.html", "v2");
  CHECK(http_call(kHost, s.port, "GET", "/").body == "v2");
  CHECK(http_call(kHost, s.port, "GET", "/ui/app.js").status == 404);  // the embedded set is not consulted
  CHECK(http_call(kHost, s.port, "GET", "/ui/sub.js").status == 404);
}

TEST_CASE("web: content types by extension") {
  CHECK(content_type_for("a.svg") == "image/svg+xml");
  CHECK(content_type_for("a.png") == "image/png");
  CHECK(content_type_for("a.json") == "application/json");
  CHECK(content_type_for("README") == "application/octet-stream");
}
