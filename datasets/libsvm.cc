// The "libsvm" dataset (LIBSVM and SVMlight, with qid for ranking).
#include "datasets/libsvm.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <utility>

#include "datasets/dataset_registry.h"
#include "datasets/file_reader.h"
#include "datasets/label_encoder.h"
#include "datasets/subset.h"

namespace geomx::data {
namespace {

std::string Where(const std::string& file, int line) { return file + ":" + std::to_string(line) + ": "; }

// Next whitespace-separated token of `line` from `*pos`; empty at the end.
std::string_view NextToken(std::string_view line, size_t* pos) {
  size_t i = *pos;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
  size_t j = i;
  while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
  *pos = j;
  return line.substr(i, j - i);
}

template <typename T>
bool ParseWhole(std::string_view s, T* out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Parses one data line into `table` (appends a row). `line` has its comment already removed.
Status ParseLibsvmLine(std::string_view line, const std::string& file, int line_no, const LibsvmOptions& options,
                       LibsvmTable* table) {
  size_t pos = 0;
  const std::string_view label = NextToken(line, &pos);
  if (label.find(':') != std::string_view::npos) {
    return Status::InvalidArgument(Where(file, line_no) + "expected a label first, found '" + std::string(label) + "'");
  }
  int64_t qid = -1;
  for (std::string_view tok = NextToken(line, &pos); !tok.empty(); tok = NextToken(line, &pos)) {
    const size_t colon = tok.find(':');
    if (colon == std::string_view::npos) {
      return Status::InvalidArgument(Where(file, line_no) + "expected <index>:<value>, found '" + std::string(tok) +
                                     "'");
    }
    const std::string_view key = tok.substr(0, colon), value = tok.substr(colon + 1);
    if (key == "qid") {
      if (!ParseWhole(value, &qid) || qid < 0) {
        return Status::InvalidArgument(Where(file, line_no) + "bad qid '" + std::string(value) + "'");
      }
      table->has_qid = true;
      continue;
    }
    int64_t index;
    if (!ParseWhole(key, &index)) {
      return Status::InvalidArgument(Where(file, line_no) + "bad feature index '" + std::string(key) + "'");
    }
    if (index < 1) {
      return Status::InvalidArgument(Where(file, line_no) + "feature index " + std::to_string(index) +
                                     " out of range (LIBSVM indices are 1-based)");
    }
    if (index > kLibsvmMaxFeatures) {
      return Status::InvalidArgument(Where(file, line_no) + "feature index " + std::to_string(index) +
                                     " is above the maximum " + std::to_string(kLibsvmMaxFeatures) +
                                     " (docs/data_formats.md#limits; hash the features into fewer columns)");
    }
    float v;
    if (!ParseWhole(value, &v)) {
      return Status::InvalidArgument(Where(file, line_no) + "bad value '" + std::string(value) + "' for feature " +
                                     std::to_string(index));
    }
    if (!options.allow_nan && !std::isfinite(v)) {
      return Status::InvalidArgument(Where(file, line_no) + "value '" + std::string(value) + "' of feature " +
                                     std::to_string(index) +
                                     " is not finite (NaN and inf are refused; set data.allow_nan: true to accept)");
    }
    table->cols.push_back(static_cast<int32_t>(index - 1));
    table->values.push_back(v);
    table->max_index = std::max(table->max_index, index);
  }
  table->labels.emplace_back(label);
  table->lines.push_back(line_no);
  table->qids.push_back(qid);
  table->row_ptr.push_back(static_cast<int64_t>(table->cols.size()));
  return Status::Ok();
}

// The data part of the line (before any '#'), or empty for blank and comment lines.
std::string_view DataPart(std::string_view line) {
  const size_t hash = line.find('#');
  if (hash != std::string_view::npos) line = line.substr(0, hash);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  return line;
}

}  // namespace

Result<LibsvmTable> ParseLibsvm(std::string_view text, const std::string& file, const LibsvmOptions& options) {
  LibsvmTable table;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    const std::string_view line =
        DataPart(text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (line.empty()) continue;
    GEOMX_RETURN_IF_ERROR(ParseLibsvmLine(line, file, line_no, options, &table));
  }
  if (table.rows() == 0) return Status::InvalidArgument(file + ": no examples");
  return table;
}

bool LooksLikeLibsvm(std::string_view text) {
  size_t pos = 0;
  int checked = 0;
  while (pos < text.size() && checked < 5) {
    const size_t nl = text.find('\n', pos);
    const std::string_view line =
        DataPart(text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (line.empty()) continue;
    LibsvmTable scratch;
    if (!ParseLibsvmLine(line, "", 0, {.allow_nan = true}, &scratch).ok()) return false;
    double label;
    if (!ParseWhole(std::string_view(scratch.labels[0]), &label)) return false;
    if (scratch.cols.empty() && line.find(':') == std::string_view::npos && checked == 0) return false;
    ++checked;
  }
  return checked > 0;
}

namespace {

// Sparse rows, densified on Get(). Immutable: thread-safe to read.
class LibsvmDataset final : public Dataset {
 public:
  LibsvmDataset(DatasetInfo info, LibsvmTable table, std::vector<int32_t> labels)
      : info_(std::move(info)), table_(std::move(table)), labels_(std::move(labels)) {}
  const DatasetInfo& info() const override { return info_; }
  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  int64_t Label(int64_t i) const override { return labels_[static_cast<size_t>(i)]; }
  int64_t QueryId(int64_t i) const override { return table_.qids[static_cast<size_t>(i)]; }
  void Get(int64_t i, float* out, Rng*) const override {
    const int64_t width = info_.example_shape[0];
    std::fill(out, out + width, 0.0f);
    for (int64_t k = table_.row_ptr[static_cast<size_t>(i)]; k < table_.row_ptr[static_cast<size_t>(i) + 1]; ++k) {
      out[table_.cols[static_cast<size_t>(k)]] = table_.values[static_cast<size_t>(k)];
    }
  }

 private:
  DatasetInfo info_;
  LibsvmTable table_;
  std::vector<int32_t> labels_;
};


std::shared_ptr<const Dataset> MakeLibsvmDataset(LibsvmTable table, const LabelEncoder& encoder, int64_t num_features,
                                                 const std::string& path) {
  DatasetInfo info;
  info.format = IsGzipFile(path) ? "libsvm.gz" : "libsvm";
  info.source = path;
  info.example_shape = {num_features};
  info.num_classes = encoder.num_classes();
  info.class_names = encoder.class_names();
  std::vector<int32_t> ids(table.labels.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(encoder.Encode(table.labels[i]));
  table.labels = {};  // the text is no longer needed
  if (!table.has_qid) table.qids.assign(ids.size(), -1);
  return std::make_shared<LibsvmDataset>(std::move(info), std::move(table), std::move(ids));
}

// Feature indices are 1-based, so index k is column k-1 and the width is the largest index (unless configured).
Status CheckWidth(const LibsvmTable& t, int64_t width, const std::string& path) {
  if (t.max_index <= width) return Status::Ok();
  for (int64_t r = 0; r < t.rows(); ++r) {
    for (int64_t k = t.row_ptr[static_cast<size_t>(r)]; k < t.row_ptr[static_cast<size_t>(r) + 1]; ++k) {
      if (t.cols[static_cast<size_t>(k)] >= width) {
        return Status::InvalidArgument(Where(path, t.lines[static_cast<size_t>(r)]) + "feature index " +
                                       std::to_string(t.cols[static_cast<size_t>(k)] + 1) +
                                       " above data.num_features = " + std::to_string(width));
      }
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<DatasetSplits>> OpenLibsvm(const DataConfig& config) {
  if (config.path.empty() || config.path == "auto") {
    return Status::InvalidArgument("data.path: the libsvm dataset needs a file (got '" + config.path + "')");
  }
  GEOMX_RETURN_IF_ERROR(CheckLibsvmNumFeatures(config.num_features));
  const LibsvmOptions options{.allow_nan = config.allow_nan};
  GEOMX_ASSIGN_OR_RETURN(LibsvmTable train, ReadLibsvm(config.path, options));
  LibsvmTable test;
  const bool has_test = !config.test_path.empty();
  if (has_test) {
    GEOMX_ASSIGN_OR_RETURN(test, ReadLibsvm(config.test_path, options));
  }
  const int64_t width = config.num_features > 0 ? config.num_features : std::max(train.max_index, test.max_index);
  if (width == 0) return Status::InvalidArgument(config.path + ": no features in any example");
  GEOMX_RETURN_IF_ERROR(CheckWidth(train, width, config.path));
  GEOMX_RETURN_IF_ERROR(CheckWidth(test, width, config.test_path));
  if (int64_t{config.batch_size} * width > kLibsvmMaxBatchValues) {
    return Status::InvalidArgument(
        "data.batch_size: a batch of " + std::to_string(config.batch_size) + " x " + std::to_string(width) +
        " features is " + std::to_string(int64_t{config.batch_size} * width) + " dense values, above the maximum " +
        std::to_string(kLibsvmMaxBatchValues) + " (1 GiB) of the libsvm dataset; lower data.batch_size, or train "
        "a classical algorithm, which keeps the table sparse (docs/data_formats.md#limits)");
  }
  LabelEncoder encoder;
  for (const auto& l : train.labels) encoder.Add(l);
  for (const auto& l : test.labels) encoder.Add(l);
  encoder.Finalize();
  auto splits = std::make_unique<DatasetSplits>();
  if (!has_test) {
    GEOMX_ASSIGN_OR_RETURN(
        DatasetSplits s,
        SplitTrainTest(MakeLibsvmDataset(std::move(train), encoder, width, config.path), config.test_fraction));
    *splits = std::move(s);
    return splits;
  }
  splits->train = MakeLibsvmDataset(std::move(train), encoder, width, config.path);
  splits->test = MakeLibsvmDataset(std::move(test), encoder, width, config.test_path);
  return splits;
}

GEOMX_REGISTER(DatasetRegistry, "libsvm", OpenLibsvm,
               "LIBSVM/SVMlight sparse text (data.path, optional data.test_path; qid: kept for ranking)");

}  // namespace

void LinkLibsvmDataset() {}

Result<LibsvmTable> ReadLibsvm(const std::string& path, const LibsvmOptions& options) {
  GEOMX_ASSIGN_OR_RETURN(FileBytes file, ReadDataFile(path));
  const std::string_view text(reinterpret_cast<const char*>(file.bytes.data()), file.bytes.size());
  return ParseLibsvm(text, path, options);
}

Status CheckLibsvmNumFeatures(int64_t num_features) {
  if (num_features < 0) {
    return Status::InvalidArgument("data.num_features: must be >= 0, got " + std::to_string(num_features));
  }
  if (num_features > kLibsvmMaxFeatures) {
    return Status::InvalidArgument("data.num_features: " + std::to_string(num_features) + " is above the maximum " +
                                   std::to_string(kLibsvmMaxFeatures) + " (docs/data_formats.md#limits)");
  }
  return Status::Ok();
}


}  // namespace geomx::data
