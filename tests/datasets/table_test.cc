// Table (datasets/table.h): row access against hand-computed values, scalers against closed forms, and OpenTable /
// ReadTableFile on small csv and libsvm files: targets, query ids, splits, subsamples and the errors users see.
#include "datasets/table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "tests/testutil.h"

namespace geomx::data {
namespace {

using geomx::testing::ScratchDir;
using geomx::testing::WriteFile;

// The 2 x 3 matrix [[1, 0, 2], [0, 3, 0]] both ways.
Table DenseExample() {
  Table t;
  t.rows = 2;
  t.cols = 3;
  t.dense = {1, 0, 2, 0, 3, 0};
  t.labels = {0, 1};
  t.num_classes = 2;
  return t;
}
Table SparseExample() {
  Table t;
  t.rows = 2;
  t.cols = 3;
  t.sparse = true;
  t.row_ptr = {0, 2, 3};
  t.col_index = {0, 2, 1};
  t.values = {1, 2, 3};
  t.labels = {0, 1};
  t.num_classes = 2;
  return t;
}

TEST(TableTest, RowOperationsAgreeForDenseAndSparse) {
  const float w[3] = {0.5f, -1.0f, 2.0f};
  for (const Table& t : {DenseExample(), SparseExample()}) {
    ASSERT_TRUE(t.Validate().ok());
    EXPECT_DOUBLE_EQ(t.Dot(0, w), 0.5 + 4.0);
    EXPECT_DOUBLE_EQ(t.Dot(1, w), -3.0);
    EXPECT_DOUBLE_EQ(t.SquaredNorm(0), 5.0);
    float y[3] = {1, 1, 1};
    t.Axpy(1, 2.0, y);
    EXPECT_EQ(std::vector<float>(y, y + 3), (std::vector<float>{1, 7, 1}));
    float row[3];
    t.CopyRow(0, row);
    EXPECT_EQ(std::vector<float>(row, row + 3), (std::vector<float>{1, 0, 2}));
    const Table picked = t.Select({1, 1, 0});
    EXPECT_EQ(picked.rows, 3);
    EXPECT_EQ(picked.labels, (std::vector<int32_t>{1, 1, 0}));
    EXPECT_DOUBLE_EQ(picked.Dot(2, w), 4.5);
    EXPECT_EQ(t.ToDense().dense, DenseExample().dense);
    const Table s = t.ToSparse();  // the CSR of SparseExample(), whichever it started from
    EXPECT_TRUE(s.sparse);
    EXPECT_EQ(s.row_ptr, SparseExample().row_ptr);
    EXPECT_EQ(s.col_index, SparseExample().col_index);
    EXPECT_EQ(s.values, SparseExample().values);
    EXPECT_EQ(s.labels, t.labels);
  }
}

TEST(TableTest, ValidateRejectsBrokenTables) {
  Table t = SparseExample();
  t.col_index = {2, 0, 1};  // not ascending
  EXPECT_FALSE(t.Validate().ok());
  t = DenseExample();
  t.labels = {0, 2};  // outside [0, 2)
  EXPECT_FALSE(t.Validate().ok());
  t = DenseExample();
  t.weights = {1};  // one per row
  EXPECT_FALSE(t.Validate().ok());
}

TEST(TableTest, ScalersMatchClosedForms) {
  Table t;
  t.rows = 4;
  t.cols = 2;
  t.dense = {1, -2, 2, 0, 3, 0, 6, 4};  // column 0: 1,2,3,6 (mean 3, var 3.5); column 1: -2,0,0,4
  auto standard = FitScaler(t, ScaleKind::kStandard);
  ASSERT_TRUE(standard.ok());
  Table s = t;
  ASSERT_TRUE(ApplyScaler(*standard, &s).ok());
  EXPECT_NEAR(s.dense[0], (1 - 3) / std::sqrt(3.5), 1e-6);
  EXPECT_NEAR(s.dense[6], (6 - 3) / std::sqrt(3.5), 1e-6);
  auto minmax = FitScaler(t, ScaleKind::kMinMax);
  ASSERT_TRUE(minmax.ok());
  s = t;
  ASSERT_TRUE(ApplyScaler(*minmax, &s).ok());
  EXPECT_NEAR(s.dense[1], 0.0, 1e-6);      // -2 -> 0
  EXPECT_NEAR(s.dense[3], 2.0 / 6, 1e-6);  // 0 -> 1/3
  EXPECT_NEAR(s.dense[7], 1.0, 1e-6);
  auto maxabs = FitScaler(SparseExample(), ScaleKind::kMaxAbs);
  ASSERT_TRUE(maxabs.ok());
  Table sp = SparseExample();
  ASSERT_TRUE(ApplyScaler(*maxabs, &sp).ok());
  EXPECT_EQ(sp.values, (std::vector<float>{1, 1, 1}));
  EXPECT_FALSE(FitScaler(SparseExample(), ScaleKind::kMinMax).ok());  // would densify
  Table wide = DenseExample();
  EXPECT_FALSE(ApplyScaler(*standard, &wide).ok());  // 3 columns vs a 2-column scaler
}

TEST(OpenTableTest, CsvRegressionTargetsAndErrorsWithLines) {
  ScratchDir dir;
  WriteFile(dir / "r.csv", "a,b,y\n1,2,0.5\n3,4,-1.25\n5,6,2\n7,8,3\n");
  DataConfig c;
  c.name = "csv";
  c.path = (dir / "r.csv").string();
  c.test_fraction = 0.25f;
  auto s = OpenTable(c, {.task = TableTask::kRegression});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->train.rows + s->test.rows, 4);
  EXPECT_EQ(s->test.rows, 1);
  std::multiset<float> targets(s->train.targets.begin(), s->train.targets.end());
  targets.insert(s->test.targets.begin(), s->test.targets.end());
  EXPECT_EQ(targets, (std::multiset<float>{0.5f, -1.25f, 2.0f, 3.0f}));
  WriteFile(dir / "bad.csv", "a,y\n1,0.5\n2,high\n");
  c.path = (dir / "bad.csv").string();
  auto bad = OpenTable(c, {.task = TableTask::kRegression});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.csv:3: label 'high' is not a number"), std::string::npos)
      << bad.status().message();
}

TEST(OpenTableTest, LibsvmRankingKeepsQueriesWhole) {
  ScratchDir dir;
  std::string text;
  for (int q = 0; q < 10; ++q) {
    for (int d = 0; d < 3; ++d) {
      text += std::to_string(d) + " qid:" + std::to_string(q) + " 1:" + std::to_string(q) + " 3:" + std::to_string(d) +
              "\n";
    }
  }
  WriteFile(dir / "rank.txt", text);
  DataConfig c;
  c.name = "libsvm";
  c.path = (dir / "rank.txt").string();
  c.test_fraction = 0.3f;
  auto s = OpenTable(c, {.task = TableTask::kRanking});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->train.sparse);
  EXPECT_EQ(s->train.cols, 3);
  EXPECT_EQ(s->test.rows, 9);  // 3 of 10 queries
  std::set<int64_t> train_q(s->train.qids.begin(), s->train.qids.end());
  for (int64_t q : s->test.qids) EXPECT_EQ(train_q.count(q), 0u) << "query " << q << " split across train and test";
  // Ranking without qids is an error naming the file.
  WriteFile(dir / "noq.txt", "1 1:1\n0 1:2\n1 1:3\n");
  c.path = (dir / "noq.txt").string();
  auto noq = OpenTable(c, {.task = TableTask::kRanking});
  ASSERT_FALSE(noq.ok());
  EXPECT_NE(noq.status().message().find("noq.txt: ranking needs query ids"), std::string::npos);
}

TEST(OpenTableTest, ClassificationNeedsTwoClassesAndRows) {
  ScratchDir dir;
  WriteFile(dir / "one.csv", "a,y\n1,cat\n2,cat\n3,cat\n");
  DataConfig c;
  c.name = "csv";
  c.path = (dir / "one.csv").string();
  auto one = OpenTable(c, {});
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("only one class"), std::string::npos) << one.status().message();
  WriteFile(dir / "float.csv", "a,y\n1,0.5\n2,1.25\n3,2\n");
  c.path = (dir / "float.csv").string();
  auto floats = OpenTable(c, {});
  ASSERT_FALSE(floats.ok());
  EXPECT_NE(floats.status().message().find("float.csv:2: label '0.5' is not a class"), std::string::npos)
      << floats.status().message();
  WriteFile(dir / "two.csv", "a,y\n1,cat\n2,dog\n3,cat\n4,dog\n5,cat\n");
  c.path = (dir / "two.csv").string();
  auto two = OpenTable(c, {.max_train_rows = 2});
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->train.rows, 2);
  EXPECT_EQ(two->train.class_names, (std::vector<std::string>{"cat", "dog"}));
}

TEST(OpenTableTest, GeneratorsAreDeterministicAndTaskChecked) {
  DataConfig c;
  c.name = "friedman1";
  c.synthetic_train = 200;
  c.synthetic_test = 50;
  auto a = OpenTable(c, {.task = TableTask::kRegression});
  auto b = OpenTable(c, {.task = TableTask::kRegression});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->train.dense, b->train.dense);
  EXPECT_EQ(a->train.cols, 10);
  // y = 10 sin(pi x0 x1) + 20 (x2 - 0.5)^2 + 10 x3 + 5 x4 + N(0, 1): the residual has unit variance.
  double sq = 0;
  for (int64_t i = 0; i < a->train.rows; ++i) {
    const float* x = a->train.Row(i);
    const double f = 10 * std::sin(M_PI * x[0] * x[1]) + 20 * (x[2] - 0.5) * (x[2] - 0.5) + 10 * x[3] + 5 * x[4];
    sq += (a->train.targets[i] - f) * (a->train.targets[i] - f);
  }
  EXPECT_NEAR(sq / a->train.rows, 1.0, 0.3);
  EXPECT_FALSE(OpenTable(c, {.task = TableTask::kClassification}).ok());
  c.name = "letor-synthetic";
  c.synthetic_shape = {12};
  auto r = OpenTable(c, {.task = TableTask::kRanking});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->train.rows, 200);  // 10 queries of 20 documents
  EXPECT_EQ(r->train.cols, 12);
  for (float rel : r->train.targets) EXPECT_TRUE(rel >= 0 && rel <= 4 && rel == std::floor(rel));
}

TEST(OpenTableTest, CtrSyntheticIsOneHotPerFieldSkewedAndNoisy) {
  DataConfig c;
  c.name = "ctr-synthetic";
  c.synthetic_train = 20000;
  c.synthetic_test = 100;
  c.synthetic_shape = {6, 1000};
  auto a = OpenTable(c, {.task = TableTask::kClassification});
  auto b = OpenTable(c, {.task = TableTask::kClassification});
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString();
  const Table& t = a->train;
  EXPECT_EQ(t.col_index, b->train.col_index);  // deterministic
  EXPECT_EQ(t.labels, b->train.labels);
  ASSERT_TRUE(t.sparse);
  EXPECT_EQ(t.cols, 6000);
  EXPECT_EQ(t.num_classes, 2);
  std::vector<int64_t> count(6000, 0);
  int64_t ones = 0;
  for (int64_t i = 0; i < t.rows; ++i) {
    ASSERT_EQ(t.row_ptr[i + 1] - t.row_ptr[i], 6);
    for (int64_t p = t.row_ptr[i]; p < t.row_ptr[i + 1]; ++p) {
      EXPECT_EQ(t.col_index[p] / 1000, p - t.row_ptr[i]) << "one value of field f in columns f*1000 .. f*1000+999";
      EXPECT_EQ(t.values[p], 1.0f);
      ++count[t.col_index[p]];
    }
    ones += t.labels[i];
  }
  // Log-uniform values: P(v) ~ 1 / ((v + 1) ln 1000), so value 0 of a field is far more frequent than value 500.
  EXPECT_GT(count[0], 20 * std::max<int64_t>(1, count[500]));
  EXPECT_GT(ones, t.rows / 5);  // both classes well represented
  EXPECT_LT(ones, t.rows * 4 / 5);
  c.synthetic_shape = {0, 10};
  EXPECT_EQ(OpenTable(c, {.task = TableTask::kClassification}).status().code(), StatusCode::kInvalidArgument);
  c.synthetic_shape = {6, 1000};
  EXPECT_EQ(OpenTable(c, {.task = TableTask::kRegression}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(OpenTable(c, {.task = TableTask::kClustering}).ok());
}

TEST(ReadTableFileTest, ChecksWidthAndEncodesLabelsWithTheModelsNames) {
  ScratchDir dir;
  WriteFile(dir / "p.txt", "dog 1:1 2:2\ncat 2:1\nbird 1:3\n");
  DataConfig c;
  c.name = "libsvm";
  auto t = ReadTableFile((dir / "p.txt").string(), c, TableTask::kClassification, 2, {"cat", "dog"});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->labels, (std::vector<int32_t>{1, 0, -1}));
  WriteFile(dir / "wide.txt", "1 1:1\n0 5:1\n");
  auto wide = ReadTableFile((dir / "wide.txt").string(), c, TableTask::kClassification, 2, {});
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("wide.txt:2: feature index 5"), std::string::npos)
      << wide.status().message();
}

}  // namespace
}  // namespace geomx::data
