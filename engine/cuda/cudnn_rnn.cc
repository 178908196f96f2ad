// CudaBackend::RnnForward / RnnBackward on cuDNN's RNN API (cudnnRNNForward, cudnnRNNBackwardData_v8,
// cudnnRNNBackwardWeights_v8): one unidirectional LSTM or GRU layer in f32 with zero initial state (op_params.h).
//
// How RnnParams maps onto cuDNN:
//   - the RNN descriptor: CUDNN_LSTM with one input bias per gate (CUDNN_RNN_SINGLE_INP_BIAS holds our single b),
//     or CUDNN_GRU with both biases (CUDNN_RNN_DOUBLE_BIAS: our b_ih and b_hh; cuDNN's GRU is PyTorch's, with the
//     recurrent term of the new gate inside the reset gate's product); the standard algorithm, linear input,
//     projSize = H (no projection), one layer, and a dropout
//     descriptor with probability 0 and no RNG states (nothing to drop between layers of a one-layer network).
//     Math: full f32 (CUDNN_FMA_MATH) unless options.allow_tf32, like the convolutions;
//   - x [N, T, I] and the sequence y [N, T, H] are RNN data descriptors in CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED
//     (our row-major layout) with every sequence T steps long. cuDNN permits the unpacked layouts only with padded
//     I/O enabled (CUDNN_RNN_PADDED_IO_ENABLED), although nothing is padded here. The calls also take the sequence
//     lengths on the device (devSeqLengths): a scratch int32 array;
//   - h and c are [1, N, H] tensors; hx = cx = NULL is cuDNN's zero initial state. hy is the last step's h, so a
//     `sequences == false` output [N, H] is written as hy (the sequence goes to a buffer) and its gradient enters
//     the backward as dhy, with a zero gradient for the sequence;
//   - the weights: cuDNN wants them in one weight space of its own layout. Every call builds it in scratch memory:
//     zeroed, then for each linear layer cudnnGetRNNWeightParams (pseudo-layer 0) reports where its matrix and
//     bias live. IDs 0..G-1 are the input matrices of the gates (LSTM: input, forget, cell candidate, output; GRU:
//     reset, update, new: PyTorch's orders, ours), IDs G..2G-1 the recurrent ones; each is a row-major [H, I] or
//     [H, H] block, i.e. exactly rows gate*H .. gate*H+H-1 of w_ih or w_hh, and is checked against the reported
//     shape before anything is copied. LSTM: b goes to each gate's input bias; a recurrent bias, if cuDNN kept
//     one, stays zero. GRU: b_ih to the input biases, b_hh to the recurrent ones. The backward lets
//     cuDNN accumulate (CUDNN_WGRAD_MODE_ADD) into a zeroed gradient space with the same layout and copies the
//     gradients out of the same places.
//
// The training workspace is one u8 tensor on the device, each part starting at a multiple of 256 bytes:
//   [cuDNN reserve space (reserveSpaceSize of CUDNN_FWD_MODE_TRAINING) | the y sequence, N*T*H f32]
// cudnnRNNBackwardData_v8 needs both. cuDNN documents the reserve space as an input/output of the backward (it
// leaves intermediate results there for cudnnRNNBackwardWeights_v8), so the backward works on a scratch copy and
// the caller's workspace stays untouched: a second backward from the same forward gives the same result.
//
// Nothing is cached across calls: the descriptors are host objects rebuilt per call, and device buffers come from
// the caching allocator, which is stream-ordered, so a scratch block may be released once the work using it is
// enqueued (each is held to the end of the call anyway). cuDNN's inputSize must be positive, so an LSTM without
// input features (I == 0) runs with I = 1, a zero input and zero input weights (the same function of h).
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/cuda_context.h"

namespace geomx {

namespace {

constexpr size_t kMaxGates = 4;  // LSTM: input, forget, cell candidate, output; GRU: reset, update, new
constexpr size_t kAlign = 256;

size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Problem sizes as cuDNN's ints. `i` is the input size given to cuDNN: 1 when x has no features (no_input).
struct RnnDims {
  RnnCell cell = RnnCell::kLstm;
  size_t gates = 4;
  int n = 0, t = 0, i = 0, h = 0;
  bool no_input = false;

  size_t Steps() const { return static_cast<size_t>(n) * static_cast<size_t>(t); }
  size_t SeqBytes() const { return Steps() * static_cast<size_t>(h) * sizeof(float); }      // [N, T, H] f32
  size_t InputBytes() const { return Steps() * static_cast<size_t>(i) * sizeof(float); }    // [N, T, i] f32
  size_t MatrixBytes(bool recurrent) const {
    return static_cast<size_t>(h) * static_cast<size_t>(recurrent ? h : i) * sizeof(float);
  }
};

Result<RnnDims> GetDims(const char* op, const RnnParams& p, const Tensor& x, const Tensor& w_hh) {
  const int64_t n = x.dim(0), t = x.dim(1), i = x.dim(2), h = w_hh.dim(1);
  for (int64_t v : {n, t, i, h, 6 * h, n * h}) {
    if (v < 0 || v > INT_MAX) {
      return Status::Unimplemented(std::string(op) + ": x " + x.shape().ToString() + " with H = " +
                                   std::to_string(h) + " exceeds cuDNN's int range");
    }
  }
  RnnDims d;
  d.cell = p.cell;
  d.gates = static_cast<size_t>(RnnGates(p.cell));
  d.n = static_cast<int>(n);
  d.t = static_cast<int>(t);
  d.h = static_cast<int>(h);
  d.no_input = i == 0;
  d.i = d.no_input ? 1 : static_cast<int>(i);
  return d;
}

// The descriptors of one call. Members are destroyed in reverse order: the RNN descriptor (which refers to the
// dropout descriptor) goes first.
struct RnnDescs {
  std::vector<int> seq_lengths;  // host copy, every entry T
  CudnnDropoutDesc dropout;
  CudnnRnnDesc rnn;
  CudnnRnnDataDesc x, y;
  CudnnTensorDesc state;  // [1, N, H]: h and c
};

Result<CudnnTensorDesc> NewTensorDesc() {
  cudnnTensorDescriptor_t d = nullptr;
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&d));
  return CudnnTensorDesc(d);
}

Result<CudnnRnnDataDesc> MakeRnnDataDesc(const RnnDims& d, int vector_size, const std::vector<int>& lengths) {
  cudnnRNNDataDescriptor_t raw = nullptr;
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnCreateRNNDataDescriptor(&raw));
  CudnnRnnDataDesc owned(raw);
  // paddingFill NULL: no step is padded (every length is T).
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSetRNNDataDescriptor(raw, CUDNN_DATA_FLOAT,
                                                       CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED, /*maxSeqLength=*/d.t,
                                                       /*batchSize=*/d.n, vector_size, lengths.data(), nullptr));
  return owned;
}

// Under the library lock (the dropout descriptor is set through the handle).
Result<RnnDescs> MakeRnnDescs(cudnnHandle_t handle, const RnnDims& d, bool allow_tf32) {
  RnnDescs s;
  s.seq_lengths.assign(static_cast<size_t>(d.n), d.t);
  cudnnDropoutDescriptor_t drop = nullptr;
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnCreateDropoutDescriptor(&drop));
  s.dropout.reset(drop);
  // Probability 0 needs no RNG states (and initialises none).
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSetDropoutDescriptor(drop, handle, 0.0f, nullptr, 0, /*seed=*/0));
  cudnnRNNDescriptor_t rnn = nullptr;
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnCreateRNNDescriptor(&rnn));
  s.rnn.reset(rnn);
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSetRNNDescriptor_v8(
      rnn, CUDNN_RNN_ALGO_STANDARD, d.cell == RnnCell::kLstm ? CUDNN_LSTM : CUDNN_GRU,
      d.cell == RnnCell::kLstm ? CUDNN_RNN_SINGLE_INP_BIAS : CUDNN_RNN_DOUBLE_BIAS, CUDNN_UNIDIRECTIONAL,
      CUDNN_LINEAR_INPUT,
      /*dataType=*/CUDNN_DATA_FLOAT, /*mathPrec=*/CUDNN_DATA_FLOAT, allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH,
      /*inputSize=*/d.i, /*hiddenSize=*/d.h, /*projSize=*/d.h, /*numLayers=*/1, drop, CUDNN_RNN_PADDED_IO_ENABLED));
  GEOMX_ASSIGN_OR_RETURN(s.x, MakeRnnDataDesc(d, d.i, s.seq_lengths));
  GEOMX_ASSIGN_OR_RETURN(s.y, MakeRnnDataDesc(d, d.h, s.seq_lengths));
  GEOMX_ASSIGN_OR_RETURN(s.state, NewTensorDesc());
  const int dims[3] = {1, d.n, d.h};
  const int strides[3] = {d.n * d.h, d.h, 1};
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnSetTensorNdDescriptor(s.state.get(), CUDNN_DATA_FLOAT, 3, dims, strides));
  return s;
}

// The sequence lengths on the device. From pageable host memory cudaMemcpyAsync returns once the source has been
// staged, so the host vector may go before the copy runs; the copy stays ordered before the cuDNN call.
Result<std::shared_ptr<Storage>> DeviceSeqLengths(CudaContext& ctx, const std::vector<int>& lengths) {
  const size_t bytes = lengths.size() * sizeof(int32_t);
  GEOMX_ASSIGN_OR_RETURN(std::shared_ptr<Storage> dev, ctx.Scratch(bytes));
  GEOMX_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dev->data(), lengths.data(), bytes, cudaMemcpyHostToDevice, ctx.stream()));
  return dev;
}

// Byte offsets of each gate's parameters in the weight space (and, equally, in the gradient space).
struct WeightLayout {
  size_t bytes = 0;  // cudnnGetRNNWeightSpaceSize
  std::array<size_t, kMaxGates> w_ih{}, w_hh{};
  std::array<size_t, kMaxGates> bias{};      // LSTM: where b goes; GRU: b_ih
  std::array<size_t, kMaxGates> rec_bias{};  // GRU: b_hh
};

struct NdInfo {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int rank = 0;
  std::array<int, CUDNN_DIM_MAX> dims{}, strides{};

  std::string ToString() const {
    std::string s = "dims [";
    for (int k = 0; k < rank; ++k) s.append(k ? ", " : "").append(std::to_string(dims[static_cast<size_t>(k)]));
    s += "] strides [";
    for (int k = 0; k < rank; ++k) s.append(k ? ", " : "").append(std::to_string(strides[static_cast<size_t>(k)]));
    return s += "]";
  }
};

Result<NdInfo> ReadNd(cudnnTensorDescriptor_t desc) {
  NdInfo info;
  GEOMX_CUDA_RETURN_IF_ERROR(
      cudnnGetTensorNdDescriptor(desc, CUDNN_DIM_MAX, &info.type, &info.rank, info.dims.data(), info.strides.data()));
  return info;
}

// The byte offset of `addr` in [base, base + bytes), checked to hold `len` bytes.
Result<size_t> OffsetIn(const void* base, size_t bytes, const void* addr, size_t len, int lin_layer, const char* what) {
  const auto* b = static_cast<const char*>(base);
  const auto* a = static_cast<const char*>(addr);
  if (a < b || static_cast<size_t>(a - b) > bytes || bytes - static_cast<size_t>(a - b) < len) {
    return Status::Internal("cudnnGetRNNWeightParams: the " + std::string(what) + " of linear layer " +
                            std::to_string(lin_layer) + " lies outside the weight space of " + std::to_string(bytes) +
                            " bytes");
  }
  return static_cast<size_t>(a - b);
}

// Under the library lock. Asks cuDNN where every matrix and bias lives in `space` (a buffer of
// cudnnGetRNNWeightSpaceSize bytes; only its address is used) and checks the shapes against the copies we make.
Result<WeightLayout> LocateWeights(cudnnHandle_t handle, const RnnDescs& s, const RnnDims& d, const void* space,
                                   size_t bytes) {
  WeightLayout layout;
  layout.bytes = bytes;
  std::array<bool, kMaxGates> has_input_bias{}, has_rec_bias{};
  std::array<size_t, kMaxGates>& rec_bias = layout.rec_bias;
  GEOMX_ASSIGN_OR_RETURN(CudnnTensorDesc m_desc, NewTensorDesc());
  GEOMX_ASSIGN_OR_RETURN(CudnnTensorDesc b_desc, NewTensorDesc());
  for (size_t k = 0; k < 2 * d.gates; ++k) {
    const int id = static_cast<int>(k);  // cuDNN's linLayerID
    const bool recurrent = k >= d.gates;
    const size_t gate = k % d.gates;
    const int cols = recurrent ? d.h : d.i;
    void* m_addr = nullptr;
    void* b_addr = nullptr;
    GEOMX_CUDA_RETURN_IF_ERROR(cudnnGetRNNWeightParams(handle, s.rnn.get(), /*pseudoLayer=*/0, bytes, space, id,
                                                       m_desc.get(), &m_addr, b_desc.get(), &b_addr));
    // The matrix: dims {1, H, cols}, row-major (cuDNN reports {1, rows, cols}).
    if (m_addr == nullptr) {
      return Status::Internal("cudnnGetRNNWeightParams: linear layer " + std::to_string(id) + " has no matrix");
    }
    GEOMX_ASSIGN_OR_RETURN(const NdInfo m, ReadNd(m_desc.get()));
    const bool m_ok = m.type == CUDNN_DATA_FLOAT && m.rank == 3 && m.dims[0] == 1 && m.dims[1] == d.h &&
                      m.dims[2] == cols && (cols == 1 || m.strides[2] == 1) && (d.h == 1 || m.strides[1] == cols);
    if (!m_ok) {
      return Status::Internal("cudnnGetRNNWeightParams: linear layer " + std::to_string(id) + " reports a matrix of " +
                              m.ToString() + "; expected a row-major f32 [1, " + std::to_string(d.h) + ", " +
                              std::to_string(cols) + "]");
    }
    GEOMX_ASSIGN_OR_RETURN(const size_t m_off, OffsetIn(space, bytes, m_addr, d.MatrixBytes(recurrent), id, "matrix"));
    (recurrent ? layout.w_hh : layout.w_ih)[gate] = m_off;
    if (b_addr == nullptr) continue;  // no bias for this linear layer (the recurrent ones in single-bias mode)
    // The bias: H contiguous floats (cuDNN reports {1, H, 1}).
    GEOMX_ASSIGN_OR_RETURN(const NdInfo bi, ReadNd(b_desc.get()));
    const bool b_ok = bi.type == CUDNN_DATA_FLOAT && bi.rank == 3 && bi.dims[0] == 1 && bi.dims[1] == d.h &&
                      bi.dims[2] == 1 && (d.h == 1 || bi.strides[1] == 1);
    if (!b_ok) {
      return Status::Internal("cudnnGetRNNWeightParams: linear layer " + std::to_string(id) + " reports a bias of " +
                              bi.ToString() + "; expected contiguous f32 [1, " + std::to_string(d.h) + ", 1]");
    }
    GEOMX_ASSIGN_OR_RETURN(const size_t b_off,
                           OffsetIn(space, bytes, b_addr, static_cast<size_t>(d.h) * sizeof(float), id, "bias"));
    if (recurrent) {
      has_rec_bias[gate] = true;
      rec_bias[gate] = b_off;
    } else {
      has_input_bias[gate] = true;
      layout.bias[gate] = b_off;
    }
  }
  if (d.cell == RnnCell::kGru) {  // double bias: both must exist (b_hn sits inside the reset gate's product)
    for (size_t g = 0; g < d.gates; ++g) {
      if (!has_input_bias[g] || !has_rec_bias[g]) {
        return Status::Internal("cudnnGetRNNWeightParams: GRU gate " + std::to_string(g) + " lacks a bias");
      }
    }
    return layout;
  }
  // LSTM: b = b_input + b_recurrent in cuDNN's formulas: b goes to the input bias (the recurrent one, zeroed, has
  // the same gradient). Should a cuDNN keep only recurrent biases in this mode, b goes there instead.
  for (size_t g = 0; g < d.gates; ++g) {
    if (has_input_bias[g]) continue;
    if (!has_rec_bias[g]) {
      return Status::Internal("cudnnGetRNNWeightParams: gate " + std::to_string(g) + " has no bias");
    }
    layout.bias[g] = rec_bias[g];
  }
  return layout;
}

Status CopyDevice(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return Status::Ok();
  GEOMX_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  return Status::Ok();
}

Status ZeroDevice(void* dst, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return Status::Ok();
  GEOMX_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst, 0, bytes, stream));
  return Status::Ok();
}

// Writes w_ih, w_hh and b into the weight space `space` (zeroed first: recurrent biases, and the input matrices
// when there is no input, stay zero).
Status PackWeights(const WeightLayout& layout, const RnnDims& d, const Tensor& w_ih, const Tensor& w_hh,
                   const Tensor& b, void* space, cudaStream_t stream) {
  GEOMX_RETURN_IF_ERROR(ZeroDevice(space, layout.bytes, stream));
  auto* base = static_cast<char*>(space);
  const size_t bias_bytes = static_cast<size_t>(d.h) * sizeof(float);
  const auto* bias = static_cast<const char*>(b.raw_data());
  for (size_t g = 0; g < d.gates; ++g) {
    if (!d.no_input) {
      GEOMX_RETURN_IF_ERROR(CopyDevice(base + layout.w_ih[g], static_cast<const char*>(w_ih.raw_data()) +
                                       g * d.MatrixBytes(false), d.MatrixBytes(false), stream));
    }
    GEOMX_RETURN_IF_ERROR(CopyDevice(base + layout.w_hh[g], static_cast<const char*>(w_hh.raw_data()) +
                                     g * d.MatrixBytes(true), d.MatrixBytes(true), stream));
    GEOMX_RETURN_IF_ERROR(CopyDevice(base + layout.bias[g], bias + g * bias_bytes, bias_bytes, stream));
    if (d.cell == RnnCell::kGru) {  // b = [b_ih | b_hh]
      GEOMX_RETURN_IF_ERROR(
          CopyDevice(base + layout.rec_bias[g], bias + (d.gates + g) * bias_bytes, bias_bytes, stream));
    }
  }
  return Status::Ok();
}

// The reverse of PackWeights, from the gradient space into dw_ih, dw_hh and db (every byte overwritten).
Status UnpackGradients(const WeightLayout& layout, const RnnDims& d, const void* space, Tensor* dw_ih,
                       Tensor* dw_hh, Tensor* db, cudaStream_t stream) {
  const auto* base = static_cast<const char*>(space);
  const size_t bias_bytes = static_cast<size_t>(d.h) * sizeof(float);
  auto* dbias = static_cast<char*>(db->raw_data());
  for (size_t g = 0; g < d.gates; ++g) {
    if (!d.no_input) {  // else dw_ih is [G*H, 0]: nothing to write
      GEOMX_RETURN_IF_ERROR(CopyDevice(static_cast<char*>(dw_ih->raw_data()) + g * d.MatrixBytes(false),
                                       base + layout.w_ih[g], d.MatrixBytes(false), stream));
    }
    GEOMX_RETURN_IF_ERROR(CopyDevice(static_cast<char*>(dw_hh->raw_data()) + g * d.MatrixBytes(true),
                                     base + layout.w_hh[g], d.MatrixBytes(true), stream));
    GEOMX_RETURN_IF_ERROR(CopyDevice(dbias + g * bias_bytes, base + layout.bias[g], bias_bytes, stream));
    if (d.cell == RnnCell::kGru) {
      GEOMX_RETURN_IF_ERROR(
          CopyDevice(dbias + (d.gates + g) * bias_bytes, base + layout.rec_bias[g], bias_bytes, stream));
    }
  }
  return Status::Ok();
}

// What the forward and the backward both set up, under the library lock: the descriptors, cuDNN's buffer sizes
// for `mode`, the device sequence lengths, the packed weight space and cuDNN's work space.
struct RnnCall {
  RnnDescs descs;
  WeightLayout weights;
  size_t work_bytes = 0, reserve_bytes = 0;
  std::shared_ptr<Storage> seq_lengths, weight_space, work;
  std::shared_ptr<Storage> zero_input;  // [N, T, 1] zeros when there is no input (x is empty)
};

Result<RnnCall> PrepareCall(CudaContext& ctx, const RnnDims& d, const Tensor& w_ih, const Tensor& w_hh,
                             const Tensor& b, cudnnForwardMode_t mode) {
  cudnnHandle_t handle = ctx.cudnn();
  RnnCall c;
  GEOMX_ASSIGN_OR_RETURN(c.descs, MakeRnnDescs(handle, d, ctx.options().allow_tf32));
  GEOMX_CUDA_RETURN_IF_ERROR(
      cudnnGetRNNTempSpaceSizes(handle, c.descs.rnn.get(), mode, c.descs.x.get(), &c.work_bytes, &c.reserve_bytes));
  size_t weight_bytes = 0;
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnGetRNNWeightSpaceSize(handle, c.descs.rnn.get(), &weight_bytes));
  GEOMX_ASSIGN_OR_RETURN(c.seq_lengths, DeviceSeqLengths(ctx, c.descs.seq_lengths));
  GEOMX_ASSIGN_OR_RETURN(c.weight_space, ctx.Scratch(weight_bytes));
  GEOMX_ASSIGN_OR_RETURN(c.weights, LocateWeights(handle, c.descs, d, c.weight_space->data(), weight_bytes));
  GEOMX_RETURN_IF_ERROR(PackWeights(c.weights, d, w_ih, w_hh, b, c.weight_space->data(), ctx.stream()));
  GEOMX_ASSIGN_OR_RETURN(c.work, ctx.Scratch(c.work_bytes));
  if (d.no_input) {
    GEOMX_ASSIGN_OR_RETURN(c.zero_input, ctx.Scratch(d.InputBytes()));
    GEOMX_RETURN_IF_ERROR(ZeroDevice(c.zero_input->data(), d.InputBytes(), ctx.stream()));
  }
  return c;
}

// The training workspace (see the file comment).
struct WorkspaceLayout {
  size_t reserve = 0;  // offset of the reserve space
  size_t y = 0;        // offset of the y sequence
  size_t total = 0;
  WorkspaceLayout(const RnnDims& d, size_t reserve_bytes) : y(AlignUp(reserve_bytes)), total(y + d.SeqBytes()) {}
};

}  // namespace

Status CudaBackend::RnnForward(const RnnParams& p, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh,
                                const Tensor& b, Tensor* y, Tensor* workspace) {
  const bool training = workspace != nullptr;
  if (training) *workspace = Tensor();
  GEOMX_ASSIGN_OR_RETURN(const RnnDims d, GetDims("RnnForward", p, x, w_hh));
  if (d.n == 0 || d.t == 0) {  // no step to run: h stays at its zero initial state
    if (training) *workspace = Tensor::Empty(Shape{0}, DType::kU8, allocator_.device());
    return Fill(0.0f, y);
  }
  cudaStream_t stream = ctx_->stream();
  auto lock = ctx_->LockLibraries();
  const cudnnForwardMode_t mode = training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE;
  GEOMX_ASSIGN_OR_RETURN(RnnCall c, PrepareCall(*ctx_, d, w_ih, w_hh, b, mode));
  // Where cuDNN writes the sequence: the workspace (training), y itself, or a scratch buffer (only hy is wanted).
  Tensor ws;
  void* reserve = nullptr;
  void* y_seq = nullptr;
  std::shared_ptr<Storage> seq_scratch;
  if (training) {
    const WorkspaceLayout layout(d, c.reserve_bytes);
    // Always a fresh tensor: the caller may still hold an earlier workspace for a pending backward.
    ws = Tensor::Empty(Shape{static_cast<int64_t>(layout.total)}, DType::kU8, allocator_.device());
    reserve = static_cast<char*>(ws.raw_data()) + layout.reserve;
    y_seq = static_cast<char*>(ws.raw_data()) + layout.y;
  } else if (p.sequences) {
    y_seq = y->raw_data();
  } else {
    GEOMX_ASSIGN_OR_RETURN(seq_scratch, ctx_->Scratch(d.SeqBytes()));
    y_seq = seq_scratch->data();
  }
  const void* x_data = d.no_input ? c.zero_input->data() : x.raw_data();
  void* hy = p.sequences ? nullptr : y->raw_data();  // [1, N, H] is y's [N, H]
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnRNNForward(
      ctx_->cudnn(), c.descs.rnn.get(), mode, static_cast<const int32_t*>(c.seq_lengths->data()), c.descs.x.get(),
      x_data, c.descs.y.get(), y_seq, c.descs.state.get(), /*hx=*/nullptr, hy, c.descs.state.get(), /*cx=*/nullptr,
      /*cy=*/nullptr, c.weights.bytes, c.weight_space->data(), c.work_bytes, c.work->data(),
      training ? c.reserve_bytes : 0, reserve));
  if (!training) return Status::Ok();
  if (p.sequences) GEOMX_RETURN_IF_ERROR(CopyDevice(y->raw_data(), y_seq, d.SeqBytes(), stream));
  *workspace = ws;
  return Status::Ok();
}

Status CudaBackend::RnnBackward(const RnnParams& p, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh,
                                 const Tensor& b, const Tensor& dy, const Tensor& workspace, Tensor* dx,
                                 Tensor* dw_ih, Tensor* dw_hh, Tensor* db) {
  GEOMX_ASSIGN_OR_RETURN(const RnnDims d, GetDims("RnnBackward", p, x, w_hh));
  if (d.n == 0 || d.t == 0) {  // no step ran: every gradient is zero
    GEOMX_RETURN_IF_ERROR(Fill(0.0f, dx));
    GEOMX_RETURN_IF_ERROR(Fill(0.0f, dw_ih));
    GEOMX_RETURN_IF_ERROR(Fill(0.0f, dw_hh));
    return Fill(0.0f, db);
  }
  cudaStream_t stream = ctx_->stream();
  auto lock = ctx_->LockLibraries();
  GEOMX_ASSIGN_OR_RETURN(RnnCall c, PrepareCall(*ctx_, d, w_ih, w_hh, b, CUDNN_FWD_MODE_TRAINING));
  const WorkspaceLayout layout(d, c.reserve_bytes);
  if (!workspace.defined() || workspace.device() != allocator_.device() || workspace.dtype() != DType::kU8 ||
      workspace.nbytes() != layout.total) {
    return Status::InvalidArgument("RnnBackward: needs the workspace of RnnForward in training (u8, " +
                                   std::to_string(layout.total) + " bytes on " + allocator_.device().ToString() +
                                   "), got " + (workspace.defined() ? workspace.ToString() : std::string("none")));
  }
  const auto* ws = static_cast<const char*>(workspace.raw_data());
  // cuDNN writes into the reserve space during the backward (see the file comment): work on a copy.
  GEOMX_ASSIGN_OR_RETURN(std::shared_ptr<Storage> reserve, ctx_->Scratch(c.reserve_bytes));
  GEOMX_RETURN_IF_ERROR(CopyDevice(reserve->data(), ws + layout.reserve, c.reserve_bytes, stream));
  const void* y_seq = ws + layout.y;
  // The gradient of the output the caller did not receive is zero: the sequence's when only the last h was
  // returned (dy is then dhy), the last h's (dhy = NULL) when the sequence was.
  const void* dy_seq = dy.raw_data();
  const void* dhy = nullptr;
  std::shared_ptr<Storage> zero_dy;
  if (!p.sequences) {
    GEOMX_ASSIGN_OR_RETURN(zero_dy, ctx_->Scratch(d.SeqBytes()));
    GEOMX_RETURN_IF_ERROR(ZeroDevice(zero_dy->data(), d.SeqBytes(), stream));
    dy_seq = zero_dy->data();
    dhy = dy.raw_data();
  }
  const void* x_data = x.raw_data();
  void* dx_data = dx->raw_data();
  std::shared_ptr<Storage> dx_scratch;
  if (d.no_input) {  // dx is [N, T, 0]; cuDNN's [N, T, 1] gradient is dropped
    x_data = c.zero_input->data();
    GEOMX_ASSIGN_OR_RETURN(dx_scratch, ctx_->Scratch(d.InputBytes()));
    dx_data = dx_scratch->data();
  }
  GEOMX_ASSIGN_OR_RETURN(std::shared_ptr<Storage> dweights, ctx_->Scratch(c.weights.bytes));
  GEOMX_RETURN_IF_ERROR(ZeroDevice(dweights->data(), c.weights.bytes, stream));  // cuDNN adds into it
  const auto* seq_lengths = static_cast<const int32_t*>(c.seq_lengths->data());
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnRNNBackwardData_v8(
      ctx_->cudnn(), c.descs.rnn.get(), seq_lengths, c.descs.y.get(), y_seq, dy_seq, c.descs.x.get(), dx_data,
      c.descs.state.get(), /*hx=*/nullptr, dhy, /*dhx=*/nullptr, c.descs.state.get(), /*cx=*/nullptr,
      /*dcy=*/nullptr, /*dcx=*/nullptr, c.weights.bytes, c.weight_space->data(), c.work_bytes, c.work->data(),
      c.reserve_bytes, reserve->data()));
  GEOMX_CUDA_RETURN_IF_ERROR(cudnnRNNBackwardWeights_v8(
      ctx_->cudnn(), c.descs.rnn.get(), CUDNN_WGRAD_MODE_ADD, seq_lengths, c.descs.x.get(), x_data,
      c.descs.state.get(), /*hx=*/nullptr, c.descs.y.get(), y_seq, c.weights.bytes, dweights->data(), c.work_bytes,
      c.work->data(), c.reserve_bytes, reserve->data()));
  return UnpackGradients(c.weights, d, dweights->data(), dw_ih, dw_hh, db, stream);
}

}  // namespace geomx
