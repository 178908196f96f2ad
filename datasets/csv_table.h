// Numeric CSV tables: one example per row, one column holding the class label, every other column a number.
// Quoted fields ("a,b" with "" for a quote) are understood; blank lines are skipped; CRLF is accepted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"

namespace geomx::data {

struct CsvOptions {
  int label_column = -1;  // index of the label column; -1 => last
  bool header = true;     // the first non-blank row names the columns
  char delimiter = ',';
  bool allow_nan = false;  // accept NaN and infinite feature values (data.allow_nan); refused by default
};

struct CsvTable {
  std::vector<std::string> column_names;  // from the header row (all columns), empty without one
  int label_column = 0;                   // resolved index
  int64_t num_features = 0;               // columns - 1
  std::vector<float> features;            // rows x num_features, row-major, columns in file order
  std::vector<std::string> labels;        // label text per row (LabelEncoder makes ids)
  std::vector<int> lines;                 // 1-based source line of each row, for error messages
  int64_t rows() const { return static_cast<int64_t>(labels.size()); }
};

// Parses `text`, the contents of `file`. Errors (kInvalidArgument, "file:line:column: ..." with 1-based line and
// character column): a non-numeric feature, a NaN or infinite feature (unless options.allow_nan), a row with
// another number of fields than the first, an empty label, an unterminated quote, a label_column outside the row;
// kInvalidArgument for a file without data rows. Memory is bounded by the text (each value takes a character).
Result<CsvTable> ParseCsvTable(std::string_view text, const std::string& file, const CsvOptions& options);

}  // namespace geomx::data
