// `geomx bench algos` (algos_bench.h): the case list, the table writer for the peer, the geomx side in process, the
// scikit-learn peer as a subprocess, the table and the JSON.
#include "bench/algos_bench.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <string_view>
#include <thread>
#include <utility>

#include "algorithms/estimators/estimator.h"
#include "cli/json_writer.h"
#include "cli/launcher.h"
#include "engine/backend_registry.h"
#include "engine/base/check.h"
#include "engine/base/closest_name.h"
#include "engine/base/rng.h"

namespace geomx::bench {
namespace fs = std::filesystem;
using cli::JsonObject;

static_assert(std::endian::native == std::endian::little, "WriteBenchTable writes the host's byte order");

namespace {

constexpr char kMagic[8] = {'G', 'X', 'T', 'B', 'L', '0', '0', '1'};
constexpr char kInstallHint[] =
    "install Debian's python3-sklearn (apt-get install python3-sklearn python3-numpy python3-scipy; "
    "scripts/install-deps.sh --bench), give another interpreter with --python, or measure geomx alone with "
    "--no-peer";
constexpr int64_t kLetorFeatures = 46;  // as LETOR 4.0 (MQ2007/MQ2008)

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string JoinNames(const std::vector<std::string>& names, const char* sep = ", ") {
  std::string s;
  for (const std::string& n : names) s.append(s.empty() ? "" : sep).append(n);
  return s;
}

// ---- the binary table file ----

class Writer {
 public:
  explicit Writer(const std::string& path) : out_(path, std::ios::binary | std::ios::trunc) {}
  bool ok() const { return static_cast<bool>(out_); }
  void Bytes(const void* p, size_t n) {
    out_.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
    written_ += n;
  }
  void Pad() {
    static constexpr char kZeros[8] = {};
    Bytes(kZeros, (8 - written_ % 8) % 8);
  }
  template <typename T>
  void Section(const std::vector<T>& v) {
    Bytes(v.data(), v.size() * sizeof(T));
    Pad();
  }
  bool Close() {
    out_.close();
    return !out_.fail();
  }

 private:
  std::ofstream out_;
  size_t written_ = 0;
};

// ---- the peer's JSON line (our own format: flat numbers and one nested "metrics" object) ----

// The number after "key": in `text` from `from`, or NaN.
double JsonNumber(std::string_view text, const std::string& key, size_t from = 0) {
  const std::string needle = "\"" + key + "\": ";
  const size_t at = text.find(needle, from);
  if (at == std::string_view::npos) return std::nan("");
  const std::string rest(text.substr(at + needle.size(), 40));
  char* end = nullptr;
  const double v = std::strtod(rest.c_str(), &end);
  return end == rest.c_str() ? std::nan("") : v;
}

std::string JsonString(std::string_view text, const std::string& key) {
  const std::string needle = "\"" + key + "\": \"";
  const size_t at = text.find(needle);
  if (at == std::string_view::npos) return "";
  std::string out;
  for (size_t i = at + needle.size(); i < text.size() && text[i] != '"'; ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) ++i;
    out += text[i];
  }
  return out;
}

// ---- one case's outcome ----

struct SideResult {
  bool ran = false;
  std::string error;  // why it did not run (empty when it ran)
  double fit_seconds = 0;
  double predict_seconds = 0;
  std::map<std::string, double> metrics;
  std::string raw_json;  // the peer's line
  std::string what;      // peer: its estimator and parameters
};

struct CaseResult {
  const AlgosCase* c = nullptr;
  std::string status = "ok";  // ok | not in this build | failed
  std::string reason;
  int64_t train_rows = 0, test_rows = 0, cols = 0;
  std::map<std::string, std::string> params;  // given to geomx
  std::vector<std::string> notes;
  SideResult geomx, peer;
};

fs::path FindPeerScript() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path dir = self.parent_path(); !dir.empty() && dir != dir.parent_path(); dir = dir.parent_path()) {
    if (fs::exists(dir / "bench/peers/sklearn_algos.py")) return dir / "bench/peers/sklearn_algos.py";
  }
  return fs::path("bench/peers/sklearn_algos.py");
}

std::string Tail(const std::string& s, size_t n = 600) { return s.size() > n ? "..." + s.substr(s.size() - n) : s; }

// Runs `python script --check`: OK, or kFailedPrecondition naming what is missing and the package to install.
Result<std::string> CheckPeer(const BenchAlgosFlags& f, const std::string& script,
                              const std::atomic<bool>* interrupted) {
  if (!fs::exists(script)) {
    return Status::FailedPrecondition("the scikit-learn peer script is missing: " + script +
                                      " (run from the source tree, or give --peer-script)");
  }
  Result<std::string> r = cli::RunAndCapture({f.python, script, "--check"}, interrupted);
  if (!r.ok() && r.status().code() == StatusCode::kCancelled) return r.status();
  if (!r.ok()) {
    const std::string why = r.status().message();
    const std::string missing = JsonString(why, "missing");
    std::string detail;
    if (!missing.empty()) {
      detail = "no Python module '" + missing + "'";
    } else if (why.find("cannot execute") != std::string::npos) {
      detail = "cannot execute it";
    } else {
      detail = Tail(why, 300);
      std::replace(detail.begin(), detail.end(), '\n', ' ');
    }
    return Status::FailedPrecondition("the scikit-learn peer cannot run with " + f.python + " (" + detail + "): " +
                                      kInstallHint);
  }
  return *r;
}

// The peer's environment: its BLAS and OpenMP pools sized like geomx's threads.
std::vector<std::string> PeerCommand(const BenchAlgosFlags& f, const std::string& script, const std::string& name,
                                     const fs::path& dir) {
  const std::string t = std::to_string(f.threads);
  return {"env",        "OMP_NUM_THREADS=" + t, "OPENBLAS_NUM_THREADS=" + t, "MKL_NUM_THREADS=" + t,
          f.python,     script,                 "--case",                   name,
          "--data",     dir.string(),           "--threads",                t};
}

void RunPeer(const BenchAlgosFlags& f, const std::string& script, const AlgosCase& c, const fs::path& dir,
             const std::atomic<bool>* interrupted, SideResult* out) {
  Result<std::string> r = cli::RunAndCapture(PeerCommand(f, script, c.name, dir), interrupted);
  if (!r.ok()) {
    out->error = r.status().code() == StatusCode::kCancelled ? "interrupted" : Tail(r.status().message());
    return;
  }
  // The last line that is our JSON object (warnings may precede it).
  std::string_view all = *r;
  std::string line;
  while (!all.empty()) {
    const size_t nl = all.find('\n');
    const std::string_view l = all.substr(0, nl);
    if (!l.empty() && l.front() == '{' && l.find("\"fit_seconds\"") != std::string_view::npos) line = l;
    all.remove_prefix(nl == std::string_view::npos ? all.size() : nl + 1);
  }
  if (line.empty()) {
    out->error = "no result line from the peer: " + Tail(*r);
    return;
  }
  out->raw_json = line;
  out->fit_seconds = JsonNumber(line, "fit_seconds");
  out->predict_seconds = JsonNumber(line, "predict_seconds");
  out->what = JsonString(line, "peer");
  const size_t m = line.find("\"metrics\": {");
  for (const std::string& name : c.metrics) {
    const double v = m == std::string::npos ? std::nan("") : JsonNumber(line, name, m);
    if (std::isfinite(v)) out->metrics[name] = v;
  }
  out->ran = std::isfinite(out->fit_seconds) && std::isfinite(out->predict_seconds);
  if (!out->ran) out->error = "unreadable result line: " + Tail(line);
}

// The case's tables as geomx uses them: OpenTable with the case's options, then the test subsample.
Result<data::TableSplits> PrepareTables(const AlgosCase& c, const BenchAlgosFlags& f, data::TableTask task) {
  const int64_t train_rows = f.quick ? c.quick_train_rows : c.train_rows;
  const int64_t test_rows = f.quick ? c.quick_test_rows : c.test_rows;
  data::DataConfig config;
  config.name = c.data;
  config.scale = c.scale;
  data::TableOptions options;
  options.task = task;
  const bool known_scale = data::ParseScaleKind(c.scale, &options.scale);
  GEOMX_CHECK(known_scale) << c.name << ": scale '" << c.scale << "'";
  options.seed = 42;
  if (c.data == "fashion-mnist") {
    config.path = f.data_path;
    options.max_train_rows = train_rows;
  } else {
    config.synthetic_train = train_rows;
    config.synthetic_test = test_rows;  // synthetic_seed: the default, as recipes/svr.yaml and ranksvm.yaml
    if (c.data == "letor-synthetic") config.synthetic_shape = {kLetorFeatures};
  }
  GEOMX_ASSIGN_OR_RETURN(data::TableSplits splits, data::OpenTable(config, options));
  if (c.data == "fashion-mnist" && test_rows > 0 && splits.test.rows > test_rows) {
    // A fixed-seed subsample of the test split, kept in file order.
    std::vector<int64_t> index(static_cast<size_t>(splits.test.rows));
    std::iota(index.begin(), index.end(), 0);
    Rng rng(0x7e57);
    for (size_t i = 0; i < static_cast<size_t>(test_rows); ++i) {
      std::swap(index[i], index[i + rng.Below(index.size() - i)]);
    }
    index.resize(static_cast<size_t>(test_rows));
    std::sort(index.begin(), index.end());
    splits.test = splits.test.Select(index);
  }
  if (splits.train.sparse) splits.train = splits.train.ToDense();
  if (splits.test.sparse) splits.test = splits.test.ToDense();
  return splits;
}

// The geomx side: create, fit (timed alone), predict (timed alone), evaluate.
Status RunGeomx(const AlgosCase& c, const algorithms::EstimatorDef& def, const std::map<std::string, std::string>& p,
                const data::TableSplits& splits, int threads, const std::atomic<bool>* interrupted,
                SideResult* out) {
  GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<algorithms::Estimator> est, algorithms::CreateEstimator(c.estimator, p));
  BackendFor(DeviceKind::kCpu).SetNumThreads(threads);
  algorithms::FitContext context;
  context.threads = threads;
  context.seed = 42;
  context.interrupted = interrupted;
  const auto t0 = std::chrono::steady_clock::now();
  GEOMX_RETURN_IF_ERROR(est->Fit(splits.train, context));
  out->fit_seconds = SecondsSince(t0);
  const auto t1 = std::chrono::steady_clock::now();
  GEOMX_ASSIGN_OR_RETURN(algorithms::Prediction pred, est->Predict(splits.test, threads));
  out->predict_seconds = SecondsSince(t1);
  algorithms::Metrics m = algorithms::EvaluateTask(def.task, splits.test, pred);
  for (algorithms::Metric& x : est->ModelMetrics(splits.test, pred)) m.push_back(std::move(x));
  for (const algorithms::Metric& x : m) out->metrics[x.name] = x.value;
  out->ran = true;
  return Status::Ok();
}

// ---- output ----

std::string Fixed(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Seconds(double s) { return !std::isfinite(s) ? "-" : Fixed(s, s < 0.01 ? 4 : (s < 10 ? 3 : 1)); }

std::string MetricsText(const SideResult& s, const AlgosCase& c) {
  if (!s.ran) return "-";
  std::string out;
  for (const std::string& m : c.metrics) {
    const auto it = s.metrics.find(m);
    out.append(out.empty() ? "" : "/").append(it == s.metrics.end() ? "-" : Fixed(it->second, 4));
  }
  return out;
}

double Ratio(double peer, double ours) { return ours > 0 && peer > 0 ? peer / ours : std::nan(""); }

std::string RatioText(double r) { return std::isfinite(r) ? Fixed(r, 2) + "x" : "-"; }

JsonObject SideJson(const SideResult& s) {
  JsonObject j;
  j.Add("ran", s.ran);
  if (!s.ran) {
    j.Add("error", s.error);
    return j;
  }
  j.Add("fit_seconds", s.fit_seconds).Add("predict_seconds", s.predict_seconds);
  JsonObject m;
  for (const auto& [name, v] : s.metrics) m.Add(name, v);
  j.Add("metrics", m);
  if (!s.what.empty()) j.Add("what", s.what);
  if (!s.raw_json.empty()) j.AddRaw("output", s.raw_json);
  return j;
}

std::string CaseJson(const CaseResult& r, bool quick) {
  const AlgosCase& c = *r.c;
  JsonObject j;
  j.Add("case", c.name).Add("status", r.status);
  if (!r.reason.empty()) j.Add("reason", r.reason);
  j.Add("estimator", c.estimator);
  JsonObject params;
  for (const auto& [k, v] : r.params) params.Add(k, v);
  j.Add("params", params);
  j.Add("data", c.data).Add("scale", c.scale).Add("quick", quick);
  j.Add("train_rows", r.train_rows).Add("test_rows", r.test_rows).Add("cols", r.cols);
  std::string metrics;
  for (const std::string& m : c.metrics) metrics.append(metrics.empty() ? "" : ", ").append(cli::JsonEscape(m));
  j.AddRaw("metrics", "[" + metrics + "]");
  j.Add("peer_description", c.peer);
  if (r.status == "ok") {
    j.Add("geomx", SideJson(r.geomx)).Add("peer", SideJson(r.peer));
    if (r.geomx.ran && r.peer.ran) {
      j.Add("fit_ratio", Ratio(r.peer.fit_seconds, r.geomx.fit_seconds));
      j.Add("predict_ratio", Ratio(r.peer.predict_seconds, r.geomx.predict_seconds));
    }
  }
  std::string notes;
  for (const std::string& n : r.notes) notes.append(notes.empty() ? "" : ", ").append(cli::JsonEscape(n));
  j.AddRaw("notes", "[" + notes + "]");
  return j.str();
}

void PrintTable(const std::vector<CaseResult>& results) {
  std::printf("\n%-11s %-12s %-15s %-15s %10s %10s %7s %10s %10s %7s\n", "case", "metric", "geomx", "peer",
              "geomx fit", "peer fit", "fit x", "geomx pred", "peer pred", "pred x");
  for (const CaseResult& r : results) {
    const AlgosCase& c = *r.c;
    if (r.status != "ok") {
      std::printf("%-11s %s%s%s\n", c.name.c_str(), r.status.c_str(), r.reason.empty() ? "" : ": ",
                  r.reason.c_str());
      continue;
    }
    const bool both = r.geomx.ran && r.peer.ran;
    std::printf("%-11s %-12s %-15s %-15s %10s %10s %7s %10s %10s %7s\n", c.name.c_str(),
                JoinNames(c.metrics, "/").c_str(), MetricsText(r.geomx, c).c_str(), MetricsText(r.peer, c).c_str(),
                r.geomx.ran ? Seconds(r.geomx.fit_seconds).c_str() : "-",
                r.peer.ran ? Seconds(r.peer.fit_seconds).c_str() : "-",
                both && c.fit_matters ? RatioText(Ratio(r.peer.fit_seconds, r.geomx.fit_seconds)).c_str() : "-",
                r.geomx.ran ? Seconds(r.geomx.predict_seconds).c_str() : "-",
                r.peer.ran ? Seconds(r.peer.predict_seconds).c_str() : "-",
                both && c.predict_matters ? RatioText(Ratio(r.peer.predict_seconds, r.geomx.predict_seconds)).c_str()
                                          : "-");
  }
  std::printf("\nTimes in seconds; x = peer / geomx (>= 1.00x: geomx at least as fast). Peers:\n");
  for (const CaseResult& r : results) {
    if (r.status != "ok") continue;
    std::printf("  %-11s %s\n", r.c->name.c_str(), r.peer.ran ? r.peer.what.c_str() : r.peer.error.c_str());
    if (!r.geomx.ran) std::printf("  %-11s geomx failed: %s\n", "", r.geomx.error.c_str());
    for (const std::string& n : r.notes) std::printf("  %-11s note: %s\n", "", n.c_str());
  }
}

// A folder for the tables: --keep-data's, or a fresh one under the temp dir (removed by the caller).
Result<fs::path> MakeDataDir(const BenchAlgosFlags& f) {
  std::error_code ec;
  if (!f.keep_data.empty()) {
    fs::create_directories(f.keep_data, ec);
    if (ec) return Status::InvalidArgument("--keep-data " + f.keep_data + ": " + ec.message());
    return fs::path(f.keep_data);
  }
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const fs::path p = fs::temp_directory_path(ec) / ("geomx-bench-algos-" + std::to_string(rd()));
    if (!ec && fs::create_directory(p, ec) && !ec) return p;
  }
  return Status::Internal("cannot create a temporary folder under " + fs::temp_directory_path(ec).string());
}

std::string CommandLine(const BenchAlgosFlags& f) {
  std::string s = "geomx bench algos";
  if (!f.only.empty()) s += " --only " + JoinNames(f.only, ",");
  s += " --threads " + std::to_string(f.threads);
  if (f.quick) s += " --quick";
  if (f.skip_peer) s += " --no-peer";
  if (!f.json_out.empty()) s += " --out " + f.json_out;
  return s;
}

}  // namespace

const std::vector<AlgosCase>& AlgosCases() {
  // Hyper-parameters: keep in step with run_case() in bench/peers/sklearn_algos.py.
  static const std::vector<AlgosCase> cases = {
      {.name = "logreg",
       .estimator = "logreg",
       .params = {{"penalty", "l2"}, {"C", "1"}, {"solver", "lbfgs"}, {"max_iter", "100"}, {"tol", "0.0001"}},
       .data = "fashion-mnist",
       .train_rows = 0,
       .test_rows = 0,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"accuracy"},
       .predict_matters = false,
       .peer = "LogisticRegression(C=1, penalty='l2', solver='lbfgs', max_iter=100, tol=1e-4): multinomial"},
      {.name = "linear-svm",
       .estimator = "linear-svm",
       .params = {{"C", "0.1"}, {"loss", "squared_hinge"}, {"tol", "0.1"}, {"max_iter", "1000"}},
       .data = "fashion-mnist",
       .train_rows = 0,
       .test_rows = 0,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"accuracy"},
       .predict_matters = false,
       .peer = "LinearSVC(C=0.1, loss='squared_hinge', dual=True, tol=0.1, max_iter=1000) = LIBLINEAR -s 1, OvR"},
      {.name = "svm",
       .estimator = "svm",
       .params = {{"C", "10"}, {"kernel", "rbf"}, {"gamma", "scale"}, {"tol", "0.001"}, {"cache_mb", "200"}},
       .data = "fashion-mnist",
       .train_rows = 10000,
       .test_rows = 0,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"accuracy"},
       .predict_matters = true,
       .peer = "SVC(C=10, kernel='rbf', gamma='scale', tol=1e-3, cache_size=200) = LIBSVM, one-vs-one"},
      {.name = "knn",
       .estimator = "knn",
       .params = {{"n_neighbors", "5"}, {"weights", "uniform"}, {"metric", "euclidean"}},
       .data = "fashion-mnist",
       .train_rows = 0,
       .test_rows = 0,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"accuracy"},
       .fit_matters = false,
       .predict_matters = true,
       .peer = "KNeighborsClassifier(n_neighbors=5, weights='uniform', algorithm='brute', n_jobs=threads)"},
      {.name = "kmeans",
       .estimator = "kmeans",
       .params = {{"n_clusters", "10"},
                  {"init", "k-means++"},
                  {"n_init", "1"},
                  {"max_iter", "300"},
                  {"tol", "0.0001"},
                  {"algorithm", "lloyd"}},
       .data = "fashion-mnist",
       .train_rows = 0,
       .test_rows = 0,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"purity", "nmi"},
       .predict_matters = true,
       .peer = "KMeans(n_clusters=10, init='k-means++', n_init=1, max_iter=300, tol=1e-4, algorithm='lloyd'); "
               "purity and NMI of the test split's assignments"},
      {.name = "ftrl",
       .estimator = "ftrl",
       .params = {{"alpha", "0.05"}, {"beta", "1"}, {"l1", "0"}, {"l2", "0"}, {"epochs", "1"}},
       .data = "fashion-mnist",
       .train_rows = 0,
       .test_rows = 0,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"accuracy"},
       .predict_matters = false,
       .peer = "SGDClassifier(loss='log_loss', alpha=1e-4, max_iter=1, shuffle=False): the nearest streaming peer "
               "(one pass, file order, OvR)"},
      {.name = "svr",
       .estimator = "svr",
       .params = {{"C", "10"}, {"epsilon", "0.1"}, {"kernel", "rbf"}, {"gamma", "scale"}, {"tol", "0.001"},
                  {"cache_mb", "200"}},
       .data = "friedman1",
       .train_rows = 2000,
       .test_rows = 1000,
       .quick_train_rows = 500,
       .quick_test_rows = 200,
       .metrics = {"r2"},
       .predict_matters = true,
       .peer = "SVR(C=10, epsilon=0.1, kernel='rbf', gamma='scale', tol=1e-3, cache_size=200) = LIBSVM -s 3"},
      {.name = "ranksvm",
       .estimator = "ranksvm",
       .params = {{"C", "0.1"}, {"loss", "squared_hinge"}, {"tol", "0.1"}, {"max_iter", "1000"}},
       .data = "letor-synthetic",
       .train_rows = 20000,
       .test_rows = 4000,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"ndcg@10"},
       .predict_matters = false,
       .peer = "LinearSVC(C=0.1, loss='squared_hinge', fit_intercept=False, tol=0.1) on the pairwise differences "
               "built in Python (pair building is in its fit time)"},
      // The tree ensembles: their recipes' settings (recipes/xgboost.yaml, recipes/gbdt.yaml; a test keeps them in
      // step) on the recipes' unscaled pixels - trees need no scaling, and quantile bins ignore it.
      {.name = "xgboost",
       .estimator = "xgboost",
       .params = {{"n_estimators", "100"},
                  {"max_depth", "6"},
                  {"eta", "0.3"},
                  {"max_bin", "256"},
                  {"objective", "multi:softprob"}},
       .data = "fashion-mnist",
       .scale = "none",
       .train_rows = 0,
       .test_rows = 0,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"accuracy"},
       .predict_matters = false,
       .peer = "XGBoost xgb.train(tree_method='hist', max_depth=6, eta=0.3, max_bin=256, objective='multi:softprob', "
               "nthread=threads, 100 rounds); DMatrix construction is in its fit time, predict is inplace_predict"},
      {.name = "gbdt",
       .estimator = "gbdt",
       .params = {{"max_iter", "100"},
                  {"learning_rate", "0.1"},
                  {"max_leaf_nodes", "31"},
                  {"min_samples_leaf", "20"},
                  {"max_bins", "255"},
                  {"l2_regularization", "0"}},
       .data = "fashion-mnist",
       .scale = "none",
       .train_rows = 0,
       .test_rows = 0,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"accuracy"},
       .predict_matters = false,
       .peer = "HistGradientBoostingClassifier(max_iter=100, learning_rate=0.1, max_leaf_nodes=31, "
               "min_samples_leaf=20, max_bins=255, l2_regularization=0, early_stopping=False)"},
      // LambdaMART against XGBoost's rank:ndcg with the same trees: 100 rounds, eta 0.1, depth 6 (64 leaves),
      // min_child_weight 1, L2 1, 256 bins, NDCG over the whole query (letor-synthetic queries hold 20 rows).
      {.name = "lambdamart",
       .estimator = "lambdamart",
       .params = {{"n_estimators", "100"},
                  {"learning_rate", "0.1"},
                  {"num_leaves", "64"},
                  {"max_depth", "6"},
                  {"min_child_weight", "1"},
                  {"lambda_l2", "1"},
                  {"lambdarank_truncation_level", "20"},
                  {"max_bin", "256"}},
       .data = "letor-synthetic",
       .scale = "none",
       .train_rows = 20000,
       .test_rows = 4000,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"ndcg@10", "map"},
       .predict_matters = false,
       .peer = "XGBoost xgb.train(objective='rank:ndcg', tree_method='hist', max_depth=6, eta=0.1, "
               "min_child_weight=1, lambda=1, max_bin=256, nthread=threads, 100 rounds) with the table's qids as "
               "groups; DMatrix construction is in its fit time"},
      // recipes/random_forest.yaml's settings (a test keeps them in step): sklearn's defaults, 100 full-depth trees.
      {.name = "random-forest",
       .estimator = "random-forest",
       .params = {{"n_estimators", "100"},
                  {"criterion", "gini"},
                  {"max_depth", "0"},
                  {"min_samples_split", "2"},
                  {"min_samples_leaf", "1"},
                  {"max_features", "sqrt"},
                  {"bootstrap", "true"},
                  {"max_bin", "256"}},
       .data = "fashion-mnist",
       .scale = "none",
       .train_rows = 0,
       .test_rows = 0,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"accuracy"},
       .predict_matters = false,
       .peer = "RandomForestClassifier(n_estimators=100, criterion='gini', max_depth=None, min_samples_split=2, "
               "min_samples_leaf=1, max_features='sqrt', bootstrap=True, n_jobs=threads); geomx bins features "
               "(256 quantile bins), scikit-learn splits on exact values"},
      // The boosted ranking ensembles against the best single feature (no library has RankBoost or AdaRank): the
      // peer scores with each feature and its negation, keeps the one of best training NDCG@10 and reports its
      // test NDCG@10 and MAP. Their recipes' settings (recipes/rankboost.yaml, adarank.yaml, gbrank.yaml).
      {.name = "rankboost",
       .estimator = "rankboost",
       .params = {{"n_estimators", "300"}, {"max_bin", "256"}},
       .data = "letor-synthetic",
       .scale = "none",
       .train_rows = 20000,
       .test_rows = 4000,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"ndcg@10", "map"},
       .predict_matters = false,
       .peer = "the best single feature: every feature and its negation scores the training rows, the one of best "
               "training NDCG@10 scores the test rows (bench/peers/sklearn_algos.py run_best_single_feature)"},
      {.name = "adarank",
       .estimator = "adarank",
       .params = {{"n_estimators", "500"}, {"metric", "ndcg"}, {"k", "10"}, {"normalize", "zscore"}},
       .data = "letor-synthetic",
       .scale = "none",
       .train_rows = 20000,
       .test_rows = 4000,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"ndcg@10", "map"},
       .predict_matters = false,
       .peer = "the best single feature by training NDCG@10 (both signs), as the rankboost row"},
      {.name = "gbrank",
       .estimator = "gbrank",
       .params = {{"n_estimators", "100"}, {"tau", "0.5"}, {"shrinkage", "1"}, {"max_depth", "4"},
                  {"trees_per_round", "10"}},
       .data = "letor-synthetic",
       .scale = "none",
       .train_rows = 20000,
       .test_rows = 4000,
       .quick_train_rows = 2000,
       .quick_test_rows = 500,
       .metrics = {"ndcg@10", "map"},
       .predict_matters = false,
       .peer = "the best single feature by training NDCG@10 (both signs), as the rankboost row"},
  };
  return cases;
}

std::vector<std::string> AlgosCaseNames() {
  std::vector<std::string> names;
  for (const AlgosCase& c : AlgosCases()) names.push_back(c.name);
  return names;
}

Result<std::vector<const AlgosCase*>> SelectAlgosCases(const std::vector<std::string>& only) {
  std::vector<const AlgosCase*> out;
  const std::vector<std::string> names = AlgosCaseNames();
  for (const std::string& n : only) {
    if (std::find(names.begin(), names.end(), n) == names.end()) {
      const std::string close = ClosestName(n, names);
      return Status::InvalidArgument("--only: unknown case '" + n + "'" +
                                     (close.empty() ? "" : " (did you mean '" + close + "'?)") +
                                     "; cases: " + JoinNames(names));
    }
  }
  for (const AlgosCase& c : AlgosCases()) {
    if (only.empty() || std::find(only.begin(), only.end(), c.name) != only.end()) out.push_back(&c);
  }
  return out;
}

Status WriteBenchTable(const data::Table& t, const std::string& path) {
  Writer w(path);
  if (!w.ok()) return Status::InvalidArgument(path + ": cannot create");
  const int64_t header[7] = {t.rows,
                             t.cols,
                             t.num_classes,
                             t.has_labels() ? 1 : 0,
                             t.has_targets() ? 1 : 0,
                             t.qids.empty() ? 0 : 1,
                             0};
  w.Bytes(kMagic, sizeof(kMagic));
  w.Bytes(header, sizeof(header));
  if (!t.sparse) {
    w.Bytes(t.dense.data(), t.dense.size() * sizeof(float));
  } else {
    std::vector<float> row(static_cast<size_t>(t.cols));
    for (int64_t i = 0; i < t.rows; ++i) {
      t.CopyRow(i, row.data());
      w.Bytes(row.data(), row.size() * sizeof(float));
    }
  }
  w.Pad();
  if (t.has_labels()) w.Section(t.labels);
  if (t.has_targets()) w.Section(t.targets);
  if (!t.qids.empty()) w.Section(t.qids);
  if (!w.Close()) return Status::InvalidArgument(path + ": write failed (disk full?)");
  return Status::Ok();
}

Status RunBenchAlgosCommand(const BenchAlgosFlags& f, const std::atomic<bool>* interrupted) {
  // 1. Everything that can be wrong with the command line, then the peer, before any work.
  if (f.threads < 1) return Status::InvalidArgument("--threads: must be >= 1, got " + std::to_string(f.threads));
  GEOMX_ASSIGN_OR_RETURN(std::vector<const AlgosCase*> cases, SelectAlgosCases(f.only));
  const std::string script = f.peer_script.empty() ? FindPeerScript().string() : f.peer_script;
  std::string peer_versions;
  if (!f.skip_peer) {
    GEOMX_ASSIGN_OR_RETURN(std::string check, CheckPeer(f, script, interrupted));
    peer_versions = check.substr(0, check.find('\n'));
  }
  GEOMX_ASSIGN_OR_RETURN(fs::path data_dir, MakeDataDir(f));
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } cleanup{f.keep_data.empty() ? data_dir : fs::path()};

  std::printf("geomx bench algos: %zu case(s), %d thread(s)%s; peer: %s\n", cases.size(), f.threads,
              f.quick ? ", quick variants" : "",
              f.skip_peer ? "none (--no-peer)" : (f.python + " " + script + " " + peer_versions).c_str());
  if (JsonString(peer_versions, "blas").starts_with("reference")) {
    std::printf("note: the peer's numpy runs on Netlib's reference BLAS (single-threaded, unoptimised), so its "
                "GEMM-bound cases (logreg, knn, kmeans) are far slower than with an optimised BLAS. For a fair "
                "comparison install libopenblas0-pthread, or point LD_LIBRARY_PATH at its openblas-pthread folder.\n");
  }
  std::fflush(stdout);

  // 2. The cases, one after the other.
  std::vector<CaseResult> results;
  int failed = 0;
  Status data_error;  // the first case whose data could not be opened (usually the user's: a missing data set)
  for (const AlgosCase* c : cases) {
    if (interrupted != nullptr && interrupted->load()) return Status::Cancelled("bench algos: interrupted");
    CaseResult r;
    r.c = c;
    const algorithms::EstimatorDef* def = algorithms::EstimatorRegistry::Find(c->estimator);
    if (def == nullptr) {
      r.status = "not in this build";
      r.reason = "estimator '" + c->estimator + "' is not registered in this binary";
      std::printf("[%s] not in this build: skipped\n", c->name.c_str());
      results.push_back(std::move(r));
      continue;
    }
    // Parameters this build's estimator does not declare are left out (and said so), not an error.
    for (const auto& [k, v] : c->params) {
      const bool known = std::any_of(def->params.begin(), def->params.end(),
                                     [&k = k](const algorithms::ParamSpec& s) { return s.name == k; });
      if (known) {
        r.params[k] = v;
      } else {
        r.notes.push_back("parameter " + k + "=" + v + " is not one of this build's " + c->estimator +
                          " parameters; left at its default");
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    Result<data::TableSplits> splits = PrepareTables(*c, f, def->task);
    if (!splits.ok()) {
      r.status = "failed";
      r.reason = "data: " + splits.status().message();
      std::printf("[%s] data failed: %s\n", c->name.c_str(), r.reason.c_str());
      if (data_error.ok()) data_error = Status(splits.status().code(), "bench algos: " + r.reason);
      results.push_back(std::move(r));
      continue;
    }
    r.train_rows = splits->train.rows;
    r.test_rows = splits->test.rows;
    r.cols = splits->train.cols;
    const fs::path dir = data_dir / c->name;
    std::error_code ec;
    fs::create_directories(dir, ec);
    Status written = WriteBenchTable(splits->train, (dir / "train.bin").string());
    if (written.ok()) written = WriteBenchTable(splits->test, (dir / "test.bin").string());
    if (!written.ok()) return written;
    std::printf("[%s] %s (scale %s): %lld train x %lld features, %lld test (prepared in %.1f s)\n",
                c->name.c_str(), c->data.c_str(), c->scale.c_str(), static_cast<long long>(r.train_rows),
                static_cast<long long>(r.cols), static_cast<long long>(r.test_rows), SecondsSince(t0));
    std::fflush(stdout);

    const Status ours = RunGeomx(*c, *def, r.params, *splits, f.threads, interrupted, &r.geomx);
    if (ours.code() == StatusCode::kCancelled) return ours;
    if (!ours.ok()) {
      r.geomx.error = ours.message();
      ++failed;
      std::printf("[%s] geomx failed: %s\n", c->name.c_str(), ours.message().c_str());
    } else {
      std::printf("[%s] geomx: fit %.3f s, predict %.3f s, %s\n", c->name.c_str(), r.geomx.fit_seconds,
                  r.geomx.predict_seconds, MetricsText(r.geomx, *c).c_str());
    }
    std::fflush(stdout);
    if (f.skip_peer) {
      r.peer.error = "not run (--no-peer)";
    } else {
      RunPeer(f, script, *c, dir, interrupted, &r.peer);
      if (r.peer.error == "interrupted") return Status::Cancelled("bench algos: interrupted");
      if (r.peer.ran) {
        std::printf("[%s] peer: fit %.3f s, predict %.3f s, %s\n", c->name.c_str(), r.peer.fit_seconds,
                    r.peer.predict_seconds, MetricsText(r.peer, *c).c_str());
      } else {
        std::printf("[%s] peer failed: %s\n", c->name.c_str(), r.peer.error.c_str());
      }
    }
    std::fflush(stdout);
    if (f.keep_data.empty()) fs::remove_all(dir, ec);  // the tables of a full case are hundreds of MB
    results.push_back(std::move(r));
  }

  // 3. The table and the JSON.
  PrintTable(results);
  if (!f.json_out.empty()) {
    JsonObject j;
    j.Add("command", CommandLine(f)).Add("threads", f.threads).Add("quick", f.quick);
    AddMachineAndDate(&j);
    if (!peer_versions.empty() && peer_versions.front() == '{') j.AddRaw("peer_versions", peer_versions);
    std::string rows;
    for (const CaseResult& r : results) rows.append(rows.empty() ? "" : ",\n  ").append(CaseJson(r, f.quick));
    j.AddRaw("cases", "[\n  " + rows + "\n]");
    std::ofstream out(f.json_out);
    out << j.str() << "\n";
    out.close();
    if (!out) return Status::InvalidArgument("--out " + f.json_out + ": cannot write");
  }
  if (!data_error.ok()) return data_error;
  if (failed > 0) {
    return Status::Internal("bench algos: " + std::to_string(failed) + " case(s) failed on the geomx side (above)");
  }
  return Status::Ok();
}

}  // namespace geomx::bench
