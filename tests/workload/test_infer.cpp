// Inference mode: JPEG round trips and corrupt files, the bounded queue, and `tsum-train infer`
// end to end (sync and async, files and memory) on small generated images.
#include "doctest_torch.h"

#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "temp_dir.h"
#include "workload/serve/bounded_queue.h"
#include "workload/infer/image_files.h"
#include "workload/infer/jpeg.h"
#include "workload/train/options.h"

namespace tw = tsum::workload;
using tw::testing::TempDir;

namespace {

struct Run {
  int exit_code = -1;
  std::vector<nlohmann::json> events;
  std::string err;
};

Run run_infer(const TempDir& dir, const std::string& args) {
  const std::string err_path = dir.file("stderr.txt");
  const std::string cmd = std::string("'") + TSUM_TRAIN_BIN + "' " + args + " 2>'" + err_path + "'";
  Run r;
  std::FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("{", 0) == 0) r.events.push_back(nlohmann::json::parse(line));  // gen-* say prose
  }
  const auto err = tw::testing::read_all(err_path);
  r.err.assign(err.begin(), err.end());
  return r;
}

}  // namespace

TEST_CASE("jpeg: an image survives a round trip within JPEG's error; corrupt files are named") {
  TempDir dir;
  tw::RgbImage image{16, 8, std::vector<std::uint8_t>(16 * 8 * 3)};
  for (std::size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<std::uint8_t>(i * 7);
  // A smooth image: JPEG keeps it close.
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 16; ++x)
      for (int c = 0; c < 3; ++c) image.pixels[(y * 16 + x) * 3 + c] = static_cast<std::uint8_t>(x * 10 + c * 40);
  const std::string path = dir.file("a.jpg");
  REQUIRE(tw::write_jpeg(path, image, 95).ok());
  auto back = tw::read_jpeg(path);
  REQUIRE(back.ok());
  CHECK(back->width == 16);
  CHECK(back->height == 8);
  int worst = 0;
  for (std::size_t i = 0; i < image.pixels.size(); ++i) {
    worst = std::max(worst, std::abs(int(image.pixels[i]) - int(back->pixels[i])));
  }
  CHECK(worst < 24);

  auto bytes = tw::testing::read_all(path);
  tw::testing::write_raw(dir.file("cut.jpg"), {bytes.begin(), bytes.begin() + bytes.size() / 2});
  auto cut = tw::read_jpeg(dir.file("cut.jpg"));
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.code() == tsum::Code::invalid_argument);
  CHECK(cut.error().detail.find(dir.file("cut.jpg")) == 0);
  tw::testing::write_text(dir.file("text.jpg"), "not a jpeg at all");
  CHECK(tw::read_jpeg(dir.file("text.jpg")).code() == tsum::Code::invalid_argument);
  CHECK(tw::read_jpeg(dir.file("missing.jpg")).code() == tsum::Code::not_found);

  // A header that claims 65000 x 65000 pixels (12 GiB of RGB; TurboJPEG itself stops at 65500 a side) in a few
  // hundred bytes is refused before any allocation: the frame header (SOF0, FF C0) holds the height and the
  // width after its length and precision.
  auto huge = bytes;
  std::size_t sof = 0;
  while (sof + 8 < huge.size() && !(huge[sof] == 0xFF && huge[sof + 1] == 0xC0)) ++sof;
  REQUIRE(sof + 8 < huge.size());
  for (std::size_t i = sof + 5; i < sof + 9; i += 2) {
    huge[i] = 0xFD;  // 65000 = 0xFDE8
    huge[i + 1] = 0xE8;
  }
  tw::testing::write_raw(dir.file("huge.jpg"), huge);
  auto refused = tw::read_jpeg(dir.file("huge.jpg"));
  REQUIRE_FALSE(refused.ok());
  INFO(refused.error().detail);
  CHECK(refused.code() == tsum::Code::invalid_argument);
  CHECK(refused.error().detail.find("65000x65000 pixels is over the limit") != std::string::npos);
}

TEST_CASE("image files: gen-images output decodes to normalized channels-last pixels") {
  TempDir dir;
  REQUIRE(tw::write_image_files(dir.file("img"), 3, 32, 5).ok());
  auto files = tw::list_images(dir.file("img"));
  REQUIRE(files.ok());
  REQUIRE(files->size() == 3);
  CHECK((*files)[0].find("img-000000.jpg") != std::string::npos);
  tw::InputShape shape{tw::InputKind::image, 3, 32, 32};
  std::vector<float> pixels(32 * 32 * 3);
  REQUIRE(tw::decode_into((*files)[1], shape, pixels.data()).ok());
  // (x/255 - mean)/std lies in [-2.2, 2.7]; a class pattern is not flat.
  const auto [lo, hi] = std::minmax_element(pixels.begin(), pixels.end());
  CHECK(*lo >= -2.2f);
  CHECK(*hi <= 2.7f);
  CHECK(*hi - *lo > 1.0f);
  tw::InputShape big{tw::InputKind::image, 3, 64, 64};
  auto wrong = tw::decode_into((*files)[0], big, pixels.data());
  CHECK(wrong.code() == tsum::Code::invalid_argument);
  CHECK(wrong.error().detail.find("image is 32x32, the model reads 64x64") != std::string::npos);
  CHECK(tw::list_images(dir.file("none")).code() == tsum::Code::not_found);
}

TEST_CASE("bounded queue: producers block at capacity; close drains, then ends") {
  tw::BoundedQueue<int> q(2);
  std::atomic<int> pushed{0};
  std::thread producer([&] {
    for (int i = 0; i < 5; ++i) {
      if (!q.push(i)) break;
      ++pushed;
    }
  });
  while (pushed.load() < 2) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(pushed.load() == 2);  // the third push waits for room
  CHECK(q.pop() == 0);
  CHECK(q.pop() == 1);
  CHECK(q.pop() == 2);
  q.close();
  producer.join();
  while (auto v = q.pop()) CHECK(*v >= 3);
  CHECK_FALSE(q.push(9));
  CHECK_FALSE(q.pop().has_value());
}

TEST_CASE("infer options: batch lists, modes and sources") {
  auto o = tw::parse_infer_options({"infer", "--batch", "1,4,16", "--mode", "async", "--source=memory"});
  REQUIRE(o.ok());
  CHECK(o->batches == std::vector<std::int64_t>{1, 4, 16});
  CHECK(o->mode == tw::InferMode::async);
  CHECK(o->source == tw::InferSource::memory);
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"infer", "--batch", "1,,2"}, {"infer", "--batch", "0"}, {"infer", "--mode", "fast"},
           {"infer", "--source", "disk"}, {"infer", "--loaders", "0"}, {"infer", "--epochs", "1"}}) {
    CAPTURE(bad[1]);
    auto r = tw::parse_infer_options(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().detail.find(bad[1]) != std::string::npos);
  }
}

TEST_CASE("tsum-train infer: sync and async over files and memory report every batch size") {
  TempDir dir;
  const std::string images = dir.file("images");
  REQUIRE(run_infer(dir, "gen-images '" + images + "' --n 12 --size 32").exit_code == 0);
  for (const std::string mode : {"sync", "async"}) {
    for (const std::string source : {"files", "memory"}) {
      CAPTURE(mode);
      CAPTURE(source);
      const auto r = run_infer(dir, "infer --model cifar_small --batch 1,4,8 --iterations 3 "
                                    "--threads 1 --loaders 2 --mode " + mode + " --source " +
                                        source + " --images '" + images + "' --latency-file '" +
                                        dir.file("lat.csv") + "'");
      INFO("stderr: " << r.err);
      REQUIRE(r.exit_code == 0);
      REQUIRE(r.events.size() == 5);
      CHECK(r.events[0]["event"] == "ready");
      CHECK(r.events[0]["mode"] == mode);
      CHECK(r.events[0]["source"] == source);
      CHECK(r.events[0]["loaders"] == (mode == "async" ? 2 : 0));
      const std::vector<int> sizes = {1, 4, 8};
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        const auto& e = r.events[i + 1];
        CHECK(e["event"] == "infer");
        CHECK(e["batch"] == sizes[i]);
        CHECK(e["images"] == sizes[i] * 3);
        CHECK(e["images_per_s"].get<double>() > 0);
        CHECK(e["p50_ms"].get<double>() > 0);
        CHECK(e["p99_ms"].get<double>() >= e["p50_ms"].get<double>());
        CHECK(e["peak_rss_bytes"].get<std::int64_t>() > (1 << 20));
      }
      CHECK(r.events[4]["event"] == "infer_end");
      // The latency file holds each size's 3 measured batches; their median is the event's p50.
      const auto csv = tw::testing::read_latency_file(dir.file("lat.csv"));
      CHECK(csv.header == "level,latency_ms");
      const auto& rows = csv.rows;
      REQUIRE(rows.size() == 9);
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        std::vector<double> ms;
        for (std::size_t k = 3 * i; k < 3 * i + 3; ++k) {
          CHECK(rows[k].first == "batch=" + std::to_string(sizes[i]));
          ms.push_back(rows[k].second);
        }
        std::sort(ms.begin(), ms.end());
        CHECK(ms[1] == doctest::Approx(r.events[i + 1]["p50_ms"].get<double>()).epsilon(1e-6));
        CHECK(ms[2] == doctest::Approx(r.events[i + 1]["p99_ms"].get<double>()).epsilon(1e-6));
      }
    }
  }
}

TEST_CASE("tsum-train infer: resnet50 at a small size; bad images and models fail cleanly") {
  TempDir dir;
  const std::string images = dir.file("images");
  REQUIRE(run_infer(dir, "gen-images '" + images + "' --n 4 --size 64").exit_code == 0);
  const auto r = run_infer(dir, "infer --batch 2 --iterations 2 --image-size 64 --classes 10 "
                                "--mode async --images '" + images + "'");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.events[0]["model"] == "resnet50");
  CHECK(r.events[1]["batch"] == 2);

  auto bytes = tw::testing::read_all(images + "/img-000002.jpg");
  tw::testing::write_raw(images + "/img-000002.jpg", {bytes.begin(), bytes.begin() + 100});
  for (const std::string mode : {"sync", "async"}) {
    const auto bad = run_infer(dir, "infer --batch 4 --iterations 2 --image-size 64 --classes 10 "
                                    "--mode " + mode + " --images '" + images + "'");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find(images + "/img-000002.jpg") != std::string::npos);
  }
  const auto tokens = run_infer(dir, "infer --model bilstm --images '" + images + "'");
  CHECK(tokens.exit_code == 2);
  CHECK(tokens.err.find("does not read") != std::string::npos);
  const auto missing = run_infer(dir, "infer --images '" + dir.file("nope") + "'");
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("no such image directory") != std::string::npos);
  const auto unwritable = run_infer(dir, "infer --images '" + images + "' --latency-file '" + dir.file("no/x.csv") + "'");
  CHECK(unwritable.exit_code == 1);
  CHECK(unwritable.err.find("cannot write the latency file " + dir.file("no/x.csv")) != std::string::npos);
}
