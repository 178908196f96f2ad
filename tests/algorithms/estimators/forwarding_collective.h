// A Collective that hands every operation to another one: the base of the tests' recording decorators, which
// override the operation they watch (mf_test's row pushes, gan_test's key order). Operations with a default in
// Collective (DataCentreSum, AllReduceSumCompressible) keep it, so they reach the inner collective as sums.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "algorithms/estimators/collective.h"

namespace geomx::algorithms {

class ForwardingCollective : public Collective {
 public:
  explicit ForwardingCollective(Collective* inner) : inner_(inner) {}
  int rank() const override { return inner_->rank(); }
  int world() const override { return inner_->world(); }
  Placement placement() const override { return inner_->placement(); }
  Status AllReduceSum(const std::string& key, std::span<float> data) override {
    return inner_->AllReduceSum(key, data);
  }
  Result<std::vector<float>> AllGather(const std::string& key, std::span<const float> mine) override {
    return inner_->AllGather(key, mine);
  }
  Result<Bytes> ReduceThroughTiers(const std::string& reducer, const Bytes& payload) override {
    return inner_->ReduceThroughTiers(reducer, payload);
  }
  Result<RowUpdate> PushRowGradients(const RowTableSpec& t, std::span<const uint64_t> rows,
                                     std::span<const float> grads) override {
    return inner_->PushRowGradients(t, rows, grads);
  }
  Result<std::vector<comm::Neighbor>> AllMergeTopK(const std::string& key, uint64_t k, uint64_t queries,
                                                   std::span<const comm::Neighbor> mine) override {
    return inner_->AllMergeTopK(key, k, queries, mine);
  }

 private:
  Collective* inner_;
};

}  // namespace geomx::algorithms
