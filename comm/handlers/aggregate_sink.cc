#include "comm/handlers/aggregate_sink.h"

#include <cstring>
#include <string>
#include <utility>

namespace geomx::comm {

void StoreSink::OnComplete(uint64_t wire_key, int64_t round, Bytes aggregate, int contributors, AggregateDone done) {
  if (aggregate.size() % sizeof(float) != 0 || contributors < 1) {
    done(Status::InvalidArgument("store sink: wire key " + std::to_string(wire_key) + " round " +
                                     std::to_string(round) + ": cannot average " + std::to_string(aggregate.size()) +
                                     " bytes over " + std::to_string(contributors) + " contributions"),
         Bytes());
    return;
  }
  const size_t n = aggregate.size() / sizeof(float);
  Bytes mean(n * sizeof(float));
  float* out = reinterpret_cast<float*>(mean.mutable_data());
  if (n > 0) std::memcpy(out, aggregate.data(), n * sizeof(float));
  const float divisor = static_cast<float>(contributors);
  for (size_t i = 0; i < n; ++i) out[i] /= divisor;
  done(Status::Ok(), std::move(mean));
}

void IdentitySink::OnComplete(uint64_t, int64_t, Bytes aggregate, int, AggregateDone done) {
  done(Status::Ok(), std::move(aggregate));
}

}  // namespace geomx::comm
