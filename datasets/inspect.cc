// InspectDataFile: sniffs one file's format (IDX by magic, CIFAR-10 by record size, LIBSVM, CSV) and describes it.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "datasets/cifar10.h"
#include "datasets/csv_table.h"
#include "datasets/dataset.h"
#include "datasets/file_reader.h"
#include "datasets/idx.h"
#include "datasets/label_encoder.h"
#include "datasets/libsvm.h"

namespace geomx::data {
namespace {

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// "histogram:" and one line per class: id, name (when known), count, share.
void WriteHistogram(std::ostream& os, const std::vector<int64_t>& counts, const std::vector<std::string>& names) {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  os << "classes: " << counts.size() << "\nhistogram:\n";
  for (size_t k = 0; k < counts.size(); ++k) {
    char share[32];
    std::snprintf(share, sizeof share, "%5.1f%%", total ? 100.0 * static_cast<double>(counts[k]) / total : 0.0);
    os << "  " << k;
    if (k < names.size() && names[k] != std::to_string(k)) os << " (" << names[k] << ")";
    os << ": " << counts[k] << " " << share << "\n";
  }
}

std::string Describe(const std::string& path, const std::string& format, const std::string& kind) {
  return "file: " + path + "\nformat: " + format + " (" + kind + ")\n";
}

Result<std::string> InspectIdx(const std::string& path, const FileBytes& file) {
  GEOMX_ASSIGN_OR_RETURN(const IdxHeader h, ParseIdxHeader(file.bytes, path, "element"));
  const bool u8 = h.type == IdxType::kU8;
  const bool labels = u8 && h.dims.size() == 1;
  const bool images = u8 && h.dims.size() == 3;
  std::ostringstream os;
  os << Describe(path, file.gzipped ? "idx.gz" : "idx",
                 std::string(labels   ? "IDX labels"
                             : images ? "IDX images"
                                      : "IDX tensor") +
                     ", " + std::string(IdxTypeName(h.type)) + ", " + std::to_string(h.dims.size()) + "-d");
  os << "count: " << h.dims[0] << "\nshape: " << ShapeText(h.dims) << "\n";
  const uint8_t* data = file.bytes.data() + h.data_offset;
  if (labels) {
    std::vector<int64_t> counts;  // an empty label file has no largest label to size the histogram by
    if (h.data_bytes > 0) counts.resize(static_cast<size_t>(*std::max_element(data, data + h.data_bytes) + 1));
    for (size_t i = 0; i < h.data_bytes; ++i) ++counts[data[i]];
    WriteHistogram(os, counts, {});
  } else if (u8 && h.data_bytes > 0) {
    uint64_t sum = 0;
    uint8_t lo = 255, hi = 0;
    for (size_t i = 0; i < h.data_bytes; ++i) {
      sum += data[i];
      lo = std::min(lo, data[i]);
      hi = std::max(hi, data[i]);
    }
    char stats[96];
    std::snprintf(stats, sizeof stats, "values: min %d, max %d, mean %.2f (%.4f of 255)\n", lo, hi,
                  static_cast<double>(sum) / h.data_bytes, static_cast<double>(sum) / h.data_bytes / 255.0);
    os << stats;
  }
  return os.str();
}

Result<std::string> InspectCifar10(const std::string& path, const FileBytes& file) {
  GEOMX_ASSIGN_OR_RETURN(const int64_t records, ValidateCifar10Batch(file.bytes, path));
  std::vector<int64_t> counts(kCifar10Classes);
  for (int64_t r = 0; r < records; ++r) ++counts[file.bytes[static_cast<size_t>(r) * kCifar10RecordBytes]];
  std::ostringstream os;
  os << Describe(path, file.gzipped ? "cifar10-bin.gz" : "cifar10-bin", "CIFAR-10 binary batch, 3073-byte records");
  os << "count: " << records << "\nshape: " << ShapeText({records, 3, 32, 32}) << "\n";
  WriteHistogram(os, counts,
                 {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"});
  return os.str();
}

void WriteLabelHistogram(std::ostream& os, const std::vector<std::string>& labels) {
  LabelEncoder enc;
  for (const auto& l : labels) enc.Add(l);
  enc.Finalize();
  std::vector<int64_t> counts(static_cast<size_t>(enc.num_classes()));
  for (const auto& l : labels) ++counts[static_cast<size_t>(enc.Encode(l))];
  WriteHistogram(os, counts, enc.class_names());
}

Result<std::string> InspectLibsvm(const std::string& path, const FileBytes& file, std::string_view text) {
  GEOMX_ASSIGN_OR_RETURN(const LibsvmTable t, ParseLibsvm(text, path));
  std::ostringstream os;
  os << Describe(path, file.gzipped ? "libsvm.gz" : "libsvm",
                 t.has_qid ? "LIBSVM/SVMlight sparse text with qid" : "LIBSVM/SVMlight sparse text");
  os << "count: " << t.rows() << "\nshape: " << ShapeText({t.rows(), t.max_index}) << " (features: largest index "
     << t.max_index << ", " << t.cols.size() << " non-zeros)\n";
  if (t.has_qid) {
    std::vector<int64_t> q = t.qids;
    std::sort(q.begin(), q.end());
    os << "queries: " << (std::unique(q.begin(), q.end()) - q.begin()) << "\n";
  }
  WriteLabelHistogram(os, t.labels);
  return os.str();
}

Result<std::string> InspectCsv(const std::string& path, const FileBytes& file, std::string_view text) {
  // A header is assumed when the first row does not parse as data.
  auto table = ParseCsvTable(text, path, {.header = false});
  bool header = false;
  if (!table.ok()) {
    auto with_header = ParseCsvTable(text, path, {.header = true});
    if (!with_header.ok()) return table.status();
    table = std::move(with_header);
    header = true;
  }
  const CsvTable& t = *table;
  std::ostringstream os;
  os << Describe(path, file.gzipped ? "csv.gz" : "csv", header ? "numeric table with a header" : "numeric table");
  os << "count: " << t.rows() << "\nshape: " << ShapeText({t.rows(), t.num_features}) << " (" << t.num_features + 1
     << " columns; label column " << t.label_column;
  if (header) os << " '" << t.column_names[static_cast<size_t>(t.label_column)] << "'";
  os << ", the last)\n";
  WriteLabelHistogram(os, t.labels);
  return os.str();
}

bool IsText(const std::vector<uint8_t>& bytes) {
  const size_t n = std::min<size_t>(bytes.size(), 1 << 16);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t c = bytes[i];
    if (c == 0 || (c < 32 && c != '\n' && c != '\r' && c != '\t')) return false;
  }
  return !bytes.empty();
}

}  // namespace

Result<std::string> InspectDataFile(const std::string& path) {
  GEOMX_ASSIGN_OR_RETURN(const FileBytes file, ReadDataFile(path));
  const auto& b = file.bytes;
  if (LooksLikeIdx(b.data(), b.size())) return InspectIdx(path, file);
  // CIFAR-10 batches are binary: a text file can never pass (its "label" bytes would be printable characters).
  const bool cifar_name = std::filesystem::path(path).extension() == ".bin" || path.find("_batch") != std::string::npos;
  if (!b.empty() && b[0] < kCifar10Classes && !IsText(b) && (b.size() % kCifar10RecordBytes == 0 || cifar_name)) {
    return InspectCifar10(path, file);
  }
  if (IsText(b)) {
    const std::string_view text(reinterpret_cast<const char*>(b.data()), b.size());
    if (LooksLikeLibsvm(text)) return InspectLibsvm(path, file, text);
    return InspectCsv(path, file, text);
  }
  return Status::InvalidArgument(path + ": unrecognised data format (known: IDX, CIFAR-10 binary, LIBSVM, CSV; " +
                                 std::to_string(b.size()) + " bytes)");
}

}  // namespace geomx::data
