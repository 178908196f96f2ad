// Bad inputs and failed writes through the geomx binary, as a user meets them: bad data and a batch larger than
// the data set exit 2 naming the file and line or the recipe key; a write that fails (a full disk, a run folder
// that cannot be created) exits 1 naming the file, never 2 ("bad input").
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/testutil.h"

namespace geomx::testing {
namespace {
namespace fs = std::filesystem;

bool Has(const CommandResult& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

// A csv recipe for the mlp (the table is the recipe's only data file).
std::string CsvRecipe(const std::string& file) {
  return "name: inputs\nseed: 1\nmodel: {name: mlp, hidden: [8]}\ndata: {name: csv, path: " + file +
         ", batch_size: 4}\noptimizer: {name: sgd, lr: 0.1}\ntraining: {epochs: 1}\n";
}

std::string CsvRows(int rows) {
  std::string text = "a,b,y\n";
  for (int i = 0; i < rows; ++i) {
    text += std::to_string(i % 5);
    text += ',';
    text += std::to_string(i % 3);
    text += i % 2 ? ",x\n" : ",z\n";
  }
  return text;
}

TEST(InputsE2eTest, NanInACsvIsBadInputNamingFileAndLineUnlessAllowed) {
  ScratchDir dir;
  std::string rows = CsvRows(20);
  rows.replace(rows.find("\n3,") + 1, 3, "3,nan");  // line 5: "3,nan,..."
  WriteFile(dir / "t.csv", rows);
  WriteFile(dir / "r.yaml", CsvRecipe("t.csv"));
  auto refused = RunGeomx("train r.yaml --out run", dir.path());
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_TRUE(Has(refused, "t.csv:5:3: 'nan' is not a finite number")) << refused.output;
  EXPECT_TRUE(Has(refused, "data.allow_nan: true")) << refused.output;
  EXPECT_FALSE(fs::exists(dir / "run")) << "bad input leaves no run folder";
  // The plan (--dry-run) reads the data too: with data.allow_nan the table is accepted.
  auto allowed = RunGeomx("train r.yaml --set data.allow_nan=true --dry-run", dir.path());
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
}

TEST(InputsE2eTest, AHugeLibsvmIndexAndATruncatedGzipAreBadInput) {
  ScratchDir dir;
  WriteFile(dir / "big.svm", "1 1:0.5\n0 2:1\n1 2000000000:1\n");
  WriteFile(dir / "r.yaml", "name: big\nmodel: {name: mlp, hidden: [8]}\ndata: {name: libsvm, path: big.svm}\n");
  auto big = RunGeomx("train r.yaml --out run", dir.path());
  EXPECT_EQ(big.exit_code, 2) << big.output;
  EXPECT_TRUE(Has(big, "big.svm:3: feature index 2000000000 is above the maximum 67108864")) << big.output;

  // The first 53 of the 106 bytes of `gzip` of a 200-row table: the deflate stream stops early (no trailer).
  const char cut_gz[] =
      "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff\xed\xce\xb1\x11\xc0\x30\x08\x04\xc1\x9c\x5a\x08\xe0\xa1\x21\xbb\x0a"
      "\x59\xd5\x9b\xb9\x36\xa4\x8c\x79\x36\xb8\xc7\x5f\xff\x2c\x3c\x7c\x5b\x7a\xfa\x32\xb9\xe6\xae\x59\x96\xf5";
  WriteFile(dir / "cut.csv.gz", std::string(cut_gz, sizeof(cut_gz) - 1));
  WriteFile(dir / "g.yaml", CsvRecipe("cut.csv.gz"));
  auto cut = RunGeomx("train g.yaml --out run", dir.path());
  EXPECT_EQ(cut.exit_code, 2) << cut.output;
  EXPECT_TRUE(Has(cut, "cut.csv.gz: truncated or corrupt gzip stream after")) << cut.output;
  EXPECT_FALSE(fs::exists(dir / "run"));
}

TEST(InputsE2eTest, ABatchLargerThanTheDataSetNamesTheKeyAndBothNumbers) {
  ScratchDir dir;
  WriteFile(dir / "t.csv", CsvRows(10));
  WriteFile(dir / "r.yaml", CsvRecipe("t.csv"));
  // 10 rows, test_fraction 0.2: 8 training examples.
  auto r = RunGeomx("train r.yaml --set data.batch_size=64 --out run", dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Has(r, "--set data.batch_size=64: data.batch_size: 64 is larger than the training set (8 examples"))
      << r.output;
  EXPECT_FALSE(Has(r, "internal error")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "run"));

  // With a topology every worker needs a full batch from its own share: 8 examples over 4 workers are 2 each.
  WriteFile(dir / "topo.yaml", CsvRecipe("t.csv") +
                                   "topology:\n  central: {host: 127.0.0.1, global_servers: 1}\n  datacentres:\n"
                                   "    - {name: dc-a, workers: 2, servers: 1}\n"
                                   "    - {name: dc-b, workers: 2, servers: 1}\n");
  auto t = RunGeomx("train topo.yaml --out run", dir.path());
  EXPECT_EQ(t.exit_code, 2) << t.output;
  EXPECT_TRUE(Has(t, "topo.yaml:4:44: data.batch_size: 4 is larger than the 2 training examples of worker 0 of 4"))
      << t.output;
  EXPECT_TRUE(Has(t, "of 4 (the 8 examples")) << t.output;
  EXPECT_FALSE(fs::exists(dir / "run"));
}

TEST(InputsE2eTest, FailedWritesAreRuntimeFailuresNamingTheFile) {
  ScratchDir dir;
  WriteFile(dir / "t.csv", CsvRows(40));
  WriteFile(dir / "r.yaml", CsvRecipe("t.csv"));
  // A run folder that cannot be created: its parent is a file.
  WriteFile(dir / "plain", "a file, not a folder");
  auto folder = RunGeomx("train r.yaml --out plain/run", dir.path());
  EXPECT_EQ(folder.exit_code, 1) << folder.output;
  EXPECT_TRUE(Has(folder, "cannot create run folder plain/run")) << folder.output;

  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  // A full disk: a classical model fitted, then its predictions written to /dev/full (every write: ENOSPC).
  WriteFile(dir / "lr.yaml", "name: lr\nalgorithm: {name: logreg}\ndata: {name: csv, path: t.csv}\n");
  auto fit = RunGeomx("train lr.yaml --out fitted", dir.path());
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  auto full = RunGeomx("predict fitted t.csv --out /dev/full", dir.path());
  EXPECT_EQ(full.exit_code, 1) << full.output;
  EXPECT_TRUE(Has(full, "cannot write /dev/full")) << full.output;
  EXPECT_TRUE(Has(full, "No space left on device")) << full.output;
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
}

}  // namespace
}  // namespace geomx::testing
