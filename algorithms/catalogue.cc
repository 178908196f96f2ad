#include "algorithms/catalogue.h"

#include "algorithms/estimators/estimator.h"

namespace geomx::algorithms {

namespace {

// Which registered estimators implement a catalogue entry.
std::vector<std::string> EstimatorsOf(const std::string& id) {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kMap = {
      {"logreg", {"logreg"}}, {"svm", {"svm", "linear-svm"}}, {"svr", {"svr", "linear-svr"}},
      {"ranksvm", {"ranksvm"}}, {"knn", {"knn"}}, {"kmeans", {"kmeans"}}, {"ftml", {"ftml"}}, {"ftrl", {"ftrl"}},
      {"gbdt", {"gbdt", "gbdt-regressor"}}, {"random-forest", {"random-forest", "random-forest-regressor"}},
      {"xgboost", {"xgboost", "xgboost-regressor", "xgboost-ranker"}},
      {"ranknet", {"ranknet"}}, {"listnet", {"listnet"}},
      {"gbrank", {"gbrank"}}, {"lambdamart", {"lambdamart"}}, {"rankboost", {"rankboost"}},
      {"adarank", {"adarank"}}, {"mf", {"mf"}}, {"rcnn", {"rcnn"}}, {"gan", {"gan"}},
      {"rl", {"rl"}}};
  std::vector<std::string> out;
  for (const auto& [entry, names] : kMap) {
    if (entry != id) continue;
    for (const std::string& n : names) {
      if (EstimatorRegistry::Find(n) != nullptr) out.push_back(n);
    }
  }
  return out;
}

std::vector<AlgorithmInfo> Build() {
  std::vector<AlgorithmInfo> kCatalogue = {
      {1, "gradient-descent", "cnn", "Convolutional Neural Network",
       "push per-layer gradients, pull weights (sum)", "model: {name: geomx-cnn} (also lenet5, resnet20)", true},
      {2, "gradient-descent", "rnn", "Recurrent Neural Network (LSTM, GRU)", "push gradients, pull weights (sum)",
       "model: {name: rnn} (recipes/fashion_rnn.yaml)", true},
      {3, "gradient-descent", "rl", "Reinforcement Learning (policy gradient)", "actors push policy gradients", "",
       false},
      {4, "gradient-descent", "rcnn", "Regions with CNN features", "push trunk and head gradients", "", false},
      {5, "gradient-descent", "mf", "Matrix Factorization", "row-sparse item factors", "", false},
      {6, "gradient-descent", "gan", "Generative Adversarial Network", "G and D as separate key ranges", "", false},
      {7, "gradient-descent", "logreg", "Logistic Regression", "push gradients, pull weights (sum)", "", false},
      {8, "gradient-descent", "ranknet", "RankNet", "queries sharded whole; push gradients", "", false},
      {9, "gradient-descent", "listnet", "ListNet", "queries sharded whole; push gradients", "", false},
      {10, "ensemble", "gbdt", "Gradient Boosting Decision Tree", "grad/hess histograms (sum), split broadcast", "",
       false},
      {11, "ensemble", "xgboost", "XGBoost", "second-order histograms (sum)", "", false},
      {12, "ensemble", "random-forest", "Random Forest", "serialized trees (concat)", "", false},
      {13, "ensemble", "gbrank", "GBrank", "histograms of pair targets (sum)", "", false},
      {14, "ensemble", "lambdamart", "LambdaMART", "lambda histograms (sum)", "", false},
      {15, "ensemble", "rankboost", "RankBoost", "weighted r sums (sum), weak ranker broadcast", "", false},
      {16, "ensemble", "adarank", "AdaRank", "per-feature query sums (sum)", "", false},
      {17, "support-vector", "svm", "Support Vector Machine", "CoCoA delta-w (sum) or support vectors (concat)",
       "", false},
      {18, "support-vector", "svr", "Support Vector Regression", "as SVM", "", false},
      {19, "support-vector", "ranksvm", "RankSVM", "pairwise gradients (sum)", "", false},
      {20, "mapreduce", "knn", "k-Nearest Neighbor", "local top-k per query (top-k merge)", "", false},
      {21, "mapreduce", "kmeans", "KMeans", "per-cluster sums and counts (sum)", "", false},
      {22, "online", "ftml", "Follow the Moving Leader", "server-side FTML update", "", false},
      {23, "online", "ftrl", "Follow the Regularized Leader", "row-sparse gradients, server-side FTRL", "", false},
      {24, "incremental", "feature-extraction", "Feature Extraction", "only head gradients cross the network",
       "model: {init_from: RUN, freeze: 3} (recipes/feature_extraction.yaml)", true},
      {25, "incremental", "fine-tune", "Fine Tune", "gradients of unfrozen keys",
       "model: {init_from: RUN, freeze: 2}, a lower lr (recipes/fine_tune.yaml)", true},
  };
  for (AlgorithmInfo& a : kCatalogue) {
    a.estimators = EstimatorsOf(a.id);
    if (a.estimators.empty()) continue;
    a.available = true;
    a.recipe = "algorithm: {name: " + a.estimators[0] + "}";
    for (size_t i = 1; i < a.estimators.size(); ++i) a.recipe += " (also " + a.estimators[i] + ")";
  }
  return kCatalogue;
}

}  // namespace

const std::vector<AlgorithmInfo>& Catalogue() {
  static const std::vector<AlgorithmInfo> catalogue = Build();
  return catalogue;
}

}  // namespace geomx::algorithms
