// Tests of the ratings reader and generator (datasets/ratings.h): MovieLens layouts, every malformed-line case with
// its file:line, the table layout, the splits through OpenTable, and the generator's determinism and noise floor
// (residuals against the true factors computed here, not by the library's Expected()).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "datasets/ratings.h"
#include "datasets/table.h"
#include "tests/datasets/data_fixtures.h"
#include "tests/testutil.h"

namespace geomx::data {
namespace {

using geomx::testing::ScratchDir;
using geomx::testing::WriteBytes;

struct Decoded {
  int64_t user, item;
  float rating;
  bool operator==(const Decoded& o) const { return user == o.user && item == o.item && rating == o.rating; }
};

std::vector<Decoded> Decode(const Table& t) {
  std::vector<Decoded> out;
  for (int64_t r = 0; r < t.rows; ++r) {
    int64_t u = -1, i = -1;
    EXPECT_TRUE(RatingOfRow(t, r, &u, &i)) << r;
    out.push_back({u, i, t.targets.empty() ? 0.0f : t.targets[static_cast<size_t>(r)]});
  }
  return out;
}

TEST(RatingsReaderTest, ReadsMovieLens100kTabsWithTimestamps) {
  ScratchDir dir;
  WriteBytes(dir / "u.data", "196\t242\t3\t881250949\n186\t302\t3.5\t891717742\n\n# note\n0\t0\t1\t0\n");
  auto t = ReadRatingsFile((dir / "u.data").string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->rows, 3);
  EXPECT_TRUE(t->sparse);
  EXPECT_EQ(t->cols, 2 * 303);  // the largest id is item 302
  EXPECT_EQ(Decode(*t), (std::vector<Decoded>{{196, 242, 3}, {186, 302, 3.5f}, {0, 0, 1}}));
  // One-hot: user u at column 2u, item i at 2i + 1, value 1; the user is the row's qid.
  EXPECT_EQ(t->col_index, (std::vector<int32_t>{392, 485, 372, 605, 0, 1}));
  EXPECT_EQ(t->values, std::vector<float>(6, 1.0f));
  EXPECT_EQ(t->qids, (std::vector<int64_t>{196, 186, 0}));
  EXPECT_TRUE(t->Validate().ok());
}

TEST(RatingsReaderTest, ReadsDoubleColonsCsvWithHeaderAndGzip) {
  ScratchDir dir;
  WriteBytes(dir / "ratings.dat", "1::1193::5::978300760\r\n2::3::4::978300275\r\n", /*gzip=*/true);
  auto a = ReadRatingsFile((dir / "ratings.dat").string());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(Decode(*a), (std::vector<Decoded>{{1, 1193, 5}, {2, 3, 4}}));
  WriteBytes(dir / "ratings.csv", "userId,movieId,rating,timestamp\n7,9,0.5,1\n8,1,4.5\n");
  auto b = ReadRatingsFile((dir / "ratings.csv").string());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(Decode(*b), (std::vector<Decoded>{{7, 9, 0.5f}, {8, 1, 4.5f}}));
}

TEST(RatingsReaderTest, UnratedLinesOnlyWhenAllowed) {
  ScratchDir dir;
  WriteBytes(dir / "q.txt", "3 4\n5 6\n");
  EXPECT_FALSE(ReadRatingsFile((dir / "q.txt").string()).ok());
  auto t = ReadRatingsFile((dir / "q.txt").string(), {.allow_unrated = true});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->has_targets());
  EXPECT_EQ(Decode(*t), (std::vector<Decoded>{{3, 4, 0}, {5, 6, 0}}));
  WriteBytes(dir / "mixed.txt", "3 4\n5 6 2\n");
  auto m = ReadRatingsFile((dir / "mixed.txt").string(), {.allow_unrated = true});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("mixed.txt:2: "), std::string::npos) << m.status().ToString();
}

// Each malformed line: kInvalidArgument naming the file, the line (3: after two good lines) and the problem.
TEST(RatingsReaderTest, MalformedLinesNameFileAndLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1 2 abc", "rating 'abc' is not a finite number"},
      {"1 2 nan", "rating 'nan' is not a finite number"},
      {"1 2 inf 5", "rating 'inf' is not a finite number"},
      {"1 2 1e999", "rating '1e999' is not a finite number"},
      {"x1 2 3", "user id 'x1' is not a non-negative integer"},
      {"1 2.5 3", "item id '2.5' is not a non-negative integer"},
      {"-4 2 3", "user id -4 is negative"},
      {"1 -2 3", "item id -2 is negative"},
      {"1 2", "expected `user item rating [timestamp]`, found 2 fields"},
      {"7", "expected `user item rating [timestamp]`, found 1 field"},
      {"1 2 3 4 5", "found 5 fields"},
      {"1 2 3 later", "timestamp 'later' is not a finite number"},
      {"16777216 2 3", "user id 16777216 is above the limit 16777215"},
      {"1 99999999999999999999 3", "item id 99999999999999999999 is above the limit"},
      {"1:2:3", "found 1 field"},
  };
  ScratchDir dir;
  for (const auto& [line, message] : cases) {
    WriteBytes(dir / "r.txt", "1 1 4\n2 2 5\n" + line + "\n");
    auto t = ReadRatingsFile((dir / "r.txt").string());
    ASSERT_FALSE(t.ok()) << line;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << line;
    const std::string& m = t.status().message();
    EXPECT_NE(m.find("r.txt:3: "), std::string::npos) << line << " -> " << m;
    EXPECT_NE(m.find(message), std::string::npos) << line << " -> " << m;
  }
  WriteBytes(dir / "empty.txt", "\n# nothing\n");
  auto empty = ReadRatingsFile((dir / "empty.txt").string());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no ratings"), std::string::npos);
  EXPECT_EQ(ReadRatingsFile((dir / "missing.txt").string()).status().code(), StatusCode::kNotFound);
}

TEST(RatingsReaderTest, OpenTableSplitsAFileOrReadsATestFile) {
  ScratchDir dir;
  std::string text;
  for (int k = 0; k < 100; ++k) text += std::to_string(k % 10) + " " + std::to_string(k % 7) + " " +
                                        std::to_string(1 + k % 5) + "\n";
  WriteBytes(dir / "r.txt", text);
  DataConfig c;
  c.name = "ratings";
  c.path = (dir / "r.txt").string();
  c.test_fraction = 0.25f;
  TableOptions o;
  o.task = TableTask::kRegression;
  auto s = OpenTable(c, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->train.rows, 75);
  EXPECT_EQ(s->test.rows, 25);
  EXPECT_EQ(s->train.cols, 20);
  EXPECT_EQ(s->test.cols, 20);
  EXPECT_EQ(s->train.qids.size(), 75u);

  WriteBytes(dir / "t.txt", "30 1 2\n");
  c.test_path = (dir / "t.txt").string();
  auto with_test = OpenTable(c, o);
  ASSERT_TRUE(with_test.ok()) << with_test.status().ToString();
  EXPECT_EQ(with_test->train.rows, 100);
  EXPECT_EQ(with_test->test.rows, 1);
  EXPECT_EQ(with_test->train.cols, 62);  // the wider of the two files
  EXPECT_EQ(with_test->test.cols, 62);

  o.task = TableTask::kClassification;
  auto wrong = OpenTable(c, o);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("regression"), std::string::npos);
  c.path = "auto";
  o.task = TableTask::kRegression;
  EXPECT_FALSE(OpenTable(c, o).ok());
}

TEST(RatingsReaderTest, ReadTableFileForPredictKeepsTheModelWidth) {
  ScratchDir dir;
  WriteBytes(dir / "p.txt", "1 2\n3 0\n");
  DataConfig c;
  c.name = "ratings";
  auto t = ReadTableFile((dir / "p.txt").string(), c, TableTask::kRegression, 40, {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->cols, 40);
  EXPECT_FALSE(t->has_targets());
  WriteBytes(dir / "wide.txt", "100 2 3\n");
  auto wide = ReadTableFile((dir / "wide.txt").string(), c, TableTask::kRegression, 40, {});
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("above 19"), std::string::npos) << wide.status().ToString();
}

// ---- ratings-synthetic ----

DataConfig SyntheticConfig(std::vector<int64_t> shape, int64_t train, int64_t test, uint64_t seed) {
  DataConfig c;
  c.name = "ratings-synthetic";
  c.synthetic_shape = std::move(shape);
  c.synthetic_train = train;
  c.synthetic_test = test;
  c.synthetic_seed = seed;
  return c;
}

TEST(RatingsSyntheticTest, DeterministicForASeedAndDifferentForAnother) {
  TableOptions o;
  o.task = TableTask::kRegression;
  auto a = OpenTable(SyntheticConfig({50, 40, 3}, 500, 100, 7), o);
  auto b = OpenTable(SyntheticConfig({50, 40, 3}, 500, 100, 7), o);
  auto c = OpenTable(SyntheticConfig({50, 40, 3}, 500, 100, 8), o);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status().ToString();
  EXPECT_EQ(a->train.targets, b->train.targets);
  EXPECT_EQ(a->train.col_index, b->train.col_index);
  EXPECT_EQ(a->test.targets, b->test.targets);
  EXPECT_NE(a->train.targets, c->train.targets);
  EXPECT_EQ(a->train.rows, 500);
  EXPECT_EQ(a->test.rows, 100);
  EXPECT_EQ(a->train.cols, 100);  // 2 x max(50 users, 40 items)
  EXPECT_EQ(a->test.cols, 100);
  for (const Decoded& d : Decode(a->train)) {
    EXPECT_LT(d.user, 50);
    EXPECT_LT(d.item, 40);
  }
  // The image default shape means [1000, 500, 4].
  auto d = OpenTable(SyntheticConfig({1, 8, 8}, 100, 10, 1), o);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->train.cols, 2000);
}

TEST(RatingsSyntheticTest, ResidualsOfTheTrueFactorsHaveTheNoiseSd) {
  const int64_t users = 200, items = 100, rank = 5;
  const RatingsTruth truth = MakeRatingsTruth(users, items, rank, 99);
  Rng rng(5);
  const Table t = GenerateRatings(truth, 40000, &rng);
  double sum = 0, sq = 0, signal = 0;
  for (int64_t r = 0; r < t.rows; ++r) {
    int64_t u = 0, i = 0;
    ASSERT_TRUE(RatingOfRow(t, r, &u, &i));
    double expected = truth.mean + truth.user_bias[u] + truth.item_bias[i];
    double dot = 0;
    for (int64_t k = 0; k < rank; ++k) dot += truth.p[u * rank + k] * truth.q[i * rank + k];
    expected += dot;
    signal += dot * dot;
    const double e = t.targets[r] - expected;
    sum += e;
    sq += e * e;
  }
  const double n = static_cast<double>(t.rows);
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(sq / n), kRatingsNoiseSd, 0.005);
  EXPECT_NEAR(signal / n, 1.0, 0.2);  // <p_u, q_i> has variance about 1
}

TEST(RatingsSyntheticTest, BadShapesAreRejected) {
  TableOptions o;
  o.task = TableTask::kRegression;
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{10, 10}, {0, 5, 2}, {5, 5, 0},
                                                                              {5, 5, 1000}, {1 << 24, 2, 2}}) {
    auto s = OpenTable(SyntheticConfig(shape, 10, 10, 1), o);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("data.synthetic_shape"), std::string::npos);
  }
  o.task = TableTask::kClassification;
  EXPECT_FALSE(OpenTable(SyntheticConfig({5, 5, 2}, 10, 10, 1), o).ok());
}

}  // namespace
}  // namespace geomx::data
