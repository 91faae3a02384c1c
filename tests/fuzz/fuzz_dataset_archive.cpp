// A data set upload (POST /v1/datasets): the archive is read and checked against its format. The first byte
// picks the format, the rest is the archive.
#include "daemon/artifacts/dataset_format.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static tsum::fuzz::InputFile file(".tar.gz");
  if (size == 0) return 0;
  constexpr auto& formats = tsum::daemon::kDatasetFormats;
  const std::string_view format = formats[data[0] % std::size(formats)];
  (void)tsum::daemon::check_dataset_archive(file.write(data + 1, size - 1), format);
  return 0;
}
