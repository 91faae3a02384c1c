#include "doctest_torch.h"

#include "temp_dir.h"
#include "workload/data/dataset.h"

namespace tw = tsum::workload;
using namespace tsum::workload::testing;

TEST_CASE("dataset: real fashion-mnist test split loads as 10000x1x28x28 in [0,1]") {
  auto data = tw::load_idx_dataset(TSUM_FASHION_MNIST_DIR, tw::kTestPrefix, 0);
  REQUIRE_MESSAGE(data.ok(), (data.ok() ? "" : data.error().detail));
  CHECK(data->size() == 10000);
  CHECK((data->inputs.sizes() == torch::IntArrayRef({10000, 1, 28, 28})));
  CHECK((data->inputs.scalar_type() == torch::kFloat32));
  CHECK((data->labels.scalar_type() == torch::kInt64));
  CHECK(data->inputs.min().item<float>() >= 0.0f);
  CHECK(data->inputs.max().item<float>() == doctest::Approx(1.0));
  CHECK(data->labels.max().item<std::int64_t>() == 9);
  // Fashion-MNIST's test set is balanced: 1000 images per class.
  CHECK(torch::bincount(data->labels).eq(1000).all().item<bool>());
  CHECK(data->inputs_path == std::string(TSUM_FASHION_MNIST_DIR) + "/t10k-images-idx3-ubyte.gz");
}

TEST_CASE("dataset: limit keeps the first N examples") {
  auto all = tw::load_idx_dataset(TSUM_FASHION_MNIST_DIR, tw::kTestPrefix, 0);
  auto some = tw::load_idx_dataset(TSUM_FASHION_MNIST_DIR, tw::kTestPrefix, 300);
  REQUIRE(all.ok());
  REQUIRE(some.ok());
  CHECK(some->size() == 300);
  CHECK(torch::equal(some->inputs, all->inputs.narrow(0, 0, 300)));
  CHECK(torch::equal(some->labels, all->labels.narrow(0, 0, 300)));
}

TEST_CASE("dataset: raw and gzip directories load identically; .gz preferred when both exist") {
  TempDir raw_dir;
  TempDir gz_dir;
  const auto images = idx_images(20, 28, 28, 20 * 28 * 28);
  const auto labels = idx_labels(20, 20);
  write_raw(raw_dir.file("t10k-images-idx3-ubyte"), images);
  write_raw(raw_dir.file("t10k-labels-idx1-ubyte"), labels);
  write_gz(gz_dir.file("t10k-images-idx3-ubyte.gz"), images);
  write_gz(gz_dir.file("t10k-labels-idx1-ubyte.gz"), labels);
  auto raw = tw::load_idx_dataset(raw_dir.path().string(), tw::kTestPrefix, 0);
  auto gz = tw::load_idx_dataset(gz_dir.path().string(), tw::kTestPrefix, 0);
  REQUIRE(raw.ok());
  REQUIRE(gz.ok());
  CHECK(torch::equal(raw->inputs, gz->inputs));
  CHECK(torch::equal(raw->labels, gz->labels));
  CHECK(raw->inputs[0][0][0][5].item<float>() == doctest::Approx(5.0 / 255.0));
  CHECK(raw->inputs_path == raw_dir.file("t10k-images-idx3-ubyte"));

  auto resolved = tw::resolve_idx_file(gz_dir.path().string(), "t10k-images-idx3-ubyte");
  REQUIRE(resolved.ok());
  CHECK(*resolved == gz_dir.file("t10k-images-idx3-ubyte.gz"));
}

TEST_CASE("dataset: missing file names the path it looked for") {
  TempDir dir;
  write_raw(dir.file("t10k-images-idx3-ubyte"), idx_images(2, 28, 28, 2 * 28 * 28));
  auto r = tw::load_idx_dataset(dir.path().string(), tw::kTestPrefix, 0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == tsum::Code::not_found);
  CHECK(contains(r.error().detail, dir.file("t10k-labels-idx1-ubyte.gz")));
}

TEST_CASE("dataset: image and label counts must match") {
  TempDir dir;
  write_gz(dir.file("train-images-idx3-ubyte.gz"), idx_images(5, 28, 28, 5 * 28 * 28));
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), idx_labels(4, 4));
  auto r = tw::load_idx_dataset(dir.path().string(), tw::kTrainPrefix, 0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == tsum::Code::invalid_argument);
  CHECK(contains(r.error().detail, dir.file("train-images-idx3-ubyte.gz") + ": has 5 images"));
  CHECK(contains(r.error().detail, dir.file("train-labels-idx1-ubyte.gz") + " has 4 labels"));
}

TEST_CASE("dataset: a label outside the model's classes is rejected with the labels file") {
  TempDir dir;
  write_raw(dir.file("train-images-idx3-ubyte"), idx_images(10, 28, 28, 10 * 28 * 28));
  write_raw(dir.file("train-labels-idx1-ubyte"), idx_labels(10, 10));
  auto data = tw::load_idx_dataset(dir.path().string(), tw::kTrainPrefix, 0);
  REQUIRE(data.ok());
  const tw::InputShape five_classes{tw::InputKind::image, 1, 28, 28, 0, 0, 5};
  auto r = tw::check_dataset(*data, five_classes, "m");
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == tsum::Code::invalid_argument);
  CHECK(contains(r.error().detail, dir.file("train-labels-idx1-ubyte") + ": label 5 at index 5"));
}

TEST_CASE("dataset: kinds by name, each with its default directory") {
  CHECK(*tw::parse_data_kind("idx") == tw::DataKind::idx);
  CHECK(*tw::parse_data_kind("cifar10") == tw::DataKind::cifar10);
  CHECK(*tw::parse_data_kind("tokens") == tw::DataKind::tokens);
  CHECK(*tw::parse_data_kind("synthetic") == tw::DataKind::synthetic);
  auto bad = tw::parse_data_kind("imagenet");
  REQUIRE_FALSE(bad.ok());
  CHECK(contains(bad.error().detail, "idx, cifar10, tokens, synthetic"));
  CHECK(tw::default_data_dir(tw::DataKind::idx) == tw::kDefaultDataDir);
  CHECK(tw::default_data_dir(tw::DataKind::synthetic).empty());
  CHECK(tw::load_dataset(tw::DataKind::synthetic, "/x", tw::Split::train, 0).code() ==
        tsum::Code::invalid_argument);
}
