#include "daemon/artifacts/run_artifacts.h"

#include <algorithm>

#include <charconv>
#include <filesystem>
#include <fstream>

namespace tsum::daemon {

namespace fs = std::filesystem;

namespace {

bool parse_u64(std::string_view s, std::uint64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Appends `from` to `to`; false on an I/O error.
bool append_file(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary | std::ios::app);
  if (!in || !out) return false;
  out << in.rdbuf();
  return static_cast<bool>(out.flush());
}

}  // namespace

std::optional<ByteRange> parse_content_range(std::string_view h) {
  if (!h.starts_with("bytes ")) return std::nullopt;
  h.remove_prefix(6);
  auto dash = h.find('-'), slash = h.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || dash > slash) return std::nullopt;
  ByteRange r;
  if (!parse_u64(h.substr(0, dash), r.first) || !parse_u64(h.substr(dash + 1, slash - dash - 1), r.last) ||
      !parse_u64(h.substr(slash + 1), r.total))
    return std::nullopt;
  if (r.first > r.last || r.last >= r.total) return std::nullopt;
  return r;
}

bool is_artifact_name(std::string_view n) {
  if (n.empty() || n.size() > 255) return false;
  // Segments split at '/' (a job's file under a directory of /tsum/out): none empty, none starting with '.'.
  for (size_t start = 0; start <= n.size();) {
    size_t end = std::min(n.find('/', start), n.size());
    std::string_view seg = n.substr(start, end - start);
    if (seg.empty() || seg[0] == '.' || seg.size() > 128) return false;
    for (char c : seg)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
    start = end + 1;
  }
  return true;
}

RunArtifacts::RunArtifacts(Db& db, BlobStore& blobs, std::string upload_dir, const Clock& clock)
    : db_(db), blobs_(blobs), upload_dir_(std::move(upload_dir)), clock_(clock) {
  std::error_code ec;
  fs::create_directories(upload_dir_, ec);
}

std::string RunArtifacts::partial_path(int64_t run_id, const std::string& name) const {
  std::string flat = name;  // one file per upload: a name's '/' (a job's subdirectory) becomes '+'
  std::replace(flat.begin(), flat.end(), '/', '+');
  return (fs::path(upload_dir_) / ("run-" + std::to_string(run_id) + "-" + flat + ".partial")).string();
}

std::uint64_t RunArtifacts::offset(int64_t run_id, const std::string& name) {
  if (auto a = get(run_id, name)) return a->bytes;
  std::error_code ec;
  auto n = fs::file_size(partial_path(run_id, name), ec);
  return ec ? 0 : n;
}

Result<UploadResult> RunArtifacts::receive(int64_t run_id, const std::string& name, const std::string& body,
                                           std::optional<ByteRange> range, const std::string& sha256) {
  std::error_code ec;
  auto drop = [&](Error e) {
    fs::remove(body, ec);
    return e;
  };
  if (!is_artifact_name(name)) return drop(Error{Code::invalid_argument, "artifact name '" + name + "' is not valid"});
  if (!is_sha256_hex(sha256))
    return drop(Error{Code::invalid_argument, "X-Tsum-Sha256 must be the artifact's sha256 (64 lower-case hex digits)"});
  auto body_size = fs::file_size(body, ec);
  if (ec) return make_error(Code::internal, "upload body is missing");
  if (auto done = get(run_id, name); done) {  // already complete: a retry of the same bytes is fine
    fs::remove(body, ec);
    if (done->sha256 != sha256)
      return make_error(Code::already_exists, "artifact " + name + " of run " + std::to_string(run_id) +
                                                  " already holds other bytes (sha256 " + done->sha256 + ")");
    return UploadResult{true, done->bytes, *done};
  }
  const std::string partial = partial_path(run_id, name);
  if (!range) {  // the whole artifact in one body
    fs::remove(partial, ec);
    auto a = record(run_id, name, body, sha256);
    if (!a) return a.error();
    return UploadResult{true, a->bytes, *a};
  }
  if (range->last - range->first + 1 != body_size)
    return drop(Error{Code::invalid_argument, "Content-Range names " + std::to_string(range->last - range->first + 1) +
                                                  " bytes, the body has " + std::to_string(body_size)});
  std::uint64_t held = offset(run_id, name);
  if (range->first != held)
    return drop(Error{Code::already_exists, "the upload of " + name + " holds " + std::to_string(held) +
                                                " bytes; a piece must start there, not at " + std::to_string(range->first)});
  if (held == 0) {
    fs::rename(body, partial, ec);
    if (ec && !append_file(body, partial)) return drop(Error{Code::internal, "cannot store the upload of " + name});
    fs::remove(body, ec);
  } else if (!append_file(body, partial)) {
    return drop(Error{Code::internal, "cannot append to the upload of " + name});
  } else {
    fs::remove(body, ec);
  }
  held += body_size;
  if (held < range->total) return UploadResult{false, held, std::nullopt};
  auto a = record(run_id, name, partial, sha256);
  if (!a) return a.error();
  return UploadResult{true, a->bytes, *a};
}

Result<Artifact> RunArtifacts::record(int64_t run_id, const std::string& name, const std::string& file,
                                      const std::string& sha256) {
  auto blob = blobs_.adopt(file, sha256);
  if (!blob) return make_error(blob.error().code, "artifact " + name + ": " + blob.error().detail);
  auto st = db_.prepare(
      "INSERT INTO run_artifacts (run_id, name, sha256, bytes, created_at) VALUES (?, ?, ?, ?, ?) "
      "ON CONFLICT (run_id, name) DO NOTHING");
  if (!st) return st.error();
  if (auto s = st->bind(run_id, name, blob->sha256, static_cast<int64_t>(blob->bytes), clock_.now_s()).run(); !s)
    return s.error();
  return get(run_id, name);
}

Result<std::vector<Artifact>> RunArtifacts::list(int64_t run_id) {
  auto st = db_.prepare("SELECT name, sha256, bytes FROM run_artifacts WHERE run_id = ? ORDER BY name");
  if (!st) return st.error();
  st->bind(run_id);
  std::vector<Artifact> out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back({st->text(0), st->text(1), static_cast<std::uint64_t>(st->int64(2))});
  }
  return out;
}

Result<Artifact> RunArtifacts::get(int64_t run_id, const std::string& name) {
  auto st = db_.prepare("SELECT name, sha256, bytes FROM run_artifacts WHERE run_id = ? AND name = ?");
  if (!st) return st.error();
  st->bind(run_id, name);
  auto row = st->step();
  if (!row) return row.error();
  if (!*row) return make_error(Code::not_found, "run " + std::to_string(run_id) + " has no artifact '" + name + "'");
  return Artifact{st->text(0), st->text(1), static_cast<std::uint64_t>(st->int64(2))};
}

}  // namespace tsum::daemon
