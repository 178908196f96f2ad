// Bandwidths and durations as written in recipes (cli/recipe_units.h): parsing, errors, and printing that reads
// back to the same value.
#include "cli/recipe_units.h"

#include <gtest/gtest.h>

#include <string>

namespace geomx::cli {
namespace {

double Bandwidth(const std::string& text) {
  double bps = -1;
  std::string problem = ParseBandwidth(text, &bps);
  EXPECT_EQ(problem, "") << text;
  return bps;
}

double Seconds(const std::string& text) {
  double s = -1;
  std::string problem = ParseDurationSeconds(text, &s);
  EXPECT_EQ(problem, "") << text;
  return s;
}

int Millis(const std::string& text) {
  int ms = -1;
  std::string problem = ParseDurationMillis(text, &ms);
  EXPECT_EQ(problem, "") << text;
  return ms;
}

TEST(RecipeUnitsTest, BandwidthUnitsAreBitsPerSecond) {
  EXPECT_EQ(Bandwidth("50mbit"), 50e6);
  EXPECT_EQ(Bandwidth("1gbit"), 1e9);
  EXPECT_EQ(Bandwidth("800kbit"), 800e3);
  EXPECT_EQ(Bandwidth("1.5Gbit"), 1.5e9);  // units are case-insensitive
  EXPECT_EQ(Bandwidth("50 mbit/s"), 50e6);
  EXPECT_EQ(Bandwidth("1200"), 1200);  // a bare number is bit/s
  EXPECT_EQ(Bandwidth("64bit"), 64);
  EXPECT_EQ(Bandwidth("0"), 0);  // unlimited
}

TEST(RecipeUnitsTest, BandwidthErrors) {
  double bps = 0;
  EXPECT_EQ(ParseBandwidth("fast", &bps),
            "expected a bandwidth such as 50mbit, 1gbit or 800kbit (bits per second), got 'fast'");
  EXPECT_EQ(ParseBandwidth("", &bps),
            "expected a bandwidth such as 50mbit, 1gbit or 800kbit (bits per second), got ''");
  EXPECT_EQ(ParseBandwidth("10MB", &bps),
            "ambiguous unit 'mb' in '10MB': write bits per second, e.g. 10mbit (tc reads 'mbps' as bytes per second, "
            "that is 80mbit)");
  EXPECT_EQ(ParseBandwidth("5 parsecs", &bps),
            "unknown bandwidth unit 'parsecs' in '5 parsecs' (use bit, kbit, mbit or gbit: bits per second)");
  EXPECT_EQ(ParseBandwidth("-1kbit", &bps), "must be >= 0 (0 = unlimited), got -1kbit");
  EXPECT_EQ(ParseBandwidth("1e6", &bps),
            "unknown bandwidth unit 'e6' in '1e6' (use bit, kbit, mbit or gbit: bits per "
            "second)");
}

TEST(RecipeUnitsTest, DurationUnits) {
  EXPECT_DOUBLE_EQ(Seconds("25ms"), 0.025);
  EXPECT_DOUBLE_EQ(Seconds("2s"), 2);
  EXPECT_DOUBLE_EQ(Seconds("100us"), 1e-4);
  EXPECT_DOUBLE_EQ(Seconds("1.5min"), 90);
  EXPECT_DOUBLE_EQ(Seconds("1h"), 3600);
  EXPECT_EQ(Seconds("0"), 0);
  EXPECT_EQ(Millis("60s"), 60000);
  EXPECT_EQ(Millis("2min"), 120000);
  EXPECT_EQ(Millis("1500ms"), 1500);
  EXPECT_EQ(Millis("1.5s"), 1500);
  EXPECT_EQ(Millis("2000us"), 2);
}

TEST(RecipeUnitsTest, DurationErrors) {
  double s = 0;
  int ms = 0;
  EXPECT_EQ(ParseDurationSeconds("25", &s), "a duration needs a unit: 25ms or 25s? (us, ms, s, min, h)");
  EXPECT_EQ(ParseDurationSeconds("soon", &s), "expected a duration such as 25ms, 2s or 1.5min, got 'soon'");
  EXPECT_EQ(ParseDurationSeconds("3 minutes", &s),
            "unknown duration unit 'minutes' in '3 minutes' (did you mean 'min'?) (use us, ms, s, min or h)");
  EXPECT_EQ(ParseDurationSeconds("-1s", &s), "must be >= 0, got -1s");
  EXPECT_EQ(ParseDurationMillis("1.5ms", &ms), "must be a whole number of milliseconds, got 1.5ms");
  EXPECT_EQ(ParseDurationMillis("1000h", &ms), "must be at most 2147483s, got 1000h");
}

TEST(RecipeUnitsTest, PrintedValuesReadBackExactly) {
  for (double bps : {0.0, 1.0, 12.5, 800e3, 50e6, 1e9, 1.5e9, 123456789.0, 2.5e12}) {
    EXPECT_EQ(Bandwidth(BandwidthText(bps)), bps) << BandwidthText(bps);
  }
  EXPECT_EQ(BandwidthText(50e6), "50mbit");
  EXPECT_EQ(BandwidthText(1e9), "1gbit");
  EXPECT_EQ(BandwidthText(1.5e9), "1500mbit");
  EXPECT_EQ(BandwidthText(0), "0");
  for (double s : {0.0, 0.025, 0.0001, 2.0, 0.0255, 1.0 / 3, 90.0, 1e-9}) {
    EXPECT_EQ(Seconds(DurationSecondsText(s)), s) << DurationSecondsText(s);
  }
  EXPECT_EQ(DurationSecondsText(0.025), "25ms");
  EXPECT_EQ(DurationSecondsText(2), "2s");
  EXPECT_EQ(DurationSecondsText(1e-4), "100us");
  for (int ms : {0, 1, 999, 1000, 1500, 60000, 2147483000}) {
    EXPECT_EQ(Millis(DurationMillisText(ms)), ms) << DurationMillisText(ms);
  }
  EXPECT_EQ(DurationMillisText(120000), "120s");
  EXPECT_EQ(DurationMillisText(1500), "1500ms");
}

}  // namespace
}  // namespace geomx::cli
