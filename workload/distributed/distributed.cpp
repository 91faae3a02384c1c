#include "workload/distributed/distributed.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifndef TSUM_NO_GLOO  // workload/CMakeLists.txt: a libtorch without Gloo's headers
#ifndef USE_C10D_GLOO  // Debian's Torch config defines it; a pip wheel's may not
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

#include <cstring>

#include "workload/distributed/rank_watchdog.h"

namespace tsum::workload {
namespace {

using Clock = std::chrono::steady_clock;

std::string master_name(const DistOptions& o) {
  return o.master_host + ":" + std::to_string(o.master_port);
}

// The local IPv4 address this host reaches `host`:`port` from (no packet is sent: connecting a UDP
// socket only picks the route). Gloo listens there, so a rank in a network namespace of its own
// offers its own address, not the loopback.
Result<std::string> local_address_towards(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
      rc != 0) {
    return make_error(Code::unavailable,
                      "--master " + host + ": cannot resolve: " + ::gai_strerror(rc));
  }
  std::string address;
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof local;
    char text[INET_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text) != nullptr) {
      address = text;
    }
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  if (address.empty()) {
    return make_error(Code::unavailable, "--master " + host + ": no route: " + std::strerror(errno));
  }
  return address;
}

c10::intrusive_ptr<c10d::TCPStore> connect_store(const DistOptions& o, bool server,
                                                 std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions so;
  so.port = o.master_port;
  so.isServer = server;
  so.waitWorkers = false;
  so.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(o.master_host, so);
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string out;
  for (const int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

std::int64_t bytes_of(const torch::Tensor& t) {
  return t.numel() * static_cast<std::int64_t>(t.element_size());
}

}  // namespace

Result<std::unique_ptr<DistGroup>> DistGroup::join(const DistOptions& options) {
#ifdef TSUM_NO_GLOO
  return make_error(Code::unavailable, "data-parallel training (--world-size " + std::to_string(options.world_size) +
                                           "): this tsum-train was built without Gloo");
#else
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(options.timeout_s * 1e3));
  const std::string master = master_name(options);
  std::unique_ptr<DistGroup> g(new DistGroup());
  g->rank_ = options.rank;
  g->size_ = options.world_size;
  auto address = local_address_towards(options.master_host, options.master_port);
  if (!address.ok()) return address.error();
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    store = connect_store(options, options.rank == 0, timeout);
  } catch (const std::exception& e) {
    const std::string why = options.rank == 0 ? "cannot listen on " + master
                                               : "rank 0 never answered at " + master;
    return make_error(Code::unavailable, why + ": " + e.what());
  }
  g->store_ = store;
  try {
    // The watchdog's own connection: a TCPStore client runs one operation at a time, and the
    // group's rendezvous below blocks in the store for as long as ranks are missing.
    auto beat_store = connect_store(options, false, timeout);
    g->watchdog_ = std::make_unique<RankWatchdog>(
        c10::make_intrusive<c10d::PrefixStore>("tsum", beat_store), options.rank,
        options.world_size, timeout, master);
    g->watchdog_->start();
  } catch (const std::exception& e) {
    return make_error(Code::unavailable, "rank 0's store at " + master + " failed: " + e.what());
  }
  try {
    // Gloo's own timeout a little past ours, so the watchdog's verdict (naming the silent rank)
    // normally comes first.
    auto pg_options = c10d::ProcessGroupGloo::Options::create(timeout + std::chrono::seconds(5));
    pg_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(*address));
    pg_options->threads = 1;
    g->group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("gloo", store), options.rank, options.world_size,
        pg_options);
  } catch (const std::exception& e) {
    g->diagnosed_ = true;
    const auto missing = g->watchdog_->missing_ranks();
    if (!missing.empty()) {
      g->abort(make_error(Code::unavailable, "rank " + ranks_text(missing) + " never joined " +
                                                 master + " (waited " +
                                                 std::to_string(options.timeout_s) + " s)"));
    }
    g->abort(make_error(Code::unavailable, "joining the process group failed: " +
                                               std::string(e.what())));
  }
  return g;
#endif
}

DistGroup::~DistGroup() = default;

Status DistGroup::failed(const std::exception& e) {
  diagnosed_ = true;
  return make_error(Code::unavailable, watchdog_->diagnose(e.what()));
}

Status DistGroup::broadcast(const std::vector<torch::Tensor>& tensors) {
  try {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> flat{torch::cat(
        [&] {
          std::vector<torch::Tensor> views;
          for (const auto& t : tensors) views.push_back(t.detach().reshape(-1));
          return views;
        }())};
    if (rank_ == 0) bytes_sent_ += bytes_of(flat[0]) * (size_ - 1);
    if (auto st = wait(group_->broadcast(flat)); !st.ok()) return st;
    std::int64_t offset = 0;
    for (const auto& t : tensors) {
      t.detach().copy_(flat[0].narrow(0, offset, t.numel()).view_as(t));
      offset += t.numel();
    }
  } catch (const std::exception& e) {
    return failed(e);
  }
  return {};
}

Status DistGroup::allreduce_sum(torch::Tensor& tensor) {
  try {
    return wait(start_allreduce(tensor));
  } catch (const std::exception& e) {
    return failed(e);
  }
}

c10::intrusive_ptr<c10d::Work> DistGroup::start_allreduce(torch::Tensor& tensor) {
  std::vector<torch::Tensor> one{tensor};
  bytes_sent_ += bytes_of(tensor) * 2 * (size_ - 1) / size_;
  return group_->allreduce(one);
}

c10::intrusive_ptr<c10d::Work> DistGroup::start_send(torch::Tensor& tensor, int dst, int tag) {
  std::vector<torch::Tensor> one{tensor};
  bytes_sent_ += bytes_of(tensor);
  return group_->send(one, dst, tag);
}

c10::intrusive_ptr<c10d::Work> DistGroup::start_recv(torch::Tensor& tensor, int src, int tag) {
  std::vector<torch::Tensor> one{tensor};
  return group_->recv(one, src, tag);
}

c10::intrusive_ptr<c10d::Work> DistGroup::start_recv_any(torch::Tensor& tensor, int tag) {
  std::vector<torch::Tensor> one{tensor};
  return group_->recvAnysource(one, tag);
}

Status DistGroup::wait(const c10::intrusive_ptr<c10d::Work>& work) {
  const auto start = Clock::now();
  try {
    work->wait();
  } catch (const std::exception& e) {
    comm_seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
    return failed(e);
  }
  comm_seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
  return {};
}

int DistGroup::source_rank(const c10::intrusive_ptr<c10d::Work>& work) {
  return work->sourceRank();
}

void DistGroup::finish() { watchdog_->finish(); }

void DistGroup::abort(const Error& error) {
  const bool named = diagnosed_ && error.code == Code::unavailable;
  // The group's threads may be blocked in Gloo: leak it rather than join them.
  (void)group_.release();
  (void)store_.release();
  watchdog_->abort(named ? error.detail
                         : "rank " + std::to_string(rank_) + " failed: " + error.detail);
}

}  // namespace tsum::workload
