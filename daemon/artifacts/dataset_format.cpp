#include "daemon/artifacts/dataset_format.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace tsum::daemon {

namespace {

std::uint32_t be32(const std::string& s, std::size_t at) {
  auto b = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

// A raw IDX file's header against its size: magic 0x000008DD (unsigned bytes, D dimensions), then D sizes.
Status check_idx(const TarEntry& e, const std::string& head) {
  auto bad = [&](const std::string& d) { return make_error(Code::invalid_argument, e.name + ": " + d); };
  if (head.size() < 8 || be32(head, 0) >> 8 != 0x08) return bad("not an IDX file of unsigned bytes");
  std::uint32_t dims = be32(head, 0) & 0xff;
  if (dims < 1 || dims > 4 || head.size() < 4 + 4 * dims) return bad("bad IDX header");
  std::uint64_t expect = 4 + 4 * dims, items = 1;
  for (std::uint32_t i = 0; i < dims; ++i) items *= be32(head, 4 + 4 * i);
  expect += items;
  if (e.size != expect)
    return bad("truncated: its header says " + std::to_string(expect) + " bytes, the archive holds " +
               std::to_string(e.size));
  return {};
}

bool ends_with_any(const std::string& n, std::initializer_list<std::string_view> sfx) {
  std::string lower = n;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return std::any_of(sfx.begin(), sfx.end(), [&](std::string_view s) { return lower.ends_with(s); });
}

}  // namespace

bool is_dataset_format(std::string_view f) {
  return std::find(std::begin(kDatasetFormats), std::end(kDatasetFormats), f) != std::end(kDatasetFormats);
}

bool is_dataset_name(std::string_view n) {
  if (n.empty() || n.size() > 64 || n[0] == '.' || n[0] == '-') return false;
  for (char c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  return true;
}

Result<std::vector<TarEntry>> check_dataset_archive(const std::string& path, std::string_view format) {
  if (!is_dataset_format(format))
    return make_error(Code::invalid_argument, "unknown data set format '" + std::string(format) +
                                                  "' (idx, cifar10-bin, tokens, images or files)");
  auto entries = read_tar(path, 64, [&](const TarEntry& e, const std::string& head) -> Status {
    if (format == "idx" && !e.name.ends_with(".gz") && e.name.find("-idx") != std::string::npos)
      return check_idx(e, head);
    if (format == "cifar10-bin" && e.name.ends_with(".bin") && e.size % 3073 != 0)
      return make_error(Code::invalid_argument, e.name + ": " + std::to_string(e.size) +
                                                    " bytes is not a whole number of 3073-byte CIFAR-10 records");
    return {};
  });
  if (!entries) return entries.error();
  std::vector<TarEntry> files;
  std::set<std::string> names;
  for (auto& e : *entries)
    if (!e.is_dir) names.insert(e.name), files.push_back(e);
  auto has = [&](const std::string& n) { return names.count(n) || names.count(n + ".gz"); };
  auto missing = [&](const std::vector<std::string>& want) -> Status {
    for (const auto& n : want)
      if (!has(n)) return make_error(Code::invalid_argument, "a " + std::string(format) + " data set needs " + n);
    return {};
  };
  Status st;
  if (files.empty()) return make_error(Code::invalid_argument, "the archive holds no file");
  if (format == "idx")
    st = missing({"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                  "t10k-labels-idx1-ubyte"});
  else if (format == "cifar10-bin")
    st = missing({"data_batch_1.bin", "test_batch.bin"});
  else if (format == "tokens")
    st = missing({"train.txt", "test.txt"});
  else if (format == "images" &&
           std::none_of(files.begin(), files.end(), [](const TarEntry& e) { return ends_with_any(e.name, {".jpg", ".jpeg"}); }))
    st = make_error(Code::invalid_argument, "an images data set needs at least one .jpg or .jpeg file");
  if (!st) return st.error();
  return files;
}

}  // namespace tsum::daemon
