#include "doctest_torch.h"

#include <cstdio>
#include <filesystem>

#include "temp_dir.h"
#include "workload/data/cifar_data.h"

namespace tw = tsum::workload;
using namespace tsum::workload::testing;

namespace {

// A complete CIFAR directory: `per_file` records in each training batch, `test` in the test batch.
void write_cifar_dir(const TempDir& dir, std::size_t per_file, std::size_t test) {
  for (int i = 1; i <= 5; ++i) {
    std::vector<std::uint8_t> labels(per_file);
    for (std::size_t r = 0; r < per_file; ++r) labels[r] = static_cast<std::uint8_t>((i + r) % 10);
    write_raw(dir.file("data_batch_" + std::to_string(i) + ".bin"), cifar_records(labels));
  }
  write_raw(dir.file("test_batch.bin"), cifar_records(std::vector<std::uint8_t>(test, 3)));
}

}  // namespace

TEST_CASE("cifar: records load as CHW images x/255 with their labels, files in order") {
  TempDir dir;
  write_cifar_dir(dir, 2, 3);
  auto train = tw::load_cifar_dataset(dir.path().string(), tw::Split::train, 0);
  REQUIRE_MESSAGE(train.ok(), (train.ok() ? "" : train.error().detail));
  CHECK(train->size() == 10);
  CHECK((train->inputs.sizes() == torch::IntArrayRef({10, 3, 32, 32})));
  CHECK((train->inputs.scalar_type() == torch::kFloat32));
  CHECK(train->inputs.is_contiguous());
  // File i's record r has label (i + r) % 10: 1, 2, 2, 3, 3, 4, ...
  CHECK(torch::equal(train->labels, torch::tensor({1, 2, 2, 3, 3, 4, 4, 5, 5, 6}, torch::kInt64)));
  // Record 1 of a file: pixel i is (1 + i) % 256; channel 1, row 2, column 3 is byte 1024+64+3.
  const std::int64_t byte = 1024 + 2 * 32 + 3;
  CHECK(train->inputs[1][1][2][3].item<float>() == doctest::Approx(((1 + byte) % 256) / 255.0));
  CHECK(train->inputs[0][0][0][0].item<float>() == doctest::Approx(0.0));

  auto test = tw::load_cifar_dataset(dir.path().string(), tw::Split::test, 0);
  REQUIRE(test.ok());
  CHECK(test->size() == 3);
  CHECK(test->labels.eq(3).all().item<bool>());
  CHECK(test->inputs_path == dir.file("test_batch.bin"));

  auto limited = tw::load_cifar_dataset(dir.path().string(), tw::Split::train, 3);
  REQUIRE(limited.ok());
  CHECK(limited->size() == 3);
  CHECK(torch::equal(limited->inputs, train->inputs.narrow(0, 0, 3)));
}

TEST_CASE("cifar: every malformed file is an error naming the file and the problem") {
  TempDir dir;
  write_cifar_dir(dir, 2, 2);
  const std::string batch3 = dir.file("data_batch_3.bin");
  auto load = [&] { return tw::load_cifar_dataset(dir.path().string(), tw::Split::train, 0); };

  SUBCASE("missing") {
    std::remove(batch3.c_str());  // not std::filesystem: see temp_dir.h
    auto r = load();
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == tsum::Code::not_found);
    CHECK(contains(r.error().detail, batch3 + ": "));
  }
  SUBCASE("empty") {
    write_raw(batch3, {});
    auto r = load();
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == tsum::Code::invalid_argument);
    CHECK(contains(r.error().detail, batch3 + ": empty file"));
  }
  SUBCASE("truncated in the middle of a record") {
    auto bytes = cifar_records({1, 2});
    bytes.resize(bytes.size() - 100);
    write_raw(batch3, bytes);
    auto r = load();
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().detail, batch3 + ": truncated or wrong record size: 6046 bytes"));
    CHECK(contains(r.error().detail, "1 records and 2973 bytes"));
  }
  SUBCASE("records of another size (3072 bytes, no label)") {
    write_raw(batch3, std::vector<std::uint8_t>(3 * 3072, 1));
    auto r = load();
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().detail, batch3 + ": truncated or wrong record size"));
  }
  SUBCASE("label byte above 9") {
    write_raw(batch3, cifar_records({4, 12}));
    auto r = load();
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == tsum::Code::invalid_argument);
    CHECK(contains(r.error().detail, batch3 + ": record 1: bad label byte 12 (must be 0..9)"));
  }
  SUBCASE("a directory") {
    std::remove(batch3.c_str());  // not std::filesystem: see temp_dir.h
    std::filesystem::create_directory(batch3);
    auto r = load();
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().detail, batch3 + ": is a directory"));
  }
}

TEST_CASE("cifar: the test split reads test_batch.bin only") {
  TempDir dir;
  write_raw(dir.file("test_batch.bin"), cifar_records({9}));
  auto test = tw::load_cifar_dataset(dir.path().string(), tw::Split::test, 0);
  REQUIRE(test.ok());
  CHECK(test->labels[0].item<std::int64_t>() == 9);
  auto train = tw::load_cifar_dataset(dir.path().string(), tw::Split::train, 0);
  REQUIRE_FALSE(train.ok());
  CHECK(contains(train.error().detail, dir.file("data_batch_1.bin")));
}
