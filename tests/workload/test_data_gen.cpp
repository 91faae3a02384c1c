// Generated data: gen-cifar / gen-tokens files read back by their readers, synthetic data sets,
// augmentation, and the data-versus-model checks.
#include "doctest_torch.h"

#include <filesystem>
#include <set>

#include "temp_dir.h"
#include "workload/data/augment.h"
#include "workload/data/cifar_data.h"
#include "workload/data/data_gen.h"
#include "workload/data/dataset.h"
#include "workload/data/synthetic_data.h"
#include "workload/data/token_data.h"

namespace tw = tsum::workload;
using namespace tsum::workload::testing;

namespace {

const tw::InputShape kCifarShape{tw::InputKind::image, 3, 32, 32, 0, 0, 10};
const tw::InputShape kTokenShape{tw::InputKind::tokens, 0, 0, 0, 100, 500, 2};

}  // namespace

TEST_CASE("gen-cifar: files round-trip through the CIFAR reader, seeded and reproducible") {
  TempDir a;
  TempDir b;
  TempDir c;
  REQUIRE(tw::write_cifar_files(a.path().string(), 23, 7).ok());
  REQUIRE(tw::write_cifar_files(b.path().string(), 23, 7).ok());
  REQUIRE(tw::write_cifar_files(c.path().string(), 23, 8).ok());
  // 23 = 5+5+5+4+4 records over the five training files, ceil(23/5) = 5 in the test file.
  const std::vector<std::uintmax_t> records = {5, 5, 5, 4, 4};
  for (int i = 1; i <= 5; ++i) {
    CHECK(std::filesystem::file_size(a.file("data_batch_" + std::to_string(i) + ".bin")) ==
          records[static_cast<std::size_t>(i - 1)] * 3073);
  }
  CHECK(std::filesystem::file_size(a.file("test_batch.bin")) == 5 * 3073);
  CHECK(read_all(a.file("data_batch_2.bin")) == read_all(b.file("data_batch_2.bin")));
  CHECK(read_all(a.file("data_batch_2.bin")) != read_all(c.file("data_batch_2.bin")));

  auto train = tw::load_cifar_dataset(a.path().string(), tw::Split::train, 0);
  auto test = tw::load_cifar_dataset(a.path().string(), tw::Split::test, 0);
  REQUIRE(train.ok());
  REQUIRE(test.ok());
  CHECK(train->size() == 23);
  CHECK(test->size() == 5);
  CHECK(tw::check_dataset(*train, kCifarShape, "cifar10_cnn").ok());
  CHECK(train->inputs.min().item<float>() >= 0.0f);
  CHECK(train->inputs.max().item<float>() <= 1.0f);
  CHECK(train->inputs.std().item<float>() > 0.05f);  // not a constant image
}

TEST_CASE("gen-cifar: images of one class share a colour that differs between classes") {
  TempDir dir;
  REQUIRE(tw::write_cifar_files(dir.path().string(), 400, 1).ok());
  auto train = tw::load_cifar_dataset(dir.path().string(), tw::Split::train, 0);
  REQUIRE(train.ok());
  const auto colour = train->inputs.mean({2, 3});  // [N, 3]
  const auto class0 = colour.index({train->labels.eq(0)});
  const auto class1 = colour.index({train->labels.eq(1)});
  REQUIRE(class0.size(0) > 5);
  REQUIRE(class1.size(0) > 5);
  // Within a class the mean colour barely varies; between classes it differs by far more.
  CHECK(class0.std(0).max().item<float>() < 0.02f);
  CHECK((class0.mean(0) - class1.mean(0)).abs().max().item<float>() > 0.1f);
}

TEST_CASE("gen-cifar and gen-tokens: bad arguments and unwritable places are errors") {
  TempDir dir;
  CHECK(tw::write_cifar_files(dir.path().string(), 4, 1).code() == tsum::Code::invalid_argument);
  CHECK(tw::write_token_files(dir.path().string(), 0, 1).code() == tsum::Code::invalid_argument);
  write_text(dir.file("file"), "x");
  const auto st = tw::write_cifar_files(dir.file("file") + "/sub", 10, 1);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.error().detail, dir.file("file") + "/sub"));
}

TEST_CASE("gen-tokens: files round-trip through the token reader with padding and truncation") {
  TempDir dir;
  REQUIRE(tw::write_token_files(dir.path().string(), 60, 3).ok());
  auto train = tw::load_token_dataset(dir.path().string(), tw::Split::train, 0);
  auto test = tw::load_token_dataset(dir.path().string(), tw::Split::test, 0);
  REQUIRE_MESSAGE(train.ok(), (train.ok() ? "" : train.error().detail));
  REQUIRE(test.ok());
  CHECK(train->size() == 60);
  CHECK(test->size() == 12);
  CHECK(train->vocab <= tw::kGenTokensVocab);
  CHECK(train->vocab > tw::kGenTokensVocab / 2);
  // Lengths 20..150: some rows start with padding, some are full.
  const auto padded = train->inputs.select(1, 0).eq(0);
  CHECK(padded.any().item<bool>());
  CHECK_FALSE(padded.all().item<bool>());
  // Both labels occur, and class 1's signal ids (11..20) are far more common in class 1.
  const auto ones = train->labels.eq(1);
  REQUIRE(ones.any().item<bool>());
  REQUIRE(ones.logical_not().any().item<bool>());
  const auto signal1 =
      train->inputs.ge(11).logical_and(train->inputs.le(20)).sum(1).to(torch::kFloat);
  CHECK(signal1.index({ones}).mean().item<float>() >
        5 * signal1.index({ones.logical_not()}).mean().item<float>() + 1);
}

TEST_CASE("synthetic: images and tokens of the model's shape, reproducible from the seed") {
  auto a = tw::make_synthetic_dataset(kCifarShape, 12, 5);
  auto b = tw::make_synthetic_dataset(kCifarShape, 12, 5);
  auto c = tw::make_synthetic_dataset(kCifarShape, 12, 6);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(c.ok());
  CHECK((a->inputs.sizes() == torch::IntArrayRef({12, 3, 32, 32})));
  CHECK(torch::equal(a->inputs, b->inputs));
  CHECK(torch::equal(a->labels, b->labels));
  CHECK_FALSE(torch::equal(a->inputs, c->inputs));
  CHECK(tw::check_dataset(*a, kCifarShape, "m").ok());

  const tw::InputShape imagenet{tw::InputKind::image, 3, 64, 64, 0, 0, 1000};
  auto big = tw::make_synthetic_dataset(imagenet, 40, 1);
  REQUIRE(big.ok());
  CHECK(big->labels.max().item<std::int64_t>() < 1000);
  CHECK(torch::bincount(big->labels).gt(0).sum().item<std::int64_t>() > 30);  // many classes

  auto tokens = tw::make_synthetic_dataset(kTokenShape, 16, 2);
  REQUIRE(tokens.ok());
  CHECK((tokens->inputs.sizes() == torch::IntArrayRef({16, 100})));
  CHECK(tokens->inputs.max().item<std::int64_t>() < 500);
  CHECK(tokens->labels.max().item<std::int64_t>() <= 1);
  CHECK(tw::check_dataset(*tokens, kTokenShape, "m").ok());

  CHECK(tw::make_synthetic_dataset(kCifarShape, 0, 1).code() == tsum::Code::invalid_argument);
  const tw::InputShape tiny_vocab{tw::InputKind::tokens, 0, 0, 0, 100, 10, 2};
  CHECK(tw::make_synthetic_dataset(tiny_vocab, 4, 1).code() == tsum::Code::invalid_argument);
}

TEST_CASE("check_dataset: data that does not fit the model is named with its file") {
  auto images = tw::make_synthetic_dataset(kCifarShape, 4, 1);
  auto tokens = tw::make_synthetic_dataset(kTokenShape, 4, 1);
  REQUIRE(images.ok());
  REQUIRE(tokens.ok());
  images->inputs_path = "/d/data_batch_1.bin";
  images->labels_path = "/d/data_batch_1.bin";
  tokens->inputs_path = "/d/train.txt";

  const tw::InputShape mnist{tw::InputKind::image, 1, 28, 28, 0, 0, 10};
  auto size = tw::check_dataset(*images, mnist, "mnist_cnn");
  REQUIRE_FALSE(size.ok());
  CHECK(contains(size.error().detail,
                 "/d/data_batch_1.bin: images are 3x32x32, model mnist_cnn expects 1x28x28"));

  auto kind = tw::check_dataset(*tokens, mnist, "mnist_cnn");
  REQUIRE_FALSE(kind.ok());
  CHECK(contains(kind.error().detail, "/d/train.txt: holds token sequences"));
  CHECK(contains(tw::check_dataset(*images, kTokenShape, "bilstm").error().detail, "holds images"));

  tw::InputShape small_vocab = kTokenShape;
  small_vocab.vocab = 30;
  auto vocab = tw::check_dataset(*tokens, small_vocab, "bilstm");
  REQUIRE_FALSE(vocab.ok());
  CHECK(contains(vocab.error().detail, "beyond model bilstm's vocabulary of 30"));

  tw::InputShape five = kCifarShape;
  five.classes = 5;
  images->labels = torch::tensor({0, 4, 7, 1}, torch::kInt64);
  auto label = tw::check_dataset(*images, five, "m");
  REQUIRE_FALSE(label.ok());
  CHECK(contains(label.error().detail,
                 "/d/data_batch_1.bin: label 7 at index 2 is out of range for 5 classes"));
}

TEST_CASE("augment: flips mirror whole images, shifts move them by whole pixels with edge fill") {
  torch::manual_seed(11);
  const std::int64_t n = 64;
  // Channel 0 holds the column index, channel 1 the row index.
  const auto cols = torch::arange(32, torch::kFloat).view({1, 1, 1, 32}).expand({n, 1, 32, 32});
  const auto rows = torch::arange(32, torch::kFloat).view({1, 1, 32, 1}).expand({n, 1, 32, 32});
  const auto x = torch::cat({cols, rows}, 1).contiguous(torch::MemoryFormat::ChannelsLast);

  const auto flipped = tw::ImageAugment(0.0, true)(x);
  CHECK((flipped.sizes() == x.sizes()));
  CHECK(flipped.is_contiguous(torch::MemoryFormat::ChannelsLast));
  int mirrored = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const bool same = torch::equal(flipped[i], x[i]);
    const bool flip = torch::equal(flipped[i], x[i].flip(2));
    CHECK((same || flip));
    mirrored += flip ? 1 : 0;
  }
  CHECK(mirrored > n / 4);
  CHECK(mirrored < 3 * n / 4);

  const auto shifted = tw::ImageAugment(0.1, false)(x);
  std::set<std::int64_t> shifts;
  for (std::int64_t i = 0; i < n; ++i) {
    // Column c of the result shows source column clamp(c - dx, 0, 31) for one dx in [-3, 3].
    const std::int64_t dx = 16 - shifted[i][0][0][16].item<std::int64_t>();
    const std::int64_t dy = 16 - shifted[i][1][16][0].item<std::int64_t>();
    CHECK(std::abs(dx) <= 3);
    CHECK(std::abs(dy) <= 3);
    shifts.insert(dx);
    const auto expect_cols = (torch::arange(32, torch::kFloat) - dx).clamp(0, 31);
    const auto expect_rows = (torch::arange(32, torch::kFloat) - dy).clamp(0, 31);
    CHECK(torch::equal(shifted[i][0][5], expect_cols));
    CHECK(torch::equal(shifted[i][1].select(1, 9), expect_rows));
  }
  CHECK(shifts.size() >= 5);  // the shifts are spread over the range
}
