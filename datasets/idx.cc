// IDX reading and the "mnist" / "fashion-mnist" datasets. The image file's decompressed buffer becomes the
// dataset's pixel store as is (the 16-byte header stays in front of the pixels): no second copy.
#include "datasets/idx.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <utility>

#include "datasets/dataset_registry.h"
#include "datasets/file_reader.h"
#include "datasets/image_dataset.h"

namespace geomx::data {

std::string_view IdxTypeName(IdxType t) {
  switch (t) {
    case IdxType::kU8:
      return "u8";
    case IdxType::kI8:
      return "i8";
    case IdxType::kI16:
      return "i16";
    case IdxType::kI32:
      return "i32";
    case IdxType::kF32:
      return "f32";
    case IdxType::kF64:
      return "f64";
  }
  return "?";
}

namespace {

size_t IdxElementSize(uint8_t type) {
  switch (type) {
    case 0x08:
    case 0x09:
      return 1;
    case 0x0B:
      return 2;
    case 0x0C:
    case 0x0D:
      return 4;
    case 0x0E:
      return 8;
    default:
      return 0;
  }
}

uint32_t BigEndian32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

}  // namespace

bool LooksLikeIdx(const uint8_t* bytes, size_t size) {
  return size >= 8 && bytes[0] == 0 && bytes[1] == 0 && IdxElementSize(bytes[2]) != 0 && bytes[3] >= 1 && bytes[3] <= 4;
}

Result<IdxHeader> ParseIdxHeader(const std::vector<uint8_t>& bytes, const std::string& file, std::string_view what) {
  if (bytes.size() < 4) {
    return Status::DataLoss(file + ": truncated at byte offset " + std::to_string(bytes.size()) +
                            ": expected a 4-byte IDX magic");
  }
  if (bytes[0] != 0 || bytes[1] != 0 || IdxElementSize(bytes[2]) == 0 || bytes[3] < 1 || bytes[3] > 4) {
    char magic[16];
    std::snprintf(magic, sizeof magic, "%02x %02x %02x %02x", bytes[0], bytes[1], bytes[2], bytes[3]);
    return Status::DataLoss(file + ": bad IDX magic " + magic +
                            " at byte offset 0 (expected 00 00 <type 08..0e> <1..4 dims>)");
  }
  IdxHeader h;
  h.type = static_cast<IdxType>(bytes[2]);
  h.element_size = IdxElementSize(bytes[2]);
  const size_t ndims = bytes[3];
  h.data_offset = 4 + 4 * ndims;
  if (bytes.size() < h.data_offset) {
    return Status::DataLoss(file + ": truncated at byte offset " + std::to_string(bytes.size()) + ": expected " +
                            std::to_string(h.data_offset) + " bytes of IDX header");
  }
  uint64_t total = h.element_size;
  bool overflow = false;
  for (size_t d = 0; d < ndims; ++d) {
    const uint32_t dim = BigEndian32(&bytes[4 + 4 * d]);
    h.dims.push_back(dim);
    overflow = overflow || __builtin_mul_overflow(total, uint64_t{dim}, &total);
  }
  const size_t have = bytes.size() - h.data_offset;
  if (overflow || total > have) {
    return Status::DataLoss(file + ": truncated at byte offset " + std::to_string(bytes.size()) + ": expected " +
                            (overflow ? std::string("more than 2^64") : std::to_string(total)) + " bytes of " +
                            std::string(what) + " data, found " + std::to_string(have));
  }
  if (total < have) {
    return Status::DataLoss(file + ": " + std::to_string(have - total) + " unexpected bytes after the " +
                            std::string(what) + " data (byte offset " + std::to_string(h.data_offset + total) + ")");
  }
  h.data_bytes = total;
  return h;
}

namespace {

struct IdxSpec {
  const char* name;
  float mean, std;  // normalisation constants of the training set
  std::vector<std::string> class_names;
};

const IdxSpec& FashionMnistSpec() {
  static const IdxSpec spec{
      "fashion-mnist",
      0.2860f,
      0.3530f,
      {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}};
  return spec;
}

const IdxSpec& MnistSpec() {
  static const IdxSpec spec{"mnist", 0.1307f, 0.3081f, {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}};
  return spec;
}

// Finds "<prefix>-<kind>-<idxN>-ubyte" (or the "<prefix>-<kind>.<idxN>-ubyte" spelling of some mirrors), raw or
// .gz, e.g. train-images-idx3-ubyte.gz or t10k-labels.idx1-ubyte.
Result<std::string> FindIdxFile(const std::string& dir, const std::string& prefix, const std::string& kind,
                                const std::string& idx_n) {
  std::string tried;
  for (const char* sep : {"-", "."}) {
    for (const char* ext : {".gz", ""}) {
      const std::string name = prefix + "-" + kind + sep + idx_n + "-ubyte" + ext;
      const std::filesystem::path p = std::filesystem::path(dir) / name;
      std::error_code ec;
      if (std::filesystem::is_regular_file(p, ec)) return p.string();
      tried += (tried.empty() ? "" : ", ") + name;
    }
  }
  return Status::NotFound(dir + ": no " + prefix + "-" + kind + "-" + idx_n + "-ubyte[.gz] (looked for " + tried + ")");
}

// The images of `image_path` (a 3-d u8 IDX file) as a dataset normalised with `spec`'s constants. With `labels`
// (read from `label_path`), their count must match; without, every label is 0 (images to predict).
Result<std::shared_ptr<const Dataset>> LoadIdxImages(const std::string& image_path, std::vector<int32_t>* labels,
                                                     const std::string& label_path, const IdxSpec& spec,
                                                     const DataConfig& config) {
  GEOMX_ASSIGN_OR_RETURN(FileBytes images_file, ReadDataFile(image_path));
  GEOMX_ASSIGN_OR_RETURN(const IdxHeader ih, ParseIdxHeader(images_file.bytes, image_path, "image"));
  if (ih.type != IdxType::kU8 || ih.dims.size() != 3) {
    return Status::DataLoss(image_path + ": expected a 3-d u8 IDX image file [N, H, W], got " +
                            std::to_string(ih.dims.size()) + "-d " + std::string(IdxTypeName(ih.type)));
  }
  // Before the labels: with a zero dim, N (any u32) is not tied to the file size (nor H x W, when N is 0).
  if (ih.dims[1] == 0 || ih.dims[2] == 0 || ih.dims[2] > (int64_t{1} << 24) / ih.dims[1]) {
    return Status::DataLoss(image_path + ": implausible image size " + std::to_string(ih.dims[1]) + "x" +
                            std::to_string(ih.dims[2]));
  }
  std::vector<int32_t> zeros;
  if (labels == nullptr) {
    zeros.assign(static_cast<size_t>(ih.dims[0]), 0);
    labels = &zeros;
  } else if (ih.dims[0] != static_cast<int64_t>(labels->size())) {
    return Status::DataLoss(image_path + " holds " + std::to_string(ih.dims[0]) + " images but " + label_path +
                            " holds " + std::to_string(labels->size()) + " labels");
  }

  DatasetInfo info;
  info.format = images_file.gzipped ? "idx.gz" : "idx";
  info.source = image_path;
  info.example_shape = {1, ih.dims[1], ih.dims[2]};
  info.num_classes = static_cast<int>(spec.class_names.size());
  info.class_names = spec.class_names;
  ImageNormalization norm;
  if (config.normalize) norm = {{spec.mean}, {spec.std}};
  return std::shared_ptr<const Dataset>(std::make_shared<U8ImageDataset>(
      std::move(info), std::move(images_file.bytes), ih.data_offset, std::move(*labels), norm, /*crop_pad=*/2));
}

Result<std::shared_ptr<const Dataset>> LoadIdxSplit(const std::string& dir, const std::string& prefix,
                                                    const IdxSpec& spec, const DataConfig& config) {
  GEOMX_ASSIGN_OR_RETURN(const std::string image_path, FindIdxFile(dir, prefix, "images", "idx3"));
  GEOMX_ASSIGN_OR_RETURN(const std::string label_path, FindIdxFile(dir, prefix, "labels", "idx1"));
  GEOMX_ASSIGN_OR_RETURN(FileBytes labels_file, ReadDataFile(label_path));
  GEOMX_ASSIGN_OR_RETURN(const IdxHeader lh, ParseIdxHeader(labels_file.bytes, label_path, "label"));
  if (lh.type != IdxType::kU8 || lh.dims.size() != 1) {
    return Status::DataLoss(label_path + ": expected a 1-d u8 IDX label file, got " + std::to_string(lh.dims.size()) +
                            "-d " + std::string(IdxTypeName(lh.type)));
  }
  const int num_classes = static_cast<int>(spec.class_names.size());
  std::vector<int32_t> labels(static_cast<size_t>(lh.dims[0]));
  for (size_t i = 0; i < labels.size(); ++i) {
    const uint8_t v = labels_file.bytes[lh.data_offset + i];
    if (v >= num_classes) {
      return Status::DataLoss(label_path + ": label " + std::to_string(v) + " of example " + std::to_string(i) +
                              " (byte offset " + std::to_string(lh.data_offset + i) + ") is out of range [0, " +
                              std::to_string(num_classes) + ")");
    }
    labels[i] = v;
  }
  labels_file = {};
  return LoadIdxImages(image_path, &labels, label_path, spec, config);
}

Result<std::unique_ptr<DatasetSplits>> OpenIdx(const DataConfig& config, const IdxSpec& spec) {
  auto splits = std::make_unique<DatasetSplits>();
  GEOMX_ASSIGN_OR_RETURN(splits->train, LoadIdxSplit(config.path, "train", spec, config));
  GEOMX_ASSIGN_OR_RETURN(splits->test, LoadIdxSplit(config.path, "t10k", spec, config));
  if (splits->train->info().example_shape != splits->test->info().example_shape) {
    return Status::DataLoss(config.path + ": train and test images differ in size");
  }
  return splits;
}

GEOMX_REGISTER(
    DatasetRegistry, "fashion-mnist", [](const DataConfig& c) { return OpenIdx(c, FashionMnistSpec()); },
    "Zalando's Fashion-MNIST: 60000+10000 28x28 grey images, 10 classes (IDX files, gzip or raw)");
GEOMX_REGISTER(
    DatasetRegistry, "mnist", [](const DataConfig& c) { return OpenIdx(c, MnistSpec()); },
    "MNIST digits: 60000+10000 28x28 grey images, 10 classes (IDX files, gzip or raw)");

}  // namespace

void LinkIdxDatasets() {}

Result<std::shared_ptr<const Dataset>> OpenIdxImageFile(const std::string& path, const DataConfig& config) {
  const IdxSpec* spec = config.name == "fashion-mnist" ? &FashionMnistSpec()
                        : config.name == "mnist"       ? &MnistSpec()
                                                       : nullptr;
  if (spec == nullptr) {
    return Status::InvalidArgument(path + ": IDX images are read for mnist and fashion-mnist models, not " +
                                   config.name);
  }
  return LoadIdxImages(path, nullptr, "", *spec, config);
}

}  // namespace geomx::data
