// CpuBackend::LstmForward / LstmBackward on oneDNN's LSTM primitives (lstm_forward, lstm_backward), cached by
// shape and propagation kind.
//
// Layouts (op_params.h LstmParams): x [N, T, I] is oneDNN's src_layer {T, N, I} in format ntc; w_ih [4H, I] and
// w_hh [4H, H] are weights_layer {1, 1, I, 4, H} and weights_iter {1, 1, H, 4, H} in format ldgoi, and b [4H] is
// bias {1, 1, 4, H} in ldgo; oneDNN's gate order (input, forget, candidate, output) is PyTorch's, so no gate is
// moved. The primitives pick their own weight formats (format_tag::any) and Execute() reorders into them. The
// initial states are oneDNN's zero descriptors (zero h0 and c0). dst_iter {1, 1, N, H} (ldnc) is the last step's
// h, so a `sequences == false` output is written there directly and its gradient enters as diff_dst_iter.
//
// oneDNN's backward *accumulates* into the weight gradients and (in this version) writes them only in format ldigo,
// {I, 4H} in memory, the transpose of ours: they go into zero-filled temporaries that are transposed into dw_ih
// and dw_hh afterwards. The training workspace is one u8 tensor:
//   [oneDNN workspace | dst_layer N*T*H f32 | dst_iter N*H f32 | dst_iter_c N*H f32], each part 64-byte aligned.
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/onednn_context.h"

namespace geomx {

namespace {

using lstm_fwd = dnnl::lstm_forward;
using lstm_bwd = dnnl::lstm_backward;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

size_t Align64(size_t n) { return (n + 63) / 64 * 64; }

struct LstmGeometry {
  int64_t n, t, i, h;
  dnnl::memory::desc x_md, w_ih_md, w_hh_md, b_md, seq_md, last_md;
  dnnl::memory::desc dw_ih_md, dw_hh_md;  // ldigo: the only diff-weights format oneDNN's backward takes

  LstmGeometry(const Shape& x, const Shape& w_hh) : n(x.dim(0)), t(x.dim(1)), i(x.dim(2)), h(w_hh.dim(1)) {
    x_md = dnnl::memory::desc({t, n, i}, dt::f32, tag::ntc);
    w_ih_md = dnnl::memory::desc({1, 1, i, 4, h}, dt::f32, tag::ldgoi);
    w_hh_md = dnnl::memory::desc({1, 1, h, 4, h}, dt::f32, tag::ldgoi);
    b_md = dnnl::memory::desc({1, 1, 4, h}, dt::f32, tag::ldgo);
    seq_md = dnnl::memory::desc({t, n, h}, dt::f32, tag::ntc);
    last_md = dnnl::memory::desc({1, 1, n, h}, dt::f32, tag::ldnc);
    dw_ih_md = dnnl::memory::desc({1, 1, i, 4, h}, dt::f32, tag::ldigo);
    dw_hh_md = dnnl::memory::desc({1, 1, h, 4, h}, dt::f32, tag::ldigo);
  }

  static dnnl::memory::desc Any(const dnnl::memory::desc& md) {
    return dnnl::memory::desc(md.dims(), dt::f32, tag::any);
  }

  OneDnnKey Key(OneDnnOp op, bool training) const {
    OneDnnKey key(op);
    key.Add(n).Add(t).Add(i).Add(h).Add(training ? 1 : 0);
    return key;
  }

  lstm_fwd::primitive_desc ForwardPd(const dnnl::engine& eng, bool training) const {
    const dnnl::memory::desc zero;
    lstm_fwd::desc d(training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference,
                     dnnl::rnn_direction::unidirectional_left2right, x_md, zero, zero, Any(w_ih_md), Any(w_hh_md),
                     b_md, seq_md, last_md, last_md);
    return lstm_fwd::primitive_desc(d, OneDnnDefaultAttr(), eng);
  }

  size_t SeqBytes() const { return static_cast<size_t>(n * t * h) * sizeof(float); }
  size_t LastBytes() const { return static_cast<size_t>(n * h) * sizeof(float); }
};

// Offsets of the parts of the training workspace (see the file comment).
struct LstmWorkspaceLayout {
  size_t dnn = 0, seq = 0, last_h = 0, last_c = 0, total = 0;
  LstmWorkspaceLayout(const LstmGeometry& g, size_t dnn_bytes) {
    seq = Align64(dnn_bytes);
    last_h = seq + Align64(g.SeqBytes());
    last_c = last_h + Align64(g.LastBytes());
    total = last_c + Align64(g.LastBytes());
  }
};

// out [cols, rows] = the transpose of src [rows, cols].
void TransposeInto(const Tensor& src, int64_t rows, int64_t cols, Tensor* out) {
  const float* s = src.data<float>();
  float* o = out->data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) o[c * rows + r] = s[r * cols + c];
  }
}

OneDnnPrimitive MakeForward(const LstmGeometry& g, const dnnl::engine& eng, bool training) {
  const lstm_fwd::primitive_desc pd = g.ForwardPd(eng, training);
  OneDnnPrimitive prim = MakeOneDnnPrimitive<lstm_fwd>(pd);
  OneDnnAddReorder(eng, DNNL_ARG_WEIGHTS_LAYER, g.w_ih_md, pd.weights_layer_desc(), false, &prim);
  OneDnnAddReorder(eng, DNNL_ARG_WEIGHTS_ITER, g.w_hh_md, pd.weights_iter_desc(), false, &prim);
  return prim;
}

OneDnnPrimitive MakeBackward(const LstmGeometry& g, const dnnl::engine& eng) {
  const dnnl::memory::desc zero;
  lstm_bwd::desc d(dnnl::prop_kind::backward, dnnl::rnn_direction::unidirectional_left2right, g.x_md, zero, zero,
                   LstmGeometry::Any(g.w_ih_md), LstmGeometry::Any(g.w_hh_md), g.b_md, g.seq_md, g.last_md,
                   g.last_md, g.x_md, zero, zero, g.dw_ih_md, g.dw_hh_md, g.b_md, g.seq_md, g.last_md, g.last_md);
  const lstm_bwd::primitive_desc pd(d, OneDnnDefaultAttr(), eng, g.ForwardPd(eng, true));
  OneDnnPrimitive prim = MakeOneDnnPrimitive<lstm_bwd>(pd);
  OneDnnAddReorder(eng, DNNL_ARG_WEIGHTS_LAYER, g.w_ih_md, pd.weights_layer_desc(), false, &prim);
  OneDnnAddReorder(eng, DNNL_ARG_WEIGHTS_ITER, g.w_hh_md, pd.weights_iter_desc(), false, &prim);
  return prim;
}

}  // namespace

Status CpuBackend::LstmForward(const LstmParams& p, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh,
                               const Tensor& b, Tensor* y, Tensor* workspace) {
  const LstmGeometry g(x.shape(), w_hh.shape());
  const bool training = workspace != nullptr;
  if (g.n == 0 || g.t == 0) {  // nothing to run: h stays at its zero initial state
    if (training) *workspace = Tensor::Empty(Shape{0}, DType::kU8);
    return Fill(0.0f, y);
  }
  const OneDnnKey key = g.Key(OneDnnOp::kLstmForward, training);
  GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* prim, dnn_->GetOrCreate("LstmForward", key, [&] {
                           return MakeForward(g, dnn_->engine(), training);
                         }));
  const LstmWorkspaceLayout layout(g, prim->workspace.get_size());
  // oneDNN writes the sequence, the last h and the last c into the workspace tensor (scratch in inference); the
  // caller's output is copied out of it, and the backward reads it back from there.
  Tensor ws = Tensor::Empty(Shape{static_cast<int64_t>(layout.total)}, DType::kU8);
  auto* base = static_cast<std::byte*>(ws.raw_data());
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC_LAYER, dnn_->Wrap(x, g.x_md)},
      {DNNL_ARG_WEIGHTS_LAYER, dnn_->Wrap(w_ih, g.w_ih_md)},
      {DNNL_ARG_WEIGHTS_ITER, dnn_->Wrap(w_hh, g.w_hh_md)},
      {DNNL_ARG_BIAS, dnn_->Wrap(b, g.b_md)},
      {DNNL_ARG_DST_LAYER, dnn_->WrapRaw(base + layout.seq, g.seq_md)},
      {DNNL_ARG_DST_ITER, dnn_->WrapRaw(base + layout.last_h, g.last_md)},
      {DNNL_ARG_DST_ITER_C, dnn_->WrapRaw(base + layout.last_c, g.last_md)}};
  if (training) args.emplace(DNNL_ARG_WORKSPACE, dnn_->WrapRaw(base + layout.dnn, prim->workspace));
  GEOMX_RETURN_IF_ERROR(dnn_->Execute("LstmForward", *prim, std::move(args)));
  std::memcpy(y->raw_data(), p.sequences ? base + layout.seq : base + layout.last_h,
              p.sequences ? g.SeqBytes() : g.LastBytes());
  if (!training) return Status::Ok();
  *workspace = ws;
  return Status::Ok();
}

Status CpuBackend::LstmBackward(const LstmParams& p, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh,
                                const Tensor& b, const Tensor& dy, const Tensor& workspace, Tensor* dx,
                                Tensor* dw_ih, Tensor* dw_hh, Tensor* db) {
  const LstmGeometry g(x.shape(), w_hh.shape());
  // oneDNN accumulates into the weight gradients (see the file comment).
  GEOMX_RETURN_IF_ERROR(Fill(0.0f, db));
  if (g.n == 0 || g.t == 0) {
    GEOMX_RETURN_IF_ERROR(Fill(0.0f, dw_ih));
    GEOMX_RETURN_IF_ERROR(Fill(0.0f, dw_hh));
    return Fill(0.0f, dx);
  }
  GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* prim,
                         dnn_->GetOrCreate("LstmBackward", g.Key(OneDnnOp::kLstmBackward, true),
                                           [&] { return MakeBackward(g, dnn_->engine()); }));
  GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* fwd,
                         dnn_->GetOrCreate("LstmForward", g.Key(OneDnnOp::kLstmForward, true),
                                           [&] { return MakeForward(g, dnn_->engine(), true); }));
  const LstmWorkspaceLayout layout(g, fwd->workspace.get_size());
  if (!workspace.defined() || !workspace.device().is_cpu() || workspace.dtype() != DType::kU8 ||
      workspace.nbytes() != layout.total) {
    return Status::InvalidArgument("LstmBackward: needs the workspace of LstmForward in training (" +
                                   std::to_string(layout.total) + " bytes), got " +
                                   (workspace.defined() ? workspace.ToString() : std::string("none")));
  }
  auto* base = static_cast<std::byte*>(workspace.raw_data());
  // The gradient of the output that the caller did not receive is zero.
  Tensor zero_seq, zero_last_c = Tensor::Zeros(Shape{g.n, g.h}, DType::kF32);
  Tensor zero_last_h;
  const void* d_seq = dy.raw_data();
  const void* d_last = nullptr;
  if (p.sequences) {
    zero_last_h = Tensor::Zeros(Shape{g.n, g.h}, DType::kF32);
    d_last = zero_last_h.raw_data();
  } else {
    zero_seq = Tensor::Zeros(Shape{g.n, g.t, g.h}, DType::kF32);
    d_seq = zero_seq.raw_data();
    d_last = dy.raw_data();
  }
  const Tensor dw_ih_t = Tensor::Zeros(Shape{g.i, 4 * g.h}, DType::kF32);
  const Tensor dw_hh_t = Tensor::Zeros(Shape{g.h, 4 * g.h}, DType::kF32);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC_LAYER, dnn_->Wrap(x, g.x_md)},
      {DNNL_ARG_WEIGHTS_LAYER, dnn_->Wrap(w_ih, g.w_ih_md)},
      {DNNL_ARG_WEIGHTS_ITER, dnn_->Wrap(w_hh, g.w_hh_md)},
      {DNNL_ARG_BIAS, dnn_->Wrap(b, g.b_md)},
      {DNNL_ARG_DST_LAYER, dnn_->WrapRaw(base + layout.seq, g.seq_md)},
      {DNNL_ARG_DST_ITER, dnn_->WrapRaw(base + layout.last_h, g.last_md)},
      {DNNL_ARG_DST_ITER_C, dnn_->WrapRaw(base + layout.last_c, g.last_md)},
      {DNNL_ARG_DIFF_DST_LAYER, dnn_->WrapRaw(const_cast<void*>(d_seq), g.seq_md)},
      {DNNL_ARG_DIFF_DST_ITER, dnn_->WrapRaw(const_cast<void*>(d_last), g.last_md)},
      {DNNL_ARG_DIFF_DST_ITER_C, dnn_->Wrap(zero_last_c, g.last_md)},
      {DNNL_ARG_WORKSPACE, dnn_->WrapRaw(base + layout.dnn, prim->workspace)},
      {DNNL_ARG_DIFF_SRC_LAYER, dnn_->Wrap(*dx, g.x_md)},
      {DNNL_ARG_DIFF_WEIGHTS_LAYER, dnn_->Wrap(dw_ih_t, g.dw_ih_md)},
      {DNNL_ARG_DIFF_WEIGHTS_ITER, dnn_->Wrap(dw_hh_t, g.dw_hh_md)},
      {DNNL_ARG_DIFF_BIAS, dnn_->Wrap(*db, g.b_md)}};
  GEOMX_RETURN_IF_ERROR(dnn_->Execute("LstmBackward", *prim, std::move(args)));
  TransposeInto(dw_ih_t, g.i, 4 * g.h, dw_ih);
  TransposeInto(dw_hh_t, g.h, 4 * g.h, dw_hh);
  return Status::Ok();
}

}  // namespace geomx
