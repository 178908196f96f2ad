#include "algorithms/ps/ps_context.h"

#include <cstring>
#include <string>

namespace geomx::ps {

PsContext::PsContext(comm::KvLink* parameters, comm::KvLink* aux, KeySchema schema, int worker_index, int num_workers)
    : parameters_(parameters),
      aux_(aux),
      schema_(std::move(schema)),
      worker_index_(worker_index),
      num_workers_(num_workers) {}

Result<const KeyDef*> PsContext::Def(uint64_t key, const char* call) const {
  const KeyDef* d = schema_.Find(key);
  if (d == nullptr) return Status::InvalidArgument(std::string(call) + ": key " + std::to_string(key) + " is not in the schema");
  return d;
}

Status PsContext::Dense(comm::Command command, uint64_t key, std::span<const float> values, std::span<float> out,
                        int64_t round) {
  GEOMX_ASSIGN_OR_RETURN(const KeyDef* d, Def(key, "dense call"));
  if (d->reducer != "sum" || d->layout != KeyLayoutKind::kDense || d->role == KeyRole::kDecision) {
    return Status::InvalidArgument("key " + d->name + " is not a dense sum key (reducer " + d->reducer + ", " +
                                   KeyRoleName(d->role) + ")");
  }
  if ((command != comm::Command::kPull && values.size() != d->elems) ||
      (command != comm::Command::kPush && out.size() != d->elems)) {
    return Status::InvalidArgument("key " + d->name + " has " + std::to_string(d->elems) + " values");
  }
  const uint64_t keys[] = {key};
  const float* in[] = {values.data()};
  float* outs[] = {out.data()};
  comm::KvLink* link = LinkFor(*d);
  switch (command) {
    case comm::Command::kPush: return link->Push(keys, in, round);
    case comm::Command::kPull: return link->Pull(keys, outs, round);
    default: return link->PushPull(keys, in, outs, round);
  }
}

Status PsContext::Push(uint64_t key, std::span<const float> values, int64_t round) {
  return Dense(comm::Command::kPush, key, values, {}, round);
}

Status PsContext::Pull(uint64_t key, std::span<float> out, int64_t round) {
  return Dense(comm::Command::kPull, key, {}, out, round);
}

Status PsContext::PushPull(uint64_t key, std::span<const float> values, std::span<float> out, int64_t round) {
  return Dense(comm::Command::kPushPull, key, values, out, round);
}

Result<Bytes> PsContext::PushPullPayload(uint64_t key, Bytes payload, int64_t round) {
  GEOMX_ASSIGN_OR_RETURN(const KeyDef* d, Def(key, "payload call"));
  if ((d->role != KeyRole::kAggregate && d->role != KeyRole::kLocal) || d->layout != KeyLayoutKind::kDense ||
      d->reducer == "sum") {
    return Status::InvalidArgument("key " + d->name + " takes no codec payloads (use Push/PushPull/PushRows)");
  }
  comm::RawRequest req;
  req.command = comm::Command::kPushPull;
  req.codec = d->reducer;  // each non-dense reducer's codec is its own name (handlers/reducer.h)
  req.round = round;
  req.wire_keys = {comm::WireKey(key, 0)};
  req.payloads = {std::move(payload)};
  GEOMX_ASSIGN_OR_RETURN(std::vector<Bytes> values, aux_->RequestRaw(std::move(req)));
  if (values.size() != 1) return Status::DataLoss("key " + d->name + ": not one answer");
  return values[0];
}

Result<comm::RowSparse> PsContext::PushRows(uint64_t key, std::span<const uint64_t> rows,
                                            std::span<const float> values, int64_t round) {
  GEOMX_ASSIGN_OR_RETURN(const KeyDef* d, Def(key, "PushRows"));
  if (d->layout != KeyLayoutKind::kRowSparse) return Status::InvalidArgument("key " + d->name + " is not row-sparse");
  if (values.size() != rows.size() * d->row_width) {
    return Status::InvalidArgument("key " + d->name + ": " + std::to_string(rows.size()) + " rows need " +
                                   std::to_string(rows.size() * d->row_width) + " values");
  }
  comm::RawRequest req;
  req.command = comm::Command::kPushPull;
  req.codec = "row_sparse";
  req.round = round;
  req.wire_keys = {comm::WireKey(key, 0)};
  req.payloads = {comm::EncodeRowSparse(d->row_width, rows, values)};
  GEOMX_ASSIGN_OR_RETURN(std::vector<Bytes> answer, aux_->RequestRaw(std::move(req)));
  if (answer.size() != 1) return Status::DataLoss("key " + d->name + ": not one answer");
  return comm::DecodeRowSparse(answer[0]);
}

Status PsContext::PullRows(uint64_t key, std::span<const uint64_t> rows, std::span<float> out, int64_t round) {
  GEOMX_ASSIGN_OR_RETURN(const KeyDef* d, Def(key, "PullRows"));
  if (d->layout != KeyLayoutKind::kRowSparse) return Status::InvalidArgument("key " + d->name + " is not row-sparse");
  if (out.size() != rows.size() * d->row_width) {
    return Status::InvalidArgument("key " + d->name + ": " + std::to_string(rows.size()) + " rows need " +
                                   std::to_string(rows.size() * d->row_width) + " output values");
  }
  comm::RawRequest req;
  req.command = comm::Command::kPull;
  req.codec = "row_sparse";
  req.round = round;
  req.wire_keys = {comm::WireKey(key, 0)};
  req.payloads = {comm::EncodeRowSparse(0, rows, {})};  // the selection: row ids only
  GEOMX_ASSIGN_OR_RETURN(std::vector<Bytes> answer, aux_->RequestRaw(std::move(req)));
  if (answer.size() != 1) return Status::DataLoss("key " + d->name + ": not one answer");
  GEOMX_ASSIGN_OR_RETURN(comm::RowSparse got, comm::DecodeRowSparse(answer[0]));
  if (got.width != d->row_width || got.rows.size() != rows.size() || got.values.size() != out.size()) {
    return Status::DataLoss("key " + d->name + ": the server answered other rows than selected");
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    if (got.rows[i] != rows[i]) return Status::DataLoss("key " + d->name + ": rows answered out of order");
  }
  if (!out.empty()) std::memcpy(out.data(), got.values.data(), out.size_bytes());
  return Status::Ok();
}

Status PsContext::PullDecision(uint64_t key, int64_t round, std::span<float> out) {
  GEOMX_ASSIGN_OR_RETURN(const KeyDef* d, Def(key, "PullDecision"));
  if (d->role != KeyRole::kDecision) return Status::InvalidArgument("key " + d->name + " is not a decision key");
  if (out.size() != d->elems) {
    return Status::InvalidArgument("decision " + d->name + " has " + std::to_string(d->elems) + " values");
  }
  comm::RawRequest req;
  req.command = comm::Command::kPull;
  req.round = round;
  req.wire_keys = {comm::WireKey(key, 0)};
  GEOMX_ASSIGN_OR_RETURN(std::vector<Bytes> answer, aux_->RequestRaw(std::move(req)));
  if (answer.size() != 1 || answer[0].size() != out.size_bytes()) {
    return Status::DataLoss("decision " + d->name + ": the answer is not " + std::to_string(out.size()) + " floats");
  }
  if (!out.empty()) std::memcpy(out.data(), answer[0].data(), out.size_bytes());
  return Status::Ok();
}

Status PsContext::Barrier() {
  if (schema_.Find(kBarrierKey) == nullptr) {
    return Status::FailedPrecondition("barrier: the job's schema has no barrier key (KeySchema::WithBarrier)");
  }
  const float one = 1.0f;
  float count = 0;
  GEOMX_RETURN_IF_ERROR(PushPull(kBarrierKey, std::span<const float>(&one, 1), std::span<float>(&count, 1),
                                 barriers_++));
  if (count != static_cast<float>(num_workers_)) {
    return Status::Internal("barrier: " + std::to_string(count) + " workers arrived, expected " +
                            std::to_string(num_workers_));
  }
  return Status::Ok();
}

}  // namespace geomx::ps
