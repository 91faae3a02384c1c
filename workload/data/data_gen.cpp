#include "workload/data/data_gen.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "workload/data/cifar_data.h"
#include "workload/data/token_data.h"

namespace tsum::workload {
namespace {

constexpr std::int64_t kNoise = 30;
constexpr std::int64_t kBand = 25;
constexpr std::int64_t kMinLength = 20;
constexpr std::int64_t kMaxLength = 150;

std::uint64_t mix(std::uint64_t x) {
  DataRng rng(x);
  return rng.next();
}

Status open_for_writing(std::ofstream& out, const std::string& path) {
  out.open(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error(Code::unavailable, path + ": cannot open for writing");
  return {};
}

Status finish(std::ofstream& out, const std::string& path) {
  out.close();
  if (!out) return make_error(Code::unavailable, path + ": write failed");
  return {};
}

Status make_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(Code::unavailable, dir + ": cannot create directory: " + ec.message());
  return {};
}

Status write_cifar_file(const std::string& path, std::int64_t records, DataRng& rng) {
  std::ofstream out;
  if (auto st = open_for_writing(out, path); !st.ok()) return st;
  std::vector<std::uint8_t> record(kCifarRecordBytes);
  for (std::int64_t i = 0; i < records; ++i) {
    const std::int64_t label = rng.below(kCifarClasses);
    record[0] = static_cast<std::uint8_t>(label);
    draw_class_image(label, 3, kCifarSide, kCifarSide, rng, record.data() + 1);
    out.write(reinterpret_cast<const char*>(record.data()), kCifarRecordBytes);
  }
  return finish(out, path);
}

Status write_token_file(const std::string& path, std::int64_t lines, DataRng& rng) {
  std::ofstream out;
  if (auto st = open_for_writing(out, path); !st.ok()) return st;
  for (std::int64_t i = 0; i < lines; ++i) {
    const std::int64_t label = rng.below(2);
    const std::int64_t length = kMinLength + rng.below(kMaxLength - kMinLength + 1);
    out << label;
    for (const std::int64_t id : draw_class_tokens(label, length, kGenTokensVocab, rng)) {
      out << ' ' << id;
    }
    out << '\n';
  }
  return finish(out, path);
}

}  // namespace

std::uint64_t DataRng::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::int64_t DataRng::below(std::int64_t n) {
  return static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(n));
}

void draw_class_image(std::int64_t label, std::int64_t channels, std::int64_t height,
                      std::int64_t width, DataRng& rng, std::uint8_t* pixels) {
  const std::int64_t period = 2 + label % 5;
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto colour =
        static_cast<std::int64_t>(40 + mix(static_cast<std::uint64_t>(label * 16 + c)) % 176);
    for (std::int64_t y = 0; y < height; ++y) {
      const std::int64_t band = (y / period) % 2 == 0 ? kBand : -kBand;
      for (std::int64_t x = 0; x < width; ++x) {
        const std::int64_t v = colour + band + rng.below(2 * kNoise + 1) - kNoise;
        *pixels++ = static_cast<std::uint8_t>(std::clamp<std::int64_t>(v, 0, 255));
      }
    }
  }
}

std::vector<std::int64_t> draw_class_tokens(std::int64_t label, std::int64_t length,
                                            std::int64_t vocab, DataRng& rng) {
  const std::int64_t shared_first = 2 * kSignalTokens + 1;
  std::vector<std::int64_t> out(static_cast<std::size_t>(length));
  for (auto& id : out) {
    id = rng.below(4) == 0 ? 1 + label * kSignalTokens + rng.below(kSignalTokens)
                           : shared_first + rng.below(vocab - shared_first);
  }
  return out;
}

std::int64_t generated_test_count(std::int64_t n) { return (n + 4) / 5; }

Status write_cifar_files(const std::string& dir, std::int64_t n, std::uint64_t seed) {
  if (n < kCifarTrainFiles) {
    return make_error(Code::invalid_argument, "gen-cifar: --n must be at least " +
                                                  std::to_string(kCifarTrainFiles) +
                                                  " (one record per training batch file)");
  }
  if (auto st = make_dir(dir); !st.ok()) return st;
  DataRng rng(seed);
  const auto train = cifar_files(dir, Split::train);
  for (std::size_t i = 0; i < train.size(); ++i) {
    const auto files = static_cast<std::int64_t>(train.size());
    const std::int64_t records = n / files + (static_cast<std::int64_t>(i) < n % files ? 1 : 0);
    if (auto st = write_cifar_file(train[i], records, rng); !st.ok()) return st;
  }
  return write_cifar_file(cifar_files(dir, Split::test).front(), generated_test_count(n), rng);
}

Status write_token_files(const std::string& dir, std::int64_t n, std::uint64_t seed) {
  if (n < 1) return make_error(Code::invalid_argument, "gen-tokens: --n must be at least 1");
  if (auto st = make_dir(dir); !st.ok()) return st;
  DataRng rng(seed);
  if (auto st = write_token_file(token_file(dir, Split::train), n, rng); !st.ok()) return st;
  return write_token_file(token_file(dir, Split::test), generated_test_count(n), rng);
}

}  // namespace tsum::workload
