#include "workload/http1.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

namespace tsum::workload::http1 {
namespace {

constexpr std::size_t kMaxHeaders = 100;

bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

// Visible characters and spaces/tabs: what a field value and a reason phrase may hold (obs-text included).
bool is_field_text(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u == '\t' || (u >= 0x20 && u != 0x7f);
  });
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Taken fail(int status, std::string why) {
  Taken t;
  t.what = Taken::What::error;
  t.status = status;
  t.error = std::move(why);
  return t;
}

// "HTTP/1.x" -> x, or nullopt.
std::optional<int> parse_version(std::string_view v) {
  if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || v[6] != '.' || v[5] < '0' || v[5] > '9' || v[7] < '0' ||
      v[7] > '9')
    return std::nullopt;
  if (v[5] != '1') return -1;
  return v[7] - '0';
}

// The start line into `m`; an error Taken when it is not one, nullopt when it is.
std::optional<Taken> parse_start_line(std::string_view line, Kind kind, Message& m) {
  const auto sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return fail(400, "malformed start line");
  if (kind == Kind::request) {
    const auto sp2 = line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
      return fail(400, "malformed request line");
    const auto method = line.substr(0, sp1);
    const auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    if (!is_token(method)) return fail(400, "malformed method");
    if (target.empty() || !std::all_of(target.begin(), target.end(), [](char c) {
          const auto u = static_cast<unsigned char>(c);
          return u > 0x20 && u != 0x7f;
        }))
      return fail(400, "malformed request target");
    const auto minor = parse_version(line.substr(sp2 + 1));
    if (!minor) return fail(400, "malformed HTTP version");
    if (*minor < 0) return fail(505, "only HTTP/1.x is spoken here");
    m.method = std::string(method);
    m.target = std::string(target);
    m.minor = *minor;
    m.keep_alive = *minor >= 1;
    return std::nullopt;
  }
  const auto minor = parse_version(line.substr(0, sp1));
  if (!minor || *minor < 0) return fail(400, "malformed status line");
  const auto code = line.substr(sp1 + 1, 3);
  int status = 0;
  if (code.size() != 3 || std::from_chars(code.data(), code.data() + 3, status).ptr != code.data() + 3 ||
      status < 100 || (line.size() > sp1 + 4 && line[sp1 + 4] != ' ') || !is_field_text(line.substr(sp1 + 4)))
    return fail(400, "malformed status line");
  m.status = status;
  m.minor = *minor;
  m.keep_alive = *minor >= 1;
  return std::nullopt;
}

// One header field into `m`, watching for the framing fields.
std::optional<Taken> parse_field(std::string_view line, Message& m, std::optional<std::size_t>& length) {
  if (line.front() == ' ' || line.front() == '\t') return fail(400, "folded header lines are not accepted");
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) return fail(400, "malformed header");
  const auto value = trim(line.substr(colon + 1));
  if (!is_field_text(value)) return fail(400, "malformed header value");
  if (m.headers.size() == kMaxHeaders) return fail(431, "more than 100 header fields");
  Header h{lower(line.substr(0, colon)), std::string(value)};
  if (h.name == "transfer-encoding") return fail(501, "Transfer-Encoding is not supported; send Content-Length");
  if (h.name == "content-length") {
    std::size_t n = 0;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || ec != std::errc() || ptr != value.data() + value.size())
      return fail(400, "malformed Content-Length");
    if (length && *length != n) return fail(400, "conflicting Content-Length headers");
    length = n;
  }
  if (h.name == "connection") {
    const auto v = lower(h.value);
    if (v.find("close") != std::string::npos) m.keep_alive = false;
    if (v.find("keep-alive") != std::string::npos && m.minor == 0) m.keep_alive = true;
  }
  m.headers.push_back(std::move(h));
  return std::nullopt;
}

}  // namespace

const std::string* Message::header(std::string_view lower_name) const {
  for (const auto& h : headers)
    if (h.name == lower_name) return &h.value;
  return nullptr;
}

Taken take_message(std::string& buffer, Kind kind, const Limits& limits) {
  // A server ignores empty lines before a request line (RFC 9112, 2.2).
  std::size_t start = 0;
  while (buffer.size() >= start + 2 && buffer.compare(start, 2, "\r\n") == 0) start += 2;
  const auto end = buffer.find("\r\n\r\n", start);
  if (end == std::string::npos) {
    if (buffer.size() - start > limits.max_head) return fail(431, "request head over the limit");
    return {};
  }
  if (end - start > limits.max_head) return fail(431, "request head over the limit");
  const std::string_view head(buffer.data() + start, end - start);
  Message m;
  std::optional<std::size_t> length;
  std::size_t pos = 0;
  bool first = true;
  while (pos <= head.size()) {
    auto eol = head.find("\r\n", pos);
    if (eol == std::string_view::npos) eol = head.size();
    const auto line = head.substr(pos, eol - pos);
    if (line.find('\r') != std::string_view::npos || line.find('\n') != std::string_view::npos ||
        line.find('\0') != std::string_view::npos)
      return fail(400, "stray CR, LF or NUL in the head");
    if (line.empty()) return fail(400, "empty line in the head");
    auto bad = first ? parse_start_line(line, kind, m) : parse_field(line, m, length);
    if (bad) return std::move(*bad);
    first = false;
    pos = eol + 2;
  }
  const std::size_t body = length.value_or(0);
  if (body > limits.max_body)
    return fail(413, "body of " + std::to_string(body) + " bytes is over the limit of " +
                         std::to_string(limits.max_body));
  const std::size_t body_at = end + 4;
  if (buffer.size() - body_at < body) return {};
  m.body.assign(buffer, body_at, body);
  buffer.erase(0, body_at + body);
  Taken t;
  t.what = Taken::What::message;
  t.message = std::move(m);
  return t;
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
  }
}

std::string format_response(int status, std::string_view content_type, std::string_view body,
                            const std::vector<Header>& headers, bool keep_alive) {
  std::string out;
  out.reserve(160 + body.size());
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += reason_phrase(status);
  out += "\r\nContent-Type: ";
  out += content_type;
  out += "\r\nContent-Length: ";
  out += std::to_string(body.size());
  out += "\r\n";
  for (const auto& h : headers) out += h.name + ": " + h.value + "\r\n";
  if (!keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  out += body;
  return out;
}

std::string format_request(std::string_view method, std::string_view target, std::string_view host,
                           std::string_view content_type, std::string_view body,
                           const std::vector<Header>& headers) {
  std::string out;
  out.reserve(160 + body.size());
  out += method;
  out += ' ';
  out += target;
  out += " HTTP/1.1\r\nHost: ";
  out += host;
  out += "\r\n";
  if (!body.empty() || method != "GET") {
    out += "Content-Type: ";
    out += content_type;
    out += "\r\nContent-Length: ";
    out += std::to_string(body.size());
    out += "\r\n";
  }
  for (const auto& h : headers) out += h.name + ": " + h.value + "\r\n";
  out += "\r\n";
  out += body;
  return out;
}

Result<Url> parse_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme)
    return make_error(Code::invalid_argument, "expected an http:// URL, got '" + std::string(url) + "'");
  auto rest = url.substr(kScheme.size());
  rest = rest.substr(0, rest.find('/'));
  Url out;
  const auto colon = rest.rfind(':');
  out.host = std::string(rest.substr(0, colon));
  if (colon != std::string_view::npos) {
    const auto port = rest.substr(colon + 1);
    const auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), out.port);
    if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || out.port < 1 || out.port > 65535)
      return make_error(Code::invalid_argument, "bad port in '" + std::string(url) + "'");
  }
  if (out.host.empty()) return make_error(Code::invalid_argument, "no host in '" + std::string(url) + "'");
  return out;
}

Connection::~Connection() { close(); }

void Connection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  in_.clear();
}

namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Waits for `events` on `fd` until `deadline`: true when ready.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, remaining_ms(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

}  // namespace

Status Connection::open(const Url& url, std::chrono::milliseconds timeout) {
  close();
  url_ = url;
  const auto deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string where = url.host + ":" + std::to_string(url.port);
  if (const int rc = ::getaddrinfo(url.host.c_str(), std::to_string(url.port).c_str(), &hints, &found); rc != 0)
    return make_error(Code::unavailable, where + ": " + gai_strerror(rc));
  std::string why = "no address";
  for (auto* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      int err = ETIMEDOUT;
      socklen_t len = sizeof err;
      if (wait_fd(fd, POLLOUT, deadline)) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc != 0) {
      why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fd_ = fd;
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) return make_error(Code::unavailable, "cannot connect to " + where + ": " + why);
  return {};
}

Result<Message> Connection::round_trip(const std::string& request, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  if (fd_ < 0) {
    if (auto st = open(url_, timeout); !st.ok()) return st.error();
  }
  auto broken = [this](Code code, std::string why) {
    close();
    return make_error(code, std::move(why));
  };
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!wait_fd(fd_, POLLOUT, deadline)) return broken(Code::timeout, "timed out sending the request");
    } else if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      break;  // the server stopped reading: it may have answered already (a 413), so read what it said
    } else {
      return broken(Code::unavailable, std::string("send: ") + std::strerror(errno));
    }
  }
  Limits limits;
  limits.max_body = std::size_t{1} << 30;
  char chunk[64 * 1024];
  for (;;) {
    auto taken = take_message(in_, Kind::response, limits);
    if (taken.what == Taken::What::message) {
      if (!taken.message.keep_alive) close();
      return std::move(taken.message);
    }
    if (taken.what == Taken::What::error) return broken(Code::invalid_argument, "bad response: " + taken.error);
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) {
      in_.append(chunk, static_cast<std::size_t>(n));
    } else if (n == 0) {
      return broken(Code::unavailable, "the server closed the connection");
    } else if (errno == EAGAIN || errno == EINTR) {
      if (!wait_fd(fd_, POLLIN, deadline)) return broken(Code::timeout, "timed out waiting for the response");
    } else {
      return broken(Code::unavailable, std::string("recv: ") + std::strerror(errno));
    }
  }
}

}  // namespace tsum::workload::http1
