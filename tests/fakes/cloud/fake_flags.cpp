#include "tests/fakes/cloud/fake_flags.h"

#include <charconv>
#include <cstdio>
#include <iostream>

namespace tsum::providers::fake_cloud {

namespace {

bool parse_number(std::string_view s, double& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

std::string with_default(const std::string& help, double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return help + " (default " + buf + ")";
}

}  // namespace

FakeFlags::FakeFlags(std::string program, FakeServerOptions* server, std::string faults_example)
    : program_(std::move(program)), server_(server) {
  add({"--listen", "HOST:PORT", "address to serve on (default 127.0.0.1:0, an ephemeral port)", [this](std::string_view v) {
         auto colon = v.rfind(':');
         double port = 0;
         if (colon == std::string_view::npos || !parse_number(v.substr(colon + 1), port) || port > 65535)
           return std::string("--listen wants HOST:PORT");
         server_->listen.host = std::string(v.substr(0, colon));
         server_->listen.port = static_cast<std::uint16_t>(port);
         return std::string();
       }});
  add({"--port", "N", "serve on 127.0.0.1:N", [this](std::string_view v) {
         double port = 0;
         if (!parse_number(v, port) || port > 65535) return std::string("--port wants a port number");
         server_->listen.port = static_cast<std::uint16_t>(port);
         return std::string();
       }});
  text("--cert", "FILE", &server_->listen.cert_file, "serve HTTPS with this PEM certificate chain (default: plain HTTP)");
  text("--key", "FILE", &server_->listen.key_file, "and this PEM key");
  text("--guest-root", "DIR", &server_->guest.root,
       "boot each instance's user data in a guest machine under DIR/<id> until it is\n"
       "deleted (needs root; default: an instance is only a record)");
  text("--guest-image", "TAR", &server_->guest.image, "the guests' stock root (scripts/guest-rootfs.sh TAR)");
  text("--guest-network", "BRIDGE", &server_->guest.network, "the bridge guests join; the daemon listens on its address");
  text("--guest-boot-hook", "CMD", &server_->guest.boot_hook,
       "a shell command run on this host as each guest boots, before anything runs in it\n"
       "(TSUM_GUEST_ID, TSUM_GUEST_NETNS set)");
  text("--guest-registry", "HOST:PORT", &server_->guest.insecure_registry,
       "a plain-HTTP registry the guests' Docker engines trust");
  add({"--metadata-listen", "HOST:PORT",
       "serve the instances' metadata service (spot notices) on HOST:PORT, plain HTTP;\n"
       "HOST one the guests reach (the bridge's address); PORT 0: any",
       [this](std::string_view v) {
         auto colon = v.rfind(':');
         double port = 0;
         if (colon == std::string_view::npos || colon == 0 || !parse_number(v.substr(colon + 1), port) || port > 65535)
           return std::string("--metadata-listen wants HOST:PORT");
         server_->metadata.host = std::string(v.substr(0, colon));
         server_->metadata.port = static_cast<std::uint16_t>(port);
         return std::string();
       }});
  add({"--faults", "SPEC",
       "METHOD:KIND[:COUNT],... KIND is 429|503|500|timeout|lost, METHOD may be *\ne.g. " + faults_example,
       [this](std::string_view v) {
         auto parsed = parse_faults(v);
         if (!parsed) return parsed.error().detail;
         server_->faults.insert(server_->faults.end(), parsed->begin(), parsed->end());
         return std::string();
       }});
  add({"--hang-ms", "MS", with_default("how long a timeout fault holds the connection", 30000), [this](std::string_view v) {
         double n = 0;
         if (!parse_number(v, n) || n < 1 || n > 1e9) return std::string("--hang-ms: not a positive number");
         server_->hang = std::chrono::milliseconds(static_cast<long>(n));
         return std::string();
       }});
  count("--retry-after-s", &server_->retry_after_s, "the Retry-After of a 429 fault");
}

void FakeFlags::text(std::string flag, std::string value_name, std::string* field, std::string help) {
  add({std::move(flag), std::move(value_name), std::move(help), [field](std::string_view v) {
         *field = std::string(v);
         return std::string();
       }});
}

void FakeFlags::seconds(std::string flag, double* field, std::string help) {
  std::string name = flag;
  add({std::move(flag), "S", with_default(help, *field), [field, name](std::string_view v) {
         return parse_number(v, *field) ? std::string() : name + ": not a number >= 0";
       }});
}

void FakeFlags::count(std::string flag, int* field, std::string help) {
  std::string name = flag;
  add({std::move(flag), "N", with_default(help, *field), [field, name](std::string_view v) {
         double n = 0;
         if (!parse_number(v, n) || n < 1 || n > 1e9 || n != static_cast<double>(static_cast<long>(n)))
           return name + ": not a whole number >= 1";
         *field = static_cast<int>(n);
         return std::string();
       }});
}

void FakeFlags::toggle(std::string flag, bool* field, std::string help) {
  add({.name = std::move(flag), .help = std::move(help), .toggle = field});
}

void FakeFlags::rename_tls_key(std::string flag) {
  if (Flag* f = find(tls_key_)) f->name = flag;
  tls_key_ = std::move(flag);
}

FakeFlags::Flag* FakeFlags::find(std::string_view name) {
  for (auto& f : flags_)
    if (f.name == name) return &f;
  return nullptr;
}

std::string FakeFlags::usage() const {
  std::string out = "usage: " + program_ + " " + synopsis_ + "\n";
  for (const auto& f : flags_) {
    std::string head = "  " + f.name + (f.value_name.empty() ? "" : " " + f.value_name);
    head.resize(std::max<std::size_t>(head.size() + 1, 28), ' ');
    std::string help = f.help;
    for (std::size_t at = help.find('\n'); at != std::string::npos; at = help.find('\n', at + 1))
      help.insert(at + 1, std::string(28, ' '));
    out += head + help + "\n";
  }
  return out;
}

int FakeFlags::fail(const std::string& message, int status) const {
  std::cerr << program_ << ": " << message << "\n";
  return status;
}

std::optional<int> FakeFlags::parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view name = argv[i];
    if (name == "--help" || name == "-h") {
      std::cout << usage();
      return 0;
    }
    Flag* f = find(name);
    if (!f) return fail("unknown flag " + std::string(name) + "\n" + usage(), 2);
    if (f->toggle) {
      *f->toggle = true;
      continue;
    }
    if (i + 1 >= argc) return fail(std::string(name) + " needs a value\n" + usage(), 2);
    if (std::string err = f->apply(argv[++i]); !err.empty()) return fail(err, 2);
  }
  if (server_->listen.cert_file.empty() != server_->listen.key_file.empty())
    return fail("--cert and " + tls_key_ + " go together", 2);
  return std::nullopt;
}

}  // namespace tsum::providers::fake_cloud
