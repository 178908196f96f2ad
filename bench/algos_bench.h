// `geomx bench algos`: the classical estimators (algorithms/estimators/) side by side with scikit-learn (and through
// it LIBLINEAR and LIBSVM) and XGBoost on the same tables, in the same run (docs/benchmarks.md).
//
// For each case of a fixed list (AlgosCases()): the data is opened once in geomx (OpenTable, with the case's column
// scaling - standardised, or none for the tree ensembles - and its fixed-seed subsample), the exact train/test
// tables are written to a temporary folder (WriteBenchTable), the geomx estimator is fitted and predicts in this
// process (Fit and Predict timed alone), then the peer bench/peers/sklearn_algos.py (scikit-learn; XGBoost's own
// API for the xgboost case) runs as a subprocess on the same files with the same hyper-parameters and thread
// count and prints one JSON line (fit_seconds, predict_seconds, metrics). The table shows both metrics, both times
// and the ratios peer / geomx (>= 1 means geomx is at least as fast). No thresholds: numbers are reported, never
// asserted.
//
// A case whose estimator is not registered in this binary is reported as "not in this build" and skipped. Without a
// usable peer (python3 without numpy/scipy/sklearn) the command stops before any work with kFailedPrecondition
// naming the Debian package (exit 2), unless --no-peer.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "datasets/table.h"
#include "engine/base/status.h"

namespace geomx::bench {

struct BenchAlgosFlags {
  std::vector<std::string> only;         // case names (AlgosCaseNames()); empty = every case
  int threads = 2;                       // geomx compute threads; the peer gets the same (n_jobs, OMP/BLAS threads)
  std::string json_out;                  // --out: also write everything as JSON here
  bool quick = false;                    // small variants of every case (for tests and a smoke check)
  std::string python = "/usr/bin/python3";  // Debian's, with python3-sklearn
  std::string peer_script;               // default: bench/peers/sklearn_algos.py found from the binary's location
  bool skip_peer = false;                // --no-peer: geomx only
  std::string data_path = "auto";        // Fashion-MNIST folder (data.path semantics; auto = well-known places)
  std::string keep_data;                 // when set, the tables are written under this folder and kept
};

// One comparison. The geomx side is `estimator` with `params` (the registry's parameter names); the peer's side is
// the same case name in sklearn_algos.py, with the same hyper-parameters (keep both in step; the xgboost and gbdt
// cases also match recipes/xgboost.yaml and recipes/gbdt.yaml, which a test checks).
struct AlgosCase {
  std::string name;       // also the peer's --case
  std::string estimator;  // registry name (EstimatorRegistry::Find)
  std::map<std::string, std::string> params;
  std::string data;        // fashion-mnist | friedman1 | letor-synthetic
  std::string scale = "standard";  // column scaling fitted on the training split, data.scale's words: standard, or
                                   // none (the tree cases: raw normalised pixels, as their recipes)
  int64_t train_rows = 0;  // fashion-mnist: fixed-seed subsample of the training split (0 = all 60,000);
                           // friedman1 / letor-synthetic: rows generated (letor: 20 per query)
  int64_t test_rows = 0;   // the same for the test split (fashion-mnist: 0 = all 10,000)
  int64_t quick_train_rows = 0;  // --quick
  int64_t quick_test_rows = 0;
  std::vector<std::string> metrics;  // shown in the table, in this order (both sides report them)
  bool fit_matters = true;           // the fit ratio is shown (knn: fit only stores the rows)
  bool predict_matters = false;      // the predict ratio is shown (both ratios are in the JSON for every case)
  std::string peer;                  // what the peer runs, one line for the table's notes and the docs
};

// The fixed list, in the order they run.
const std::vector<AlgosCase>& AlgosCases();
std::vector<std::string> AlgosCaseNames();

// The cases `only` names (all when empty), in AlgosCases() order. kInvalidArgument for an unknown name, with a
// did-you-mean when one is close, listing the valid names.
Result<std::vector<const AlgosCase*>> SelectAlgosCases(const std::vector<std::string>& only);

// Writes `table` for the peer: little-endian, 64-byte header = magic "GXTBL001" then seven int64 (rows, cols,
// num_classes, has_labels, has_targets, has_qids, 0), then float32 features rows x cols row-major (a sparse table is
// written densely), int32 labels, float32 targets, int64 qids (each only when the table has them), every section
// padded with zero bytes to a multiple of 8. kInvalidArgument when it cannot be written.
Status WriteBenchTable(const data::Table& table, const std::string& path);

// The command. `interrupted` (may be null) stops the current fit or peer (Ctrl-C): kCancelled.
Status RunBenchAlgosCommand(const BenchAlgosFlags& flags, const std::atomic<bool>* interrupted);

}  // namespace geomx::bench
