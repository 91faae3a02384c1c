// The data set formats tsum-train reads, from a file as it does: the first byte picks the reader (IDX images,
// IDX labels, a CIFAR-10 batch, a token file, a JPEG), the rest is the file.
#include "fuzz_input.h"
#include "workload/data/cifar_batch.h"
#include "workload/data/idx_reader.h"
#include "workload/infer/jpeg.h"
#include "workload/data/token_rows.h"

using namespace tsum::workload;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static tsum::fuzz::InputFile file(".data");
  if (size == 0) return 0;
  const std::string& path = file.write(data + 1, size - 1);
  switch (data[0] % 5) {
    case 0: {
      auto images = read_idx_images(path, 64);
      if (images.ok() && images->pixels.size() != static_cast<std::size_t>(images->count * images->rows * images->cols))
        __builtin_trap();
      break;
    }
    case 1: (void)read_idx_labels(path, 64); break;
    case 2: {
      auto batch = read_cifar_batch(path);
      if (batch.ok() && (batch->empty() || batch->size() % kCifarRecordBytes != 0)) __builtin_trap();
      break;
    }
    case 3: {
      auto rows = read_token_rows(path, 64);
      if (rows.ok() && rows->ids.size() != rows->labels.size() * kSequenceLength) __builtin_trap();
      break;
    }
    case 4: {
      auto image = read_jpeg(path);
      if (image.ok() && image->pixels.size() != static_cast<std::size_t>(image->width) * image->height * 3)
        __builtin_trap();
      break;
    }
  }
  return 0;
}
