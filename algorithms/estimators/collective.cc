#include "algorithms/estimators/collective.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>

#include "algorithms/estimators/ps_collective.h"
#include "algorithms/ps/global_rule.h"
#include "comm/handlers/reducer.h"
#include "engine/base/check.h"

namespace geomx::algorithms {
namespace {

// Rules of emulated row tables publish nothing.
class NoDecisions final : public ps::DecisionBoard {
 public:
  Status Publish(uint64_t, int64_t, std::vector<float>) override {
    return Status::FailedPrecondition("row tables of a thread collective hold no decision keys");
  }
};

}  // namespace

Status Collective::AllReduceSumCompressible(const std::string& key, std::span<float> data, size_t) {
  return AllReduceSum(key, data);
}

Placement Collective::placement() const {
  return Placement{.centre = 0, .centres = 1, .centre_rank = rank(), .centre_size = world()};
}

Status Collective::DataCentreSum(const std::string& key, std::span<float> data) { return AllReduceSum(key, data); }

// A generation-counted rendezvous: every member deposits its contribution, the last one combines, all read.
struct ThreadCollectiveGroup::Shared {
  explicit Shared(std::vector<int> sizes)
      : world(std::accumulate(sizes.begin(), sizes.end(), 0)),
        centre_sizes(std::move(sizes)),
        parts(static_cast<size_t>(world)),
        neighbor_parts(static_cast<size_t>(world)),
        row_parts(static_cast<size_t>(world)),
        row_grads(static_cast<size_t>(world)) {
    byte_parts.resize(static_cast<size_t>(world));
    for (size_t c = 0; c < centre_sizes.size(); ++c) {
      for (int i = 0; i < centre_sizes[c]; ++i) centre_of.push_back(static_cast<int>(c));
    }
  }
  const int world;
  const std::vector<int> centre_sizes;
  std::vector<int> centre_of;  // by rank
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  int departed = 0;
  uint64_t generation = 0;
  // Dense steps.
  std::vector<std::vector<float>> parts;
  std::vector<float> result;
  std::vector<std::vector<float>> centre_results;  // DataCentreSum: one sum per data centre
  // ReduceThroughTiers.
  std::vector<Bytes> byte_parts;
  Result<Bytes> byte_result = Bytes{};
  // Row-table steps: each member's rows and gradients, the round's answer, and the tables with their rules.
  struct Table {
    RowTableSpec spec;
    ps::JobDescription job;
    std::unique_ptr<ps::GlobalRule> rule;
    std::vector<float> values;
    int64_t round = 0;
  };
  std::vector<std::vector<comm::Neighbor>> neighbor_parts;
  Result<std::vector<comm::Neighbor>> neighbor_result = std::vector<comm::Neighbor>{};
  std::vector<std::vector<uint64_t>> row_parts;
  std::vector<std::vector<float>> row_grads;
  Result<RowUpdate> row_result = RowUpdate{};
  std::map<std::string, Table> tables;

  // Runs one collective step: deposit() under the lock, the last member to arrive runs combine(), then every member
  // returns read() (all under the lock).
  template <typename Deposit, typename Combine, typename Read>
  auto Step(Deposit deposit, Combine combine, Read read) {
    std::unique_lock<std::mutex> lock(mu);
    // Wait until the previous step has been fully read.
    cv.wait(lock, [&] { return departed == 0 || arrived == 0; });
    const uint64_t gen = generation;
    deposit();
    if (++arrived == world) {
      combine();
      ++generation;
      departed = 0;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return generation != gen; });
    }
    auto out = read();
    if (++departed == world) {
      arrived = 0;
      departed = 0;
      cv.notify_all();
    }
    return out;
  }

  // The reducer at each data centre's "local server" over its members' deposits (contributors: their places in
  // it), then at the "global server" over the data centres' results (contributors: the data centres), as the
  // servers run it (mu held, by the last member to arrive).
  Result<Bytes> ReduceTiers(const std::string& name) {
    GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<comm::Reducer> global, comm::MakeReducer(name, comm::ReducerConfig{}));
    size_t rank = 0;
    for (size_t c = 0; c < centre_sizes.size(); ++c) {
      GEOMX_ASSIGN_OR_RETURN(std::unique_ptr<comm::Reducer> local, comm::MakeReducer(name, comm::ReducerConfig{}));
      for (int i = 0; i < centre_sizes[c]; ++i, ++rank) {
        GEOMX_RETURN_IF_ERROR(local->Validate(byte_parts[rank]));
        local->Combine(i, byte_parts[rank]);
      }
      GEOMX_ASSIGN_OR_RETURN(Bytes result, local->Finish());
      GEOMX_RETURN_IF_ERROR(global->Validate(result));
      global->Combine(static_cast<int>(c), std::move(result));
    }
    return global->Finish();
  }

  // The row round of `spec` over every member's deposit (mu held, by the last member to arrive).
  Result<RowUpdate> CombineRows(const RowTableSpec& spec) {
    auto it = tables.find(spec.name);
    if (it == tables.end()) {
      GEOMX_ASSIGN_OR_RETURN(ps::JobDescription job, EstimatorJobDescription({spec}));
      Table t;
      t.spec = spec;
      GEOMX_ASSIGN_OR_RETURN(t.rule, ps::CreateGlobalRule(job));
      t.job = std::move(job);
      it = tables.emplace(spec.name, std::move(t)).first;
    }
    Table& t = it->second;
    if (t.spec.rows != spec.rows || t.spec.width != spec.width || t.spec.rule != spec.rule) {
      return Status::InvalidArgument("row table '" + spec.name + "' opened with two shapes or rules");
    }
    // Sum each row over the members (in rank order), sorted by row.
    std::map<uint64_t, std::vector<float>> sums;
    for (int r = 0; r < world; ++r) {
      const auto& rows = row_parts[static_cast<size_t>(r)];
      const auto& grads = row_grads[static_cast<size_t>(r)];
      if (grads.size() != rows.size() * spec.width) {
        return Status::InvalidArgument("row table '" + spec.name + "': " + std::to_string(grads.size()) +
                                       " gradients for " + std::to_string(rows.size()) + " rows");
      }
      for (size_t i = 0; i < rows.size(); ++i) {
        std::vector<float>& s = sums[rows[i]];
        s.resize(spec.width, 0.0f);
        for (uint64_t j = 0; j < spec.width; ++j) s[j] += grads[i * spec.width + j];
      }
    }
    RowUpdate update;
    std::vector<float> values;
    for (auto& [row, s] : sums) {
      update.rows.push_back(row);
      values.insert(values.end(), s.begin(), s.end());
    }
    NoDecisions board;
    const ps::KeyDef* key = nullptr;
    for (const ps::KeyDef& k : t.job.schema.keys()) {
      if (k.name == spec.name && k.layout == ps::KeyLayoutKind::kRowSparse) key = &k;
    }
    GEOMX_CHECK(key != nullptr) << spec.name;
    GEOMX_ASSIGN_OR_RETURN(update.values, ps::ApplyRowRound(*t.rule, board, *key, t.round++, update.rows,
                                                            std::move(values), world, &t.values));
    return update;
  }
};

class ThreadCollectiveGroup::Member final : public Collective {
 public:
  Member(std::shared_ptr<Shared> shared, int rank) : shared_(std::move(shared)), rank_(rank) {}
  int rank() const override { return rank_; }
  int world() const override { return shared_->world; }
  Status AllReduceSum(const std::string&, std::span<float> data) override {
    Shared& s = *shared_;
    std::vector<float> sum = s.Step(
        [&] { s.parts[static_cast<size_t>(rank_)].assign(data.begin(), data.end()); },
        [&] {
          s.result.assign(s.parts[0].size(), 0.0f);
          for (const auto& p : s.parts) {
            GEOMX_CHECK_EQ(p.size(), s.result.size()) << "AllReduceSum sizes differ";
            for (size_t i = 0; i < p.size(); ++i) s.result[i] += p[i];
          }
        },
        [&] { return s.result; });
    std::memcpy(data.data(), sum.data(), data.size_bytes());
    return Status::Ok();
  }
  Placement placement() const override {
    const Shared& s = *shared_;
    const int c = s.centre_of[static_cast<size_t>(rank_)];
    const int first = std::accumulate(s.centre_sizes.begin(), s.centre_sizes.begin() + c, 0);
    return Placement{.centre = c,
                     .centres = static_cast<int>(s.centre_sizes.size()),
                     .centre_rank = rank_ - first,
                     .centre_size = s.centre_sizes[static_cast<size_t>(c)]};
  }
  Status DataCentreSum(const std::string&, std::span<float> data) override {
    Shared& s = *shared_;
    const size_t mine = static_cast<size_t>(s.centre_of[static_cast<size_t>(rank_)]);
    std::vector<float> sum = s.Step(
        [&] { s.parts[static_cast<size_t>(rank_)].assign(data.begin(), data.end()); },
        [&] {
          s.centre_results.assign(s.centre_sizes.size(), {});
          for (size_t r = 0; r < s.parts.size(); ++r) {
            std::vector<float>& out = s.centre_results[static_cast<size_t>(s.centre_of[r])];
            const std::vector<float>& p = s.parts[r];
            if (out.empty()) out.assign(p.size(), 0.0f);
            GEOMX_CHECK_EQ(p.size(), out.size()) << "DataCentreSum sizes differ within a data centre";
            for (size_t i = 0; i < p.size(); ++i) out[i] += p[i];
          }
        },
        [&] { return s.centre_results[mine]; });
    std::memcpy(data.data(), sum.data(), data.size_bytes());
    return Status::Ok();
  }
  Result<Bytes> ReduceThroughTiers(const std::string& reducer, const Bytes& payload) override {
    Shared& s = *shared_;
    return s.Step([&] { s.byte_parts[static_cast<size_t>(rank_)] = payload; },
                  [&] { s.byte_result = s.ReduceTiers(reducer); }, [&] { return s.byte_result; });
  }
  Result<std::vector<float>> AllGather(const std::string&, std::span<const float> mine) override {
    Shared& s = *shared_;
    return s.Step([&] { s.parts[static_cast<size_t>(rank_)].assign(mine.begin(), mine.end()); },
                  [&] {
                    s.result.clear();
                    for (const auto& p : s.parts) s.result.insert(s.result.end(), p.begin(), p.end());
                  },
                  [&] { return s.result; });
  }
  Result<std::vector<comm::Neighbor>> AllMergeTopK(const std::string& key, uint64_t k, uint64_t queries,
                                                   std::span<const comm::Neighbor> mine) override {
    Shared& s = *shared_;
    return s.Step([&] { s.neighbor_parts[static_cast<size_t>(rank_)].assign(mine.begin(), mine.end()); },
                  [&] {
                    std::vector<std::span<const comm::Neighbor>> spans;
                    for (const auto& p : s.neighbor_parts) {
                      if (p.size() != k * queries) {
                        s.neighbor_result = Status::InvalidArgument(
                            "top-k '" + key + "': " + std::to_string(p.size()) + " candidates for " +
                            std::to_string(queries) + " queries of k=" + std::to_string(k));
                        return;
                      }
                      spans.emplace_back(p);
                    }
                    s.neighbor_result = comm::MergeTopKRows(k, queries, spans);
                  },
                  [&] { return s.neighbor_result; });
  }
  Result<RowUpdate> PushRowGradients(const RowTableSpec& table, std::span<const uint64_t> rows,
                                     std::span<const float> grads) override {
    Shared& s = *shared_;
    return s.Step(
        [&] {
          s.row_parts[static_cast<size_t>(rank_)].assign(rows.begin(), rows.end());
          s.row_grads[static_cast<size_t>(rank_)].assign(grads.begin(), grads.end());
        },
        [&] { s.row_result = s.CombineRows(table); }, [&] { return s.row_result; });
  }

 private:
  std::shared_ptr<Shared> shared_;
  int rank_;
};

ThreadCollectiveGroup::ThreadCollectiveGroup(int world) : ThreadCollectiveGroup(std::vector<int>{world}) {}

ThreadCollectiveGroup::ThreadCollectiveGroup(std::vector<int> centre_sizes) {
  GEOMX_CHECK(!centre_sizes.empty());
  for (int n : centre_sizes) GEOMX_CHECK_GE(n, 1);
  shared_ = std::make_shared<Shared>(std::move(centre_sizes));
  for (int r = 0; r < shared_->world; ++r) members_.push_back(std::make_unique<Member>(shared_, r));
}
ThreadCollectiveGroup::~ThreadCollectiveGroup() = default;

Collective* ThreadCollectiveGroup::Worker(int rank) { return members_.at(static_cast<size_t>(rank)).get(); }

}  // namespace geomx::algorithms
