// Dispatch of the sync-mode policies (cli/sync/sync_mode.h) and what all modes share.
#include "cli/sync/sync_mode.h"

#include "cli/sync/server_optimizer.h"
#include "comm/codec.h"
#include "comm/compression/compressor.h"

namespace geomx::cli {

std::string ClusterContext::LocalTierCodec() const {
  return links.worker_to_local != "none" || links.local_to_worker != "none" ? comm::kCompressedCodec : "";
}
std::string ClusterContext::GlobalTierCodec() const {
  return links.local_to_global != "none" || links.global_to_local != "none" ? comm::kCompressedCodec : "";
}

namespace {
Status Unknown(const std::string& mode) {
  return Status::InvalidArgument("sync.mode: '" + mode + "' is not built into this binary");
}
}  // namespace

Result<std::unique_ptr<ServerPolicy>> MakeGlobalServerPolicy(const ClusterContext& ctx, const comm::KeyLayout& layout) {
  const std::string& mode = ctx.recipe->sync.mode;
  if (mode == "fsa") return MakeFsaGlobalServer(ctx, layout);
  if (mode == "mixed") return MakeMixedGlobalServer(ctx, layout);
  if (mode == "hfa" || mode == "diloco") return MakeHfaGlobalServer(ctx, layout);
  if (mode == "esync") return MakeEsyncGlobalServer(ctx, layout);
  return Unknown(mode);
}

Result<std::unique_ptr<ServerPolicy>> MakeLocalServerPolicy(const ClusterContext& ctx, const comm::KeyLayout& layout,
                                                            const LocalServerArgs& args) {
  const std::string& mode = ctx.recipe->sync.mode;
  if (mode == "fsa" || mode == "mixed") return MakeFsaLocalServer(ctx, layout, args);
  if (mode == "hfa" || mode == "diloco") return MakeHfaLocalServer(ctx, layout, args);
  if (mode == "esync") return MakeEsyncLocalServer(ctx, layout, args);
  return Unknown(mode);
}

Result<std::unique_ptr<WorkerSync>> MakeWorkerSync(const ClusterContext& ctx, const WorkerArgs& args) {
  const std::string& mode = ctx.recipe->sync.mode;
  if (mode == "fsa" && ctx.recipe->accelerators.p3) return MakeP3Worker(ctx, args);
  if (mode == "fsa" || mode == "mixed") return MakeFsaWorker(ctx, args);
  if (mode == "hfa" || mode == "diloco") return MakeHfaWorker(ctx, args);
  if (mode == "esync") return MakeEsyncWorker(ctx, args);
  return Unknown(mode);
}

Status SendInitialState(const ClusterContext& ctx, comm::KvWorker& kv) {
  GEOMX_RETURN_IF_ERROR(kv.SendControl(comm::EncodeFields(OptimizerFields(ctx.recipe->optimizer))));
  std::vector<uint64_t> keys;
  std::vector<Tensor> host;
  std::vector<const float*> values;
  for (nn::Parameter* p : ctx.setup->model->Parameters()) {
    keys.push_back(keys.size());
    host.push_back(p->data().To(Device::Cpu()));
  }
  for (const Tensor& t : host) values.push_back(t.data<float>());
  if (ctx.GlobalTierCodec().empty()) return kv.Wait(kv.Push(keys, values, comm::kInitRound));
  // A compressed global tier stores frames: the initial weights go as lossless kRaw frames, slice by slice.
  comm::RawRequest req;
  req.command = comm::Command::kPush;
  req.codec = comm::kCompressedCodec;
  req.round = comm::kInitRound;
  for (size_t i = 0; i < keys.size(); ++i) {
    for (const comm::KeySlice& s : kv.layout().slices(keys[i])) {
      req.wire_keys.push_back(s.wire_key);
      req.payloads.push_back(comm::RawFrame(std::span<const float>(values[i] + s.offset, s.length)));
    }
  }
  return kv.RequestRaw(std::move(req)).status();
}

}  // namespace geomx::cli
