// Ratings tables (datasets/ratings.h): the `user item rating` reader and the low-rank generator.
#include "datasets/ratings.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "datasets/file_reader.h"

namespace geomx::data {
namespace {

bool IsSeparator(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == ','; }

// The fields of one line: runs of separators (spaces, tabs, commas, "::") split it.
std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (IsSeparator(line[i]) || line.substr(i, 2) == "::")) i += line[i] == ':' ? 2 : 1;
    const size_t b = i;
    while (i < line.size() && !IsSeparator(line[i]) && line.substr(i, 2) != "::") ++i;
    if (i > b) out.push_back(line.substr(b, i - b));
  }
  return out;
}

std::string Where(const std::string& path, int64_t line) { return path + ":" + std::to_string(line) + ": "; }

Status ParseId(std::string_view field, const char* what, const std::string& where, int64_t* out) {
  const std::string text(field);
  const bool negative = field.front() == '-' && field.size() > 1 &&
                        std::all_of(field.begin() + 1, field.end(), [](char c) { return std::isdigit(c) != 0; });
  if (negative) return Status::InvalidArgument(where + what + " id " + text + " is negative");
  if (!std::all_of(field.begin(), field.end(), [](char c) { return std::isdigit(c) != 0; })) {
    return Status::InvalidArgument(where + what + " id '" + text + "' is not a non-negative integer");
  }
  const size_t first = field.find_first_not_of('0');
  const std::string_view digits = first == std::string_view::npos ? std::string_view("0") : field.substr(first);
  int64_t v = 0;
  if (digits.size() <= 9) v = std::strtoll(std::string(digits).c_str(), nullptr, 10);
  if (digits.size() > 9 || v >= kMaxRatingId) {
    return Status::InvalidArgument(where + what + " id " + text + " is above the limit " +
                                   std::to_string(kMaxRatingId - 1) + " (renumber the ids from 0)");
  }
  *out = v;
  return Status::Ok();
}

Status ParseNumber(std::string_view field, const char* what, const std::string& where, double* out) {
  const std::string text(field);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) {
    return Status::InvalidArgument(where + what + " '" + text + "' is not a finite number");
  }
  *out = v;
  return Status::Ok();
}

}  // namespace

Table RatingsTable(const std::vector<int64_t>& users, const std::vector<int64_t>& items,
                   const std::vector<float>& ratings, const std::string& source) {
  Table t;
  t.rows = static_cast<int64_t>(users.size());
  t.sparse = true;
  t.source = source;
  int64_t span = 1;
  for (size_t k = 0; k < users.size(); ++k) span = std::max({span, users[k] + 1, items[k] + 1});
  t.cols = 2 * span;
  t.row_ptr.reserve(users.size() + 1);
  t.row_ptr.push_back(0);
  t.col_index.reserve(2 * users.size());
  t.values.assign(2 * users.size(), 1.0f);
  t.qids.reserve(users.size());
  for (size_t k = 0; k < users.size(); ++k) {
    const auto u = static_cast<int32_t>(2 * users[k]), i = static_cast<int32_t>(2 * items[k] + 1);
    t.col_index.push_back(std::min(u, i));
    t.col_index.push_back(std::max(u, i));
    t.row_ptr.push_back(static_cast<int64_t>(t.col_index.size()));
    t.qids.push_back(users[k]);
  }
  t.targets = ratings;
  return t;
}

bool RatingOfRow(const Table& t, int64_t i, int64_t* user, int64_t* item) {
  if (!t.sparse || i < 0 || i >= t.rows || t.row_ptr[i + 1] - t.row_ptr[i] != 2) return false;
  const int64_t a = t.col_index[static_cast<size_t>(t.row_ptr[i])];
  const int64_t b = t.col_index[static_cast<size_t>(t.row_ptr[i] + 1)];
  if ((a % 2) == (b % 2)) return false;
  const int64_t u = a % 2 == 0 ? a : b, it = a % 2 == 0 ? b : a;
  *user = u / 2;
  *item = (it - 1) / 2;
  return true;
}

Result<Table> ReadRatingsFile(const std::string& path, const RatingsReadOptions& options) {
  GEOMX_ASSIGN_OR_RETURN(FileBytes file, ReadDataFile(path));
  const std::string_view text(reinterpret_cast<const char*>(file.bytes.data()), file.bytes.size());
  std::vector<int64_t> users, items;
  std::vector<float> ratings;
  int rated = -1;  // unknown until the first line: 1 every line has a rating, 0 none has
  int64_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    const std::vector<std::string_view> f = SplitFields(line);
    if (f.empty() || f[0].front() == '#') continue;
    if (users.empty() && std::isalpha(static_cast<unsigned char>(f[0].front())) != 0) continue;  // a header
    const std::string where = Where(path, line_no);
    const size_t min_fields = options.allow_unrated ? 2 : 3;
    if (f.size() < min_fields || f.size() > 4) {
      return Status::InvalidArgument(where + "expected `user item rating [timestamp]`, found " +
                                     std::to_string(f.size()) + " field" + (f.size() == 1 ? "" : "s"));
    }
    int64_t u = 0, i = 0;
    GEOMX_RETURN_IF_ERROR(ParseId(f[0], "user", where, &u));
    GEOMX_RETURN_IF_ERROR(ParseId(f[1], "item", where, &i));
    const int has_rating = f.size() >= 3 ? 1 : 0;
    if (rated >= 0 && has_rating != rated) {
      return Status::InvalidArgument(where + (has_rating ? "a rating, but the lines above have none"
                                                         : "no rating, but the lines above have one"));
    }
    rated = has_rating;
    if (has_rating) {
      double r = 0, ts = 0;
      GEOMX_RETURN_IF_ERROR(ParseNumber(f[2], "rating", where, &r));
      if (std::fabs(r) > 3.0e38) return Status::InvalidArgument(where + "rating is out of the float range");
      if (f.size() == 4) GEOMX_RETURN_IF_ERROR(ParseNumber(f[3], "timestamp", where, &ts));
      ratings.push_back(static_cast<float>(r));
    }
    users.push_back(u);
    items.push_back(i);
  }
  if (users.empty()) return Status::InvalidArgument(path + ": no ratings (expected lines `user item rating`)");
  return RatingsTable(users, items, ratings, path);
}

Result<TableSplits> OpenRatings(const DataConfig& config) {
  if (config.path.empty() || config.path == "auto") {
    return Status::InvalidArgument("data.path: ratings reads a file you name (got '" + config.path + "')");
  }
  TableSplits s;
  GEOMX_ASSIGN_OR_RETURN(s.train, ReadRatingsFile(config.path));
  if (!config.test_path.empty()) {
    GEOMX_ASSIGN_OR_RETURN(s.test, ReadRatingsFile(config.test_path));
    s.train.cols = s.test.cols = std::max(s.train.cols, s.test.cols);
    return s;
  }
  const int64_t n = s.train.rows;
  if (n < 2) {
    return Status::InvalidArgument(config.path + ": " + std::to_string(n) +
                                   " rating; need at least 2 to split off a test set (or give data.test_path)");
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  Rng rng(0x7a71e5);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
  const int64_t n_test =
      std::clamp<int64_t>(std::llround(config.test_fraction * static_cast<double>(n)), 1, n - 1);
  std::vector<int64_t> test(order.begin(), order.begin() + n_test), train(order.begin() + n_test, order.end());
  std::sort(test.begin(), test.end());
  std::sort(train.begin(), train.end());
  Table all = std::move(s.train);
  s.train = all.Select(train);
  s.test = all.Select(test);
  s.test.cols = s.train.cols = all.cols;
  return s;
}

double RatingsTruth::Expected(int64_t user, int64_t item) const {
  double v = mean + user_bias[static_cast<size_t>(user)] + item_bias[static_cast<size_t>(item)];
  for (int64_t k = 0; k < rank; ++k) {
    v += p[static_cast<size_t>(user * rank + k)] * q[static_cast<size_t>(item * rank + k)];
  }
  return v;
}

RatingsTruth MakeRatingsTruth(int64_t users, int64_t items, int64_t rank, uint64_t seed) {
  Rng rng(seed ^ 0x3f4a7c15);
  RatingsTruth t;
  t.users = users;
  t.items = items;
  t.rank = rank;
  const double s = 1.0 / std::sqrt(std::sqrt(static_cast<double>(rank)));
  t.user_bias.resize(static_cast<size_t>(users));
  t.item_bias.resize(static_cast<size_t>(items));
  for (auto& b : t.user_bias) b = 0.3 * rng.Normal();
  for (auto& b : t.item_bias) b = 0.5 * rng.Normal();
  t.p.resize(static_cast<size_t>(users * rank));
  t.q.resize(static_cast<size_t>(items * rank));
  for (auto& v : t.p) v = s * rng.Normal();
  for (auto& v : t.q) v = s * rng.Normal();
  return t;
}

Table GenerateRatings(const RatingsTruth& truth, int64_t rows, Rng* rng) {
  std::vector<int64_t> users(static_cast<size_t>(rows)), items(static_cast<size_t>(rows));
  std::vector<float> ratings(static_cast<size_t>(rows));
  for (size_t k = 0; k < users.size(); ++k) {
    users[k] = static_cast<int64_t>(rng->Below(static_cast<uint64_t>(truth.users)));
    items[k] = static_cast<int64_t>(rng->Below(static_cast<uint64_t>(truth.items)));
    ratings[k] = static_cast<float>(truth.Expected(users[k], items[k]) + truth.sigma * rng->Normal());
  }
  Table t = RatingsTable(users, items, ratings, "ratings-synthetic");
  t.cols = 2 * std::max(truth.users, truth.items);  // every id the generator can draw, in both splits
  return t;
}

Result<TableSplits> OpenRatingsSynthetic(const DataConfig& config) {
  int64_t users = 1000, items = 500, rank = 4;
  const std::vector<int64_t>& shape = config.synthetic_shape;
  if (shape != std::vector<int64_t>{1, 8, 8}) {
    if (shape.size() != 3 || shape[0] < 1 || shape[1] < 1 || shape[0] >= kMaxRatingId || shape[1] >= kMaxRatingId ||
        shape[2] < 1 || shape[2] > 256) {
      return Status::InvalidArgument("data.synthetic_shape: ratings-synthetic takes [users, items, rank] with 1.." +
                                     std::to_string(kMaxRatingId - 1) + " users and items and rank 1..256");
    }
    users = shape[0];
    items = shape[1];
    rank = shape[2];
  }
  const RatingsTruth truth = MakeRatingsTruth(users, items, rank, config.synthetic_seed);
  Rng rng(config.synthetic_seed);
  TableSplits s;
  s.train = GenerateRatings(truth, config.synthetic_train, &rng);
  s.test = GenerateRatings(truth, config.synthetic_test, &rng);
  return s;
}

}  // namespace geomx::data
