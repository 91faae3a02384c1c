#include "api/http/web_routes.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>

#include "common/etag.h"

namespace tsum::api {

namespace {

using Awaitable = boost::asio::awaitable<Response>;

constexpr std::uintmax_t kMaxFileBytes = 32u << 20;
constexpr std::string_view kIndex = "index.html";
constexpr std::string_view kHtmlPolicy =
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'";

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 128 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || std::filesystem::file_size(path, ec) > kMaxFileBytes)
    return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::optional<std::string> load(const WebFiles& files, std::string_view name) {
  if (!files.dir.empty()) return read_file(std::filesystem::path(files.dir) / name);
  for (const auto& f : files.embedded)
    if (f.name == name) return std::string(f.data);
  return std::nullopt;
}

Response serve(const WebFiles& files, std::string_view name, const Request& req) {
  std::optional<std::string> data;
  if (valid_name(name)) data = load(files, name);
  if (!data) return error_response(404, "not_found", "no file '" + std::string(name) + "'");
  Response res;
  res.content_type = std::string(content_type_for(name));
  const std::string etag = etag_of(*data);
  res.headers = {{"ETag", etag}, {"Cache-Control", "no-cache"}, {"X-Content-Type-Options", "nosniff"}};
  if (name.ends_with(".html")) {
    res.headers.emplace_back("Content-Security-Policy", std::string(kHtmlPolicy));
    res.headers.emplace_back("Referrer-Policy", "no-referrer");
  }
  if (etag_matches(req.header("If-None-Match"), etag)) {
    res.status = 304;
    return res;
  }
  res.body = std::move(*data);
  return res;
}

}  // namespace

std::string_view content_type_for(std::string_view name) {
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
      {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},   {".json", "application/json"},
      {".map", "application/json"},          {".svg", "image/svg+xml"},
      {".png", "image/png"},                 {".ico", "image/x-icon"},
      {".txt", "text/plain; charset=utf-8"}};
  for (const auto& [ext, type] : kTypes)
    if (name.ends_with(ext)) return type;
  return "application/octet-stream";
}

void add_web_routes(Router& router, WebFiles files) {
  auto index = [files](Request& req) -> Awaitable { co_return serve(files, kIndex, req); };
  router.add("GET", "/", index);
  router.add("GET", "/ui", index);
  router.add("GET", "/ui/{name}", [files](Request& req) -> Awaitable {
    co_return serve(files, req.params.at("name"), req);
  });
}

}  // namespace tsum::api
