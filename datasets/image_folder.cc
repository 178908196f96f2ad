// The "image-folder" dataset: root/train/<class>/*.{png,jpg,jpeg,bmp} and root/test/<class>/..., decoded with
// OpenCV, resized to data.image_height x data.image_width with data.image_channels (1 grey, 3 RGB), stored as u8.
// Normalisation uses the per-channel mean and std of the training images (there are no published constants).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <utility>

#include "datasets/dataset_registry.h"
#include "datasets/file_reader.h"
#include "datasets/image_dataset.h"

namespace geomx::data {
namespace {

namespace fs = std::filesystem;

bool IsImageFile(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp";
}

// Class directories of `split_dir`, sorted by name.
Result<std::vector<std::string>> ListClasses(const fs::path& split_dir) {
  std::error_code ec;
  if (!fs::is_directory(split_dir, ec)) {
    return Status::NotFound(split_dir.string() +
                            ": no such directory (image-folder expects <root>/train/<class>/"
                            "*.png|jpg and <root>/test/<class>/...)");
  }
  std::vector<std::string> classes;
  for (const auto& e : fs::directory_iterator(split_dir, ec)) {
    if (e.is_directory()) classes.push_back(e.path().filename().string());
  }
  if (ec) return Status::Internal(split_dir.string() + ": cannot list: " + ec.message());
  std::sort(classes.begin(), classes.end());
  if (classes.empty()) return Status::NotFound(split_dir.string() + ": no class directories");
  return classes;
}

// Decodes one image to u8 CHW (RGB order) of the configured size, appended to `pixels`.
Status DecodeInto(const fs::path& path, const DataConfig& config, std::vector<uint8_t>* pixels) {
  // imdecode from our own read (rather than imread) so missing-file and gzip handling match the other readers.
  GEOMX_ASSIGN_OR_RETURN(FileBytes file, ReadDataFile(path.string()));
  try {
    const cv::Mat raw(1, static_cast<int>(file.bytes.size()), CV_8UC1, file.bytes.data());
    cv::Mat img = cv::imdecode(raw, config.image_channels == 1 ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
    if (img.empty()) return Status::DataLoss(path.string() + ": cannot decode the image (corrupt or unsupported)");
    if (img.rows != config.image_height || img.cols != config.image_width) {
      cv::Mat resized;
      const bool shrink = img.rows > config.image_height || img.cols > config.image_width;
      cv::resize(img, resized, cv::Size(config.image_width, config.image_height), 0, 0,
                 shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
      img = resized;
    }
    if (img.channels() == 3) cv::cvtColor(img, img, cv::COLOR_BGR2RGB);
    const int c = img.channels();
    const size_t plane = static_cast<size_t>(img.rows) * img.cols;
    const size_t base = pixels->size();
    pixels->resize(base + plane * c);
    for (int y = 0; y < img.rows; ++y) {
      const uint8_t* row = img.ptr<uint8_t>(y);
      for (int x = 0; x < img.cols; ++x) {
        for (int k = 0; k < c; ++k) {
          (*pixels)[base + k * plane + static_cast<size_t>(y) * img.cols + x] = row[x * c + k];
        }
      }
    }
  } catch (const cv::Exception& e) {
    return Status::DataLoss(path.string() + ": OpenCV: " + e.what());
  }
  return Status::Ok();
}

struct DecodedSplit {
  std::vector<uint8_t> pixels;
  std::vector<int32_t> labels;
};

Result<DecodedSplit> DecodeSplit(const fs::path& split_dir, const std::vector<std::string>& classes,
                                 const DataConfig& config) {
  GEOMX_ASSIGN_OR_RETURN(const std::vector<std::string> present, ListClasses(split_dir));
  std::map<std::string, int32_t> ids;
  for (size_t i = 0; i < classes.size(); ++i) ids[classes[i]] = static_cast<int32_t>(i);
  DecodedSplit out;
  for (const auto& name : present) {
    auto it = ids.find(name);
    if (it == ids.end()) {
      return Status::InvalidArgument((split_dir / name).string() + ": class '" + name +
                                     "' has no directory under train/");
    }
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(split_dir / name, ec)) {
      if (e.is_regular_file() && IsImageFile(e.path())) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());  // a deterministic order, whatever the file system's
    for (const auto& f : files) {
      GEOMX_RETURN_IF_ERROR(DecodeInto(f, config, &out.pixels));
      out.labels.push_back(it->second);
    }
  }
  if (out.labels.empty()) return Status::NotFound(split_dir.string() + ": no .png/.jpg/.jpeg/.bmp images");
  return out;
}

// Mean and std per channel over all training pixels (in [0, 1] units), for the normalisation.
ImageNormalization ChannelStats(const std::vector<uint8_t>& pixels, int channels, size_t plane) {
  std::vector<double> sum(static_cast<size_t>(channels)), sq(static_cast<size_t>(channels));
  const size_t example = plane * static_cast<size_t>(channels);
  for (size_t base = 0; base + example <= pixels.size(); base += example) {
    for (int c = 0; c < channels; ++c) {
      const uint8_t* p = pixels.data() + base + static_cast<size_t>(c) * plane;
      uint64_t s = 0, s2 = 0;
      for (size_t k = 0; k < plane; ++k) {
        s += p[k];
        s2 += uint64_t{p[k]} * p[k];
      }
      sum[static_cast<size_t>(c)] += static_cast<double>(s);
      sq[static_cast<size_t>(c)] += static_cast<double>(s2);
    }
  }
  const double n = static_cast<double>(pixels.size() / static_cast<size_t>(channels));
  ImageNormalization norm;
  norm.mean.clear();
  norm.std.clear();
  for (int c = 0; c < channels; ++c) {
    const double mean = sum[static_cast<size_t>(c)] / n / 255.0;
    const double var = sq[static_cast<size_t>(c)] / n / (255.0 * 255.0) - mean * mean;
    norm.mean.push_back(static_cast<float>(mean));
    // A constant channel would divide by zero: fall back to 1 (then values are only centred).
    norm.std.push_back(var > 1e-10 ? static_cast<float>(std::sqrt(var)) : 1.0f);
  }
  return norm;
}

Result<std::unique_ptr<DatasetSplits>> OpenImageFolder(const DataConfig& config) {
  if (config.path.empty() || config.path == "auto") {
    return Status::InvalidArgument("data.path: the image-folder dataset needs a directory (got '" + config.path + "')");
  }
  if (config.image_channels != 1 && config.image_channels != 3) {
    return Status::InvalidArgument("data.image_channels: must be 1 or 3, got " + std::to_string(config.image_channels));
  }
  if (config.image_height < 1 || config.image_width < 1 || config.image_height > 4096 || config.image_width > 4096) {
    return Status::InvalidArgument("data.image_height/image_width: must be in [1, 4096], got " +
                                   std::to_string(config.image_height) + "x" + std::to_string(config.image_width));
  }
  const fs::path root(config.path);
  GEOMX_ASSIGN_OR_RETURN(const std::vector<std::string> classes, ListClasses(root / "train"));
  GEOMX_ASSIGN_OR_RETURN(DecodedSplit train, DecodeSplit(root / "train", classes, config));
  GEOMX_ASSIGN_OR_RETURN(DecodedSplit test, DecodeSplit(root / "test", classes, config));

  const size_t plane = static_cast<size_t>(config.image_height) * config.image_width;
  ImageNormalization norm;
  if (config.normalize) norm = ChannelStats(train.pixels, config.image_channels, plane);
  auto make = [&](DecodedSplit split, const std::string& dir) {
    DatasetInfo info;
    info.format = "image-folder";
    info.source = dir;
    info.example_shape = {config.image_channels, config.image_height, config.image_width};
    info.num_classes = static_cast<int>(classes.size());
    info.class_names = classes;
    return std::make_shared<U8ImageDataset>(std::move(info), std::move(split.pixels), 0, std::move(split.labels), norm,
                                            /*crop_pad=*/2);
  };
  auto splits = std::make_unique<DatasetSplits>();
  splits->train = make(std::move(train), (root / "train").string());
  splits->test = make(std::move(test), (root / "test").string());
  return splits;
}

GEOMX_REGISTER(DatasetRegistry, "image-folder", OpenImageFolder,
               "root/train/<class>/*.png|jpg and root/test/<class>/..., resized to data.image_height x image_width");

}  // namespace

void LinkImageFolderDataset() {}

}  // namespace geomx::data
