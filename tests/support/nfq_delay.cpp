// tsum-nfq-delay: holds every packet an iptables NFQUEUE rule hands it for a fixed delay, then lets it through, in
// order: the one-way delay of `tc qdisc ... netem delay`, for kernels built without netem (CONFIG_NET_SCH_NETEM
// unset, as on the machines that run tsum's tests; `tc` answers "Specified qdisc kind is unknown"). Tests run it
// inside a guest's network namespace with rules such as
//   iptables -I OUTPUT -j NFQUEUE --queue-num Q;  iptables -I INPUT -j NFQUEUE --queue-num Q
// Packets wait in the kernel's queue, as netem's do; only their verdicts come from here.
//   tsum-nfq-delay QUEUE DELAY_MS
// Prints "ready" once the queue is bound (add the rules after that: a rule without a listener drops), then runs
// until SIGTERM or SIGINT, when it lets every held packet go.
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

namespace {

using Clock = std::chrono::steady_clock;

struct Held {
  Clock::time_point due;
  std::uint32_t id;
};

struct State {
  std::deque<Held> held;  // in arrival order, so in due order (one fixed delay)
  Clock::duration delay{};
};

volatile sig_atomic_t g_stop = 0;
extern "C" void on_signal(int) { g_stop = 1; }

int on_packet(nfq_q_handle*, nfgenmsg*, nfq_data* data, void* arg) {
  auto* state = static_cast<State*>(arg);
  if (const auto* header = nfq_get_msg_packet_hdr(data))
    state->held.push_back({Clock::now() + state->delay, ntohl(header->packet_id)});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tsum-nfq-delay QUEUE DELAY_MS\n");
    return 2;
  }
  const int queue = std::atoi(argv[1]);
  const double delay_ms = std::atof(argv[2]);
  if (queue < 0 || queue > 65535 || !(delay_ms >= 0)) {
    std::fprintf(stderr, "tsum-nfq-delay: QUEUE is 0..65535 and DELAY_MS a number of milliseconds\n");
    return 2;
  }
  State state;
  state.delay = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(delay_ms));
  nfq_handle* h = nfq_open();
  if (!h) {
    std::perror("tsum-nfq-delay: nfq_open");
    return 1;
  }
  nfq_q_handle* qh = nfq_create_queue(h, static_cast<std::uint16_t>(queue), &on_packet, &state);
  if (!qh || nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) {
    std::fprintf(stderr, "tsum-nfq-delay: cannot bind queue %d: %s\n", queue, std::strerror(errno));
    return 1;
  }
  nfq_set_queue_maxlen(qh, 65536);
  nfnl_rcvbufsiz(nfq_nfnlh(h), 8 << 20);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::printf("ready\n");
  std::fflush(stdout);
  const int fd = nfq_fd(h);
  alignas(8) char buf[1 << 16];
  while (!g_stop) {
    int wait_ms = 100;
    if (!state.held.empty()) {
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(state.held.front().due - Clock::now());
      wait_ms = left.count() <= 0 ? 0 : static_cast<int>((left.count() + 999) / 1000);
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, wait_ms) > 0) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) nfq_handle_packet(h, buf, static_cast<int>(n));
    }
    const auto now = Clock::now();
    while (!state.held.empty() && state.held.front().due <= now) {
      nfq_set_verdict(qh, state.held.front().id, NF_ACCEPT, 0, nullptr);
      state.held.pop_front();
    }
  }
  for (const auto& p : state.held) nfq_set_verdict(qh, p.id, NF_ACCEPT, 0, nullptr);
  nfq_destroy_queue(qh);
  nfq_close(h);
  return 0;
}
