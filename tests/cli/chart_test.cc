// The shared chart code (cli/chart.h): tick steps, value-to-pixel mapping, text fitting, drawing and PNG writing.
#include "cli/chart.h"

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "tests/testutil.h"

namespace geomx::cli::chart {
namespace {

TEST(Chart, NiceStepIsOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_DOUBLE_EQ(NiceStep(40, 8), 5);
  EXPECT_DOUBLE_EQ(NiceStep(0.75, 8), 0.1);  // 0.094 -> 0.1
  EXPECT_DOUBLE_EQ(NiceStep(1100, 5), 500);  // 220 -> 500
  EXPECT_DOUBLE_EQ(NiceStep(27.5, 5), 10);   // 5.5 -> 10
  EXPECT_DOUBLE_EQ(NiceStep(0, 5), 1);       // degenerate ranges get a usable step
}

TEST(Chart, BytesTextUsesDecimalUnits) {
  EXPECT_EQ(BytesText(8e6), "8 MB");
  EXPECT_EQ(BytesText(2e5), "200 kB");
  EXPECT_EQ(BytesText(1.5e9), "1.5 GB");
  EXPECT_EQ(BytesText(12), "12 B");
}

TEST(Chart, PlotAreaMapsValuesAndTicks) {
  const PlotArea area({100, 50, 400, 200}, Axis{.lo = 0, .hi = 40}, Axis{.lo = 0.5, .hi = 1.0, .ticks = 5});
  EXPECT_EQ(area.X(0), 100);
  EXPECT_EQ(area.X(40), 500);
  EXPECT_EQ(area.X(10), 200);
  EXPECT_EQ(area.Y(0.5), 250);  // the bottom
  EXPECT_EQ(area.Y(1.0), 50);   // the top
  EXPECT_EQ(area.At(99, 2).x, 500);  // clamped to the ranges
  EXPECT_EQ(area.At(99, 2).y, 50);
  EXPECT_EQ(area.TickValues(area.x_axis()), (std::vector<double>{0, 5, 10, 15, 20, 25, 30, 35, 40}));
  const std::vector<double> y = area.TickValues(area.y_axis());
  ASSERT_EQ(y.size(), 6u);  // 0.5, 0.6, ..., 1.0
  EXPECT_NEAR(y.front(), 0.5, 1e-12);
  EXPECT_NEAR(y.back(), 1.0, 1e-9);

  const PlotArea log({0, 0, 100, 300}, Axis{.ticks = 0}, Axis{.lo = 5, .hi = 8, .log10 = true});
  EXPECT_EQ(log.Y(1e5), 300);
  EXPECT_EQ(log.Y(1e6), 200);
  EXPECT_EQ(log.Y(1e8), 0);
  EXPECT_EQ(log.TickValues(log.y_axis()).size(), 4u);
  EXPECT_TRUE(log.TickValues(log.x_axis()).empty());
}

TEST(Chart, FitLinesShrinksThenBreaksAtSeparators) {
  double scale = 0;
  EXPECT_EQ(FitLines("hips", 0.45, 200, &scale), std::vector<std::string>{"hips"});
  EXPECT_DOUBLE_EQ(scale, 0.45);
  const std::string long_name = "hfa+bsc[sync.k1=5;sync.k2=2;accelerators.bsc.ratio=0.005]";
  const std::vector<std::string> lines = FitLines(long_name, 0.45, 160, &scale);
  ASSERT_GT(lines.size(), 1u);
  std::string joined;
  for (const std::string& l : lines) {
    EXPECT_LE(TextWidth(l, scale), 160) << l;
    joined += l;
  }
  EXPECT_EQ(joined, long_name);  // nothing is lost
  for (size_t i = 0; i + 1 < lines.size(); ++i) {  // each break is after a separator
    EXPECT_NE(std::string("[;,").find(lines[i].back()), std::string::npos) << lines[i];
  }
}

TEST(Chart, CanvasDrawsAndWritesAPngAtomically) {
  testing::ScratchDir dir;
  Canvas canvas(120, 80);
  EXPECT_EQ(canvas.width(), 120);
  EXPECT_EQ(canvas.height(), 80);
  canvas.Fill({10, 10, 20, 20}, SeriesColour(1));
  DrawSeries(canvas, {{40, 70}, {110, 10}}, SeriesColour(0), 2, 0, /*dashed=*/true);
  ASSERT_TRUE(canvas.WritePng(dir / "c.png").ok());
  EXPECT_FALSE(std::filesystem::exists(dir / "c.png.tmp"));
  const cv::Mat img = cv::imread((dir / "c.png").string(), cv::IMREAD_COLOR);
  ASSERT_EQ(img.cols, 120);
  const cv::Vec3b fill = img.at<cv::Vec3b>(20, 20), white = img.at<cv::Vec3b>(75, 5);
  EXPECT_EQ(fill, cv::Vec3b(14, 127, 255));
  EXPECT_EQ(white, cv::Vec3b(255, 255, 255));
  int line = 0;  // a dashed line: some but not all of its pixels
  for (int x = 40; x <= 110; ++x) {
    const int y = 70 - (x - 40) * 60 / 70;
    const cv::Vec3b p = img.at<cv::Vec3b>(y, x);
    if (p[0] > 100 && p[2] < 120) ++line;
  }
  EXPECT_GT(line, 20);
  EXPECT_LT(line, 65);
  EXPECT_FALSE(canvas.WritePng(dir / "missing" / "c.png").ok());
}

}  // namespace
}  // namespace geomx::cli::chart
