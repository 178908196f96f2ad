#!/usr/bin/python3
"""scikit-learn peer for `geomx bench algos` (bench/algos_bench.h): fits and evaluates the reference library's
counterpart of one geomx estimator on the exact tables geomx used (scikit-learn's; XGBoost's own for the xgboost
case), and prints one JSON line:

  {"case": "logreg", "fit_seconds": 12.3, "predict_seconds": 0.05, "metrics": {"accuracy": 0.84}, "peer": "...",
   "sklearn": "1.2.1", "threads": 2, ...}

  sklearn_algos.py --case NAME --data DIR --threads N   DIR holds train.bin and test.bin (format below)
  sklearn_algos.py --check                               exit 0 when numpy, scipy, sklearn, threadpoolctl import
                                                         (xgboost is optional: only the xgboost and lambdamart
                                                         cases need it)

The hyper-parameters of each case are the geomx side's (bench/algos_bench.cc, AlgosCases()): keep both in step.
Run with Debian's /usr/bin/python3 (packages python3-sklearn, python3-numpy). Threads: the caller sets
OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / MKL_NUM_THREADS; here threadpoolctl limits them too, and n_jobs is set
where the estimator has it (XGBoost: nthread). LIBSVM (SVC, SVR) and LIBLINEAR (LinearSVC) are single-threaded.
numpy's BLAS decides the speed of the GEMM-bound cases; --check and every result report it ("blas"). Debian's numpy
runs on whatever libblas.so.3 is selected: Netlib's reference BLAS unless an optimised one (libopenblas0-pthread) is
installed. The xgboost case needs Debian's python3-xgboost; without it only that case fails, naming the package.

Table file (written by geomx, bench/algos_bench.h WriteBenchTable), little-endian:
  bytes 0-7    magic b"GXTBL001"
  bytes 8-63   seven int64: rows, cols, num_classes, has_labels, has_targets, has_qids, reserved (0)
  then, each section padded with zero bytes to a multiple of 8:
  float32[rows * cols] features, row-major; int32[rows] labels if has_labels; float32[rows] targets if has_targets;
  int64[rows] qids if has_qids.
"""
import argparse
import json
import sys
import time
import warnings

MAGIC = b"GXTBL001"
HEADER_BYTES = 64


def _padded(n):
    return (n + 7) // 8 * 8


def read_table(path):
    """Reads one table file: a dict with X (float32 rows x cols), y (int32 or None), targets, qids, num_classes."""
    import numpy as np
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < HEADER_BYTES or raw[:8] != MAGIC:
        raise ValueError(f"{path}: not a geomx bench table (bad magic)")
    rows, cols, num_classes, has_labels, has_targets, has_qids, _ = np.frombuffer(raw, dtype="<i8", count=7, offset=8)
    rows, cols = int(rows), int(cols)
    off = HEADER_BYTES

    def take(dtype, count):
        nonlocal off
        size = np.dtype(dtype).itemsize * count
        if off + size > len(raw):
            raise ValueError(f"{path}: truncated ({len(raw)} bytes)")
        a = np.frombuffer(raw, dtype=dtype, count=count, offset=off).copy()
        off += _padded(size)
        return a

    out = {"X": take("<f4", rows * cols).reshape(rows, cols), "y": None, "targets": None, "qids": None,
           "num_classes": int(num_classes)}
    if has_labels:
        out["y"] = take("<i4", rows)
    if has_targets:
        out["targets"] = take("<f4", rows)
    if has_qids:
        out["qids"] = take("<i8", rows)
    if off != len(raw):
        raise ValueError(f"{path}: {len(raw) - off} bytes after the last section")
    return out


# ---- metrics, as geomx defines them (algorithms/estimators/metrics.cc) ----

def accuracy(pred, y):
    import numpy as np
    return float(np.mean(pred.astype(np.int64) == y.astype(np.int64)))


def r2(pred, y):
    import numpy as np
    y = y.astype(np.float64)
    se = float(np.sum((pred.astype(np.float64) - y) ** 2))
    var = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - se / var if var > 0 else 0.0


def purity(clusters, labels):
    import numpy as np
    total = 0
    for c in np.unique(clusters):
        total += int(np.bincount(labels[clusters == c]).max())
    return total / len(labels)


def query_rows(qids):
    """The row indices of each query (in order of qid), each in file order."""
    import numpy as np
    qids = np.asarray(qids)
    order_q = np.argsort(qids, kind="stable")  # stable: file order within a query
    bounds = np.flatnonzero(np.diff(qids[order_q])) + 1
    return np.split(order_q, bounds)


def mean_ndcg_at(scores, rel, qids, k=10):
    """NDCG@k averaged over queries: gain 2^rel - 1, discount log2(rank + 1); rows ranked by descending score, ties
    by ascending relevance then file order (pessimistic); a query whose ideal DCG is 0 counts as 1."""
    import numpy as np
    scores = np.asarray(scores, dtype=np.float64)
    rel = np.asarray(rel, dtype=np.float64)
    total, groups = 0.0, 0
    for idx in query_rows(qids):
        s, r = scores[idx], rel[idx]
        ranked = np.lexsort((np.arange(len(idx)), r, -s))[:k]
        ideal = np.sort(r)[::-1][:k]
        disc = 1.0 / np.log2(np.arange(2, k + 2))
        idcg = float(np.sum((2.0 ** ideal - 1.0) * disc[:len(ideal)]))
        dcg = float(np.sum((2.0 ** r[ranked] - 1.0) * disc[:len(ranked)]))
        total += dcg / idcg if idcg > 0 else 1.0
        groups += 1
    return total / groups if groups else 0.0


def mean_average_precision(scores, rel, qids):
    """MAP: relevance > 0 is relevant; rows ranked as in mean_ndcg_at; queries without a relevant row skipped."""
    import numpy as np
    scores = np.asarray(scores, dtype=np.float64)
    rel = np.asarray(rel, dtype=np.float64)
    total, counted = 0.0, 0
    for idx in query_rows(qids):
        s, r = scores[idx], rel[idx]
        ranked = np.lexsort((np.arange(len(idx)), r, -s))
        hits = r[ranked] > 0
        if not hits.any():
            continue
        precision = np.cumsum(hits) / np.arange(1, len(idx) + 1)
        total += float(np.sum(precision[hits]) / hits.sum())
        counted += 1
    return total / counted if counted else 0.0


def pairwise_differences(X, rel, qids):
    """RankSVM's pairs: within each query, x_i - x_j for every rel_i > rel_j. Every other pair is negated with label
    -1 (LinearSVC needs two classes); without an intercept the loss of (-d, -1) equals that of (d, +1), so the
    objective is exactly C * sum over pairs."""
    import numpy as np
    diffs = []
    for idx in query_rows(qids):
        r = rel[idx]
        i, j = np.nonzero(r[:, None] > r[None, :])
        if len(i):
            diffs.append(X[idx[i]] - X[idx[j]])
    D = np.concatenate(diffs) if diffs else np.zeros((0, X.shape[1]), dtype=X.dtype)
    y = np.ones(len(D), dtype=np.int32)
    y[1::2] = -1
    D[1::2] *= -1
    return D, y


# ---- the cases ----

class PeerUnavailable(Exception):
    """A module one case needs is missing: the message names the Debian package."""


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


# The xgboost case: recipes/xgboost.yaml's settings in XGBoost's words (geomx's n_estimators = num_boost_round).
XGBOOST_PARAMS = dict(tree_method="hist", max_depth=6, eta=0.3, max_bin=256, objective="multi:softprob")
XGBOOST_ROUNDS = 100


def run_xgboost(train, test, threads):
    """XGBoost's native API, as its docs recommend for numpy input: the DMatrix construction (quantile sketch and
    binning of the training rows) is part of the fit time, as geomx's binning is part of its Fit; prediction is
    inplace_predict (no DMatrix for the test rows), then the argmax of the class probabilities."""
    try:
        import xgboost as xgb
    except ImportError as e:
        raise PeerUnavailable("no Python module 'xgboost': install Debian's python3-xgboost "
                              "(scripts/install-deps.sh --bench)") from e
    import numpy as np
    X, y, Xt = train["X"], train["y"], test["X"]
    classes = max(int(train["num_classes"]), int(y.max()) + 1)
    params = dict(XGBOOST_PARAMS, num_class=classes, nthread=threads, verbosity=1)

    def fit():
        dtrain = xgb.DMatrix(X, label=y, nthread=threads)
        return xgb.train(params, dtrain, num_boost_round=XGBOOST_ROUNDS)
    booster, fit_s = timed(fit)
    proba, pred_s = timed(lambda: booster.inplace_predict(Xt))
    pred = np.argmax(np.asarray(proba).reshape(len(Xt), classes), axis=1)
    described = ("xgboost xgb.train(" + ", ".join(f"{k}={v!r}" for k, v in params.items() if k != "verbosity") +
                 f", num_boost_round={XGBOOST_ROUNDS}) on DMatrix(nthread={threads}), inplace_predict")
    return {"case": "xgboost", "fit_seconds": fit_s, "predict_seconds": pred_s,
            "metrics": {"accuracy": accuracy(pred, test["y"])}, "peer": described, "xgboost": xgb.__version__,
            "threads": threads, "train_rows": int(X.shape[0]), "test_rows": int(Xt.shape[0]),
            "trees": int(booster.num_boosted_rounds()) * classes}


# The lambdamart case: geomx's LambdaMART settings in XGBoost's words (rank:ndcg, depth 6 = 64 leaves).
XGBOOST_RANK_PARAMS = dict(objective="rank:ndcg", tree_method="hist", max_depth=6, eta=0.1, min_child_weight=1,
                           reg_lambda=1, max_bin=256)
XGBOOST_RANK_ROUNDS = 100


def run_xgboost_ranker(train, test, threads):
    """XGBoost rank:ndcg on the training rows grouped by qid (stable order within a query, group sizes from
    set_group); the DMatrix construction is in the fit time; scores by inplace_predict; NDCG@10 and MAP as geomx."""
    try:
        import xgboost as xgb
    except ImportError as e:
        raise PeerUnavailable("no Python module 'xgboost': install Debian's python3-xgboost "
                              "(scripts/install-deps.sh --bench)") from e
    import numpy as np
    order = np.argsort(train["qids"], kind="stable")
    X, y, q = train["X"][order], train["targets"][order], train["qids"][order]
    _, groups = np.unique(q, return_counts=True)  # q is sorted, so the counts are the groups in order
    params = dict(XGBOOST_RANK_PARAMS, nthread=threads, verbosity=1)

    def fit():
        dtrain = xgb.DMatrix(X, label=y, nthread=threads)
        dtrain.set_group(groups)
        return xgb.train(params, dtrain, num_boost_round=XGBOOST_RANK_ROUNDS)
    booster, fit_s = timed(fit)
    scores, pred_s = timed(lambda: booster.inplace_predict(test["X"]))
    scores = np.asarray(scores)
    described = ("xgboost xgb.train(" + ", ".join(f"{k}={v!r}" for k, v in params.items() if k != "verbosity") +
                 f", num_boost_round={XGBOOST_RANK_ROUNDS}) on DMatrix(nthread={threads}) with set_group, "
                 "inplace_predict")
    metrics = {"ndcg@10": mean_ndcg_at(scores, test["targets"], test["qids"], 10),
               "map": mean_average_precision(scores, test["targets"], test["qids"])}
    return {"case": "lambdamart", "fit_seconds": fit_s, "predict_seconds": pred_s, "metrics": metrics,
            "peer": described, "xgboost": xgb.__version__, "threads": threads, "train_rows": int(X.shape[0]),
            "test_rows": int(test["X"].shape[0]), "queries": int(len(groups))}


# The ranking ensembles whose peer is the best single feature (no library has RankBoost or AdaRank to compare with:
# the bar is to beat the strongest one-feature ranker).
BEST_SINGLE_FEATURE_CASES = ("rankboost", "adarank", "gbrank")


def run_best_single_feature(name, train, test, threads):
    """The best single-feature ranker: every feature, as it is and negated, scores the TRAINING rows; the one of
    highest training NDCG@10 (first of equals) is the model, and scores the test rows. Its fit time is that search."""
    import numpy as np
    X, Xt = train["X"], test["X"]

    def fit():
        best = (-1.0, 0, 1.0)
        for f in range(X.shape[1]):
            for sign in (1.0, -1.0):
                ndcg = mean_ndcg_at(sign * X[:, f], train["targets"], train["qids"], 10)
                if ndcg > best[0]:
                    best = (ndcg, f, sign)
        return best
    (train_ndcg, feature, sign), fit_s = timed(fit)
    scores, pred_s = timed(lambda: sign * Xt[:, feature])
    metrics = {"ndcg@10": mean_ndcg_at(scores, test["targets"], test["qids"], 10),
               "map": mean_average_precision(scores, test["targets"], test["qids"])}
    described = (f"the best single feature by training NDCG@10 (both signs): {'-' if sign < 0 else '+'}x{feature}, "
                 f"training NDCG@10 {train_ndcg:.4f}")
    return {"case": name, "fit_seconds": fit_s, "predict_seconds": pred_s, "metrics": metrics, "peer": described,
            "threads": threads, "train_rows": int(X.shape[0]), "test_rows": int(Xt.shape[0]),
            "feature": int(feature), "sign": int(sign), "train_ndcg@10": train_ndcg}


def run_case(name, train, test, threads):
    import numpy as np
    import sklearn
    from sklearn.cluster import KMeans
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression, SGDClassifier
    from sklearn.metrics import normalized_mutual_info_score
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC, SVR, LinearSVC

    if name == "xgboost":
        return run_xgboost(train, test, threads)
    if name == "lambdamart":
        return run_xgboost_ranker(train, test, threads)
    if name in BEST_SINGLE_FEATURE_CASES:
        return run_best_single_feature(name, train, test, threads)
    X, Xt = train["X"], test["X"]
    info = {}
    # name -> (estimator class, its keyword arguments): geomx's hyper-parameters in scikit-learn's words.
    specs = {
        "logreg": (LogisticRegression, dict(C=1.0, penalty="l2", solver="lbfgs", max_iter=100, tol=1e-4)),
        "linear-svm": (LinearSVC, dict(C=0.1, loss="squared_hinge", dual=True, tol=0.1, max_iter=1000,
                                       random_state=0)),
        "svm": (SVC, dict(C=10.0, kernel="rbf", gamma="scale", tol=1e-3, cache_size=200, shrinking=True)),
        "knn": (KNeighborsClassifier, dict(n_neighbors=5, weights="uniform", metric="euclidean", algorithm="brute",
                                           n_jobs=threads)),
        "kmeans": (KMeans, dict(n_clusters=10, init="k-means++", n_init=1, max_iter=300, tol=1e-4,
                                algorithm="lloyd", random_state=0)),
        # The nearest streaming peer of FTRL-Proximal: one pass of plain SGD on the log loss, rows in file order,
        # one-vs-rest over the classes (n_jobs of them at once).
        "ftrl": (SGDClassifier, dict(loss="log_loss", penalty="l2", alpha=1e-4, max_iter=1, tol=None, shuffle=False,
                                     n_jobs=threads, random_state=0)),
        "svr": (SVR, dict(kernel="rbf", C=10.0, epsilon=0.1, gamma="scale", tol=1e-3, cache_size=200,
                          shrinking=True)),
        "ranksvm": (LinearSVC, dict(C=0.1, loss="squared_hinge", dual=True, fit_intercept=False, tol=0.1,
                                    max_iter=1000, random_state=0)),
        # recipes/gbdt.yaml's settings; early stopping off (geomx's n_iter_no_change 0), so every round is grown.
        # OpenMP threads: OMP_NUM_THREADS from the caller and threadpoolctl's limit.
        "gbdt": (HistGradientBoostingClassifier, dict(max_iter=100, learning_rate=0.1, max_leaf_nodes=31,
                                                      min_samples_leaf=20, max_bins=255, l2_regularization=0.0,
                                                      early_stopping=False, random_state=0)),
        # recipes/random_forest.yaml's settings (scikit-learn's defaults), one tree per job at a time.
        "random-forest": (RandomForestClassifier, dict(n_estimators=100, criterion="gini", max_depth=None,
                                                       min_samples_split=2, min_samples_leaf=1, max_features="sqrt",
                                                       bootstrap=True, n_jobs=threads, random_state=0)),
    }
    if name not in specs:
        cases = list(specs) + ['xgboost', 'lambdamart'] + list(BEST_SINGLE_FEATURE_CASES)
        raise ValueError(f"unknown case '{name}' (cases: {', '.join(cases)})")
    cls, kwargs = specs[name]
    est = cls(**kwargs)
    described = f"sklearn {cls.__name__}(" + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")"

    if name == "ranksvm":
        def fit():
            D, yd = pairwise_differences(X, train["targets"], train["qids"])
            info["pairs"] = int(len(D))
            est.fit(D, yd)
        _, fit_s = timed(fit)
        scores, pred_s = timed(lambda: est.decision_function(Xt))
        metrics = {"ndcg@10": mean_ndcg_at(scores, test["targets"], test["qids"], 10)}
    elif name == "svr":
        _, fit_s = timed(lambda: est.fit(X, train["targets"]))
        pred, pred_s = timed(lambda: est.predict(Xt))
        metrics = {"r2": r2(pred, test["targets"])}
        info["support_vectors"] = int(len(est.support_))
    elif name == "kmeans":
        _, fit_s = timed(lambda: est.fit(X))
        pred, pred_s = timed(lambda: est.predict(Xt))
        metrics = {"purity": purity(pred, test["y"]),
                   "nmi": float(normalized_mutual_info_score(test["y"], pred))}
        info["inertia_train"] = float(est.inertia_)
    else:
        _, fit_s = timed(lambda: est.fit(X, train["y"]))
        pred, pred_s = timed(lambda: est.predict(Xt))
        metrics = {"accuracy": accuracy(pred, test["y"])}
        if name == "svm":
            info["support_vectors"] = int(len(est.support_))
    n_iter = getattr(est, "n_iter_", None)
    if n_iter is not None:
        info["n_iter"] = int(np.max(n_iter))
    return {"case": name, "fit_seconds": fit_s, "predict_seconds": pred_s, "metrics": metrics,
            "peer": described, "sklearn": sklearn.__version__, "blas": blas_description(),
            "threads": threads, "train_rows": int(X.shape[0]), "test_rows": int(Xt.shape[0]), **info}


def finite(v):
    """NaN and infinities become null (JSON has neither)."""
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return None
    return v


def blas_description():
    """Which BLAS numpy and scipy run on (it decides the speed of every GEMM-bound peer: logreg, knn, kmeans):
    threadpoolctl names OpenBLAS, MKL and BLIS; Netlib's reference BLAS (Debian's libblas3 when no optimised BLAS is
    installed) is found among the loaded libraries."""
    import os
    from threadpoolctl import threadpool_info
    for info in threadpool_info():
        if info.get("user_api") == "blas":
            layer = info.get("threading_layer")
            return f"{info['internal_api']} {info.get('version')}" + (f" ({layer})" if layer else "")
    with open("/proc/self/maps") as f:
        libs = sorted({os.path.realpath(line.split()[-1]) for line in f if "libblas" in line or "libcblas" in line})
    return "reference BLAS (single-threaded, unoptimised: " + (", ".join(libs) or "unknown") + ")"


def check(quiet=False):
    """0 when every module the peer needs imports (printing their versions unless quiet); else 3, printing which
    module is missing as JSON ({"error": ..., "missing": "sklearn"}) for geomx to name the Debian package."""
    try:
        import numpy
        import scipy
        import sklearn
        import threadpoolctl
    except ImportError as e:
        print(json.dumps({"error": f"{e}", "missing": getattr(e, "name", None)}), flush=True)
        return 3
    if not quiet:
        try:
            import xgboost
            xgboost_version = xgboost.__version__
        except ImportError:
            xgboost_version = None  # only the xgboost case needs it; that case says so when it runs
        print(json.dumps({"python": sys.version.split()[0], "numpy": numpy.__version__, "scipy": scipy.__version__,
                          "sklearn": sklearn.__version__, "threadpoolctl": threadpoolctl.__version__,
                          "xgboost": xgboost_version, "blas": blas_description()}), flush=True)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--case")
    p.add_argument("--data", help="folder with train.bin and test.bin")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--check", action="store_true", help="only check that the modules the peer needs import")
    a = p.parse_args()
    if a.check:
        return check()
    if not a.case or not a.data:
        p.error("--case and --data are required")
    if check(quiet=True) != 0:
        return 3
    from threadpoolctl import threadpool_limits
    warnings.filterwarnings("ignore")  # ConvergenceWarning of one-pass SGD / capped iterations: reported via n_iter
    train = read_table(f"{a.data}/train.bin")
    test = read_table(f"{a.data}/test.bin")
    try:
        with threadpool_limits(limits=a.threads):
            out = run_case(a.case, train, test, a.threads)
    except PeerUnavailable as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 3
    print(json.dumps(finite(out), allow_nan=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
