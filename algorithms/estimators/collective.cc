#include "algorithms/estimators/collective.h"

#include <condition_variable>
#include <cstring>
#include <mutex>

#include "engine/base/check.h"

namespace geomx::algorithms {

// A generation-counted rendezvous: every member deposits its contribution, the last one combines, all read.
struct ThreadCollectiveGroup::Shared {
  explicit Shared(int w) : world(w), parts(static_cast<size_t>(w)) {}
  const int world;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  int departed = 0;
  uint64_t generation = 0;
  std::vector<std::vector<float>> parts;
  std::vector<float> result;

  // Runs one collective step: contributes `mine`, waits for all, returns `combine(parts)` to every member.
  template <typename Combine>
  std::vector<float> Step(int rank, std::vector<float> mine, Combine combine) {
    std::unique_lock<std::mutex> lock(mu);
    // Wait until the previous step has been fully read.
    cv.wait(lock, [&] { return departed == 0 || arrived == 0; });
    const uint64_t gen = generation;
    parts[static_cast<size_t>(rank)] = std::move(mine);
    if (++arrived == world) {
      result = combine(parts);
      ++generation;
      departed = 0;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return generation != gen; });
    }
    std::vector<float> out = result;
    if (++departed == world) {
      arrived = 0;
      departed = 0;
      cv.notify_all();
    }
    return out;
  }
};

class ThreadCollectiveGroup::Member final : public Collective {
 public:
  Member(std::shared_ptr<Shared> shared, int rank) : shared_(std::move(shared)), rank_(rank) {}
  int rank() const override { return rank_; }
  int world() const override { return shared_->world; }
  Status AllReduceSum(const std::string&, std::span<float> data) override {
    std::vector<float> sum = shared_->Step(rank_, std::vector<float>(data.begin(), data.end()),
                                           [](const std::vector<std::vector<float>>& parts) {
                                             std::vector<float> s(parts[0].size(), 0.0f);
                                             for (const auto& p : parts) {
                                               GEOMX_CHECK_EQ(p.size(), s.size()) << "AllReduceSum sizes differ";
                                               for (size_t i = 0; i < s.size(); ++i) s[i] += p[i];
                                             }
                                             return s;
                                           });
    std::memcpy(data.data(), sum.data(), data.size_bytes());
    return Status::Ok();
  }
  Result<std::vector<float>> AllGather(const std::string&, std::span<const float> mine) override {
    return shared_->Step(rank_, std::vector<float>(mine.begin(), mine.end()),
                         [](const std::vector<std::vector<float>>& parts) {
                           std::vector<float> all;
                           for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
                           return all;
                         });
  }

 private:
  std::shared_ptr<Shared> shared_;
  int rank_;
};

ThreadCollectiveGroup::ThreadCollectiveGroup(int world) : shared_(std::make_shared<Shared>(world)) {
  GEOMX_CHECK_GE(world, 1);
  for (int r = 0; r < world; ++r) members_.push_back(std::make_unique<Member>(shared_, r));
}
ThreadCollectiveGroup::~ThreadCollectiveGroup() = default;

Collective* ThreadCollectiveGroup::Worker(int rank) { return members_.at(static_cast<size_t>(rank)).get(); }

}  // namespace geomx::algorithms
