// The bugs fuzzing found (docs/fuzzing.md, "Found and fixed"), each checked for the answer the fixed code must give:
// the corpus replay (corpus_replay_test.cc) only shows that their inputs no longer crash, and some of them (a read
// one byte past a buffer, a 2 GB allocation) would not crash without the sanitizers anyway.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/compression/codecs.h"
#include "comm/compression/compressor.h"
#include "comm/compression/powersgd.h"
#include "datasets/data_config.h"
#include "datasets/dataset.h"
#include "datasets/table.h"
#include "fuzz/targets.h"

namespace geomx {
namespace {

std::string Scratch(const char* name, const std::string& bytes) {
  return fuzz::internal::WriteScratch(name, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// An IDX label file of zero labels: `geomx data inspect` read the largest label of an empty range.
TEST(FuzzFound, InspectOfAnEmptyIdxLabelFile) {
  const std::string path = Scratch("empty-labels-idx1-ubyte", std::string("\0\0\x08\x01\0\0\0\0", 8));
  const Result<std::string> report = data::InspectDataFile(path);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_NE(report->find("count: 0\n"), std::string::npos) << *report;
  EXPECT_NE(report->find("classes: 0\n"), std::string::npos) << *report;
}

// A recipe starting with ',' (tests/fuzz/regressions/recipe/stray-comma-yaml-cpp-loop): yaml-cpp 0.7's LoadAll
// returned an empty document at the ',' again and again without moving on, allocating until the process died
// (jbeder/yaml-cpp#1040). The recipe parser now counts documents itself and calls this a syntax error.
TEST(FuzzFound, AStrayCommaIsASyntaxErrorNotAnEndlessParse) {
  for (const std::string& text : {std::string(","), std::string(",name: xx\n_g\n"), std::string(" ,\0a", 4)}) {
    const Status s = fuzz::FuzzRecipe(reinterpret_cast<const uint8_t*>(text.data()), text.size());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("YAML syntax error: unexpected ','"), std::string::npos) << s.ToString();
  }
}

// A key spelt as a path (tests/fuzz/regressions/recipe/dotted-item-key-check-failure): "topology.datacentres[].name"
// at the top was found as that item key and set on an item that did not exist, failing an internal check (abort).
TEST(FuzzFound, AKeySpeltAsAPathIsAnErrorNotAnAbort) {
  const std::string text = "topology.datacentres[].name: x\nseed: 42\n";
  const Status s = fuzz::FuzzRecipe(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("'topology.datacentres[].name' is not a key"), std::string::npos) << s.ToString();
}

// IDX images [N, 0, W]: no pixel bytes, so N is not tied to the file; 2^32-1 labels were allocated before the
// image size was refused. And [0, H, W] with H x W beyond int64 was a signed overflow.
TEST(FuzzFound, IdxImagesWithAZeroDimAreRefusedBeforeAnyAllocation) {
  data::DataConfig config;
  config.name = "fashion-mnist";
  const std::string zero_height = Scratch("zero-height-idx3-ubyte",
                                          std::string("\0\0\x08\x03\xff\xff\xff\xff\0\0\0\0\0\0\0\x1c", 16));
  const auto a = data::OpenIdxImageFile(zero_height, config);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(a.status().message().find("implausible image size 0x28"), std::string::npos) << a.status().ToString();
  const std::string huge = Scratch("zero-images-idx3-ubyte",
                                   std::string("\0\0\x08\x03\0\0\0\0\xd1\0\x04\x2d\xf8\0\x07\0", 16));
  const auto b = data::OpenIdxImageFile(huge, config);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("implausible image size 3506439213x4160751360"), std::string::npos)
      << b.status().ToString();
}

// A powersgd frame header claiming about 2^64 elements: computing its matrix shape never ended (c * c wrapped).
TEST(FuzzFound, PowerSgdShapeOfTheLargestLengths) {
  uint64_t rows = 0, cols = 0;
  comm::PowerSgdShape(~uint64_t{0}, &rows, &cols);
  EXPECT_EQ(cols, uint64_t{1} << 32);  // ceil(sqrt(2^64 - 1)) = 2^32
  EXPECT_EQ(rows, uint64_t{1} << 32);  // ceil((2^64 - 1) / 2^32)
  comm::PowerSgdShape((uint64_t{1} << 32) * ((uint64_t{1} << 32) - 1), &rows, &cols);
  EXPECT_EQ(cols, uint64_t{1} << 32);
  EXPECT_EQ(rows, (uint64_t{1} << 32) - 1);
  comm::LinkCompressionCodecs();
  const std::string frame("GXC1\x05\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff\x01\0\0\0\x01\0\0\0\x01\0\0\0\0\0\0\0", 32);
  const Result<uint64_t> length = comm::FrameLength(Bytes::Copy(frame));
  ASSERT_FALSE(length.ok());
  EXPECT_EQ(length.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(length.status().message().find("powersgd: shape 1 x 1"), std::string::npos) << length.status().ToString();
}

// A sparse table 2^26 columns wide (one "67108864:1" in a LIBSVM file): the scaler's fit allocated six temporaries
// of 2^26 doubles. Now only the columns that occur have statistics; the others keep offset 0, scale 1.
TEST(FuzzFound, SparseStandardScalerFitsTheColumnsThatOccur) {
  data::Table t;
  t.rows = 4;
  t.cols = 6;
  t.sparse = true;
  // Column 1: 2, 0, -2, 0 (mean 0, sd sqrt(2)); column 4: 3, 3, 3, 3 (sd 0); the others never occur.
  t.row_ptr = {0, 2, 3, 5, 6};
  t.col_index = {1, 4, 4, 1, 4, 4};
  t.values = {2, 3, 3, -2, 3, 3};
  const Result<data::Scaler> s = data::FitScaler(t, data::ScaleKind::kStandard);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->scale.size(), 6u);
  EXPECT_FLOAT_EQ(s->scale[1], static_cast<float>(1.0 / std::sqrt(2.0)));
  EXPECT_FLOAT_EQ(s->scale[4], 1.0f);
  for (int j : {0, 2, 3, 5}) EXPECT_EQ(s->scale[j], 1.0f) << j;
  for (float o : s->offset) EXPECT_EQ(o, 0.0f);  // sparse: no centring
  const Result<data::Scaler> m = data::FitScaler(t, data::ScaleKind::kMaxAbs);
  ASSERT_TRUE(m.ok());
  EXPECT_FLOAT_EQ(m->scale[1], 0.5f);
  EXPECT_FLOAT_EQ(m->scale[4], 1.0f / 3.0f);
  EXPECT_EQ(m->scale[0], 1.0f);
}

}  // namespace
}  // namespace geomx
