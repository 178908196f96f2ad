// `geomx plot` (cli/plot.h): run folders built by hand with known curves are plotted, and the PNG is read back with
// OpenCV to find each run's colour where its curve must be; error cases; one real short training run.
#include "cli/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "tests/testutil.h"

namespace geomx::cli {
namespace {
namespace fs = std::filesystem;
using chart::Box;
using testing::ReadFile;
using testing::RunGeomx;
using testing::ScratchDir;
using testing::WriteFile;

// A neural run's metrics.jsonl: `rows` evaluations, one every 100 iterations and 2 s; loss falls, accuracy rises
// (by `slope` per row), WAN/LAN bytes grow.
std::string NeuralMetrics(int rows, double slope) {
  std::string out;
  for (int i = 0; i < rows; ++i) {
    char line[512];
    std::snprintf(line, sizeof(line),
                  "{\"time_s\": %.1f, \"iteration\": %d, \"epoch\": %d, \"loss\": %.4f, \"train_accuracy\": 0.5, "
                  "\"test_loss\": %.4f, \"test_accuracy\": %.4f, \"test_examples\": 100, \"samples_per_second\": "
                  "900, \"lr\": 0.1, \"lan_bytes\": %d, \"wan_bytes\": %d}\n",
                  2.0 * i, 100 * i, i / 4, 2.0 / (1 + i), 2.2 / (1 + i), 0.1 + slope * i, 3000000 * i, 1000000 * i);
    out += line;
  }
  return out;
}

fs::path MakeRun(const ScratchDir& dir, const std::string& name, const std::string& metrics) {
  const fs::path run = dir / name;
  fs::create_directories(run);
  WriteFile(run / "metrics.jsonl", metrics);
  return run;
}

bool Near(const cv::Vec3b& p, chart::Colour c, int tol = 12) {
  return std::abs(p[0] - c.b) <= tol && std::abs(p[1] - c.g) <= tol && std::abs(p[2] - c.r) <= tol;
}

// Pixels of colour `c` inside `box` (columns x0..x1 of it when given, as fractions of its width).
int CountColour(const cv::Mat& img, const Box& box, chart::Colour c, double x0 = 0, double x1 = 1) {
  int n = 0;
  for (int y = box.y + 1; y < box.bottom(); ++y) {
    for (int x = box.x + 1 + static_cast<int>(x0 * box.width); x < box.x + static_cast<int>(x1 * box.width); ++x) {
      if (Near(img.at<cv::Vec3b>(y, x), c)) ++n;
    }
  }
  return n;
}

// The topmost row of colour `c` in columns x0..x1 (fractions of the box's width); -1 when absent.
int TopRow(const cv::Mat& img, const Box& box, chart::Colour c, double x0, double x1) {
  for (int y = box.y + 1; y < box.bottom(); ++y) {
    for (int x = box.x + static_cast<int>(x0 * box.width); x < box.x + static_cast<int>(x1 * box.width); ++x) {
      if (Near(img.at<cv::Vec3b>(y, x), c)) return y;
    }
  }
  return -1;
}

cv::Mat ReadPng(const fs::path& png) {
  cv::Mat img = cv::imread(png.string(), cv::IMREAD_COLOR);
  EXPECT_FALSE(img.empty()) << png;
  return img;
}

TEST(Plot, OneRunDrawsItsCurvesInTheDocumentedPanels) {
  ScratchDir dir;
  const fs::path run = MakeRun(dir, "run-a", NeuralMetrics(10, 0.08));
  std::string written;
  ASSERT_TRUE(PlotRuns({run.string()}, "", &written).ok());
  EXPECT_EQ(written, (run / "curves.png").string());  // the default --out of one run
  EXPECT_FALSE(fs::exists(run / "curves.png.tmp"));
  const cv::Mat img = ReadPng(run / "curves.png");
  ASSERT_EQ(img.cols, kPlotWidth);
  ASSERT_EQ(img.rows, kPlotHeight);
  const chart::Colour first = chart::SeriesColour(0), second = chart::SeriesColour(1);
  for (int row = 0; row < 2; ++row) {
    for (int col = 0; col < 3; ++col) {
      EXPECT_GT(CountColour(img, PlotPanelArea(row, col), first), 100) << "panel " << row << "," << col;
      EXPECT_EQ(CountColour(img, PlotPanelArea(row, col), second), 0) << "panel " << row << "," << col;
    }
  }
  // Accuracy rises: its colour is higher up (a smaller row) at the right of the panel than at the left; the loss
  // falls: the other way round.
  for (int row = 0; row < 2; ++row) {
    const Box acc = PlotPanelArea(row, 1), loss = PlotPanelArea(row, 0);
    const int acc_left = TopRow(img, acc, first, 0.02, 0.12), acc_right = TopRow(img, acc, first, 0.88, 0.98);
    ASSERT_GE(acc_left, 0);
    ASSERT_GE(acc_right, 0);
    EXPECT_LT(acc_right + acc.height / 2, acc_left) << "accuracy 0.1 -> 0.82 spans most of the panel";
    const int loss_left = TopRow(img, loss, first, 0.02, 0.12), loss_right = TopRow(img, loss, first, 0.88, 0.98);
    ASSERT_GE(loss_left, 0);
    EXPECT_GT(loss_right, loss_left);
  }
}

TEST(Plot, SeveralRunsAreOverlaidEachInItsColour) {
  ScratchDir dir;
  const fs::path a = MakeRun(dir, "a", NeuralMetrics(8, 0.1)), b = MakeRun(dir, "b", NeuralMetrics(8, 0.05));
  ASSERT_TRUE(PlotRuns({a.string(), b.string()}, (dir / "both.png").string()).ok());
  const cv::Mat img = ReadPng(dir / "both.png");
  ASSERT_EQ(img.cols, kPlotWidth);
  const Box acc = PlotPanelArea(1, 1);
  EXPECT_GT(CountColour(img, acc, chart::SeriesColour(0)), 100);
  EXPECT_GT(CountColour(img, acc, chart::SeriesColour(1)), 100);
  EXPECT_EQ(CountColour(img, acc, chart::SeriesColour(2)), 0);
  // Against iterations, run a (0.1 per row) ends above run b (0.05 per row).
  EXPECT_LT(TopRow(img, acc, chart::SeriesColour(0), 0.9, 0.99), TopRow(img, acc, chart::SeriesColour(1), 0.9, 0.99));
  // The legend names both runs in their colours (a swatch right of the panels).
  const Box legend{kPlotWidth - 280, 0, 280, kPlotHeight};
  EXPECT_GT(CountColour(img, legend, chart::SeriesColour(0)), 30);
  EXPECT_GT(CountColour(img, legend, chart::SeriesColour(1)), 30);
}

TEST(Plot, AlgorithmRunIsPlottedByStepAndPanelsWithoutDataStayEmpty) {
  ScratchDir dir;
  // A classical run: `step` plus its figures, no wall time, no traffic; `accuracy` every other step.
  std::string metrics;
  for (int s = 1; s <= 12; ++s) {
    metrics += "{\"step\": " + std::to_string(s) + ", \"loss\": " + std::to_string(1.0 / s) +
               (s % 2 == 0 ? ", \"accuracy\": " + std::to_string(0.5 + 0.03 * s) : std::string(", \"note\": \"x\"")) +
               "}\n";
  }
  const fs::path run = MakeRun(dir, "logreg", metrics);
  ASSERT_TRUE(PlotRuns({run.string()}, "").ok());
  const cv::Mat img = ReadPng(run / "curves.png");
  const chart::Colour c = chart::SeriesColour(0);
  EXPECT_GT(CountColour(img, PlotPanelArea(1, 0), c), 100);  // loss by step
  EXPECT_GT(CountColour(img, PlotPanelArea(1, 1), c), 100);  // accuracy by step
  for (int col = 0; col < 3; ++col) EXPECT_EQ(CountColour(img, PlotPanelArea(0, col), c), 0) << col;  // no time_s
  EXPECT_EQ(CountColour(img, PlotPanelArea(1, 2), c), 0);  // no traffic
}

TEST(Plot, ReadsColumnsWithNullsAndCsvWhenThereIsNoJsonl) {
  ScratchDir dir;
  const fs::path run = MakeRun(dir, "r", "{\"step\": 1, \"loss\": null, \"name\": \"a,b\"}\n\n"
                                         "{\"step\": 2, \"loss\": 0.5, \"ok\": true}\n");
  Result<RunMetrics> m = ReadRunMetrics(run.string() + "/");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->label, "r");
  EXPECT_EQ(m->rows, 2u);
  ASSERT_NE(m->Column("loss"), nullptr);
  EXPECT_TRUE(std::isnan((*m->Column("loss"))[0]));
  EXPECT_EQ((*m->Column("loss"))[1], 0.5);
  EXPECT_EQ(m->Column("name"), nullptr);  // strings are no figures
  EXPECT_EQ(m->Column("ok"), nullptr);

  const fs::path csv = dir / "c";
  fs::create_directories(csv);
  WriteFile(csv / "metrics.csv", "time_s,iteration,test_accuracy\n1.5,10,0.25\n3,20,\n");
  Result<RunMetrics> c = ReadRunMetrics(csv.string());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->file, (csv / "metrics.csv").string());
  EXPECT_EQ((*c->Column("iteration"))[1], 20);
  EXPECT_TRUE(std::isnan((*c->Column("test_accuracy"))[1]));

  // A run that did not complete says so in its legend label.
  WriteFile(run / "summary.json", "{\"status\": \"interrupted\", \"name\": \"smoke\"}\n");
  EXPECT_EQ(ReadRunMetrics(run.string())->label, "r (interrupted)");
}

TEST(Plot, BadInputIsAUserErrorNamingWhere) {
  ScratchDir dir;
  const fs::path good = MakeRun(dir, "good", NeuralMetrics(3, 0.1));
  const fs::path empty = MakeRun(dir, "empty", "");
  const fs::path bad = MakeRun(dir, "bad", NeuralMetrics(2, 0.1) + "{\"time_s\": 1, \"loss\": 0.5,}\n");
  const fs::path word = MakeRun(dir, "word", "{\"step\": 1, \"loss\": abc}\n");
  fs::create_directories(dir / "nometrics");
  WriteFile(dir / "badcsv" / "metrics.csv", "time_s,loss\n1,2\n3\n");
  struct Case {
    std::vector<std::string> runs;
    std::string out, expect;
  };
  const std::vector<Case> cases = {
      {{(dir / "missing").string()}, "", (dir / "missing").string() + ": no such run folder"},
      {{(dir / "nometrics").string()}, "", (dir / "nometrics").string() + ": not a geomx run folder"},
      {{empty.string()}, "", (empty / "metrics.jsonl").string() + ": no metrics yet"},
      {{bad.string()}, "", (bad / "metrics.jsonl").string() + ":3: expected a quoted key"},
      {{word.string()}, "", (word / "metrics.jsonl").string() + ":1: the value of \"loss\" is not a number"},
      {{(dir / "badcsv").string()}, "", (dir / "badcsv" / "metrics.csv").string() + ":3: 1 fields, the header has 2"},
      {{good.string(), good.string()}, "", "2 runs need --out"},
      {{}, "", "at least one run"},
      {{good.string()}, (dir / "nowhere" / "x.png").string(), "does not exist"},
      {{good.string()}, (dir / "x.jpg").string(), "name it *.png"},
      {{good.string(), bad.string()}, (dir / "two.png").string(), "bad/metrics.jsonl:3:"},
  };
  for (const Case& c : cases) {
    const Status s = PlotRuns(c.runs, c.out);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.expect << ": " << s.message();
    EXPECT_TRUE(s.IsUserError());
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << s.message();
  }
  EXPECT_FALSE(fs::exists(dir / "two.png"));  // nothing is written when a run is bad
  EXPECT_FALSE(fs::exists(good / "curves.png"));
}

TEST(Plot, CommandLineExitCodes) {
  ScratchDir dir;
  MakeRun(dir, "a", NeuralMetrics(4, 0.1));
  MakeRun(dir, "b", NeuralMetrics(4, 0.1) + "not json\n");
  auto ok = RunGeomx("plot a", dir.path());
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("a/curves.png"), std::string::npos) << ok.output;
  auto several = RunGeomx("plot a a", dir.path());
  EXPECT_EQ(several.exit_code, 2);
  EXPECT_NE(several.output.find("--out"), std::string::npos) << several.output;
  auto bad = RunGeomx("plot a b --out ab.png", dir.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("b/metrics.jsonl:5:"), std::string::npos) << bad.output;
  EXPECT_EQ(RunGeomx("plot missing", dir.path()).exit_code, 2);
  EXPECT_EQ(RunGeomx("plot", dir.path()).exit_code, 2);
  auto help = RunGeomx("plot --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("Example"), std::string::npos);
}

TEST(Plot, RealShortTrainingRun) {
  ScratchDir dir;
  WriteFile(dir / "r.yaml", testing::kSmokeRecipe);
  auto train = RunGeomx("train r.yaml --set training.eval_every=4 --out run1", dir.path());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  auto plot = RunGeomx("plot run1", dir.path());
  ASSERT_EQ(plot.exit_code, 0) << plot.output;
  const cv::Mat img = ReadPng(dir / "run1" / "curves.png");
  ASSERT_EQ(img.cols, kPlotWidth);
  ASSERT_EQ(img.rows, kPlotHeight);
  for (int row = 0; row < 2; ++row) {
    EXPECT_GT(CountColour(img, PlotPanelArea(row, 0), chart::SeriesColour(0)), 50) << row;  // loss
    EXPECT_GT(CountColour(img, PlotPanelArea(row, 1), chart::SeriesColour(0)), 50) << row;  // accuracy
  }
}

}  // namespace
}  // namespace geomx::cli
