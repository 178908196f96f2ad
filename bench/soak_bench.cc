#include "bench/soak_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "algorithms/cluster/roles.h"
#include "algorithms/cluster/tiers.h"
#include "algorithms/cluster/worker_session.h"
#include "algorithms/ps/job.h"
#include "comm/key_layout.h"
#include "comm/zmq_van.h"

namespace geomx::bench {
namespace {

using Clock = std::chrono::steady_clock;

// d7 and d11 of the header comment: ((r + j) mod 7) - 3 and ((r + 3j) mod 11) - 5.
constexpr int kP7 = 7;
constexpr int kP11 = 11;

int Mod(int64_t a, int m) { return static_cast<int>(((a % m) + m) % m); }

// sum_{s < n} (((s + offset) mod m) - (m - 1) / 2): the whole periods sum to zero, so only the last n mod m
// terms remain.
int64_t PeriodicPrefixSum(int64_t n, int m, int offset) {
  const int64_t start = n - n % m;
  int64_t sum = 0;
  for (int64_t s = start; s < n; ++s) sum += Mod(s + offset, m) - (m - 1) / 2;
  return sum;
}

uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// The job's keys: `floats` f32 elements spread over at most `keys` dense parameter keys 0, 1, ...
struct SoakKeys {
  std::vector<uint64_t> ids;
  std::vector<uint64_t> offsets;  // first element of each key
  std::vector<uint64_t> elems;
  uint64_t floats = 0;
};

SoakKeys MakeKeys(uint64_t floats, int keys) {
  SoakKeys k;
  k.floats = floats;
  const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(keys), floats);
  uint64_t offset = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t elems = floats / n + (i < floats % n ? 1 : 0);
    k.ids.push_back(i);
    k.offsets.push_back(offset);
    k.elems.push_back(elems);
    offset += elems;
  }
  return k;
}

ps::JobDescription MakeJob(const SoakKeys& keys, int64_t rounds) {
  ps::JobDescription job;
  std::vector<ps::KeyDef> defs;
  for (size_t i = 0; i < keys.ids.size(); ++i) {
    ps::KeyDef d;
    d.key = keys.ids[i];
    d.name = "soak" + std::to_string(i);
    d.elems = keys.elems[i];
    defs.push_back(d);  // dense, sum, parameter, initial value from the master worker
  }
  job.schema = ps::KeySchema(std::move(defs));
  job.plan.iterations_per_epoch = rounds;
  job.plan.epochs = 1;
  job.optimizer.name = "sgd";
  job.optimizer.lr = 1.0f;
  job.optimizer.weight_decay = 0.0f;
  return job;
}

cluster::ClusterConfig MakeConfig(const SoakOptions& o) {
  cluster::ClusterConfig c;
  for (int d = 0; d < o.datacentres; ++d) {
    comm::DataCentre dc;
    dc.name = "dc" + std::to_string(d);
    dc.workers = o.workers_per_dc;
    dc.servers = 1;
    c.topology.datacentres.push_back(dc);
  }
  c.topology.global_servers = 1;
  // Twice the deadline: the watchdog names the stuck round first; the blocked requests then fail and the roles end.
  const int timeout_ms = o.deadline_ms > INT32_MAX / 2 ? INT32_MAX : 2 * o.deadline_ms;
  c.topology.options.rendezvous_timeout_ms = timeout_ms;
  c.topology.options.request_timeout_ms = timeout_ms;
  c.sync.mode = "fsa";
  c.optimizer_where = sync::OptimizerPlacement::kGlobalServer;
  return c;
}

}  // namespace

Status ValidateSoakOptions(const SoakOptions& o) {
  if (o.rounds < 1 || o.rounds > 100000000) return Status::InvalidArgument("--rounds: must be in [1, 10^8]");
  if (o.datacentres < 1 || o.datacentres > 64) return Status::InvalidArgument("--datacentres: must be in [1, 64]");
  if (o.workers_per_dc < 1 || o.workers_per_dc > 256) {
    return Status::InvalidArgument("--workers-per-dc: must be in [1, 256]");
  }
  if (o.key_bytes < 4 || o.key_bytes % 4 != 0 || o.key_bytes > (uint64_t{256} << 20)) {
    return Status::InvalidArgument("--key-bytes: must be a multiple of 4 in [4, 256 MiB], got " +
                                   std::to_string(o.key_bytes));
  }
  if (o.keys < 1 || o.keys > 1024) return Status::InvalidArgument("soak: keys must be in [1, 1024]");
  if (o.sample_every < 1) return Status::InvalidArgument("soak: sample_every must be >= 1");
  if (!(o.warmup_fraction >= 0 && o.warmup_fraction < 1)) {
    return Status::InvalidArgument("soak: warmup_fraction must be in [0, 1)");
  }
  if (!(o.max_drift_percent >= 0)) return Status::InvalidArgument("--max-drift: must be >= 0");
  if (o.deadline_ms < 1000) return Status::InvalidArgument("--deadline: must be at least 1 s");
  return Status::Ok();
}

namespace {

// What the threads of one soak share. Counters are merged under mu when a worker ends.
struct SoakRun {
  SoakRun(const SoakOptions& options, int workers_total)
      : o(options), workers(workers_total), progress(static_cast<size_t>(workers_total)) {
    for (auto& p : progress) p.store(-1);
  }

  const SoakOptions& o;
  const int workers;
  SoakKeys keys;
  ps::JobDescription job;
  int64_t warmup_rounds = 0;
  int64_t sample_interval = 1;
  // Rounds each worker completed; -1 until its initial pull was answered and checked.
  std::vector<std::atomic<int64_t>> progress;
  std::atomic<bool> stop{false};

  std::mutex mu;
  std::condition_variable cv;  // a role ended
  int running = 0;
  std::vector<std::string> started;  // every role's name, in start order
  std::vector<std::pair<std::string, Status>> ended;
  uint64_t checked = 0, wrong = 0;
  std::optional<SoakMismatch> first_wrong;
  std::vector<SoakRssSample> rss;  // worker 0 only (no lock needed while it runs; read after the joins)
  Clock::time_point start, end;    // worker 0
};

// Worker `rank` of `party`: join, the initial pull, `rounds` rounds of push+pull, each answer checked.
Status SoakWorker(SoakRun& run, const cluster::ClusterConfig& c, const std::string& party, int rank,
                  const cluster::RoleEnv& env) {
  GEOMX_ASSIGN_OR_RETURN(auto session, cluster::WorkerSession::Join(c, party, rank, run.job.schema, env));
  const int w = session->worker_index();
  const SoakKeys& k = run.keys;
  std::vector<float> grads(k.floats), pulled(k.floats);
  std::vector<const float*> values;
  std::vector<float*> outs;
  for (uint64_t off : k.offsets) {
    values.push_back(grads.data() + off);
    outs.push_back(pulled.data() + off);
  }
  uint64_t checked = 0, wrong = 0;
  std::optional<SoakMismatch> first;
  auto check = [&](int64_t rounds_applied) {
    if (run.o.on_pull) run.o.on_pull(SoakPull{w, rounds_applied - 1, std::span<float>(pulled), &run.stop});
    wrong += CountWrongSoakValues(rounds_applied, 0, pulled, w, &first);
    checked += k.floats;
  };
  auto sample = [&](int64_t done) {
    const bool due = done == 0 || done % run.sample_interval == 0 || done == run.warmup_rounds ||
                     done == run.o.rounds;
    if (w == 0 && due) run.rss.push_back({done, ResidentBytes()});
  };
  auto rounds = [&]() -> Status {
    comm::KvLink* link = session->link();
    GEOMX_RETURN_IF_ERROR(link->Pull(k.ids, outs, comm::kInitRound).WithContext("initial pull"));
    check(0);
    run.progress[w].store(0);
    if (w == 0) run.start = Clock::now();
    sample(0);
    // The pushed values: g = d7 + d11 + (w - (W - 1) / 2), element by element (SoakGradient, without its mods).
    const float centre = static_cast<float>(w) - 0.5f * static_cast<float>(run.workers - 1);
    for (int64_t r = 0; r < run.o.rounds; ++r) {
      if (run.stop.load()) return Status::Cancelled("soak stopped before round " + std::to_string(r));
      int a = Mod(r, kP7), b = Mod(r, kP11);
      for (uint64_t j = 0; j < k.floats; ++j) {
        grads[j] = static_cast<float>(a - 3 + b - 5) + centre;
        a = a + 1 == kP7 ? 0 : a + 1;
        b = b + 3 >= kP11 ? b + 3 - kP11 : b + 3;
      }
      GEOMX_RETURN_IF_ERROR(link->PushPull(k.ids, values, outs, r).WithContext("round " + std::to_string(r)));
      check(r + 1);
      run.progress[w].store(r + 1);
      sample(r + 1);
    }
    if (w == 0) run.end = Clock::now();
    return Status::Ok();
  };
  Status s = rounds();
  {
    std::lock_guard<std::mutex> lock(run.mu);
    run.checked += checked;
    run.wrong += wrong;
    if (first && (!run.first_wrong || first->round < run.first_wrong->round)) run.first_wrong = first;
  }
  if (!s.ok()) {
    session->Leave(s);
    return s;
  }
  return session->Finish();
}

// Judges the RSS samples (SoakResult's fields).
void SummariseRss(const SoakRun& run, SoakResult* r) {
  r->rss = run.rss;
  r->warmup_rounds = run.warmup_rounds;
  for (const SoakRssSample& s : run.rss) {
    if (s.round == run.warmup_rounds) r->rss_warmup_bytes = s.rss_bytes;
    if (s.round > run.warmup_rounds) r->rss_max_after_bytes = std::max(r->rss_max_after_bytes, s.rss_bytes);
  }
  if (r->rss_warmup_bytes > 0 && r->rss_max_after_bytes > 0) {
    r->drift_percent = (static_cast<double>(r->rss_max_after_bytes) / static_cast<double>(r->rss_warmup_bytes) -
                        1.0) * 100.0;
  }
}

// "round N did not complete within S s (workers stuck: dc0/worker1, ...)".
std::string DeadlockReport(const SoakRun& run, const cluster::ClusterConfig& c, int64_t round) {
  std::string stuck;
  int listed = 0, more = 0;
  for (int d = 0; d < static_cast<int>(c.topology.datacentres.size()); ++d) {
    for (int rank = 0; rank < c.topology.datacentres[d].workers; ++rank) {
      if (run.progress[cluster::WorkerIndex(c.topology, d, rank)].load() != round) continue;
      if (listed == 8) {
        ++more;
        continue;
      }
      stuck.append(listed++ == 0 ? "" : ", ").append(cluster::WorkerName(c.topology.datacentres[d].name, rank));
    }
  }
  if (more > 0) stuck.append(" and ").append(std::to_string(more)).append(" more");
  const std::string secs = std::to_string(run.o.deadline_ms / 1000);
  std::string what = round < 0 ? std::string("the start (rendezvous and the initial pull)")
                               : round >= run.o.rounds ? std::string("the shutdown after the last round")
                                                       : "round " + std::to_string(round);
  what.append(" did not complete within ").append(secs).append(" s");
  if (!stuck.empty() && round < run.o.rounds) what.append(" (workers stuck: ").append(stuck).append(")");
  return what;
}

}  // namespace

bool SoakResult::passed() const {
  return !deadlock && !cancelled && role_error.empty() && rounds_completed == rounds && wrong_values == 0 &&
         drift_percent <= max_drift_percent;
}

float SoakInitialWeight(uint64_t element) { return 0.25f * static_cast<float>(element % 11); }

float SoakGradient(int64_t round, int worker, int workers, uint64_t element) {
  const int64_t j = static_cast<int64_t>(element % (kP7 * kP11));
  const int d7 = Mod(round + j, kP7) - 3;
  const int d11 = Mod(round + 3 * j, kP11) - 5;
  return static_cast<float>(d7 + d11) + (static_cast<float>(worker) - 0.5f * static_cast<float>(workers - 1));
}

double SoakExpectedWeight(int64_t rounds_applied, uint64_t element) {
  const int j7 = static_cast<int>(element % kP7);
  const int j11 = static_cast<int>((3 * (element % kP11)) % kP11);
  return static_cast<double>(SoakInitialWeight(element)) -
         static_cast<double>(PeriodicPrefixSum(rounds_applied, kP7, j7) +
                             PeriodicPrefixSum(rounds_applied, kP11, j11));
}

uint64_t CountWrongSoakValues(int64_t rounds_applied, uint64_t first_element, std::span<const float> pulled,
                              int worker, std::optional<SoakMismatch>* first) {
  // The prefix sums depend on the element only through j mod 7 and 3j mod 11: one table each per call.
  double s7[kP7], s11[kP11];
  for (int o = 0; o < kP7; ++o) s7[o] = static_cast<double>(PeriodicPrefixSum(rounds_applied, kP7, o));
  for (int o = 0; o < kP11; ++o) s11[o] = static_cast<double>(PeriodicPrefixSum(rounds_applied, kP11, o));
  uint64_t wrong = 0;
  int a = static_cast<int>(first_element % kP7), b = static_cast<int>((3 * (first_element % kP11)) % kP11);
  int c = static_cast<int>(first_element % 11);
  for (size_t i = 0; i < pulled.size(); ++i) {
    const double expected = 0.25 * c - s7[a] - s11[b];
    const double got = static_cast<double>(pulled[i]);
    if (!(std::fabs(got - expected) <= kSoakTolerance)) {
      if (wrong++ == 0 && first != nullptr && !first->has_value()) {
        *first = SoakMismatch{worker, rounds_applied - 1, first_element + i, pulled[i], expected};
      }
    }
    a = a + 1 == kP7 ? 0 : a + 1;
    b = b + 3 >= kP11 ? b + 3 - kP11 : b + 3;
    c = c + 1 == 11 ? 0 : c + 1;
  }
  return wrong;
}

Result<SoakResult> RunSoak(const SoakOptions& o, const std::atomic<bool>* interrupted) {
  GEOMX_RETURN_IF_ERROR(ValidateSoakOptions(o));
  const cluster::ClusterConfig c = MakeConfig(o);
  const int workers = c.topology.total_workers();
  SoakRun run(o, workers);
  run.keys = MakeKeys(o.key_bytes / 4, o.keys);
  run.job = MakeJob(run.keys, o.rounds);
  run.warmup_rounds = static_cast<int64_t>(std::floor(static_cast<double>(o.rounds) * o.warmup_fraction));
  run.sample_interval = std::min<int64_t>(o.sample_every, std::max<int64_t>(1, o.rounds / 20));
  std::map<uint64_t, std::vector<float>> initial;
  for (size_t i = 0; i < run.keys.ids.size(); ++i) {
    std::vector<float>& v = initial[run.keys.ids[i]];
    for (uint64_t e = 0; e < run.keys.elems[i]; ++e) v.push_back(SoakInitialWeight(run.keys.offsets[i] + e));
  }

  // Every node of this process at inproc://<node>, schedulers at inproc://sched-<tier>, one ZeroMQ context. The
  // context outlives every van: it is destroyed after the threads were joined (or never, see _Exit below).
  auto ctx = std::make_unique<comm::ZmqContext>();
  cluster::RoleEnv env;
  comm::ZmqContext* raw_ctx = ctx.get();
  env.make_van = [raw_ctx](const std::string&) { return std::make_unique<comm::ZmqVan>(raw_ctx); };
  env.scheduler_endpoint = [](const std::string& tier, const std::string&, int) { return "inproc://sched-" + tier; };
  env.node_bind = [](const std::string& node, const std::string&) { return "inproc://" + node; };

  std::vector<std::thread> threads;
  auto start_role = [&](std::string name, std::function<Status()> fn) {
    {
      std::lock_guard<std::mutex> lock(run.mu);
      ++run.running;
      run.started.push_back(name);
    }
    threads.emplace_back([&run, name = std::move(name), fn = std::move(fn)] {
      Status s = fn();
      std::lock_guard<std::mutex> lock(run.mu);
      run.ended.emplace_back(name, std::move(s));
      --run.running;
      run.cv.notify_all();
    });
  };
  start_role("global-scheduler", [&] { return cluster::RunGlobalScheduler(c, env); });
  start_role("global-server", [&] { return cluster::RunGlobalServer(c, 0, env); });
  start_role("master", [&] { return cluster::RunMasterWorker(c, run.job, initial, env); });
  for (const comm::DataCentre& dc : c.topology.datacentres) {
    const std::string p = dc.name;
    start_role(p + "/scheduler", [&, p] { return cluster::RunScheduler(c, p, env); });
    start_role(p + "/server", [&, p] { return cluster::RunLocalServer(c, p, 0, env); });
    for (int rank = 0; rank < dc.workers; ++rank) {
      start_role(cluster::WorkerName(p, rank), [&, p, rank] { return SoakWorker(run, c, p, rank, env); });
    }
  }

  // The watchdog: a deadlock when the slowest worker's round count has not moved for deadline_ms while roles
  // still run (before the last round: that round is stuck; after it: the shutdown is).
  SoakResult result;
  result.workers = workers;
  result.rounds = o.rounds;
  result.keys = static_cast<int>(run.keys.ids.size());
  result.max_drift_percent = o.max_drift_percent;
  const auto deadline = std::chrono::milliseconds(o.deadline_ms);
  auto slowest = [&run] {
    int64_t m = INT64_MAX;
    for (const auto& p : run.progress) m = std::min(m, p.load());
    return m;
  };
  {
    std::unique_lock<std::mutex> lock(run.mu);
    int64_t last = slowest();
    int last_running = run.running;
    Clock::time_point moved = Clock::now();
    while (run.running > 0) {
      run.cv.wait_for(lock, std::chrono::milliseconds(100));
      if (interrupted != nullptr && interrupted->load() && !run.stop.load()) {
        result.cancelled = true;
        run.stop.store(true);
      }
      const int64_t now_slowest = slowest();
      if (now_slowest != last || run.running != last_running) {
        last = now_slowest;
        last_running = run.running;
        moved = Clock::now();
      } else if (!result.deadlock && Clock::now() - moved > deadline) {
        result.deadlock = true;
        result.deadlock_round = now_slowest;
        result.deadlock_report = DeadlockReport(run, c, now_slowest);
        run.stop.store(true);
        std::fprintf(stderr, "geomx bench soak: deadlock: %s; stopping the workers\n",
                     result.deadlock_report.c_str());
        // The blocked requests time out 2 x deadline_ms after they started (about deadline_ms from now); give the
        // roles twice that, and 10 s, to end.
        if (!run.cv.wait_for(lock, 2 * deadline + std::chrono::seconds(10), [&run] { return run.running == 0; })) {
          std::string names;
          for (const std::string& n : run.started) {
            const bool done =
                std::any_of(run.ended.begin(), run.ended.end(), [&n](const auto& e) { return e.first == n; });
            if (!done) names.append(names.empty() ? "" : ", ").append(n);
          }
          std::fprintf(stderr,
                       "geomx bench soak: deadlock: %s; %d role threads did not end (%s), exiting without joining "
                       "them\n",
                       result.deadlock_report.c_str(), run.running, names.c_str());
          std::fflush(stdout);
          std::fflush(stderr);
          std::_Exit(1);
        }
      }
    }
  }
  for (std::thread& t : threads) t.join();
  ctx.reset();

  result.rounds_completed = std::max<int64_t>(0, slowest());
  if (result.rounds_completed == o.rounds && run.end > run.start) {
    result.seconds = std::chrono::duration<double>(run.end - run.start).count();
    result.rounds_per_s = result.seconds > 0 ? static_cast<double>(o.rounds) / result.seconds : 0;
  }
  result.values_checked = run.checked;
  result.wrong_values = run.wrong;
  result.first_wrong = run.first_wrong;
  SummariseRss(run, &result);
  // The first role error that is not the soak's own stop (a worker stopped by the watchdog or Ctrl-C).
  for (const auto& [name, s] : run.ended) {
    if (s.ok() || ((result.deadlock || result.cancelled) && s.code() == StatusCode::kCancelled)) continue;
    if (result.role_error.empty()) result.role_error = name + ": " + s.ToString();
  }
  return result;
}

}  // namespace geomx::bench
