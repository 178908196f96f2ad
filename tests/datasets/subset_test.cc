// datasets/subset.h FilterClasses (data.classes): only the listed classes remain, in train and test, with their
// labels and examples unchanged; bad class lists are refused naming data.classes.
#include "datasets/subset.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "datasets/data_config.h"

namespace geomx::data {
namespace {

DataConfig Synthetic() {
  DataConfig c;
  c.name = "synthetic";
  c.synthetic_train = 200;
  c.synthetic_test = 80;
  c.synthetic_classes = 5;
  c.synthetic_shape = {3};
  return c;
}

// The indices of the examples of `d` whose label is in `classes`, by a plain scan.
std::vector<int64_t> Expected(const Dataset& d, const std::vector<int64_t>& classes) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < d.size(); ++i) {
    for (int64_t c : classes) {
      if (d.Label(i) == c) out.push_back(i);
    }
  }
  return out;
}

TEST(FilterClassesTest, KeepsExactlyTheListedClassesInBothSplits) {
  DataConfig all_config = Synthetic();
  auto all = OpenDataset(all_config);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  DataConfig config = Synthetic();
  config.classes = {3, 1};
  auto some = OpenDataset(config);
  ASSERT_TRUE(some.ok()) << some.status().ToString();
  for (const auto& [full, kept] : {std::pair{all->train, some->train}, std::pair{all->test, some->test}}) {
    const std::vector<int64_t> expected = Expected(*full, {1, 3});
    ASSERT_EQ(kept->size(), static_cast<int64_t>(expected.size()));
    ASSERT_GT(kept->size(), 0);
    ASSERT_LT(kept->size(), full->size());
    EXPECT_EQ(kept->info().num_classes, 5);  // labels keep their ids: the model stays 5-way
    EXPECT_NE(kept->info().source.find("(classes 3,1)"), std::string::npos) << kept->info().source;
    std::vector<float> a(3), b(3);
    for (int64_t i = 0; i < kept->size(); ++i) {
      const int64_t j = expected[static_cast<size_t>(i)];
      EXPECT_EQ(kept->Label(i), full->Label(j));
      kept->Get(i, a.data(), nullptr);
      full->Get(j, b.data(), nullptr);
      EXPECT_EQ(a, b);
    }
  }
}

TEST(FilterClassesTest, BadListsAreRefused) {
  DataConfig config = Synthetic();
  for (const auto& [classes, message] :
       std::vector<std::pair<std::vector<int64_t>, std::string>>{
           {{2, 5}, "data.classes: 5 is not a class of"}, {{1, 1}, "data.classes: class 1 is listed twice"}}) {
    config.classes = classes;
    auto r = OpenDataset(config);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(message), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace geomx::data
