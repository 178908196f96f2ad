// CpuBackend::RnnForward / RnnBackward on oneDNN's recurrent primitives: lstm_forward/backward for kLstm and the
// linear-before-reset GRU (lbr_gru_forward/backward, the GRU of cuDNN and PyTorch) for kGru, cached by cell,
// shape and propagation kind.
//
// Layouts (op_params.h RnnParams): x [N, T, I] is oneDNN's src_layer {T, N, I} in format ntc; the weights are
// weights_layer {1, 1, I, G, H} and weights_iter {1, 1, H, G, H} in format ldgoi (our [G*H, I] row-major), and the
// bias is {1, 1, 4, H} (ldgo) for both cells. Gate order: oneDNN's LSTM (input, forget, candidate, output) is ours;
// its GRU orders (update, reset, new) where we order (reset, update, new), so the first two blocks swap, and its
// single GRU bias is [b_iz + b_hz, b_ir + b_hr, b_in, b_hn] (the sums stand for two biases that only ever appear
// added). The weights and the bias therefore pass through small converted copies in oneDNN's order; the
// primitives pick their own weight formats (format_tag::any) and Execute() reorders into them. The initial states
// are oneDNN's zero descriptors. dst_iter {1, 1, N, H} (ldnc) is the last step's h, so a `sequences == false`
// output is read there and its gradient enters as diff_dst_iter.
//
// oneDNN's backward *accumulates* into the weight gradients and (in this version) writes them only in format ldigo
// ({I, G*H} in memory, the transpose of ours): they go into zero-filled temporaries that are transposed and put
// back in our gate order afterwards; the bias gradient is spread back over our bias (both halves of a summed pair
// get the same gradient).
//
// Threads: oneDNN 2.6 trains an RNN with its reference implementation, whose per-step GEMMs (a few dozen rows) and
// gate kernels gain little from a second thread. The rows of a batch are independent sequences, so with k threads
// (and at least 16 rows each) the batch is cut into k contiguous chunks (x, the outputs and dx are row-major by
// sample, so a chunk is an offset) that run the primitive side by side, one thread each; each chunk's weight
// gradients go into their own zeros and are summed. The training workspace is one u8 tensor, 64-byte aligned parts:
//   [chunk count (int64, 64 bytes) | each chunk's oneDNN workspace | dst_layer N*T*H f32 | dst_iter N*H f32 |
//    dst_iter_c N*H f32 (LSTM)]
// and the backward cuts the batch by the count stored there.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/onednn_context.h"

namespace geomx {

namespace {

using lstm_fwd = dnnl::lstm_forward;
using lstm_bwd = dnnl::lstm_backward;
using gru_fwd = dnnl::lbr_gru_forward;
using gru_bwd = dnnl::lbr_gru_backward;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using md = dnnl::memory::desc;

size_t Align64(size_t n) { return (n + 63) / 64 * 64; }

md Any(const md& m) { return md(m.dims(), dt::f32, tag::any); }

struct RnnGeometry {
  RnnCell cell;
  int64_t n, t, i, h, gates;
  md x_md, w_ih_md, w_hh_md, b_md, seq_md, last_md;
  md dw_ih_md, dw_hh_md;  // ldigo: the only diff-weights format oneDNN's backward takes
  md last_c_md;           // the LSTM's cell state; a zero descriptor for the GRU

  // `rows`: the batch rows this geometry covers (a chunk of x's, see BatchChunks), or -1 for all of them.
  RnnGeometry(const RnnParams& p, const Shape& x, const Shape& w_hh, int64_t rows = -1)
      : cell(p.cell),
        n(rows >= 0 ? rows : x.dim(0)),
        t(x.dim(1)),
        i(x.dim(2)),
        h(w_hh.dim(1)),
        gates(RnnGates(p.cell)) {
    x_md = md({t, n, i}, dt::f32, tag::ntc);
    w_ih_md = md({1, 1, i, gates, h}, dt::f32, tag::ldgoi);
    w_hh_md = md({1, 1, h, gates, h}, dt::f32, tag::ldgoi);
    b_md = md({1, 1, 4, h}, dt::f32, tag::ldgo);  // LSTM: 4 gates; LBR GRU: 3 gates + the b_hn block
    seq_md = md({t, n, h}, dt::f32, tag::ntc);
    last_md = md({1, 1, n, h}, dt::f32, tag::ldnc);
    dw_ih_md = md({1, 1, i, gates, h}, dt::f32, tag::ldigo);
    dw_hh_md = md({1, 1, h, gates, h}, dt::f32, tag::ldigo);
    if (cell == RnnCell::kLstm) last_c_md = last_md;
  }

  OneDnnKey Key(OneDnnOp op, bool training) const {
    OneDnnKey key(op);
    key.Add(static_cast<int64_t>(cell)).Add(n).Add(t).Add(i).Add(h).Add(training ? 1 : 0);
    return key;
  }

  // Our gate block -> oneDNN's (the GRU swaps reset and update).
  int64_t DnnBlock(int64_t ours) const { return cell == RnnCell::kGru && ours < 2 ? 1 - ours : ours; }

  size_t SeqBytes() const { return static_cast<size_t>(n * t * h) * sizeof(float); }
  size_t LastBytes() const { return static_cast<size_t>(n * h) * sizeof(float); }
};

dnnl::prop_kind Prop(bool training) {
  return training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
}

constexpr auto kDir = dnnl::rnn_direction::unidirectional_left2right;

// The forward primitive_desc of each cell (also the hint its backward is created with).
lstm_fwd::primitive_desc LstmForwardPd(const RnnGeometry& g, const dnnl::engine& eng, bool training) {
  const md zero;
  lstm_fwd::desc d(Prop(training), kDir, g.x_md, zero, zero, Any(g.w_ih_md), Any(g.w_hh_md), g.b_md, g.seq_md,
                   g.last_md, g.last_c_md);
  return lstm_fwd::primitive_desc(d, OneDnnDefaultAttr(), eng);
}

gru_fwd::primitive_desc GruForwardPd(const RnnGeometry& g, const dnnl::engine& eng, bool training) {
  const md zero;
  gru_fwd::desc d(Prop(training), kDir, g.x_md, zero, Any(g.w_ih_md), Any(g.w_hh_md), g.b_md, g.seq_md, g.last_md);
  return gru_fwd::primitive_desc(d, OneDnnDefaultAttr(), eng);
}

template <typename Prim, typename Pd>
OneDnnPrimitive WithWeightReorders(const RnnGeometry& g, const dnnl::engine& eng, const Pd& pd) {
  OneDnnPrimitive prim = MakeOneDnnPrimitive<Prim>(pd);
  OneDnnAddReorder(eng, DNNL_ARG_WEIGHTS_LAYER, g.w_ih_md, pd.weights_layer_desc(), false, &prim);
  OneDnnAddReorder(eng, DNNL_ARG_WEIGHTS_ITER, g.w_hh_md, pd.weights_iter_desc(), false, &prim);
  return prim;
}

OneDnnPrimitive MakeForward(const RnnGeometry& g, const dnnl::engine& eng, bool training) {
  if (g.cell == RnnCell::kLstm) return WithWeightReorders<lstm_fwd>(g, eng, LstmForwardPd(g, eng, training));
  return WithWeightReorders<gru_fwd>(g, eng, GruForwardPd(g, eng, training));
}

OneDnnPrimitive MakeBackward(const RnnGeometry& g, const dnnl::engine& eng) {
  const md zero;
  if (g.cell == RnnCell::kLstm) {
    lstm_bwd::desc d(dnnl::prop_kind::backward, kDir, g.x_md, zero, zero, Any(g.w_ih_md), Any(g.w_hh_md), g.b_md,
                     g.seq_md, g.last_md, g.last_c_md, g.x_md, zero, zero, g.dw_ih_md, g.dw_hh_md, g.b_md, g.seq_md,
                     g.last_md, g.last_c_md);
    const lstm_bwd::primitive_desc pd(d, OneDnnDefaultAttr(), eng, LstmForwardPd(g, eng, true));
    return WithWeightReorders<lstm_bwd>(g, eng, pd);
  }
  gru_bwd::desc d(dnnl::prop_kind::backward, kDir, g.x_md, zero, Any(g.w_ih_md), Any(g.w_hh_md), g.b_md, g.seq_md,
                  g.last_md, g.x_md, zero, g.dw_ih_md, g.dw_hh_md, g.b_md, g.seq_md, g.last_md);
  const gru_bwd::primitive_desc pd(d, OneDnnDefaultAttr(), eng, GruForwardPd(g, eng, true));
  return WithWeightReorders<gru_bwd>(g, eng, pd);
}

// The batch cut into contiguous chunks of rows that run side by side, one thread each (see the file comment). The
// count is stored in the workspace, so the backward cuts the batch as its forward did.
struct BatchChunks {
  static constexpr int64_t kMinRows = 16;  // fewer rows per chunk and the per-step GEMMs get too thin to pay
  int64_t count = 1;
  int64_t n = 0;
  BatchChunks(int64_t rows, int64_t chunks) : count(std::max<int64_t>(1, std::min(chunks, rows))), n(rows) {}
  static BatchChunks For(int64_t rows) {
    return BatchChunks(rows, std::min<int64_t>(omp_in_parallel() ? 1 : omp_get_max_threads(), rows / kMinRows));
  }
  int64_t Begin(int64_t c) const { return c * n / count; }
  int64_t Rows(int64_t c) const { return Begin(c + 1) - Begin(c); }
};

// Offsets of the parts of the training workspace (see the file comment).
struct RnnWorkspaceLayout {
  size_t seq = 0, last_h = 0, last_c = 0, total = 0;
  std::vector<size_t> dnn;  // each chunk's oneDNN workspace
  RnnWorkspaceLayout(const RnnGeometry& g, const std::vector<size_t>& dnn_bytes) {
    size_t at = kHeaderBytes;
    for (size_t b : dnn_bytes) {
      dnn.push_back(at);
      at += Align64(b);
    }
    seq = at;
    last_h = seq + Align64(g.SeqBytes());
    last_c = last_h + Align64(g.LastBytes());
    total = last_c + (g.cell == RnnCell::kLstm ? Align64(g.LastBytes()) : 0);
  }
  static constexpr size_t kHeaderBytes = 64;  // int64 chunk count, then padding
};

// The cached forward primitive of a chunk of `rows` rows.
Result<const OneDnnPrimitive*> ForwardPrimitive(OneDnnContext& dnn, const RnnParams& p, const Tensor& x,
                                                const Tensor& w_hh, int64_t rows, bool training) {
  const RnnGeometry g(p, x.shape(), w_hh.shape(), rows);
  return dnn.GetOrCreate("RnnForward", g.Key(OneDnnOp::kRnnForward, training),
                         [&] { return MakeForward(g, dnn.engine(), training); });
}

// The oneDNN workspace bytes of each chunk's forward primitive.
std::vector<size_t> WorkspaceBytes(const std::vector<const OneDnnPrimitive*>& forwards) {
  std::vector<size_t> out;
  for (const OneDnnPrimitive* f : forwards) out.push_back(f->workspace.get_size());
  return out;
}

// Runs body(c) for every chunk, side by side when there are several (each on one thread: nested regions are off,
// so oneDNN runs a primitive on the calling thread). The first failure is returned.
template <typename Body>
Status ForEachChunk(const BatchChunks& chunks, const Body& body) {
  if (chunks.count == 1) return body(int64_t{0});
  std::vector<Status> status(static_cast<size_t>(chunks.count));
#pragma omp parallel for num_threads(static_cast<int>(chunks.count)) schedule(static, 1)
  for (int64_t c = 0; c < chunks.count; ++c) status[static_cast<size_t>(c)] = body(c);
  for (const Status& st : status) GEOMX_RETURN_IF_ERROR(st);
  return Status::Ok();
}

// Our weights [G*H, cols] -> the same layout with oneDNN's gate order.
Tensor ToDnnWeights(const RnnGeometry& g, const Tensor& w, int64_t cols) {
  Tensor out = Tensor::Empty(w.shape(), DType::kF32);
  const size_t block = static_cast<size_t>(g.h * cols);
  for (int64_t k = 0; k < g.gates; ++k) {
    std::memcpy(out.data<float>() + g.DnnBlock(k) * block, w.data<float>() + k * block, block * sizeof(float));
  }
  return out;
}

// Our bias -> oneDNN's [4, H] (see the file comment).
Tensor ToDnnBias(const RnnGeometry& g, const Tensor& b) {
  if (g.cell == RnnCell::kLstm) return b;
  Tensor out = Tensor::Empty(Shape{4 * g.h}, DType::kF32);
  const float* s = b.data<float>();
  float* o = out.data<float>();
  for (int64_t j = 0; j < g.h; ++j) {
    for (int64_t k = 0; k < 2; ++k) o[g.DnnBlock(k) * g.h + j] = s[k * g.h + j] + s[(3 + k) * g.h + j];
    o[2 * g.h + j] = s[2 * g.h + j];  // b_in
    o[3 * g.h + j] = s[5 * g.h + j];  // b_hn
  }
  return out;
}

// oneDNN's weight gradient (ldigo: [cols, G*H] in its gate order) -> ours [G*H, cols].
void FromDnnWeightGrad(const RnnGeometry& g, const Tensor& t, int64_t cols, Tensor* out) {
  const float* s = t.data<float>();
  float* o = out->data<float>();
  const int64_t gh = g.gates * g.h;
  for (int64_t k = 0; k < g.gates; ++k) {
    const int64_t dk = g.DnnBlock(k);
    for (int64_t r = 0; r < g.h; ++r) {
      for (int64_t c = 0; c < cols; ++c) o[(k * g.h + r) * cols + c] = s[c * gh + dk * g.h + r];
    }
  }
}

// oneDNN's bias gradient [4, H] -> ours (a summed pair of biases gets the same gradient twice).
void FromDnnBiasGrad(const RnnGeometry& g, const Tensor& t, Tensor* out) {
  if (g.cell == RnnCell::kLstm) {
    std::memcpy(out->raw_data(), t.raw_data(), out->nbytes());
    return;
  }
  const float* s = t.data<float>();
  float* o = out->data<float>();
  for (int64_t j = 0; j < g.h; ++j) {
    for (int64_t k = 0; k < 2; ++k) o[k * g.h + j] = o[(3 + k) * g.h + j] = s[g.DnnBlock(k) * g.h + j];
    o[2 * g.h + j] = s[2 * g.h + j];
    o[5 * g.h + j] = s[3 * g.h + j];
  }
}

}  // namespace

Status CpuBackend::RnnForward(const RnnParams& p, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh,
                              const Tensor& b, Tensor* y, Tensor* workspace) {
  const RnnGeometry g(p, x.shape(), w_hh.shape());
  const bool training = workspace != nullptr;
  if (g.n == 0 || g.t == 0) {  // nothing to run: h stays at its zero initial state
    if (training) *workspace = Tensor::Empty(Shape{0}, DType::kU8);
    return Fill(0.0f, y);
  }
  const BatchChunks chunks = BatchChunks::For(g.n);
  std::vector<const OneDnnPrimitive*> prims;
  for (int64_t c = 0; c < chunks.count; ++c) {
    GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* prim, ForwardPrimitive(*dnn_, p, x, w_hh, chunks.Rows(c), training));
    prims.push_back(prim);
  }
  const RnnWorkspaceLayout layout(g, WorkspaceBytes(prims));
  // oneDNN writes the sequence, the last h (and c) into the workspace tensor (scratch in inference); the caller's
  // output is copied out of it, and the backward reads it back from there.
  Tensor ws = Tensor::Empty(Shape{static_cast<int64_t>(layout.total)}, DType::kU8);
  auto* base = static_cast<std::byte*>(ws.raw_data());
  *reinterpret_cast<int64_t*>(base) = chunks.count;
  const Tensor w_ih_d = ToDnnWeights(g, w_ih, g.i), w_hh_d = ToDnnWeights(g, w_hh, g.h), b_d = ToDnnBias(g, b);
  const auto* xs = static_cast<const std::byte*>(x.raw_data());
  GEOMX_RETURN_IF_ERROR(ForEachChunk(chunks, [&](int64_t c) {
    const RnnGeometry gc(p, x.shape(), w_hh.shape(), chunks.Rows(c));
    const auto r0 = static_cast<size_t>(chunks.Begin(c));
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC_LAYER, dnn_->WrapRaw(const_cast<std::byte*>(xs) + r0 * g.t * g.i * sizeof(float), gc.x_md)},
        {DNNL_ARG_WEIGHTS_LAYER, dnn_->Wrap(w_ih_d, gc.w_ih_md)},
        {DNNL_ARG_WEIGHTS_ITER, dnn_->Wrap(w_hh_d, gc.w_hh_md)},
        {DNNL_ARG_BIAS, dnn_->Wrap(b_d, gc.b_md)},
        {DNNL_ARG_DST_LAYER, dnn_->WrapRaw(base + layout.seq + r0 * g.t * g.h * sizeof(float), gc.seq_md)},
        {DNNL_ARG_DST_ITER, dnn_->WrapRaw(base + layout.last_h + r0 * g.h * sizeof(float), gc.last_md)}};
    if (g.cell == RnnCell::kLstm) {
      args.emplace(DNNL_ARG_DST_ITER_C, dnn_->WrapRaw(base + layout.last_c + r0 * g.h * sizeof(float), gc.last_c_md));
    }
    const OneDnnPrimitive& prim = *prims[static_cast<size_t>(c)];
    if (training) args.emplace(DNNL_ARG_WORKSPACE, dnn_->WrapRaw(base + layout.dnn[c], prim.workspace));
    return dnn_->Execute("RnnForward", prim, std::move(args));
  }));
  std::memcpy(y->raw_data(), p.sequences ? base + layout.seq : base + layout.last_h,
              p.sequences ? g.SeqBytes() : g.LastBytes());
  if (training) *workspace = ws;
  return Status::Ok();
}

Status CpuBackend::RnnBackward(const RnnParams& p, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh,
                               const Tensor& b, const Tensor& dy, const Tensor& workspace, Tensor* dx, Tensor* dw_ih,
                               Tensor* dw_hh, Tensor* db) {
  const RnnGeometry g(p, x.shape(), w_hh.shape());
  if (g.n == 0 || g.t == 0) {
    GEOMX_RETURN_IF_ERROR(Fill(0.0f, db));
    GEOMX_RETURN_IF_ERROR(Fill(0.0f, dw_ih));
    GEOMX_RETURN_IF_ERROR(Fill(0.0f, dw_hh));
    return Fill(0.0f, dx);
  }
  const auto bad_workspace = [&](const std::string& why) {
    return Status::InvalidArgument("RnnBackward: needs the workspace of RnnForward in training (" + why + "), got " +
                                   (workspace.defined() ? workspace.ToString() : std::string("none")));
  };
  if (!workspace.defined() || !workspace.device().is_cpu() || workspace.dtype() != DType::kU8 ||
      workspace.nbytes() < RnnWorkspaceLayout::kHeaderBytes) {
    return bad_workspace("a CPU u8 tensor");
  }
  auto* base = static_cast<std::byte*>(workspace.raw_data());
  const int64_t count = *reinterpret_cast<const int64_t*>(base);
  if (count < 1 || count > g.n) return bad_workspace("its chunk count");
  const BatchChunks chunks(g.n, count);
  std::vector<const OneDnnPrimitive*> prims, forwards;
  for (int64_t c = 0; c < chunks.count; ++c) {
    const RnnGeometry gc(p, x.shape(), w_hh.shape(), chunks.Rows(c));
    GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* prim,
                           dnn_->GetOrCreate("RnnBackward", gc.Key(OneDnnOp::kRnnBackward, true),
                                             [&] { return MakeBackward(gc, dnn_->engine()); }));
    GEOMX_ASSIGN_OR_RETURN(const OneDnnPrimitive* fwd, ForwardPrimitive(*dnn_, p, x, w_hh, chunks.Rows(c), true));
    prims.push_back(prim);
    forwards.push_back(fwd);
  }
  const RnnWorkspaceLayout layout(g, WorkspaceBytes(forwards));
  if (workspace.nbytes() != layout.total) return bad_workspace(std::to_string(layout.total) + " bytes");
  // The gradient of the output that the caller did not receive is zero.
  const Tensor zero_last = Tensor::Zeros(Shape{g.n, g.h}, DType::kF32);
  Tensor zero_seq;
  const auto* d_seq = static_cast<const std::byte*>(dy.raw_data());
  const auto* d_last = static_cast<const std::byte*>(zero_last.raw_data());
  if (!p.sequences) {
    zero_seq = Tensor::Zeros(Shape{g.n, g.t, g.h}, DType::kF32);
    d_seq = static_cast<const std::byte*>(zero_seq.raw_data());
    d_last = static_cast<const std::byte*>(dy.raw_data());
  }
  const Tensor w_ih_d = ToDnnWeights(g, w_ih, g.i), w_hh_d = ToDnnWeights(g, w_hh, g.h), b_d = ToDnnBias(g, b);
  // oneDNN accumulates into the weight gradients (see the file comment): each chunk into its own zeros, summed
  // into the first chunk's afterwards.
  std::vector<Tensor> dw_ih_t, dw_hh_t, db_t;
  for (int64_t c = 0; c < chunks.count; ++c) {
    dw_ih_t.push_back(Tensor::Zeros(Shape{g.i, g.gates * g.h}, DType::kF32));
    dw_hh_t.push_back(Tensor::Zeros(Shape{g.h, g.gates * g.h}, DType::kF32));
    db_t.push_back(Tensor::Zeros(Shape{4 * g.h}, DType::kF32));
  }
  const auto* xs = static_cast<const std::byte*>(x.raw_data());
  auto* dxs = static_cast<std::byte*>(dx->raw_data());
  GEOMX_RETURN_IF_ERROR(ForEachChunk(chunks, [&](int64_t c) {
    const RnnGeometry gc(p, x.shape(), w_hh.shape(), chunks.Rows(c));
    const auto r0 = static_cast<size_t>(chunks.Begin(c));
    const size_t x_at = r0 * g.t * g.i * sizeof(float), seq_at = r0 * g.t * g.h * sizeof(float);
    const size_t last_at = r0 * g.h * sizeof(float);
    auto raw = [](const std::byte* ptr) { return const_cast<std::byte*>(ptr); };
    const auto k = static_cast<size_t>(c);
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC_LAYER, dnn_->WrapRaw(raw(xs) + x_at, gc.x_md)},
        {DNNL_ARG_WEIGHTS_LAYER, dnn_->Wrap(w_ih_d, gc.w_ih_md)},
        {DNNL_ARG_WEIGHTS_ITER, dnn_->Wrap(w_hh_d, gc.w_hh_md)},
        {DNNL_ARG_BIAS, dnn_->Wrap(b_d, gc.b_md)},
        {DNNL_ARG_DST_LAYER, dnn_->WrapRaw(base + layout.seq + seq_at, gc.seq_md)},
        {DNNL_ARG_DST_ITER, dnn_->WrapRaw(base + layout.last_h + last_at, gc.last_md)},
        {DNNL_ARG_DIFF_DST_LAYER, dnn_->WrapRaw(raw(d_seq) + seq_at, gc.seq_md)},
        {DNNL_ARG_DIFF_DST_ITER, dnn_->WrapRaw(raw(d_last) + last_at, gc.last_md)},
        {DNNL_ARG_WORKSPACE, dnn_->WrapRaw(base + layout.dnn[k], prims[k]->workspace)},
        {DNNL_ARG_DIFF_SRC_LAYER, dnn_->WrapRaw(dxs + x_at, gc.x_md)},
        {DNNL_ARG_DIFF_WEIGHTS_LAYER, dnn_->Wrap(dw_ih_t[k], gc.dw_ih_md)},
        {DNNL_ARG_DIFF_WEIGHTS_ITER, dnn_->Wrap(dw_hh_t[k], gc.dw_hh_md)},
        {DNNL_ARG_DIFF_BIAS, dnn_->Wrap(db_t[k], gc.b_md)}};
    if (g.cell == RnnCell::kLstm) {
      args.emplace(DNNL_ARG_DST_ITER_C, dnn_->WrapRaw(base + layout.last_c + last_at, gc.last_c_md));
      args.emplace(DNNL_ARG_DIFF_DST_ITER_C,
                   dnn_->WrapRaw(raw(static_cast<const std::byte*>(zero_last.raw_data())) + last_at, gc.last_c_md));
    }
    return dnn_->Execute("RnnBackward", *prims[k], std::move(args));
  }));
  for (int64_t c = 1; c < chunks.count; ++c) {
    const auto k = static_cast<size_t>(c);
    for (auto* parts : {&dw_ih_t, &dw_hh_t, &db_t}) {
      float* into = (*parts)[0].data<float>();
      const float* from = (*parts)[k].data<float>();
      for (int64_t j = 0; j < (*parts)[0].numel(); ++j) into[j] += from[j];
    }
  }
  FromDnnWeightGrad(g, dw_ih_t[0], g.i, dw_ih);
  FromDnnWeightGrad(g, dw_hh_t[0], g.h, dw_hh);
  FromDnnBiasGrad(g, db_t[0], db);
  return Status::Ok();
}

}  // namespace geomx
