// AggregateSink: what a SyncAggregator does with a completed round's aggregate (the strategy that makes a server a
// global server with an optimizer, a plain averaging store, or a local server forwarding upward).
//
// OnComplete is called once per (wire key, round) when every expected push arrived, on whichever thread delivered
// the last push, without any lock held. The sink must eventually call `done` exactly once, from any thread: with
// OK and the value every waiting worker receives (and the server stores), or with an error every waiter receives.
//
//   wire_key      the slice (KeyOfWireKey / SliceOfWireKey, handlers need the layout for offsets)
//   aggregate     the reducer's result (for "sum": the element-wise sum of the pushes)
//   contributors  the number of original contributions in the aggregate: the sum of the pushes' num_merged
//                 (kv_worker.h), i.e. the number of workers below, whatever the tiers in between
//
// FetchInitial is asked for the initial value of a key that has none yet when a worker pulls round kInitRound;
// return false to wait for an init push instead (the default).
//
// Sinks here: StoreSink (mean of f32 sums), IdentitySink (the aggregate as is), FunctionSink (a lambda: the
// integrator's optimizer sink in cli/), ForwardSink (handlers/forward_sink.h).
#pragma once

#include <cstdint>
#include <functional>

#include "engine/base/bytes.h"
#include "engine/base/status.h"

namespace geomx::comm {

using AggregateDone = std::function<void(Status, Bytes value)>;

class AggregateSink {
 public:
  virtual ~AggregateSink() = default;
  virtual void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                          AggregateDone done) = 0;
  // The mean training loss the senders of `round` reported with their pushes (kv_worker.h kLossField), once per
  // round, before the round's first OnComplete; rounds whose pushes carried none are skipped. ForwardSink gives
  // it to DGT's adaptive k. Any thread; must not block.
  virtual void OnLoss(int64_t round, double mean_loss) {
    (void)round;
    (void)mean_loss;
  }
  // Returns true when it will call `done` with the key's initial value (or an error).
  virtual bool FetchInitial(uint64_t wire_key, AggregateDone done) {
    (void)wire_key;
    (void)done;
    return false;
  }
};

// value = aggregate / contributors element-wise (f32): the explicit mean of the workers' pushes. The aggregate
// must be dense f32 (reducer "sum"); anything else is answered with kInvalidArgument. Stateless; thread-safe.
class StoreSink : public AggregateSink {
 public:
  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                  AggregateDone done) override;
};

// value = aggregate (sums, concatenations, merges, weighted averages). Stateless; thread-safe.
class IdentitySink : public AggregateSink {
 public:
  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                  AggregateDone done) override;
};

// Delegates to functions, e.g. in cli/ the global server's optimizer step:
//   FunctionSink sink([&](uint64_t wk, int64_t round, Bytes sum, int n, AggregateDone done) {
//     done(Status::Ok(), optimizer.Step(wk, sum, n));
//   });
// `fetch` (optional) implements FetchInitial. Thread-safety: that of the functions.
class FunctionSink : public AggregateSink {
 public:
  using CompleteFn = std::function<void(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                                        AggregateDone done)>;
  using FetchFn = std::function<void(uint64_t wire_key, AggregateDone done)>;
  explicit FunctionSink(CompleteFn complete, FetchFn fetch = nullptr)
      : complete_(std::move(complete)), fetch_(std::move(fetch)) {}
  void OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors,
                  AggregateDone done) override {
    complete_(wire_key, round, std::move(aggregate), contributors, std::move(done));
  }
  bool FetchInitial(uint64_t wire_key, AggregateDone done) override {
    if (!fetch_) return false;
    fetch_(wire_key, std::move(done));
    return true;
  }

 private:
  CompleteFn complete_;
  FetchFn fetch_;
};

}  // namespace geomx::comm
