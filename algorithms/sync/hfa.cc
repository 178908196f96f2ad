// sync.mode hfa and diloco: the averaging round of averaging.h with K1 local steps per round and K2 local
// averages per WAN synchronisation, each WAN synchronisation overlapping the next sync.overlap local averages.
//   hfa     outer SGD with lr 1: the global model moves by the mean delta of all workers (HFA, GeoMX)
//   diloco  outer Nesterov with sync.outer.lr and sync.outer.momentum on the pseudo-gradient -mean delta. With
//           exact deltas (none or fp16 up) a sparsifying answer link gets the top-k of the outer update with the
//           global server's error feedback; with a sparsifying push (bsc, mpq) the momentum moves into the
//           local servers' error feedback, which decays by sync.outer.momentum, and the global server steps
//           plain SGD (SparseLoCo; both in averaging.h)
#include <functional>
#include <string>

#include "algorithms/sync/averaging.h"

namespace geomx::sync {
namespace {

struct HfaConfig {
  int k1 = 20;
  int k2 = 10;
  int overlap = 0;
  OuterRule outer;
};

// K1 local steps per round.
class HfaWorker final : public AveragingWorker {
 public:
  HfaWorker(const WorkerArgs& args, int k1) : AveragingWorker(args), k1_(k1) {}

 protected:
  int StepsThisRound() const override { return k1_; }

 private:
  const int k1_;
};

class Hfa final : public SyncMode {
 public:
  explicit Hfa(HfaConfig config) : config_(config) {}
  Result<std::unique_ptr<ServerPolicy>> MakeGlobalServer(const ServerArgs& args) const override {
    return MakeAveragingGlobalServer(args, config_.outer);
  }
  Result<std::unique_ptr<ServerPolicy>> MakeLocalServer(const LocalServerArgs& args) const override {
    return MakeAveragingLocalServer(args, config_.k2, config_.overlap);
  }
  Result<std::unique_ptr<WorkerSync>> MakeWorker(const WorkerArgs& args) const override {
    return std::unique_ptr<WorkerSync>(new HfaWorker(args, config_.k1));
  }
  // SparseLoCo: the error feedback of a sparsifying push decays by the outer momentum (averaging.h).
  comm::TierCodec UpperCodec(const comm::TierCodec& planned) const override {
    comm::TierCodec codec = planned;
    if (MomentumInPush(config_.outer, planned)) codec.push.bsc.residual_decay = config_.outer.momentum;
    return codec;
  }

 private:
  const HfaConfig config_;
};

Result<HfaConfig> CountsOf(const SyncSettings& s) {
  if (s.k1 < 1) return Status::InvalidArgument("sync.k1: must be >= 1, got " + std::to_string(s.k1));
  if (s.k2 < 1) return Status::InvalidArgument("sync.k2: must be >= 1, got " + std::to_string(s.k2));
  if (s.overlap < 0 || s.overlap > s.k2) {
    return Status::InvalidArgument("sync.overlap: must be between 0 and sync.k2 (" + std::to_string(s.k2) +
                                   "), got " + std::to_string(s.overlap));
  }
  return HfaConfig{.k1 = s.k1, .k2 = s.k2, .overlap = s.overlap};
}

Result<std::unique_ptr<SyncMode>> CreateHfa(const SyncSettings& s) {
  GEOMX_ASSIGN_OR_RETURN(HfaConfig c, CountsOf(s));
  c.outer = OuterRule{.lr = 1.0f, .momentum = 0.0f};
  return std::unique_ptr<SyncMode>(new Hfa(c));
}

Result<std::unique_ptr<SyncMode>> CreateDiloco(const SyncSettings& s) {
  GEOMX_ASSIGN_OR_RETURN(HfaConfig c, CountsOf(s));
  c.outer = OuterRule{
      .lr = s.outer_lr, .momentum = s.outer_momentum, .sparse_answer = true, .momentum_in_push = true};
  return std::unique_ptr<SyncMode>(new Hfa(c));
}

constexpr SyncModeTraits kAveraging{.averages_models = true, .steps_on_gradients = false, .overlaps_wan_sync = true};

// sync.overlap beyond sync.k2 would put two WAN synchronisations of a key in flight.
void OverlapRule(const SyncRuleInput& in, std::vector<RuleViolation>* out) {
  const SyncSettings& s = *in.sync;
  if (s.overlap <= s.k2) return;
  out->push_back({{"sync.overlap", "sync.k2"}, "sync.overlap",
                  "a global synchronisation may overlap at most the sync.k2 = " + std::to_string(s.k2) +
                      " data-centre averages before the next one; got " + std::to_string(s.overlap)});
}

GEOMX_REGISTER_SYNC_MODE((SyncModeDef{
    .name = "hfa",
    .help = "hierarchical frequency aggregation: K1 local steps, K2 data-centre averages per WAN sync",
    .traits = kAveraging,
    .create = CreateHfa,
    .rules = OverlapRule}));

// diloco with a sparsifying WAN push runs SparseLoCo (averaging.h): its outer step is plain SGD and the momentum
// is the decay of the push's error feedback, so DiLoCo's dense defaults (lr 0.7, Nesterov 0.9) do not carry
// over. Keys the recipe leaves out become lr 1 (every selected value lands whole, as in hfa) and decay 0.95. On
// GEO-2x2 (docs/synchronization.md) lr 0.7 / 0.9 ended 1.2 points below hfa+bsc, lr 1 / 0.95 level with it.
void DilocoDefaults(const SyncRuleInput& in, const std::function<bool(const std::string&)>& given, SyncSettings* s) {
  if (!comm::SparsifiesLargeSlices(in.links.local_to_global, /*wan=*/true)) return;
  if (!given("sync.outer.lr")) s->outer_lr = 1.0f;
  if (!given("sync.outer.momentum")) s->outer_momentum = 0.95f;
}

GEOMX_REGISTER_SYNC_MODE((SyncModeDef{
    .name = "diloco",
    .help = "hfa with an outer Nesterov optimizer on the averaged model delta (SparseLoCo with a sparse push)",
    .traits = {.averages_models = true, .steps_on_gradients = false, .outer_momentum = true,
               .overlaps_wan_sync = true},
    .create = CreateDiloco,
    .rules = OverlapRule,
    .defaults = DilocoDefaults}));

}  // namespace
}  // namespace geomx::sync
