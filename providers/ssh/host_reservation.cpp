#include "providers/ssh/host_reservation.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace tsum::providers::ssh {

namespace fs = std::filesystem;
using nlohmann::json;

json Reservation::to_json() const {
  json j = {{"id", id},         {"host", host},
            {"run_id", run_id}, {"tag", tag},
            {"idempotency_token", idempotency_token},
            {"work", work},     {"touched", touched},
            {"tunnel_pid", tunnel_pid},
            {"tunnel_ticks", tunnel_ticks}};
  if (ended) j["ended"] = *ended;
  return j;
}

Reservation Reservation::from_json(const json& j) {
  Reservation r;
  r.id = j.value("id", "");
  r.host = j.value("host", "");
  r.run_id = j.value("run_id", "");
  r.tag = j.value("tag", "");
  r.idempotency_token = j.value("idempotency_token", "");
  r.work = j.value("work", "");
  r.touched = j.value("touched", false);
  r.tunnel_pid = j.value("tunnel_pid", 0);
  r.tunnel_ticks = j.value("tunnel_ticks", uint64_t{0});
  if (j.contains("ended") && j["ended"].is_string()) r.ended = j["ended"].get<std::string>();
  return r;
}

namespace {

std::optional<json> read_json_file(const std::string& p) {
  std::ifstream in(p);
  if (!in) return std::nullopt;
  auto j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

// Writes the whole file or nothing: a temporary written and synced, then renamed (or linked, for exclusive).
Status write_file(const std::string& p, const std::string& text, bool exclusive) {
  std::string tmp = p + ".tmp" + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(Code::unavailable, "open " + tmp + ": " + strerror(errno));
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  close(fd);
  int rc = !ok ? -1 : exclusive ? link(tmp.c_str(), p.c_str()) : rename(tmp.c_str(), p.c_str());
  int err = errno;
  unlink(tmp.c_str());
  if (rc != 0 && exclusive && err == EEXIST) return make_error(Code::already_exists, p + " exists");
  if (rc != 0) return make_error(Code::unavailable, "write " + p + ": " + strerror(err));
  return {};
}

}  // namespace

ReservationStore::ReservationStore(std::string dir) : dir_(std::move(dir)) {}

std::string ReservationStore::path(const std::string& host, const char* ext) const {
  return dir_ + "/" + host + ext;
}

Status ReservationStore::claim(const Reservation& r) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return make_error(Code::unavailable, "create " + dir_ + ": " + ec.message());
  return write_file(path(r.host, ".json"), r.to_json().dump(2), true);
}

Status ReservationStore::update(const Reservation& r) {
  if (!find(r.host)) return make_error(Code::not_found, "ssh host " + r.host + " is not reserved");
  return write_file(path(r.host, ".json"), r.to_json().dump(2), false);
}

std::optional<Reservation> ReservationStore::find(const std::string& host) const {
  auto j = read_json_file(path(host, ".json"));
  if (!j) return std::nullopt;
  return Reservation::from_json(*j);
}

std::vector<Reservation> ReservationStore::all() const {
  std::vector<Reservation> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (e.path().extension() == ".json")
      if (auto j = read_json_file(e.path().string())) out.push_back(Reservation::from_json(*j));
  return out;
}

Status ReservationStore::release(const std::string& host) {
  std::error_code ec;
  fs::remove(path(host, ".json"), ec);
  if (ec) return make_error(Code::unavailable, "release ssh host " + host + ": " + ec.message());
  return {};
}

std::optional<std::string> ReservationStore::pending_cleanup(const std::string& host) const {
  auto j = read_json_file(path(host, ".cleanup"));
  if (!j) return std::nullopt;
  return j->value("work", "");
}

Status ReservationStore::set_pending_cleanup(const std::string& host, const std::string& work) {
  json j = {{"work", work}};
  return write_file(path(host, ".cleanup"), j.dump(), false);
}

void ReservationStore::clear_pending_cleanup(const std::string& host) {
  std::error_code ec;
  fs::remove(path(host, ".cleanup"), ec);
}

}  // namespace tsum::providers::ssh
