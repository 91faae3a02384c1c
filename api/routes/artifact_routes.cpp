#include "api/routes/artifact_routes.h"

#include "api/routes/route_helpers.h"

namespace tsum::api {

using nlohmann::json;
using Awaitable = boost::asio::awaitable<Response>;

namespace {

std::string query_or(const Request& req, const std::string& key) {
  auto it = req.query.find(key);
  return it == req.query.end() ? "" : it->second;
}

// A run token may fetch the trainer bundle, the agent and the registered data sets; nothing else the store holds.
bool run_may_fetch(ArtifactContext& c, const std::string& sha) {
  if (sha == c.trainer_sha256 || sha == c.agent_sha256) return true;
  auto all = c.datasets.list();
  if (!all) return false;
  for (const auto& d : *all)
    if (d.sha256 == sha) return true;
  return c.datasets.workdir(sha).ok();  // a folder job's folder
}

// A folder job's folder, as `tsumd experiment create` packs it (api/cli/workdir_pack.h).
void add_workdir_routes(Router& router, ArtifactContext c) {
  router.add(
      "POST", "/v1/workdirs",
      [c](Request& req) mutable -> Awaitable {
        if (auto denied = check_auth(req, c.tokens)) co_return *denied;
        if (req.body_file.empty()) co_return error_response(400, "invalid_argument", "the body must be a folder's tar.gz");
        auto w = c.datasets.add_workdir(req.body_file);
        if (!w) co_return from_error(w.error());
        co_return json_response(201, *w);
      },
      {.body_to_file = true, .body_limit = c.dataset_limit});

  router.add("GET", "/v1/workdirs/{sha256}", [c](Request& req) mutable -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto w = c.datasets.workdir(req.params["sha256"]);
    if (!w) co_return error_response(w.error());
    co_return json_response(200, *w);
  });

}

}  // namespace

void add_artifact_routes(Router& router, ArtifactContext c) {
  add_workdir_routes(router, c);
  router.add(
      "POST", "/v1/datasets",
      [c](Request& req) mutable -> Awaitable {
        if (auto denied = check_auth(req, c.tokens)) co_return *denied;
        const std::string name = query_or(req, "name"), format = query_or(req, "format");
        if (name.empty() || format.empty())
          co_return error_response(400, "invalid_argument", "POST /v1/datasets needs ?name=NAME&format=FORMAT");
        if (req.body_file.empty()) co_return error_response(400, "invalid_argument", "the body must be a tar archive");
        auto d = c.datasets.add(name, format, req.body_file);
        if (!d) co_return from_error(d.error());
        co_return json_response(201, d->to_json());
      },
      {.body_to_file = true, .body_limit = c.dataset_limit});

  router.add("GET", "/v1/datasets", [c](Request& req) mutable -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto all = c.datasets.list();
    if (!all) co_return error_response(all.error());
    json out = json::array();
    for (const auto& d : *all) out.push_back(d.to_json());
    co_return json_response(200, {{"datasets", out}});
  });

  router.add("GET", "/v1/datasets/{name}", [c](Request& req) mutable -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto d = c.datasets.get(req.params["name"]);
    if (!d) co_return error_response(d.error());
    co_return json_response(200, d->to_json());
  });

  router.add("DELETE", "/v1/datasets/{name}", [c](Request& req) mutable -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    if (auto s = c.datasets.remove(req.params["name"]); !s) co_return error_response(s.error());
    co_return Response{.status = 204, .body = ""};
  });

  router.add("GET", "/v1/blobs/{sha256}", [c](Request& req) mutable -> Awaitable {
    auto info = bearer(req, c.tokens);
    if (!info) co_return error_response(401, "unauthenticated", info.error().detail);
    const std::string sha = req.params["sha256"];
    if (!daemon::is_sha256_hex(sha)) co_return error_response(404, "not_found", "not a sha256: " + sha);
    if (!info->admin && !(info->run_id > 0 && run_may_fetch(c, sha)))
      co_return error_response(403, "forbidden", "this token may not fetch blob " + sha);
    co_return file_response(req, c.blobs.path_of(sha), "application/octet-stream");
  });

  router.add(
      "PUT", "/v1/runs/{id}/artifacts/{name}",
      [c](Request& req) mutable -> Awaitable {
        auto id = id_param(req);
        if (auto denied = check_auth(req, c.tokens, id.value_or(-1))) co_return *denied;
        if (!id) co_return error_response(404, "not_found", "no run '" + req.params["id"] + "'");
        if (auto run = c.store.run(*id); !run) co_return error_response(run.error());
        std::optional<daemon::ByteRange> range;
        if (auto h = req.header("Content-Range"); !h.empty()) {
          range = daemon::parse_content_range(h);
          if (!range) co_return error_response(400, "invalid_argument", "Content-Range must be bytes A-B/TOTAL");
        }
        auto got = c.artifacts.receive(*id, req.params["name"], req.body_file, range, req.header("X-Tsum-Sha256"));
        if (!got) co_return from_error(got.error());
        if (!got->complete) co_return json_response(202, {{"offset", got->offset}});
        co_return json_response(201, got->artifact->to_json());
      },
      {.body_to_file = true});

  router.add("GET", "/v1/runs/{id}/uploads/{name}", [c](Request& req) mutable -> Awaitable {
    auto id = id_param(req);
    if (auto denied = check_auth(req, c.tokens, id.value_or(-1))) co_return *denied;
    if (!id) co_return error_response(404, "not_found", "no run '" + req.params["id"] + "'");
    co_return json_response(200, {{"offset", c.artifacts.offset(*id, req.params["name"])}});
  });

  router.add("GET", "/v1/runs/{id}/artifacts", [c](Request& req) mutable -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no run '" + req.params["id"] + "'");
    if (auto run = c.store.run(*id); !run) co_return error_response(run.error());
    auto all = c.artifacts.list(*id);
    if (!all) co_return error_response(all.error());
    json out = json::array();
    for (const auto& a : *all) out.push_back(a.to_json());
    co_return json_response(200, {{"artifacts", out}});
  });

  // The run's own token may fetch its artifacts too: a spot run's next machine downloads the last checkpoint.
  router.add("GET", "/v1/runs/{id}/artifacts/{name}", [c](Request& req) mutable -> Awaitable {
    auto id = id_param(req);
    if (auto denied = check_auth(req, c.tokens, id.value_or(-1))) co_return *denied;
    if (!id) co_return error_response(404, "not_found", "no run '" + req.params["id"] + "'");
    auto a = c.artifacts.get(*id, req.params["name"]);
    if (!a) co_return error_response(a.error());
    std::string type = a->name.ends_with(".csv")     ? "text/csv; charset=utf-8"
                       : a->name.ends_with(".jsonl") ? "application/x-ndjson"
                                                     : "application/octet-stream";
    co_return file_response(req, c.blobs.path_of(a->sha256), type);
  });
}

void add_join_routes(Router& router, providers::ByoProvider& byo) {
  router.add("GET", "/v1/join/{code}", [&byo](Request& req) -> Awaitable {
    auto script = byo.join(req.params["code"]);
    if (!script) co_return error_response(script.error());
    co_return Response{.status = 200, .content_type = "text/x-shellscript; charset=utf-8", .body = std::move(*script)};
  });
  router.add("POST", "/v1/join/{code}/left", [&byo](Request& req) -> Awaitable {
    if (auto s = byo.left(req.params["code"]); !s) co_return error_response(s.error());
    co_return Response{.status = 204, .body = ""};
  });
}

}  // namespace tsum::api
