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

// The largest 1-based feature index accepted, and so the widest table (data.num_features included): 2^26 =
// 67,108,864 features (docs/data_formats.md#limits). Wider data must be hashed into fewer columns first.
inline constexpr int64_t kLibsvmMaxFeatures = int64_t{1} << 26;
// The neural "libsvm" dataset densifies whole batches: data.batch_size x features floats may be at most 2^28
// (1 GiB). Classical algorithms keep LIBSVM tables sparse and are not bound by this.
inline constexpr int64_t kLibsvmMaxBatchValues = int64_t{1} << 28;

struct LibsvmOptions {
  bool allow_nan = false;  // accept NaN and infinite values (data.allow_nan); refused by default
};

// Parses `text`, the contents of `file`. Blank lines and lines starting with '#' are skipped. Errors
// (kInvalidArgument, "file:line: ..."): a malformed "index:value" pair, an index below 1 or above
// kLibsvmMaxFeatures, a bad qid, a non-numeric value, a NaN or infinite value (unless options.allow_nan);
// kInvalidArgument for a file without examples. Memory is bounded by the text: the table stays sparse.
Result<LibsvmTable> ParseLibsvm(std::string_view text, const std::string& file, const LibsvmOptions& options = {});
// ReadDataFile (gzip or plain) + ParseLibsvm.
Result<LibsvmTable> ReadLibsvm(const std::string& path, const LibsvmOptions& options = {});
// data.num_features: kInvalidArgument naming the key when it is negative or above kLibsvmMaxFeatures.
Status CheckLibsvmNumFeatures(int64_t num_features);

}  // namespace geomx::data
