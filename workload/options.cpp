#include "workload/options.h"

#include <sched.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "workload/model_registry.h"
#include "workload/optimizer_registry.h"

namespace tsum::workload {
namespace {

Result<std::int64_t> parse_int(std::string_view flag, const std::string& text, std::int64_t min,
                               std::int64_t max) {
  std::int64_t v = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max) {
    return make_error(Code::invalid_argument,
                      std::string(flag) + ": expected an integer in [" + std::to_string(min) +
                          ", " + std::to_string(max) + "], got '" + text + "'");
  }
  return v;
}

Result<double> parse_positive_double(std::string_view flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v <= 0.0) {
    return make_error(Code::invalid_argument,
                      std::string(flag) + ": expected a positive number, got '" + text + "'");
  }
  return v;
}

Result<std::string> parse_nonempty(std::string_view flag, const std::string& text) {
  if (text.empty()) return make_error(Code::invalid_argument, std::string(flag) + ": empty value");
  return text;
}

// Applies one flag's value to `o`.
Status apply(Options& o, std::string_view flag, const std::string& value) {
  constexpr std::int64_t kBig = std::numeric_limits<std::int32_t>::max();
  auto set_int = [&](std::int64_t& dst, std::int64_t min) -> Status {
    auto v = parse_int(flag, value, min, kBig);
    if (!v.ok()) return v.error();
    dst = *v;
    return {};
  };
  auto set_str = [&](std::string& dst) -> Status {
    auto v = parse_nonempty(flag, value);
    if (!v.ok()) return v.error();
    dst = *v;
    return {};
  };
  if (flag == "--model") return set_str(o.model);
  if (flag == "--data") return set_str(o.data_dir);
  if (flag == "--optimizer") return set_str(o.optimizer);
  if (flag == "--checkpoint") return set_str(o.checkpoint);
  if (flag == "--epochs") return set_int(o.epochs, 1);
  if (flag == "--limit") return set_int(o.limit, 1);
  if (flag == "--test-limit") return set_int(o.test_limit, 1);
  if (flag == "--batch") return set_int(o.batch, 1);
  if (flag == "--threads") {
    std::int64_t t = 0;
    if (auto st = set_int(t, 1); !st.ok()) return st;
    o.threads = static_cast<int>(t);
    return {};
  }
  if (flag == "--seed") {
    auto v = parse_int(flag, value, 0, std::numeric_limits<std::int64_t>::max());
    if (!v.ok()) return v.error();
    o.seed = static_cast<std::uint64_t>(*v);
    return {};
  }
  if (flag == "--lr") {
    auto v = parse_positive_double(flag, value);
    if (!v.ok()) return v.error();
    o.lr = *v;
    return {};
  }
  return make_error(Code::invalid_argument, "unknown flag " + std::string(flag));
}

}  // namespace

Result<Options> parse_options(const std::vector<std::string>& args) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      return make_error(Code::invalid_argument, "unexpected argument '" + arg + "'");
    }
    std::string flag = arg;
    std::string value;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= args.size()) return make_error(Code::invalid_argument, flag + ": missing value");
      value = args[++i];
    }
    if (auto st = apply(o, flag, value); !st.ok()) return st.error();
  }
  return o;
}

std::string usage() {
  return "usage: tsum-train [flags]\n"
         "  --model NAME        model to train (" + model_names() + "; default mnist_cnn)\n"
         "  --data DIR          IDX data directory (default /usr/share/datasets/fashion-mnist)\n"
         "  --epochs N          training epochs (default 1)\n"
         "  --limit N           use the first N training images (default all)\n"
         "  --test-limit N      evaluate on the first N test images (default all)\n"
         "  --batch N           batch size (default 128)\n"
         "  --lr X              learning rate (default 0.001)\n"
         "  --optimizer NAME    optimizer (" + optimizer_names() + "; default adam)\n"
         "  --threads N         intra-op threads (default: CPUs in the affinity mask)\n"
         "  --checkpoint PATH   where to save the trained model (default model.pt)\n"
         "  --seed N            seed for initialization, shuffling and dropout (default 1)\n"
         "  --help              print this text\n"
         "stdout carries one JSON event per line: ready, epoch, learn_end, verify, saved.\n"
         "exit status: 0 ok, 2 bad usage or bad data, 1 other failure.\n";
}

int affinity_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

}  // namespace tsum::workload
