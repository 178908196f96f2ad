// idx, csv, libsvm, cifar: the data file readers (datasets/). Each target runs the in-memory parser on the input,
// then the same bytes as a file through what the CLI runs on a user's file: `geomx data inspect` (InspectDataFile,
// which also sniffs the format) and the loader of training (the IDX image reader, OpenTable, the cifar10 dataset).
// Files go through ReadDataFile, so gzip inputs reach the decompressor too.
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/cifar10.h"
#include "datasets/csv_table.h"
#include "datasets/dataset.h"
#include "datasets/idx.h"
#include "datasets/libsvm.h"
#include "datasets/table.h"
#include "fuzz/targets.h"

namespace geomx::fuzz {
namespace {

void Check(const char* target, bool ok, const char* what) {
  if (!ok) internal::Broken(target, what);
}

void Note(const char* target, const Status& s, Status* first) {
  if (s.ok()) return;
  Check(target, !s.message().empty(), "an error without a message");
  if (first->ok()) *first = s;
}

// Reads the first and the last example of `ds` (all of them for small sets): every stored byte is reachable.
void Touch(const data::Dataset& ds) {
  int64_t values = 1;
  for (int64_t d : ds.info().example_shape) values *= d;
  std::vector<float> x(static_cast<size_t>(values));
  const int64_t n = ds.size();
  for (int64_t i = 0; i < n; i += (n > 4 ? n - 1 : 1)) {
    ds.Get(i, x.data(), nullptr);
    (void)ds.Label(i);
  }
}

// Inspect: the report of an accepted file is text; a refused one is an error naming the file.
void Inspect(const char* target, const std::string& path, Status* first) {
  const Result<std::string> report = data::InspectDataFile(path);
  Note(target, report.status(), first);
  if (report.ok()) Check(target, report->find("format: ") != std::string::npos, "inspect report without a format");
}

// The training loader of the text formats. `knobs`: bits 0-1 the task, 2-3 the scaler, 4 data.num_features = 4
// (libsvm), 5 a subsample of at most 3 training rows.
void OpenAsTable(const char* target, const std::string& path, data::DataConfig config, uint8_t knobs, Status* first) {
  config.path = path;
  config.num_features = (knobs & 16) ? 4 : 0;
  data::TableOptions options;
  options.task = static_cast<data::TableTask>(knobs & 3);
  options.scale = static_cast<data::ScaleKind>((knobs >> 2) & 3);
  options.max_train_rows = (knobs & 32) ? 3 : 0;
  const Result<data::TableSplits> splits = data::OpenTable(config, options);
  Note(target, splits.status(), first);
  if (!splits.ok()) return;
  Check(target, splits->train.Validate().ok() && splits->test.Validate().ok(), "OpenTable made an invalid table");
}

}  // namespace

Status FuzzIdx(const uint8_t* data, size_t size) {
  if (size > kMaxInputBytes) return Status::OutOfRange("input too large");
  Status first;
  const std::vector<uint8_t> bytes(data, data + size);
  const Result<data::IdxHeader> header = data::ParseIdxHeader(bytes, "<fuzz>", "element");
  Note("idx", header.status(), &first);
  if (header.ok()) {
    Check("idx", data::LooksLikeIdx(data, size), "a parsed IDX file does not look like IDX");
    Check("idx", header->data_offset + header->data_bytes == size, "IDX header and data do not cover the file");
  }
  const std::string path = internal::WriteScratch("images-idx3-ubyte", data, size);
  Inspect("idx", path, &first);
  data::DataConfig config;
  config.name = size > 0 && (data[size - 1] & 1) ? "mnist" : "fashion-mnist";
  config.normalize = size > 0 && (data[size - 1] & 2);
  const Result<std::shared_ptr<const data::Dataset>> images = data::OpenIdxImageFile(path, config);
  Note("idx", images.status(), &first);
  if (images.ok()) Touch(**images);
  return first;
}

Status FuzzCsv(const uint8_t* data, size_t size) {
  if (size > kMaxInputBytes) return Status::OutOfRange("input too large");
  if (size < 2) return Status::InvalidArgument("input under 2 bytes: the first two select the options");
  // Byte 0: the reader's options (bits 0-1 the label column, 3 = the last; 2 header; 3 ';' as the delimiter (the
  // in-memory parser only); 4 allow NaN). Byte 1: the loader's (OpenAsTable). The rest is the file.
  const uint8_t knobs = data[0], table_knobs = data[1];
  data += 2;
  size -= 2;
  Status first;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  data::CsvOptions options;
  options.label_column = (knobs & 3) == 3 ? -1 : (knobs & 3);
  options.header = (knobs & 4) != 0;
  options.delimiter = (knobs & 8) ? ';' : ',';
  options.allow_nan = (knobs & 16) != 0;
  const Result<data::CsvTable> table = data::ParseCsvTable(text, "<fuzz>", options);
  Note("csv", table.status(), &first);
  if (table.ok()) {
    const auto rows = static_cast<size_t>(table->rows());
    Check("csv", table->features.size() == rows * static_cast<size_t>(table->num_features), "features != rows x cols");
    Check("csv", table->lines.size() == rows, "one source line per row");
  }
  const std::string path = internal::WriteScratch("table.csv", data, size);
  Inspect("csv", path, &first);
  data::DataConfig config;
  config.name = "csv";
  config.label_column = options.label_column;
  config.header = options.header;
  config.allow_nan = options.allow_nan;
  OpenAsTable("csv", path, config, table_knobs, &first);
  return first;
}

Status FuzzLibsvm(const uint8_t* data, size_t size) {
  if (size > kMaxInputBytes) return Status::OutOfRange("input too large");
  if (size < 2) return Status::InvalidArgument("input under 2 bytes: the first two select the options");
  // Byte 0: bit 0 allow NaN. Byte 1: the loader's options (OpenAsTable). The rest is the file.
  const bool allow_nan = (data[0] & 1) != 0;
  const uint8_t table_knobs = data[1];
  data += 2;
  size -= 2;
  Status first;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)data::LooksLikeLibsvm(text);
  const Result<data::LibsvmTable> table = data::ParseLibsvm(text, "<fuzz>", {.allow_nan = allow_nan});
  Note("libsvm", table.status(), &first);
  if (table.ok()) {
    const auto rows = static_cast<size_t>(table->rows());
    Check("libsvm", table->row_ptr.size() == rows + 1 && table->row_ptr.back() == int64_t(table->cols.size()) &&
                        table->cols.size() == table->values.size(), "inconsistent CSR table");
    for (int32_t c : table->cols) Check("libsvm", c >= 0 && c < table->max_index, "column outside max_index");
  }
  const std::string path = internal::WriteScratch("table.libsvm", data, size);
  Inspect("libsvm", path, &first);
  data::DataConfig config;
  config.name = "libsvm";
  config.allow_nan = allow_nan;
  OpenAsTable("libsvm", path, config, table_knobs, &first);
  return first;
}

Status FuzzCifar(const uint8_t* data, size_t size) {
  if (size > kMaxInputBytes) return Status::OutOfRange("input too large");
  Status first;
  const std::vector<uint8_t> bytes(data, data + size);
  const Result<int64_t> records = data::ValidateCifar10Batch(bytes, "<fuzz>");
  Note("cifar", records.status(), &first);
  if (records.ok()) Check("cifar", *records * int64_t(data::kCifar10RecordBytes) == int64_t(size), "record count");
  // The six batch files of the dataset are hard links of one file: one write gives every batch the input.
  static const std::string dir = [] {
    const std::string d = std::string(internal::ScratchDir()) + "/cifar";
    mkdir(d.c_str(), 0700);
    const std::string batch = d + "/test_batch.bin";
    internal::WriteScratch("cifar/test_batch.bin", nullptr, 0);
    for (int i = 1; i <= 5; ++i) {
      const std::string name = d + "/data_batch_" + std::to_string(i) + ".bin";
      if (link(batch.c_str(), name.c_str()) != 0) internal::Broken("cifar", "cannot link the batch files");
    }
    return d;
  }();
  const std::string path = internal::WriteScratch("cifar/test_batch.bin", data, size);
  Inspect("cifar", path, &first);
  data::DataConfig config;
  config.name = "cifar10";
  config.path = dir;
  const Result<data::DatasetSplits> splits = data::OpenDataset(config);
  Note("cifar", splits.status(), &first);
  if (splits.ok()) {
    Touch(*splits->train);
    Touch(*splits->test);
  }
  return first;
}

}  // namespace geomx::fuzz
