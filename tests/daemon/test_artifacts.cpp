// The byte-moving layer: blobs by hash, tar archives, data set formats, data sets and resumable run uploads.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "daemon/artifacts/blob_store.h"
#include "daemon/artifacts/dataset_format.h"
#include "daemon/artifacts/datasets.h"
#include "daemon/artifacts/run_artifacts.h"
#include "daemon/artifacts/tar_archive.h"
#include "daemon/fixture.h"

using namespace tsum;
using namespace tsum::daemon;
namespace fs = std::filesystem;

namespace {

void write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }
std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}
// A raw IDX file of n images of 2x2 (or labels when rows == 0).
std::string idx(uint32_t n, uint32_t rows) {
  if (rows == 0) return be32(0x0801) + be32(n) + std::string(n, '\1');
  return be32(0x0803) + be32(n) + be32(rows) + be32(rows) + std::string(n * rows * rows, '\7');
}
// The four Fashion-MNIST-shaped files in dir; returns their paths.
std::vector<std::string> idx_files(const testing::TempDir& d, uint32_t n = 3) {
  std::vector<std::string> out;
  for (auto [name, rows] : {std::pair{"train-images-idx3-ubyte", 2u}, {"train-labels-idx1-ubyte", 0u},
                            {"t10k-images-idx3-ubyte", 2u}, {"t10k-labels-idx1-ubyte", 0u}}) {
    write(d.file(name), idx(n, rows));
    out.push_back(d.file(name));
  }
  return out;
}

}  // namespace

TEST_CASE("hash_file gives the known SHA-256 and the size") {
  testing::TempDir d;
  write(d.file("abc"), "abc");
  auto h = hash_file(d.file("abc"));
  REQUIRE(h.ok());
  CHECK(h->sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(h->bytes == 3);
  CHECK(hash_file(d.file("missing")).code() == Code::not_found);
  CHECK(is_sha256_hex(h->sha256));
  CHECK_FALSE(is_sha256_hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
  CHECK_FALSE(is_sha256_hex("../etc/passwd"));
}

TEST_CASE("blob store: adopt moves by hash, refuses a wrong hash, keeps one copy of equal bytes") {
  testing::TempDir d;
  BlobStore blobs(d.file("blobs"));
  write(d.file("a"), "hello");
  auto a = blobs.adopt(d.file("a"));
  REQUIRE(a.ok());
  CHECK_FALSE(fs::exists(d.file("a")));
  CHECK(read(blobs.path_of(a->sha256)) == "hello");
  write(d.file("b"), "hello");
  CHECK(blobs.adopt(d.file("b"))->sha256 == a->sha256);
  write(d.file("c"), "other");
  auto wrong = blobs.adopt(d.file("c"), a->sha256);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.code() == Code::invalid_argument);
  CHECK(wrong.error().detail.find("sha256 mismatch") != std::string::npos);
  CHECK_FALSE(fs::exists(d.file("c")));
  CHECK(blobs.path_of("not-a-hash").empty());
  write(d.file("kept"), "x");
  REQUIRE(blobs.add_copy(d.file("kept")).ok());
  CHECK(fs::exists(d.file("kept")));
}

TEST_CASE("tar: what write_tar_gz packs, read_tar lists with sizes and heads; truncation and foreign files fail") {
  testing::TempDir d;
  auto files = idx_files(d);
  REQUIRE(write_tar_gz(d.file("ds.tar.gz"), files).ok());
  auto entries = read_tar(d.file("ds.tar.gz"), 4);
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 4);
  CHECK((*entries)[0].name == "train-images-idx3-ubyte");
  CHECK((*entries)[0].size == 16 + 12);
  // The same files give the same bytes (fixed mtime and owner), so the same hash.
  REQUIRE(write_tar_gz(d.file("again.tar.gz"), files).ok());
  CHECK(hash_file(d.file("again.tar.gz"))->sha256 == hash_file(d.file("ds.tar.gz"))->sha256);

  // GNU tar reads ours, and we read GNU tar's (plain and gzip).
  CHECK(std::system(("tar -tzf " + d.file("ds.tar.gz") + " >/dev/null").c_str()) == 0);
  REQUIRE(std::system(("cd " + d.path().string() + " && tar -cf gnu.tar train-images-idx3-ubyte").c_str()) == 0);
  CHECK(read_tar(d.file("gnu.tar"))->at(0).size == 28);

  // A truncated archive: the first half of an uncompressed tar.
  std::string whole = read(d.file("gnu.tar"));
  write(d.file("cut.tar"), whole.substr(0, 600));
  auto cut = read_tar(d.file("cut.tar"));
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.error().detail.find("truncated") != std::string::npos);
  write(d.file("junk"), std::string(2048, 'j'));
  CHECK(read_tar(d.file("junk")).error().detail.find("not a tar archive") != std::string::npos);
  // An entry that leaves the archive.
  REQUIRE(std::system(("cd " + d.path().string() + " && tar -cf evil.tar -P ../" +
                       d.path().filename().string() + "/gnu.tar 2>/dev/null").c_str()) == 0);
  CHECK(read_tar(d.file("evil.tar")).error().detail.find("leaves the archive") != std::string::npos);
}

TEST_CASE("data set formats: idx needs its four files whole; other formats their own files") {
  testing::TempDir d;
  auto files = idx_files(d);
  REQUIRE(write_tar_gz(d.file("ok.tar.gz"), files).ok());
  CHECK(check_dataset_archive(d.file("ok.tar.gz"), "idx").ok());
  CHECK(check_dataset_archive(d.file("ok.tar.gz"), "files").ok());
  CHECK(check_dataset_archive(d.file("ok.tar.gz"), "tokens").error().detail.find("train.txt") != std::string::npos);
  CHECK(check_dataset_archive(d.file("ok.tar.gz"), "csv").error().detail.find("unknown data set format") !=
        std::string::npos);

  // An IDX file shorter than its header says.
  write(d.file("train-images-idx3-ubyte"), idx(3, 2).substr(0, 20));
  REQUIRE(write_tar_gz(d.file("short.tar.gz"), files).ok());
  auto short_one = check_dataset_archive(d.file("short.tar.gz"), "idx");
  REQUIRE_FALSE(short_one.ok());
  CHECK(short_one.error().detail.find("train-images-idx3-ubyte: truncated") != std::string::npos);

  // A missing split.
  write(d.file("train-images-idx3-ubyte"), idx(3, 2));
  REQUIRE(write_tar_gz(d.file("three.tar.gz"), {files[0], files[1], files[2]}).ok());
  CHECK(check_dataset_archive(d.file("three.tar.gz"), "idx").error().detail.find("t10k-labels-idx1-ubyte") !=
        std::string::npos);
  write(d.file("data_batch_1.bin"), std::string(3073, 'x'));
  write(d.file("test_batch.bin"), std::string(3000, 'x'));
  REQUIRE(write_tar_gz(d.file("cifar.tar.gz"), {d.file("data_batch_1.bin"), d.file("test_batch.bin")}).ok());
  CHECK(check_dataset_archive(d.file("cifar.tar.gz"), "cifar10-bin").error().detail.find("3073") != std::string::npos);
}

TEST_CASE("data sets: added once by name, listed, refused when bad, not deleted while a run uses them") {
  testing::DaemonFixture f;  // one experiment (fashion-mnist) with queued runs
  BlobStore blobs(f.dir.file("blobs"));
  Datasets sets(*f.db, blobs, f.clock);
  testing::TempDir d;
  auto files = idx_files(d);
  REQUIRE(write_tar_gz(d.file("up.tar.gz"), files).ok());
  auto added = sets.add("mine", "idx", d.file("up.tar.gz"));
  REQUIRE(added.ok());
  CHECK(added->files.size() == 4);
  CHECK(blobs.has(added->sha256));
  REQUIRE(write_tar_gz(d.file("up2.tar.gz"), files).ok());
  CHECK(sets.add("mine", "idx", d.file("up2.tar.gz")).code() == Code::already_exists);
  CHECK_FALSE(fs::exists(d.file("up2.tar.gz")));  // a refused upload leaves nothing behind
  write(d.file("bad.tar"), "not a tar");
  CHECK(sets.add("bad", "idx", d.file("bad.tar")).code() == Code::invalid_argument);
  CHECK(sets.get("bad").code() == Code::not_found);
  CHECK(sets.add("../x", "idx", d.file("none")).code() == Code::invalid_argument);

  REQUIRE(sets.ensure("fashion-mnist", "idx", files).ok());
  CHECK(sets.list()->size() == 2);
  auto busy = sets.remove("fashion-mnist");  // the fixture's queued runs use it
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.code() == Code::already_exists);
  CHECK(busy.error().detail.find("in use") != std::string::npos);
  CHECK(sets.remove("mine").ok());
  CHECK(sets.get("mine").code() == Code::not_found);
  CHECK(sets.remove("mine").code() == Code::not_found);
}

TEST_CASE("run artifacts: whole or in pieces from the held offset, hash checked, never overwritten") {
  testing::DaemonFixture f;
  BlobStore blobs(f.dir.file("blobs"));
  RunArtifacts arts(*f.db, blobs, f.dir.file("uploads"), f.clock);
  testing::TempDir d;
  const std::string data = "0123456789abcdefghij";
  write(d.file("whole"), data);
  const std::string sha = hash_file(d.file("whole"))->sha256;

  // In three pieces, one out of place on the way.
  write(d.file("p1"), data.substr(0, 8));
  auto r1 = arts.receive(1, "model.pt", d.file("p1"), ByteRange{0, 7, 20}, sha);
  REQUIRE(r1.ok());
  CHECK_FALSE(r1->complete);
  CHECK(arts.offset(1, "model.pt") == 8);
  write(d.file("late"), data.substr(12, 8));
  auto gap = arts.receive(1, "model.pt", d.file("late"), ByteRange{12, 19, 20}, sha);
  REQUIRE_FALSE(gap.ok());
  CHECK(gap.code() == Code::already_exists);
  CHECK(gap.error().detail.find("holds 8 bytes") != std::string::npos);
  write(d.file("p2"), data.substr(8, 6));
  REQUIRE(arts.receive(1, "model.pt", d.file("p2"), ByteRange{8, 13, 20}, sha).ok());
  write(d.file("p3"), data.substr(14));
  auto done = arts.receive(1, "model.pt", d.file("p3"), ByteRange{14, 19, 20}, sha);
  REQUIRE(done.ok());
  CHECK(done->complete);
  CHECK(done->artifact->bytes == 20);
  CHECK(read(blobs.path_of(sha)) == data);
  CHECK(arts.offset(1, "model.pt") == 20);

  // A retry of the same bytes is fine; other bytes under the same name are a conflict.
  write(d.file("again"), data);
  CHECK(arts.receive(1, "model.pt", d.file("again"), std::nullopt, sha)->complete);
  write(d.file("other"), "other bytes");
  auto other = arts.receive(1, "model.pt", d.file("other"), std::nullopt, hash_file(d.file("other"))->sha256);
  CHECK(other.code() == Code::already_exists);

  // A body that does not hash to what the agent said is refused and not kept.
  write(d.file("corrupt"), "0123456789abcdefghiX");
  auto corrupt = arts.receive(1, "events.jsonl", d.file("corrupt"), std::nullopt, sha);
  CHECK(corrupt.code() == Code::invalid_argument);
  CHECK(arts.get(1, "events.jsonl").code() == Code::not_found);
  CHECK(arts.list(1)->size() == 1);
  CHECK(arts.list(2)->empty());

  CHECK(parse_content_range("bytes 0-7/20")->total == 20);
  CHECK_FALSE(parse_content_range("bytes 7-3/20"));
  CHECK_FALSE(parse_content_range("bytes 0-20/20"));
  CHECK_FALSE(parse_content_range("items 0-1/2"));
  CHECK_FALSE(is_artifact_name("../model.pt"));
  CHECK(is_artifact_name("ckpt/epoch-1/model.pt"));  // a job's file under a subdirectory of /tsum/out
  for (const char* bad : {"/abs", "ckpt/", "a//b", "ckpt/.hidden", "a b", "", "a/../b"}) CHECK_FALSE(is_artifact_name(bad));
}
