// CudaBackend::Conv2d{Forward,BackwardData,BackwardFilter} on cuDNN (NCHW, OIHW, f32, cross-correlation).
//
// Algorithm selection, once per problem (pass + shapes + parameters), cached in the CudaContext:
//   1. cudnnGet*Algorithm_v7 ranks the algorithms by heuristics and reports each one's workspace;
//   2. with options.benchmark_conv_algorithms, cudnnFind*AlgorithmEx times them on the real buffers (the output
//      is written as a side effect and then overwritten by the real call), with a workspace as large as the
//      largest candidate within options.conv_workspace_limit_bytes, taken from the caching allocator;
//   3. the first (fastest / best ranked) successful candidate within the limit wins. Without TF32 only full-f32
//      FMA math is accepted (the descriptor is pinned to CUDNN_FMA_MATH and the workspace is asked for again).
// Each call takes its workspace from the caching allocator, so repeated shapes reuse the same block.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/cuda_kernels.h"

namespace geomx {

namespace {

enum class ConvPass : int64_t { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };

struct ConvDescs {
  CudnnTensorDesc x, y;
  CudnnFilterDesc w;
  CudnnConvDesc conv;
};

// Device buffers of one call. Which one is written depends on the pass: y (forward), x (backward data, holding
// dx), w (backward filter, holding dw); y holds dy in the backward passes.
struct ConvBuffers {
  void* x;
  void* w;
  void* y;
};

Result<ConvDescs> MakeConvDescs(const Conv2dParams& p, const Shape& x, const Shape& w, const Shape& y,
                                bool allow_tf32) {
  ConvDescs d;
  GEOMX_ASSIGN_OR_RETURN(d.x, MakeTensorDesc(x));
  GEOMX_ASSIGN_OR_RETURN(d.y, MakeTensorDesc(y));
  GEOMX_ASSIGN_OR_RETURN(d.w, MakeFilterDesc(w));
  GEOMX_ASSIGN_OR_RETURN(d.conv, MakeConvDesc(p, allow_tf32));
  return d;
}

CudnnConvKey MakeKey(ConvPass pass, const Shape& x, const Shape& w, const Conv2dParams& p) {
  return {static_cast<int64_t>(pass), x[0], x[1], x[2], x[3], w[0], w[1], w[2], w[3],
          p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dilation_h, p.dilation_w};
}

// The three passes differ only in which cuDNN functions and perf types they use.
struct ForwardPass {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  static constexpr const char* kName = "Conv2dForward";
  static cudnnStatus_t MaxCount(cudnnHandle_t h, int* n) { return cudnnGetConvolutionForwardAlgorithmMaxCount(h, n); }
  static cudnnStatus_t Heuristic(cudnnHandle_t h, const ConvDescs& d, int req, int* got, Perf* perf) {
    return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), req, got, perf);
  }
  static cudnnStatus_t Find(cudnnHandle_t h, const ConvDescs& d, const ConvBuffers& b, int req, int* got, Perf* perf,
                            void* ws, size_t ws_bytes) {
    return cudnnFindConvolutionForwardAlgorithmEx(h, d.x.get(), b.x, d.w.get(), b.w, d.conv.get(), d.y.get(), b.y,
                                                  req, got, perf, ws, ws_bytes);
  }
  static cudnnStatus_t Workspace(cudnnHandle_t h, const ConvDescs& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
  }
};

struct BackwardDataPass {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  static constexpr const char* kName = "Conv2dBackwardData";
  static cudnnStatus_t MaxCount(cudnnHandle_t h, int* n) {
    return cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, n);
  }
  static cudnnStatus_t Heuristic(cudnnHandle_t h, const ConvDescs& d, int req, int* got, Perf* perf) {
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.get(), d.y.get(), d.conv.get(), d.x.get(), req, got,
                                                       perf);
  }
  static cudnnStatus_t Find(cudnnHandle_t h, const ConvDescs& d, const ConvBuffers& b, int req, int* got, Perf* perf,
                            void* ws, size_t ws_bytes) {
    return cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w.get(), b.w, d.y.get(), b.y, d.conv.get(), d.x.get(),
                                                       b.x, req, got, perf, ws, ws_bytes);
  }
  static cudnnStatus_t Workspace(cudnnHandle_t h, const ConvDescs& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w.get(), d.y.get(), d.conv.get(), d.x.get(),
                                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
  }
};

struct BackwardFilterPass {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  static constexpr const char* kName = "Conv2dBackwardFilter";
  static cudnnStatus_t MaxCount(cudnnHandle_t h, int* n) {
    return cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, n);
  }
  static cudnnStatus_t Heuristic(cudnnHandle_t h, const ConvDescs& d, int req, int* got, Perf* perf) {
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), req, got,
                                                         perf);
  }
  static cudnnStatus_t Find(cudnnHandle_t h, const ConvDescs& d, const ConvBuffers& b, int req, int* got, Perf* perf,
                            void* ws, size_t ws_bytes) {
    return cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.x.get(), b.x, d.y.get(), b.y, d.conv.get(), d.w.get(),
                                                         b.w, req, got, perf, ws, ws_bytes);
  }
  static cudnnStatus_t Workspace(cudnnHandle_t h, const ConvDescs& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(),
                                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
  }
};

// The first usable candidate of a ranked list: succeeded, fits the workspace limit, and (without TF32) measured
// with full-f32 FMA math; failing that, the first that succeeded and fits (its math is then pinned to FMA).
template <typename Perf>
const Perf* PickCandidate(const std::vector<Perf>& perf, int count, size_t limit, bool allow_tf32) {
  const Perf* fallback = nullptr;
  for (int i = 0; i < count; ++i) {
    const Perf& p = perf[static_cast<size_t>(i)];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > limit) continue;
    if (allow_tf32 || p.mathType == CUDNN_FMA_MATH) return &p;
    if (fallback == nullptr) fallback = &p;
  }
  return fallback;
}

// Under ctx.LockLibraries(). The cached choice for `key`, or a new one (see the file comment).
template <typename Pass>
Result<CudnnConvAlgo> ChooseAlgo(CudaContext& ctx, const CudnnConvKey& key, const ConvDescs& d,
                                 const ConvBuffers& buffers) {
  auto& cache = ctx.conv_algos();
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const CudaBackendOptions& opt = ctx.options();
  cudnnHandle_t h = ctx.cudnn();
  int max_count = 0;
  GEOMX_CUDA_RETURN_IF_ERROR(Pass::MaxCount(h, &max_count));
  std::vector<typename Pass::Perf> perf(static_cast<size_t>(std::max(max_count, 1)));
  int count = 0;
  GEOMX_CUDA_RETURN_IF_ERROR(Pass::Heuristic(h, d, max_count, &count, perf.data()));
  if (opt.benchmark_conv_algorithms) {
    size_t ws_bytes = 0;
    for (int i = 0; i < count; ++i) {
      const auto& p = perf[static_cast<size_t>(i)];
      if (p.status == CUDNN_STATUS_SUCCESS && p.memory <= opt.conv_workspace_limit_bytes) {
        ws_bytes = std::max(ws_bytes, p.memory);
      }
    }
    GEOMX_ASSIGN_OR_RETURN(std::shared_ptr<Storage> ws, ctx.Scratch(ws_bytes));
    GEOMX_CUDA_RETURN_IF_ERROR(Pass::Find(h, d, buffers, max_count, &count, perf.data(), ws->data(), ws_bytes));
  }
  const auto* best = PickCandidate(perf, count, opt.conv_workspace_limit_bytes, opt.allow_tf32);
  if (best == nullptr) {
    return Status::Unimplemented(std::string(Pass::kName) + ": cuDNN offers no algorithm for this problem within " +
                                 std::to_string(opt.conv_workspace_limit_bytes >> 20) + " MiB of workspace");
  }
  CudnnConvAlgo algo{static_cast<int>(best->algo), best->mathType, best->memory};
  if (!opt.allow_tf32 && algo.math_type != CUDNN_FMA_MATH) {
    algo.math_type = CUDNN_FMA_MATH;
    GEOMX_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.get(), algo.math_type));
    GEOMX_CUDA_RETURN_IF_ERROR(Pass::Workspace(h, d, algo.algo, &algo.workspace_bytes));
  }
  cache.emplace(key, algo);
  return algo;
}

// Under the lock: picks the algorithm, sets its math type on the descriptor and provides its workspace.
struct PreparedConv {
  CudnnConvAlgo algo;
  std::shared_ptr<Storage> workspace;
};

template <typename Pass>
Result<PreparedConv> Prepare(CudaContext& ctx, const CudnnConvKey& key, const ConvDescs& d,
                             const ConvBuffers& buffers) {
  PreparedConv prep;
  GEOMX_ASSIGN_OR_RETURN(prep.algo, ChooseAlgo<Pass>(ctx, key, d, buffers));
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.get(), prep.algo.math_type));
  GEOMX_ASSIGN_OR_RETURN(prep.workspace, ctx.Scratch(prep.algo.workspace_bytes));
  return prep;
}

void* Mut(const Tensor& t) { return t.raw_data(); }  // cuDNN takes non-const pointers for its benchmark outputs

}  // namespace

Status CudaBackend::Conv2dForward(const Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor* b,
                                  Tensor* y) {
  if (y->numel() == 0) return Status::Ok();
  const float one = 1.0f, zero = 0.0f;
  auto lock = ctx_->LockLibraries();
  cudnnHandle_t h = ctx_->cudnn();
  if (w.numel() == 0) {  // no input channels: an empty sum, then the bias
    GEOMX_RETURN_IF_ERROR(Fill(0.0f, y));
  } else {
    GEOMX_ASSIGN_OR_RETURN(ConvDescs d, MakeConvDescs(p, x.shape(), w.shape(), y->shape(), options_.allow_tf32));
    const ConvBuffers buffers{Mut(x), Mut(w), y->raw_data()};
    GEOMX_ASSIGN_OR_RETURN(PreparedConv prep, Prepare<ForwardPass>(*ctx_, MakeKey(ConvPass::kForward, x.shape(),
                                                                                  w.shape(), p), d, buffers));
    GEOMX_CUDA_RETURN_IF_ERROR(cudnnConvolutionForward(
        h, &one, d.x.get(), x.raw_data(), d.w.get(), w.raw_data(), d.conv.get(),
        static_cast<cudnnConvolutionFwdAlgo_t>(prep.algo.algo), prep.workspace->data(), prep.algo.workspace_bytes,
        &zero, d.y.get(), y->raw_data()));
  }
  if (b == nullptr) return Status::Ok();
  GEOMX_ASSIGN_OR_RETURN(CudnnTensorDesc b_desc, MakeTensorDesc(b->shape()));  // [1, O, 1, 1]
  GEOMX_ASSIGN_OR_RETURN(CudnnTensorDesc y_desc, MakeTensorDesc(y->shape()));
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnAddTensor(h, &one, b_desc.get(), b->raw_data(), &one, y_desc.get(), y->raw_data()));
  return Status::Ok();
}

Status CudaBackend::Conv2dBackwardData(const Conv2dParams& p, const Tensor& dy, const Tensor& w, Tensor* dx) {
  if (dx->numel() == 0) return Status::Ok();
  if (dy.numel() == 0 || w.numel() == 0) return Fill(0.0f, dx);  // nothing flows back
  const float one = 1.0f, zero = 0.0f;
  auto lock = ctx_->LockLibraries();
  GEOMX_ASSIGN_OR_RETURN(ConvDescs d, MakeConvDescs(p, dx->shape(), w.shape(), dy.shape(), options_.allow_tf32));
  const ConvBuffers buffers{dx->raw_data(), Mut(w), Mut(dy)};
  GEOMX_ASSIGN_OR_RETURN(
      PreparedConv prep,
      Prepare<BackwardDataPass>(*ctx_, MakeKey(ConvPass::kBackwardData, dx->shape(), w.shape(), p), d, buffers));
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnConvolutionBackwardData(
      ctx_->cudnn(), &one, d.w.get(), w.raw_data(), d.y.get(), dy.raw_data(), d.conv.get(),
      static_cast<cudnnConvolutionBwdDataAlgo_t>(prep.algo.algo), prep.workspace->data(), prep.algo.workspace_bytes,
      &zero, d.x.get(), dx->raw_data()));
  return Status::Ok();
}

Status CudaBackend::Conv2dBackwardFilter(const Conv2dParams& p, const Tensor& x, const Tensor& dy, Tensor* dw,
                                         Tensor* db) {
  const float one = 1.0f, zero = 0.0f;
  if (dy.numel() == 0) {  // an empty batch: zero gradients
    GEOMX_RETURN_IF_ERROR(Fill(0.0f, dw));
    return db == nullptr ? Status::Ok() : Fill(0.0f, db);
  }
  auto lock = ctx_->LockLibraries();
  cudnnHandle_t h = ctx_->cudnn();
  if (dw->numel() > 0) {
    GEOMX_ASSIGN_OR_RETURN(ConvDescs d, MakeConvDescs(p, x.shape(), dw->shape(), dy.shape(), options_.allow_tf32));
    const ConvBuffers buffers{Mut(x), dw->raw_data(), Mut(dy)};
    GEOMX_ASSIGN_OR_RETURN(
        PreparedConv prep,
        Prepare<BackwardFilterPass>(*ctx_, MakeKey(ConvPass::kBackwardFilter, x.shape(), dw->shape(), p), d, buffers));
    GEOMX_CUDA_RETURN_IF_ERROR(cudnnConvolutionBackwardFilter(
        h, &one, d.x.get(), x.raw_data(), d.y.get(), dy.raw_data(), d.conv.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(prep.algo.algo), prep.workspace->data(),
        prep.algo.workspace_bytes, &zero, d.w.get(), dw->raw_data()));
  }
  if (db == nullptr) return Status::Ok();
  GEOMX_ASSIGN_OR_RETURN(CudnnTensorDesc dy_desc, MakeTensorDesc(dy.shape()));
  GEOMX_ASSIGN_OR_RETURN(CudnnTensorDesc db_desc, MakeTensorDesc(db->shape()));  // [1, O, 1, 1]
  GEOMX_CUDA_RETURN_IF_ERROR(
      cudnnConvolutionBackwardBias(h, &one, dy_desc.get(), dy.raw_data(), &zero, db_desc.get(), db->raw_data()));
  return Status::Ok();
}

}  // namespace geomx
