// Ratings: `user item rating` data for matrix factorisation (algorithm `mf`), as data::Table.
//
// Representation (docs/data_formats.md "ratings"): one row per rating, sparse, with two entries of value 1: column
// 2u (the indicator of user u) and column 2i + 1 (the indicator of item i). The columns are the one-hot design
// matrix of users and items (libFM's layout) with the two kinds interleaved, so the table says by itself how many
// users and items it can hold: cols = 2 * max(users, items), where users = largest user id + 1 and items = largest
// item id + 1. The rating is the regression target; the user id is also the row's qid, so that sharding across
// workers (algorithms/estimators/fit_job.h ShardOf) keeps every user's ratings on one worker.
//
// Files (data.name: ratings): one rating per line, `user item rating [timestamp]`, the fields separated by spaces,
// tabs, commas or `::` (MovieLens 100k u.data, ml-1m ratings.dat, ml-latest ratings.csv with its header line).
// Ids are non-negative integers below kMaxRatingId; ratings finite numbers; the timestamp, when present, a number
// (ignored). Blank lines and lines starting with '#' are skipped; a first line whose first field starts with a
// letter is a header. Anything else is an error naming the file and line.
//
// Generator (data.name: ratings-synthetic): rating = mu + b_u + b_i + <p_u, q_i> + N(0, sigma^2) with known
// factors (RatingsTruth), so the best test RMSE any model can reach is sigma (kRatingsNoiseSd).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/data_config.h"
#include "datasets/table.h"
#include "engine/base/rng.h"
#include "engine/base/status.h"

namespace geomx::data {

// Ids must be below this (2^24): the item table of a model has one row per id, and ids stay exact in float.
inline constexpr int64_t kMaxRatingId = int64_t{1} << 24;
// The generator's noise standard deviation: the noise floor of ratings-synthetic.
inline constexpr double kRatingsNoiseSd = 0.3;

// The table of ratings (user[k], item[k]) -> rating[k] (ratings may be empty: an unrated table, no targets).
// Every id must be in [0, kMaxRatingId).
Table RatingsTable(const std::vector<int64_t>& users, const std::vector<int64_t>& items,
                   const std::vector<float>& ratings, const std::string& source);

// The user and item of row `i` of a ratings table; false when the row is not two entries, one even column and one
// odd (not a ratings table).
bool RatingOfRow(const Table& t, int64_t i, int64_t* user, int64_t* item);

struct RatingsReadOptions {
  // Accept lines `user item` without a rating (geomx predict input); then no line may have one and the table has
  // no targets.
  bool allow_unrated = false;
};

// Reads a ratings file (gzip or plain). kInvalidArgument "path:line: ..." for a malformed line, kInvalidArgument
// for a file without ratings, plus ReadDataFile's errors.
Result<Table> ReadRatingsFile(const std::string& path, const RatingsReadOptions& options = {});

// Train and test tables of data.name ratings: data.path, and data.test_path or a fixed-seed test_fraction split of
// the ratings.
Result<TableSplits> OpenRatings(const DataConfig& config);

// The known factors of ratings-synthetic.
struct RatingsTruth {
  int64_t users = 0, items = 0, rank = 0;
  double mean = 3.5;
  std::vector<double> user_bias, item_bias;  // users, items
  std::vector<double> p, q;                  // users x rank, items x rank (row-major)
  double sigma = kRatingsNoiseSd;
  // mu + b_u + b_i + <p_u, q_i> (no noise).
  double Expected(int64_t user, int64_t item) const;
};

// The factors for a seed: b_u ~ N(0, 0.3^2), b_i ~ N(0, 0.5^2), p and q entries ~ N(0, 1 / sqrt(rank)) (so that
// <p_u, q_i> has variance 1).
RatingsTruth MakeRatingsTruth(int64_t users, int64_t items, int64_t rank, uint64_t seed);
// `rows` ratings of uniformly drawn (user, item) pairs, each Expected() + N(0, sigma^2).
Table GenerateRatings(const RatingsTruth& truth, int64_t rows, Rng* rng);
// ratings-synthetic from the config: synthetic_shape [users, items, rank] (the image default [1, 8, 8] means
// [1000, 500, 4]), synthetic_train / synthetic_test ratings, synthetic_seed.
Result<TableSplits> OpenRatingsSynthetic(const DataConfig& config);

}  // namespace geomx::data
