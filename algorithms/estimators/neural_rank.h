// The neural rankers ranknet and listnet (neural_rank.cc; docs/algorithms.md#ranknet, #listnet): an MLP scores each
// document, and the per-query losses below train it by mini-batches of whole queries. This header holds the losses
// (pure functions, the test seams of tests/algorithms/estimators/neural_rank_test.cc) and the whole-objective test
// hook; the estimators themselves register by name (GEOMX_REGISTER_ESTIMATOR) and have no other interface.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "datasets/table.h"

namespace geomx::algorithms {

// RankNet (Burges et al., ICML 2005) on one query: the sum over the pairs (i, j) with relevance_i > relevance_j of
// w_ij log(1 + exp(-sigma (s_i - s_j))), w_ij the mean of the two rows' weights (`row_weights` empty: 1 each).
// Writes d loss / d s_i into grad (same size as scores), returns the loss and puts the sum of the w_ij (the
// normaliser: the fit minimises the weighted mean pair loss) into *weight. A query without two relevance levels
// gives 0, a zero gradient and weight 0.
double RankNetQueryLoss(std::span<const double> scores, std::span<const float> relevance,
                        std::span<const float> row_weights, double sigma, std::span<double> grad, double* weight);

// ListNet (Cao et al., ICML 2007) on one query: w_q times the cross-entropy -sum_i P_y(i) log P_s(i) between the
// top-one probabilities of the targets, P_y = softmax(relevance) (`gains` false) or softmax(2^relevance - 1)
// (`gains` true), and of the scores, P_s = softmax(s). d loss / d s_i = w_q (P_s(i) - P_y(i)) into grad; *weight =
// w_q (the fit minimises the weighted mean query loss). A query whose relevance is constant gives 0, a zero gradient
// and weight 0 (it says nothing about the order).
double ListNetQueryLoss(std::span<const double> scores, std::span<const float> relevance, double query_weight,
                        bool gains, std::span<double> grad, double* weight);

// Test hook: the objective the fit of `name` ("ranknet" or "listnet") with `params` minimises on `table` taken as one
// batch (the weighted mean of the queries' losses) at the flat parameter vector `theta` (the layout of the model
// file's "<name>.params" section), and its gradient with respect to theta into *grad. One process.
double NeuralRankObjectiveForTesting(const std::string& name, const std::map<std::string, std::string>& params,
                                     const data::Table& table, const std::vector<float>& theta,
                                     std::vector<double>* grad);

}  // namespace geomx::algorithms
