// The "cifar10" dataset: binary batches, repacked into one u8 pixel store per split (the label bytes removed).
#include "datasets/cifar10.h"

#include <cstring>
#include <filesystem>
#include <memory>
#include <utility>

#include "datasets/dataset_registry.h"
#include "datasets/file_reader.h"
#include "datasets/image_dataset.h"

namespace geomx::data {

Result<int64_t> ValidateCifar10Batch(const std::vector<uint8_t>& bytes, const std::string& file) {
  const size_t records = bytes.size() / kCifar10RecordBytes;
  const size_t tail = bytes.size() % kCifar10RecordBytes;
  if (tail != 0 || bytes.empty()) {
    // A partial last record: it started at records * 3073, its label byte is there, its pixels are not.
    const size_t start = records * kCifar10RecordBytes;
    return Status::DataLoss(file + ": truncated at byte offset " + std::to_string(bytes.size()) + ": expected " +
                            std::to_string(kCifar10ImageBytes) + " bytes of image data for record " +
                            std::to_string(records) + " (starting at byte offset " + std::to_string(start) +
                            "), found " + std::to_string(tail == 0 ? 0 : tail - 1));
  }
  for (size_t r = 0; r < records; ++r) {
    const uint8_t label = bytes[r * kCifar10RecordBytes];
    if (label >= kCifar10Classes) {
      return Status::DataLoss(file + ": label " + std::to_string(label) + " of record " + std::to_string(r) +
                              " (byte offset " + std::to_string(r * kCifar10RecordBytes) + ") is out of range [0, 10)");
    }
  }
  return static_cast<int64_t>(records);
}

namespace {

const std::vector<std::string>& Cifar10ClassNames() {
  static const std::vector<std::string> names = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                 "dog",      "frog",       "horse", "ship", "truck"};
  return names;
}

// `dir` itself or its cifar-10-batches-bin/ (what the official archive unpacks to).
std::string Cifar10Dir(const std::string& dir) {
  std::error_code ec;
  const auto nested = std::filesystem::path(dir) / "cifar-10-batches-bin";
  if (!std::filesystem::exists(std::filesystem::path(dir) / "test_batch.bin", ec) &&
      std::filesystem::is_directory(nested, ec)) {
    return nested.string();
  }
  return dir;
}

Result<std::shared_ptr<const Dataset>> LoadCifar10Split(const std::string& dir, const std::vector<std::string>& names,
                                                        const DataConfig& config) {
  std::vector<std::string> paths;
  uintmax_t total_bytes = 0;
  for (const auto& name : names) {
    const auto p = std::filesystem::path(dir) / name;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec)) {
      return Status::NotFound(dir + ": no " + name + " (CIFAR-10 binary version: data_batch_1.bin .. " +
                              "data_batch_5.bin and test_batch.bin)");
    }
    paths.push_back(p.string());
    total_bytes += std::filesystem::file_size(p, ec);
  }
  // One allocation for the whole split: batches are read one at a time and their pixels appended.
  std::vector<uint8_t> pixels;
  std::vector<int32_t> labels;
  pixels.reserve(static_cast<size_t>(total_bytes / kCifar10RecordBytes * kCifar10ImageBytes));
  labels.reserve(static_cast<size_t>(total_bytes / kCifar10RecordBytes));
  bool gzipped = false;
  for (const auto& path : paths) {
    GEOMX_ASSIGN_OR_RETURN(FileBytes file, ReadDataFile(path));
    gzipped = gzipped || file.gzipped;
    GEOMX_ASSIGN_OR_RETURN(const int64_t records, ValidateCifar10Batch(file.bytes, path));
    for (int64_t r = 0; r < records; ++r) {
      const uint8_t* rec = file.bytes.data() + static_cast<size_t>(r) * kCifar10RecordBytes;
      labels.push_back(rec[0]);
      pixels.insert(pixels.end(), rec + 1, rec + kCifar10RecordBytes);
    }
  }
  DatasetInfo info;
  info.format = gzipped ? "cifar10-bin.gz" : "cifar10-bin";
  info.source = dir;
  info.example_shape = {3, 32, 32};
  info.num_classes = kCifar10Classes;
  info.class_names = Cifar10ClassNames();
  ImageNormalization norm;
  if (config.normalize) norm = {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}};
  return std::shared_ptr<const Dataset>(
      std::make_shared<U8ImageDataset>(std::move(info), std::move(pixels), 0, std::move(labels), norm, /*crop_pad=*/4));
}

Result<std::unique_ptr<DatasetSplits>> OpenCifar10(const DataConfig& config) {
  const std::string dir = Cifar10Dir(config.path);
  auto splits = std::make_unique<DatasetSplits>();
  GEOMX_ASSIGN_OR_RETURN(splits->train, LoadCifar10Split(dir,
                                                         {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                                          "data_batch_4.bin", "data_batch_5.bin"},
                                                         config));
  GEOMX_ASSIGN_OR_RETURN(splits->test, LoadCifar10Split(dir, {"test_batch.bin"}, config));
  return splits;
}

GEOMX_REGISTER(DatasetRegistry, "cifar10", OpenCifar10,
               "CIFAR-10 binary version: 50000+10000 32x32 colour images, 10 classes");

}  // namespace

void LinkCifar10Dataset() {}

}  // namespace geomx::data
