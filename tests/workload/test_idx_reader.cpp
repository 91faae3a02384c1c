#include <doctest/doctest.h>

#include <algorithm>

#include "temp_dir.h"
#include "workload/data/idx_reader.h"

namespace tw = tsum::workload;
using namespace tsum::workload::testing;

TEST_CASE("idx: raw and gzip files load identically, detected by magic not name") {
  TempDir dir;
  const auto images = idx_images(3, 4, 5, 3 * 4 * 5);
  const auto labels = idx_labels(3, 3);
  write_raw(dir.file("raw-images"), images);
  write_gz(dir.file("gz-images-no-extension"), images);
  write_raw(dir.file("raw-labels.gz"), labels);  // raw despite the .gz name
  write_gz(dir.file("gz-labels"), labels);

  auto raw = tw::read_idx_images(dir.file("raw-images"));
  auto gz = tw::read_idx_images(dir.file("gz-images-no-extension"));
  REQUIRE(raw.ok());
  REQUIRE(gz.ok());
  CHECK(raw->count == 3);
  CHECK(raw->rows == 4);
  CHECK(raw->cols == 5);
  CHECK(raw->pixels == gz->pixels);
  CHECK(raw->pixels[7] == 7);

  auto raw_labels = tw::read_idx_labels(dir.file("raw-labels.gz"));
  auto gz_labels = tw::read_idx_labels(dir.file("gz-labels"));
  REQUIRE(raw_labels.ok());
  REQUIRE(gz_labels.ok());
  CHECK(raw_labels->count == 3);
  CHECK(raw_labels->labels == gz_labels->labels);
  CHECK(raw_labels->labels == std::vector<std::uint8_t>{0, 1, 2});
}

TEST_CASE("idx: missing file is not_found and names the path") {
  TempDir dir;
  const std::string path = dir.file("nope-images-idx3-ubyte.gz");
  auto r = tw::read_idx_images(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == tsum::Code::not_found);
  CHECK(contains(r.error().detail, path));
  auto l = tw::read_idx_labels(path);
  REQUIRE_FALSE(l.ok());
  CHECK(l.code() == tsum::Code::not_found);
}

TEST_CASE("idx: wrong magic names the path and both magics") {
  TempDir dir;
  SUBCASE("labels file read as images, gzipped") {
    const std::string path = dir.file("train-images-idx3-ubyte.gz");
    write_gz(path, idx_labels(4, 4));
    auto r = tw::read_idx_images(path);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == tsum::Code::invalid_argument);
    CHECK(contains(r.error().detail, path + ": wrong magic 0x00000801"));
    CHECK(contains(r.error().detail, "0x00000803"));
  }
  SUBCASE("images file read as labels, raw") {
    const std::string path = dir.file("train-labels-idx1-ubyte");
    write_raw(path, idx_images(1, 2, 2, 4));
    auto r = tw::read_idx_labels(path);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().detail, path + ": wrong magic 0x00000803"));
  }
  SUBCASE("not an IDX file at all") {
    const std::string path = dir.file("garbage");
    write_raw(path, {'h', 'e', 'l', 'l', 'o', '!', '!', '!'});
    auto r = tw::read_idx_images(path);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().detail, path + ": wrong magic"));
  }
}

TEST_CASE("idx: truncated payload names the path and the sizes") {
  TempDir dir;
  SUBCASE("gzip images") {
    const std::string path = dir.file("train-images-idx3-ubyte.gz");
    write_gz(path, idx_images(60000, 28, 28, 1000));
    auto r = tw::read_idx_images(path);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == tsum::Code::invalid_argument);
    CHECK(r.error().detail ==
          path + ": truncated: header says 60000 images of 28x28 (47040000 bytes), file has 1000 "
                 "bytes after the header");
  }
  SUBCASE("raw labels") {
    const std::string path = dir.file("train-labels-idx1-ubyte");
    write_raw(path, idx_labels(100, 99));
    auto r = tw::read_idx_labels(path);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().detail, path + ": truncated: header says 100 labels"));
  }
  SUBCASE("a header promising far more than the file holds is reported, not allocated") {
    const std::string path = dir.file("liar");
    write_raw(path, idx_images(100000000, 28, 28, 10));
    auto r = tw::read_idx_images(path);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().detail, path + ": truncated: header says 100000000 images of 28x28"));
    write_raw(path, idx_images(0xffffffffu, 0xffffffffu, 0xffffffffu, 10));
    r = tw::read_idx_images(path);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().detail, path + ": bad header"));
  }
  SUBCASE("header cut short") {
    const std::string path = dir.file("short");
    auto bytes = idx_images(1, 28, 28, 0);
    bytes.resize(10);
    write_raw(path, bytes);
    auto r = tw::read_idx_images(path);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().detail, path + ": truncated"));
  }
  SUBCASE("empty file") {
    const std::string path = dir.file("empty");
    write_raw(path, {});
    auto r = tw::read_idx_labels(path);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().detail, path + ": truncated"));
  }
  SUBCASE("gzip stream cut in the middle") {
    const std::string full = dir.file("full.gz");
    write_gz(full, idx_images(50, 28, 28, 50 * 28 * 28));
    auto bytes = read_all(full);
    bytes.resize(bytes.size() / 2);
    const std::string path = dir.file("cut.gz");
    write_raw(path, bytes);
    auto r = tw::read_idx_images(path);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == tsum::Code::invalid_argument);
    CHECK(contains(r.error().detail, path + ": "));
  }
}

TEST_CASE("idx: max_count reads only the first records; declared keeps the header's count") {
  TempDir dir;
  const std::string images = dir.file("images");
  const std::string labels = dir.file("labels");
  write_gz(images, idx_images(50, 28, 28, 50 * 28 * 28));
  write_raw(labels, idx_labels(50, 50));
  auto r = tw::read_idx_images(images, 20);
  REQUIRE(r.ok());
  CHECK(r->declared == 50);
  CHECK(r->count == 20);
  CHECK(r->pixels.size() == 20u * 28 * 28);
  auto all = tw::read_idx_images(images);
  REQUIRE(all.ok());
  CHECK(std::equal(r->pixels.begin(), r->pixels.end(), all->pixels.begin()));
  auto l = tw::read_idx_labels(labels, 80);  // more than the file has: all of it
  REQUIRE(l.ok());
  CHECK(l->count == 50);
  // A file cut inside the first records is still reported, naming what was asked for.
  auto bytes = read_all(labels);
  write_raw(labels, {bytes.begin(), bytes.begin() + 8 + 10});
  auto cut = tw::read_idx_labels(labels, 20);
  REQUIRE_FALSE(cut.ok());
  CHECK(contains(cut.error().detail, labels + ": truncated: header says 50 labels, the first 20 need 20 bytes"));
}
