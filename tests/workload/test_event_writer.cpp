#include <doctest/doctest.h>

#include <time.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "workload/train/event_writer.h"

namespace tw = tsum::workload;

TEST_CASE("events: event then mono_s come first, other keys in the given order, one line") {
  const std::string line = tw::EventWriter::format(
      "epoch", 1234.5, {{"epoch", std::int64_t{1}}, {"loss", 0.5}, {"path", std::string("a\"b")}});
  CHECK(line == "{\"event\":\"epoch\",\"mono_s\":1234.5,\"epoch\":1,\"loss\":0.5,\"path\":\"a\\\"b\"}\n");
}

TEST_CASE("events: non-finite numbers are written as null") {
  const std::string line = tw::EventWriter::format("epoch", 1.0, {{"loss", std::nan("")}});
  CHECK(line == "{\"event\":\"epoch\",\"mono_s\":1.0,\"loss\":null}\n");
}

TEST_CASE("events: mono_s is CLOCK_BOOTTIME, the clock of /proc/uptime") {
  std::ifstream uptime("/proc/uptime");
  double up = 0.0;
  uptime >> up;
  const double mono = tw::boottime_seconds();
  CHECK(mono >= up);
  CHECK(mono - up < 5.0);
  const std::string line = tw::EventWriter::format("ready", mono, {});
  const auto parsed = nlohmann::json::parse(line);
  CHECK(std::abs(parsed["mono_s"].get<double>() - mono) < 1e-5);
}

TEST_CASE("events: emit writes whole lines to the stream") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  tw::EventWriter writer(f);
  writer.emit("ready", {{"model", std::string("mnist_cnn")}});
  writer.emit("saved", {{"bytes", std::int64_t{42}}});
  std::rewind(f);
  char buf[512];
  std::string all;
  while (std::fgets(buf, sizeof buf, f) != nullptr) all += buf;
  std::fclose(f);
  CHECK(all.rfind("{\"event\":\"ready\",\"mono_s\":", 0) == 0);
  CHECK(all.find("\n{\"event\":\"saved\",\"mono_s\":") != std::string::npos);
  CHECK(all.back() == '\n');
}
