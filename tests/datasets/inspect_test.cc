#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "datasets/dataset.h"
#include "tests/datasets/data_fixtures.h"
#include "tests/testutil.h"

namespace geomx::data {
namespace {

using geomx::testing::CifarRecord;
using geomx::testing::IdxBytes;
using geomx::testing::PatternPixels;
using geomx::testing::ScratchDir;
using geomx::testing::WriteBytes;

void ExpectContains(const std::string& text, const std::string& needle) {
  EXPECT_NE(text.find(needle), std::string::npos) << "missing '" << needle << "' in:\n" << text;
}

TEST(InspectTest, IdxLabelsGzipWithHistogram) {
  ScratchDir dir;
  std::vector<uint8_t> labels = {0, 1, 1, 2, 2, 2, 9};
  WriteBytes(dir / "l.gz", IdxBytes({7}, labels), /*gzip=*/true);
  auto r = InspectDataFile((dir / "l.gz").string());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectContains(*r, "format: idx.gz (IDX labels");
  ExpectContains(*r, "count: 7");
  ExpectContains(*r, "classes: 10");
  ExpectContains(*r, "histogram:");
  ExpectContains(*r, "  2: 3  42.9%");
  ExpectContains(*r, "  9: 1  14.3%");
}

TEST(InspectTest, IdxImagesRaw) {
  ScratchDir dir;
  WriteBytes(dir / "images-idx3-ubyte", IdxBytes({5, 4, 3}, PatternPixels(5, 12)));
  auto r = InspectDataFile((dir / "images-idx3-ubyte").string());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectContains(*r, "format: idx (IDX images, u8, 3-d)");
  ExpectContains(*r, "count: 5");
  ExpectContains(*r, "shape: [5, 4, 3]");
  ExpectContains(*r, "values: min 0");
}

TEST(InspectTest, TruncatedIdxIsDataLoss) {
  ScratchDir dir;
  WriteBytes(dir / "cut.gz", IdxBytes({5, 4, 3}, PatternPixels(5, 12)).substr(0, 40), true);
  auto r = InspectDataFile((dir / "cut.gz").string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  ExpectContains(r.status().message(), "cut.gz: truncated at byte offset 40: expected 60 bytes");
}

TEST(InspectTest, Cifar10Batch) {
  ScratchDir dir;
  WriteBytes(dir / "data_batch_1.bin", CifarRecord(3, 1) + CifarRecord(3, 2) + CifarRecord(8, 3));
  auto r = InspectDataFile((dir / "data_batch_1.bin").string());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectContains(*r, "format: cifar10-bin");
  ExpectContains(*r, "count: 3");
  ExpectContains(*r, "shape: [3, 3, 32, 32]");
  ExpectContains(*r, "  3 (cat): 2");
  ExpectContains(*r, "  8 (ship): 1");
  WriteBytes(dir / "test_batch.bin", CifarRecord(1, 1) + "\x02partial");
  auto cut = InspectDataFile((dir / "test_batch.bin").string());
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kDataLoss);
  ExpectContains(cut.status().message(), "truncated at byte offset 3081");
}

TEST(InspectTest, LibsvmWithQueries) {
  ScratchDir dir;
  WriteBytes(dir / "r.svm", "# ranking\n2 qid:1 1:0.5 7:1\n0 qid:1 2:1\n1 qid:2 3:1\n");
  auto r = InspectDataFile((dir / "r.svm").string());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectContains(*r, "format: libsvm (LIBSVM/SVMlight sparse text with qid)");
  ExpectContains(*r, "count: 3");
  ExpectContains(*r, "largest index 7");
  ExpectContains(*r, "queries: 2");
  ExpectContains(*r, "classes: 3");
}

TEST(InspectTest, CsvWithAndWithoutHeader) {
  ScratchDir dir;
  WriteBytes(dir / "h.csv", "x1,x2,kind\n1,2,a\n3,4,b\n5,6,b\n");
  auto h = InspectDataFile((dir / "h.csv").string());
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ExpectContains(*h, "format: csv (numeric table with a header)");
  ExpectContains(*h, "count: 3");
  ExpectContains(*h, "shape: [3, 2]");
  ExpectContains(*h, "'kind'");
  ExpectContains(*h, "  1 (b): 2");
  WriteBytes(dir / "n.csv.gz", "1,2,0\n3,4,1\n", true);
  auto n = InspectDataFile((dir / "n.csv.gz").string());
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ExpectContains(*n, "format: csv.gz (numeric table)");
  ExpectContains(*n, "count: 2");
}

TEST(InspectTest, UnknownAndMissing) {
  ScratchDir dir;
  WriteBytes(dir / "blob", std::string("\x7f"
                                       "ELF\x02\x01\x00\x00garbage",
                                       15));
  auto r = InspectDataFile((dir / "blob").string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  ExpectContains(r.status().message(), "unrecognised data format");
  EXPECT_EQ(InspectDataFile((dir / "none").string()).status().code(), StatusCode::kNotFound);
}

TEST(InspectTest, InstalledFashionMnistLabels) {
  const std::string path = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not installed";
  auto r = InspectDataFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectContains(*r, "count: 10000");
  ExpectContains(*r, "  0: 1000  10.0%");
}

}  // namespace
}  // namespace geomx::data
