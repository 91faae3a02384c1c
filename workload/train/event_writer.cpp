#include "workload/train/event_writer.h"

#include <time.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace tsum::workload {

double boottime_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string EventWriter::format(std::string_view event, double mono_s,
                                const std::vector<EventField>& fields) {
  nlohmann::ordered_json line;
  line["event"] = event;
  // Microsecond rounding keeps lines short while staying well under the millisecond requirement.
  line["mono_s"] = std::round(mono_s * 1e6) / 1e6;
  for (const auto& [key, value] : fields) {
    const std::string k(key);
    if (const auto* i = std::get_if<std::int64_t>(&value)) {
      line[k] = *i;
    } else if (const auto* d = std::get_if<double>(&value)) {
      if (std::isfinite(*d)) line[k] = *d; else line[k] = nullptr;
    } else {
      line[k] = std::get<std::string>(value);
    }
  }
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void EventWriter::add_common(std::string key, EventValue value) {
  common_.emplace_back(std::move(key), std::move(value));
}

void EventWriter::emit(std::string_view event, const std::vector<EventField>& fields) {
  std::vector<EventField> all;
  all.reserve(common_.size() + fields.size());
  for (const auto& [key, value] : common_) all.emplace_back(key, value);
  all.insert(all.end(), fields.begin(), fields.end());
  const std::string line = format(event, boottime_seconds(), all);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace tsum::workload
