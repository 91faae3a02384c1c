#include "doctest_torch.h"

#include <filesystem>
#include <sstream>

#include "temp_dir.h"
#include "workload/data/token_data.h"

namespace tw = tsum::workload;
using namespace tsum::workload::testing;

namespace {

// "LABEL first first+1 ... first+count-1"
std::string line_of(int label, int first, int count) {
  std::ostringstream out;
  out << label;
  for (int i = 0; i < count; ++i) out << ' ' << first + i;
  out << '\n';
  return out.str();
}

}  // namespace

TEST_CASE("tokens: lines are fitted to 100 ids like Keras pad_sequences (pre), vocab is max+1") {
  TempDir dir;
  const std::string path = dir.file("train.txt");
  write_text(path, line_of(1, 5, 3) + line_of(0, 1000, 150) + "0\n" + "1\t7  8\r\n");
  auto data = tw::read_token_file(path, 0);
  REQUIRE_MESSAGE(data.ok(), (data.ok() ? "" : data.error().detail));
  CHECK(data->size() == 4);
  CHECK((data->inputs.sizes() == torch::IntArrayRef({4, 100})));
  CHECK((data->inputs.scalar_type() == torch::kInt64));
  CHECK(torch::equal(data->labels, torch::tensor({1, 0, 0, 1}, torch::kInt64)));
  // Short: left-padded with 0.
  CHECK(data->inputs[0].narrow(0, 0, 97).eq(0).all().item<bool>());
  CHECK(torch::equal(data->inputs[0].narrow(0, 97, 3), torch::tensor({5, 6, 7}, torch::kInt64)));
  // Long: the last 100 of 1000..1149 are 1050..1149.
  CHECK(torch::equal(data->inputs[1], torch::arange(1050, 1150, torch::kInt64)));
  // No tokens at all: all padding. Tabs, repeated spaces and CR are separators.
  CHECK(data->inputs[2].eq(0).all().item<bool>());
  CHECK(torch::equal(data->inputs[3].narrow(0, 98, 2), torch::tensor({7, 8}, torch::kInt64)));
  CHECK(data->vocab == 1150);
  CHECK(data->inputs_path == path);

  auto limited = tw::read_token_file(path, 2);
  REQUIRE(limited.ok());
  CHECK(limited->size() == 2);
}

TEST_CASE("tokens: every malformed file is an error naming the file, the line and the problem") {
  TempDir dir;
  const std::string path = dir.file("train.txt");
  auto fails_with = [&](const std::string& text, const std::string& message) {
    write_text(path, text);
    auto r = tw::read_token_file(path, 0);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == tsum::Code::invalid_argument);
    CHECK_MESSAGE(contains(r.error().detail, message), r.error().detail);
  };
  fails_with("", path + ": empty file, no examples");
  fails_with("1 2 3\n\n0 4\n", path + ":2: empty line");
  fails_with("1 2 3\n2 4 5\n", path + ":2: label '2' is not 0 or 1");
  fails_with("x 4 5\n", path + ":1: label 'x' is not 0 or 1");
  fails_with("1 4 five\n", path + ":1: token 2 'five' is not an id in [0, 16777215]");
  fails_with("0 -3\n", path + ":1: token 1 '-3' is not an id");
  fails_with("0 16777216\n", path + ":1: token 1 '16777216' is not an id");
  fails_with("1 3.5\n", path + ":1: token 1 '3.5' is not an id");

  auto missing = tw::load_token_dataset(dir.file("absent"), tw::Split::test, 0);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.code() == tsum::Code::not_found);
  CHECK(contains(missing.error().detail, dir.file("absent") + "/test.txt: "));

  std::filesystem::create_directory(dir.file("test.txt"));
  auto directory = tw::load_token_dataset(dir.path().string(), tw::Split::test, 0);
  REQUIRE_FALSE(directory.ok());
  CHECK(contains(directory.error().detail, dir.file("test.txt") + ": is a directory"));
}

TEST_CASE("tokens: fit_sequence keeps the tail and pads the head") {
  std::vector<std::int64_t> row(tw::kSequenceLength, -1);
  tw::fit_sequence({}, row.data());
  CHECK(std::all_of(row.begin(), row.end(), [](std::int64_t v) { return v == 0; }));
  std::vector<std::int64_t> exact(100);
  for (std::size_t i = 0; i < exact.size(); ++i) exact[i] = static_cast<std::int64_t>(i + 1);
  tw::fit_sequence(exact, row.data());
  CHECK(row == exact);
}
