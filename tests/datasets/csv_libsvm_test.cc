#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "datasets/csv_table.h"
#include "datasets/dataset.h"
#include "datasets/libsvm.h"
#include "tests/datasets/data_fixtures.h"
#include "tests/testutil.h"

namespace geomx::data {
namespace {

using geomx::testing::ScratchDir;
using geomx::testing::WriteBytes;

std::vector<float> Example(const Dataset& d, int64_t i) {
  std::vector<float> out(static_cast<size_t>(d.info().example_shape[0]));
  d.Get(i, out.data(), nullptr);
  return out;
}

// ---- CSV ----

TEST(CsvTest, ParsesHeaderQuotesLabelColumnAndBlankLines) {
  const std::string text = "a,\"b, quoted\",label,c\r\n1, 2.5 ,7,-3\n\n\"4\",5e1,2,+6\n";
  auto t = ParseCsvTable(text, "t.csv", {.label_column = 2, .header = true});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->column_names, (std::vector<std::string>{"a", "b, quoted", "label", "c"}));
  EXPECT_EQ(t->rows(), 2);
  EXPECT_EQ(t->num_features, 3);
  EXPECT_EQ(t->features, (std::vector<float>{1, 2.5f, -3, 4, 50, 6}));
  EXPECT_EQ(t->labels, (std::vector<std::string>{"7", "2"}));
  EXPECT_EQ(t->lines, (std::vector<int>{2, 4}));
}

TEST(CsvTest, ErrorsCarryFileLineAndColumn) {
  auto bad_number = ParseCsvTable("x,y\n1,2\n3,abc\n", "d.csv", {.label_column = 0});
  ASSERT_FALSE(bad_number.ok());
  EXPECT_EQ(bad_number.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_number.status().message().find("d.csv:3:3: expected a number, found 'abc'"), std::string::npos)
      << bad_number.status().message();
  auto ragged = ParseCsvTable("1,2,3\n4,5,6,7\n", "r.csv", {.header = false});
  ASSERT_FALSE(ragged.ok());
  EXPECT_NE(ragged.status().message().find("r.csv:2:7: expected 3 fields, found 4"), std::string::npos)
      << ragged.status().message();
  auto header_missing = ParseCsvTable("f1,f2,y\n1,2,0\n", "h.csv", {.header = false});
  ASSERT_FALSE(header_missing.ok());
  EXPECT_NE(header_missing.status().message().find("h.csv:1:1:"), std::string::npos);
  EXPECT_NE(header_missing.status().message().find("data.header"), std::string::npos);
  auto quote = ParseCsvTable("1,\"2\n", "q.csv", {.header = false});
  ASSERT_FALSE(quote.ok());
  EXPECT_NE(quote.status().message().find("q.csv:1:3: unterminated quote"), std::string::npos)
      << quote.status().message();
  auto column = ParseCsvTable("1,2\n", "c.csv", {.label_column = 5, .header = false});
  ASSERT_FALSE(column.ok());
  EXPECT_NE(column.status().message().find("data.label_column"), std::string::npos);
}

TEST(CsvTest, OpensTrainAndTestFilesWithTextLabels) {
  ScratchDir dir;
  WriteBytes(dir / "train.csv", "sepal,petal,species\n1,2,setosa\n3,4,virginica\n5,6,setosa\n");
  WriteBytes(dir / "test.csv.gz", "sepal,petal,species\n7,8,versicolor\n", /*gzip=*/true);
  DataConfig c;
  c.name = "csv";
  c.path = (dir / "train.csv").string();
  c.test_path = (dir / "test.csv.gz").string();
  auto s = OpenDataset(c);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->train->size(), 3);
  EXPECT_EQ(s->test->size(), 1);
  EXPECT_EQ(s->train->info().example_shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(s->train->info().num_classes, 3);
  EXPECT_EQ(s->train->info().class_names, (std::vector<std::string>{"setosa", "versicolor", "virginica"}));
  EXPECT_EQ(s->train->Label(1), 2);
  EXPECT_EQ(s->test->Label(0), 1);
  EXPECT_EQ(s->test->info().format, "csv.gz");
  EXPECT_EQ(Example(*s->train, 2), (std::vector<float>{5, 6}));
}

TEST(CsvTest, SplitsOffATestFractionDeterministically) {
  ScratchDir dir;
  std::string text = "f,y\n";
  for (int i = 0; i < 50; ++i) text += std::to_string(i) + "," + std::to_string(i % 3) + "\n";
  WriteBytes(dir / "all.csv", text);
  DataConfig c;
  c.name = "csv";
  c.path = (dir / "all.csv").string();
  c.test_fraction = 0.2f;
  auto a = OpenDataset(c), b = OpenDataset(c);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString();
  EXPECT_EQ(a->train->size(), 40);
  EXPECT_EQ(a->test->size(), 10);
  EXPECT_EQ(a->train->info().num_classes, 3);  // integer labels keep their value
  std::set<float> seen;
  for (const auto* d : {a->train.get(), a->test.get()}) {
    for (int64_t i = 0; i < d->size(); ++i) {
      const float v = Example(*d, i)[0];
      EXPECT_TRUE(seen.insert(v).second) << v;
      EXPECT_EQ(d->Label(i), static_cast<int64_t>(v) % 3);
    }
  }
  EXPECT_EQ(seen.size(), 50u);
  for (int64_t i = 0; i < a->test->size(); ++i) EXPECT_EQ(Example(*a->test, i), Example(*b->test, i));
  c.test_fraction = 1.5f;
  EXPECT_EQ(OpenDataset(c).status().code(), StatusCode::kInvalidArgument);
}

// ---- LIBSVM ----

TEST(LibsvmTest, ParsesQidCommentsAndOneBasedIndices) {
  const std::string text =
      "# a comment line\n"
      "2 qid:1 1:0.5 3:-2 # trailing comment\n"
      "\n"
      "0 qid:1 2:1e-1\n"
      "1 qid:7 4:4\n";
  auto t = ParseLibsvm(text, "r.txt");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->rows(), 3);
  EXPECT_TRUE(t->has_qid);
  EXPECT_EQ(t->qids, (std::vector<int64_t>{1, 1, 7}));
  EXPECT_EQ(t->max_index, 4);
  EXPECT_EQ(t->cols, (std::vector<int32_t>{0, 2, 1, 3}));
  EXPECT_EQ(t->values, (std::vector<float>{0.5f, -2, 0.1f, 4}));
  EXPECT_EQ(t->row_ptr, (std::vector<int64_t>{0, 2, 3, 4}));
}

TEST(LibsvmTest, ErrorsCarryFileAndLine) {
  struct Case {
    const char* text;
    const char* needle;
  };
  for (const Case& c :
       {Case{"1 1:2\n1 0:3\n", "s.txt:2: feature index 0 out of range (LIBSVM indices are 1-based)"},
        Case{"1 1:2\n\n1 3\n", "s.txt:3: expected <index>:<value>, found '3'"},
        Case{"1 qid:x 1:2\n", "s.txt:1: bad qid 'x'"}, Case{"1 2:abc\n", "s.txt:1: bad value 'abc' for feature 2"},
        Case{"1:2 3:4\n", "s.txt:1: expected a label first"}}) {
    auto t = ParseLibsvm(c.text, "s.txt");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(c.needle), std::string::npos) << t.status().message();
  }
}

TEST(LibsvmTest, OpensWithSignedLabelsAndDensifies) {
  ScratchDir dir;
  WriteBytes(dir / "a.train", "+1 1:1 3:3\n-1 2:2\n+1 5:5\n");
  WriteBytes(dir / "a.test", "-1 1:9\n");
  DataConfig c;
  c.name = "libsvm";
  c.path = (dir / "a.train").string();
  c.test_path = (dir / "a.test").string();
  auto s = OpenDataset(c);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->train->info().example_shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(s->train->info().num_classes, 2);
  EXPECT_EQ(s->train->info().class_names, (std::vector<std::string>{"-1", "1"}));
  EXPECT_EQ(s->train->Label(0), 1);
  EXPECT_EQ(s->train->Label(1), 0);
  EXPECT_EQ(Example(*s->train, 0), (std::vector<float>{1, 0, 3, 0, 0}));
  EXPECT_EQ(Example(*s->test, 0), (std::vector<float>{9, 0, 0, 0, 0}));
  EXPECT_EQ(s->train->QueryId(0), -1);

  c.num_features = 4;
  auto narrow = OpenDataset(c);
  ASSERT_FALSE(narrow.ok());
  EXPECT_NE(narrow.status().message().find("feature index 5 above data.num_features = 4"), std::string::npos)
      << narrow.status().message();
  c.num_features = 8;
  auto wide = OpenDataset(c);
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->train->info().example_shape, (std::vector<int64_t>{8}));
}

TEST(LibsvmTest, SplitKeepsQueriesWhole) {
  ScratchDir dir;
  std::string text;
  for (int q = 0; q < 20; ++q) {
    for (int k = 0; k < 3; ++k)
      text += std::to_string(k) + " qid:" + std::to_string(q) + " 1:" + std::to_string(q) + "\n";
  }
  WriteBytes(dir / "rank.txt", text);
  DataConfig c;
  c.name = "libsvm";
  c.path = (dir / "rank.txt").string();
  c.test_fraction = 0.25f;
  auto s = OpenDataset(c);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->train->size() + s->test->size(), 60);
  EXPECT_EQ(s->test->size() % 3, 0);
  std::set<int64_t> train_q, test_q;
  for (int64_t i = 0; i < s->train->size(); ++i) train_q.insert(s->train->QueryId(i));
  for (int64_t i = 0; i < s->test->size(); ++i) test_q.insert(s->test->QueryId(i));
  for (int64_t q : test_q) EXPECT_EQ(train_q.count(q), 0u) << q;
  EXPECT_EQ(train_q.size() + test_q.size(), 20u);
}

}  // namespace
}  // namespace geomx::data
