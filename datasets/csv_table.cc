// The "csv" dataset: a dense float table in memory (tabular data is small), labels through LabelEncoder.
#include "datasets/csv_table.h"

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

struct Field {
  std::string text;
  int column = 1;  // 1-based character column where the field starts
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string Where(const std::string& file, int line, int column) {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
}

// Splits one line into fields; handles "quoted, fields" and "" escapes.
Status SplitCsvLine(std::string_view line, char delim, const std::string& file, int line_no,
                    std::vector<Field>* fields) {
  fields->clear();
  size_t i = 0;
  for (;;) {
    Field f;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    f.column = static_cast<int>(i) + 1;
    if (i < line.size() && line[i] == '"') {
      ++i;
      for (;;) {
        if (i >= line.size()) return Status::InvalidArgument(Where(file, line_no, f.column) + "unterminated quote");
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            f.text += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        f.text += line[i++];
      }
      while (i < line.size() && line[i] != delim) ++i;  // anything after the closing quote is ignored
    } else {
      const size_t end = line.find(delim, i);
      const size_t stop = end == std::string_view::npos ? line.size() : end;
      f.text = std::string(Trim(line.substr(i, stop - i)));
      i = stop;
    }
    fields->push_back(std::move(f));
    if (i >= line.size()) break;
    ++i;  // the delimiter
  }
  return Status::Ok();
}

bool ParseFloat(std::string_view s, float* out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

Result<CsvTable> ParseCsvTable(std::string_view text, const std::string& file, const CsvOptions& options) {
  CsvTable table;
  std::vector<Field> fields;
  size_t expected_fields = 0;
  bool header_pending = options.header;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (Trim(line).empty()) continue;
    GEOMX_RETURN_IF_ERROR(SplitCsvLine(line, options.delimiter, file, line_no, &fields));
    if (expected_fields == 0) {
      expected_fields = fields.size();
      if (expected_fields < 2) {
        return Status::InvalidArgument(Where(file, line_no, 1) +
                                       "a CSV table needs a label and at least one "
                                       "feature column, found 1 column (delimiter '" +
                                       std::string(1, options.delimiter) + "')");
      }
      const int label = options.label_column < 0 ? static_cast<int>(expected_fields) - 1 : options.label_column;
      if (label >= static_cast<int>(expected_fields)) {
        return Status::InvalidArgument(Where(file, line_no, 1) + "data.label_column is " + std::to_string(label) +
                                       " but rows have " + std::to_string(expected_fields) + " columns");
      }
      table.label_column = label;
      table.num_features = static_cast<int64_t>(expected_fields) - 1;
    } else if (fields.size() != expected_fields) {
      const int column =
          fields.size() > expected_fields ? fields[expected_fields].column : static_cast<int>(Trim(line).size()) + 1;
      return Status::InvalidArgument(Where(file, line_no, column) + "expected " + std::to_string(expected_fields) +
                                     " fields, found " + std::to_string(fields.size()));
    }
    if (header_pending) {
      header_pending = false;
      for (auto& f : fields) table.column_names.push_back(std::move(f.text));
      continue;
    }
    for (size_t c = 0; c < fields.size(); ++c) {
      if (static_cast<int>(c) == table.label_column) {
        if (fields[c].text.empty())
          return Status::InvalidArgument(Where(file, line_no, fields[c].column) + "empty label");
        table.labels.push_back(std::move(fields[c].text));
        continue;
      }
      float v;
      if (!ParseFloat(fields[c].text, &v)) {
        std::string msg = Where(file, line_no, fields[c].column) + "expected a number, found '" + fields[c].text + "'";
        if (table.labels.empty() && !options.header) msg += " (a header row? set data.header: true)";
        return Status::InvalidArgument(msg);
      }
      if (!options.allow_nan && !std::isfinite(v)) {
        return Status::InvalidArgument(Where(file, line_no, fields[c].column) + "'" + fields[c].text +
                                       "' is not a finite number (NaN and inf are refused; set data.allow_nan: true "
                                       "to accept)");
      }
      table.features.push_back(v);
    }
    table.lines.push_back(line_no);
  }
  if (table.rows() == 0) return Status::InvalidArgument(file + ": no data rows");
  return table;
}

namespace {

// A dense float table. Immutable: thread-safe to read.
class CsvDataset final : public Dataset {
 public:
  CsvDataset(DatasetInfo info, std::vector<float> features, std::vector<int32_t> labels)
      : info_(std::move(info)),
        features_(std::move(features)),
        labels_(std::move(labels)),
        width_(static_cast<size_t>(info_.example_shape[0])) {}
  const DatasetInfo& info() const override { return info_; }
  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  int64_t Label(int64_t i) const override { return labels_[static_cast<size_t>(i)]; }
  void Get(int64_t i, float* out, Rng*) const override {
    const float* row = features_.data() + static_cast<size_t>(i) * width_;
    std::copy(row, row + width_, out);
  }

 private:
  DatasetInfo info_;
  std::vector<float> features_;
  std::vector<int32_t> labels_;
  size_t width_;
};

Result<CsvTable> ReadCsv(const std::string& path, const DataConfig& config) {
  GEOMX_ASSIGN_OR_RETURN(FileBytes file, ReadDataFile(path));
  const std::string_view text(reinterpret_cast<const char*>(file.bytes.data()), file.bytes.size());
  return ParseCsvTable(text, path,
                       {.label_column = config.label_column, .header = config.header, .allow_nan = config.allow_nan});
}

std::shared_ptr<const Dataset> MakeCsvDataset(CsvTable table, const LabelEncoder& encoder, const std::string& path,
                                              bool gz) {
  DatasetInfo info;
  info.format = gz ? "csv.gz" : "csv";
  info.source = path;
  info.example_shape = {table.num_features};
  info.num_classes = encoder.num_classes();
  info.class_names = encoder.class_names();
  std::vector<int32_t> ids(table.labels.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(encoder.Encode(table.labels[i]));
  return std::make_shared<CsvDataset>(std::move(info), std::move(table.features), std::move(ids));
}

Result<std::unique_ptr<DatasetSplits>> OpenCsv(const DataConfig& config) {
  if (config.path.empty() || config.path == "auto") {
    return Status::InvalidArgument("data.path: the csv dataset needs a file (got '" + config.path + "')");
  }
  GEOMX_ASSIGN_OR_RETURN(CsvTable train, ReadCsv(config.path, config));
  const bool gz = IsGzipFile(config.path);
  LabelEncoder encoder;
  for (const auto& l : train.labels) encoder.Add(l);
  auto splits = std::make_unique<DatasetSplits>();
  if (config.test_path.empty()) {
    encoder.Finalize();
    GEOMX_ASSIGN_OR_RETURN(DatasetSplits s, SplitTrainTest(MakeCsvDataset(std::move(train), encoder, config.path, gz),
                                                           config.test_fraction));
    *splits = std::move(s);
    return splits;
  }
  GEOMX_ASSIGN_OR_RETURN(CsvTable test, ReadCsv(config.test_path, config));
  if (test.num_features != train.num_features) {
    return Status::InvalidArgument(config.test_path + ": " + std::to_string(test.num_features + 1) + " columns, but " +
                                   config.path + " has " + std::to_string(train.num_features + 1));
  }
  for (const auto& l : test.labels) encoder.Add(l);
  encoder.Finalize();
  splits->train = MakeCsvDataset(std::move(train), encoder, config.path, gz);
  splits->test = MakeCsvDataset(std::move(test), encoder, config.test_path, IsGzipFile(config.test_path));
  return splits;
}

GEOMX_REGISTER(DatasetRegistry, "csv", OpenCsv,
               "numeric CSV table (data.path, optional data.test_path), label in data.label_column");

}  // namespace

void LinkCsvDataset() {}

}  // namespace geomx::data
