// LIBSVM / SVMlight text: one example per line, "<label> [qid:<n>] <index>:<value> ... [# comment]", indices
// 1-based. Held sparse (CSR); densified per example on Get().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"

namespace geomx::data {

struct LibsvmTable {
  std::vector<int64_t> row_ptr = {0};  // rows + 1 offsets into cols/values
  std::vector<int32_t> cols;           // 0-based column (index - 1)
  std::vector<float> values;
  std::vector<std::string> labels;  // label text per row (LabelEncoder makes ids)
  std::vector<int64_t> qids;        // per row; -1 where the line has no qid
  std::vector<int> lines;           // per row: its 1-based line in the file (for error messages)
  bool has_qid = false;             // some line had a qid
  int64_t max_index = 0;            // largest 1-based feature index seen
  int64_t rows() const { return static_cast<int64_t>(labels.size()); }
};

// True when the first data line of `text` parses as LIBSVM (for format sniffing).
bool LooksLikeLibsvm(std::string_view text);

// Parses `text`, the contents of `file`. Blank lines and lines starting with '#' are skipped. Errors
// (kInvalidArgument, "file:line: ..."): a malformed "index:value" pair, an index below 1 or above 2^31-1, a bad
// qid, a non-numeric value; kInvalidArgument for a file without examples.
Result<LibsvmTable> ParseLibsvm(std::string_view text, const std::string& file);
// ReadDataFile (gzip or plain) + ParseLibsvm.
Result<LibsvmTable> ReadLibsvm(const std::string& path);

}  // namespace geomx::data
