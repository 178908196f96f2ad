// Parameter structs and op enums shared by ops.h (the user-facing API) and backend.h (the kernel surface).
#pragma once

#include <cstdint>
#include <string>

namespace geomx {

// 2-D convolution over NCHW input and OIHW weights (groups = 1).
struct Conv2dParams {
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;  // 1 == no dilation
};

enum class PoolKind : uint8_t { kMax, kAvg };  // kAvg excludes padding from the divisor

struct Pool2dParams {
  PoolKind kind = PoolKind::kMax;
  int kernel_h = 2, kernel_w = 2;
  int stride_h = 2, stride_w = 2;
  int pad_h = 0, pad_w = 0;
};

// RoI crop-and-resize: TensorFlow's tf.image.crop_and_resize with method "bilinear", on NCHW features (the
// sampling rule is spelled out at ops::CropAndResize in engine/ops.h).
struct CropAndResizeParams {
  int crop_h = 7, crop_w = 7;        // output size of every box; > 0
  float extrapolation_value = 0.0f;  // the value of samples outside the image (they pass no gradient back)
};

enum class ActivationKind : uint8_t { kRelu, kTanh, kSigmoid, kGelu };  // gelu: the erf form
// "relu" <-> kRelu ...; ParseActivation returns false for unknown names.
const char* ActivationName(ActivationKind k);
bool ParseActivation(const std::string& name, ActivationKind* out);

struct BatchNormParams {
  float eps = 1e-5f;
  float momentum = 0.1f;  // running = (1 - momentum) * running + momentum * batch_stat (PyTorch convention)
};

// One recurrent layer, one direction, zero initial state, over batch-major sequences x [N, T, I]. Weights in
// PyTorch's layout: w_ih [G*H, I], w_hh [G*H, H], gate blocks of H rows in the order below.
//   kLstm, G = 4 (input, forget, cell candidate, output), one bias b [4H] (a library with a second, recurrent
//   bias holds it at zero):
//     i = sigmoid(W_i x_t + U_i h_{t-1} + b_i)   f, o alike;   g = tanh(W_g x_t + U_g h_{t-1} + b_g)
//     c_t = f * c_{t-1} + i * g;   h_t = o * tanh(c_t)
//   kGru, G = 3 (reset, update, new), two biases b = [b_ih (3H) | b_hh (3H)] [6H] (cuDNN's and PyTorch's GRU,
//   the recurrent term of n inside the reset gate):
//     r = sigmoid(W_r x_t + b_ir + U_r h_{t-1} + b_hr)   z alike
//     n = tanh(W_n x_t + b_in + r * (U_n h_{t-1} + b_hn))
//     h_t = (1 - z) * n + z * h_{t-1}
enum class RnnCell : uint8_t { kLstm, kGru };

// Gate blocks G of a cell (4 or 3) and the length of its bias vector in units of H (4 or 6).
inline int RnnGates(RnnCell c) { return c == RnnCell::kLstm ? 4 : 3; }
inline int RnnBiasBlocks(RnnCell c) { return c == RnnCell::kLstm ? 4 : 6; }

struct RnnParams {
  RnnCell cell = RnnCell::kLstm;
  bool sequences = true;  // the output: every step's h [N, T, H]; false: the last step's h [N, H]
};

// Elementwise binary ops on two tensors of the same shape, or `b` with numel 1 (a scalar broadcast), or `b`
// of shape [C] broadcast over the last dimension of `a` (bias add).
enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kMax, kMin };

// Elementwise unary ops; `alpha` is the scalar operand where one is needed.
enum class UnaryOp : uint8_t {
  kNeg, kExp, kLog, kSqrt, kAbs, kSquare,
  kAddScalar,  // x + alpha
  kMulScalar,  // x * alpha
  kPowScalar,  // x ^ alpha
  kClampMin,   // max(x, alpha)
};

enum class ReduceOp : uint8_t { kSum, kMean, kMax };

// One optimizer update rule, applied elementwise by the backend (math in engine/kernels/optimizer_update.h,
// written once for every device: docs/style.md R7). Which state tensors each rule reads/writes is listed there.
enum class UpdateRule : uint8_t {
  kSgd,        // w -= lr * (g + wd*w)
  kMomentum,   // v = mu*v + g + wd*w; w -= lr*v                          state: v
  kNesterov,   // v = mu*v + g'; w -= lr*(g' + mu*v), g' = g + wd*w      state: v
  kAdaGrad,    // h += g'^2; w -= lr*g'/(sqrt(h)+eps)                    state: h
  kRmsProp,    // s = rho*s + (1-rho)*g'^2; w -= lr*g'/(sqrt(s)+eps)     state: s
  kAdaDelta,   // s = rho*s+(1-rho)g'^2; d = sqrt(u+eps)/sqrt(s+eps)*g'; u = rho*u+(1-rho)d^2; w -= lr*d   state: s,u
  kAdam,       // L2 (wd added to g); bias-corrected with `step`        state: m, v
  kAdamW,      // decoupled weight decay: w -= lr*wd*w                   state: m, v
  kFtrl,       // FTRL-Proximal (engine/kernels/online_update.h), alpha = lr, l2 = wd   state: z, n
  kFtml,       // FTML (engine/kernels/online_update.h), beta1, beta2, eps, wd; bias-corrected with `step`   state: d, v, z
};

struct UpdateHyper {
  float lr = 0.01f;
  float weight_decay = 0.0f;
  float momentum = 0.9f;  // kMomentum, kNesterov
  float beta1 = 0.9f, beta2 = 0.999f;  // kAdam, kAdamW, kFtml
  float rho = 0.9f;       // kRmsProp, kAdaDelta
  float eps = 1e-8f;
  float l1 = 0.01f;       // kFtrl: L1 strength (weights with |z| <= l1 are exactly 0)
  float ftrl_beta = 1.0f; // kFtrl: the beta of the per-coordinate rate alpha / (beta + sqrt(n))
  int64_t step = 1;       // 1-based update count, for the bias corrections of Adam and FTML
};

// Number of state tensors (each shaped like the parameter, zero-initialised) a rule needs.
int UpdateRuleStateCount(UpdateRule rule);

}  // namespace geomx
