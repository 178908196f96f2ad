// "resnet20": the CIFAR ResNet-20 of He et al. 2016 (section 4.2): conv3x3x16 - bn - relu, then three stages of
// three basic blocks with 16, 32 and 64 channels (the first block of stages 2 and 3 has stride 2), global average
// pooling and fc num_classes. A basic block is conv3x3 - bn - relu - conv3x3 - bn, plus the shortcut, then relu.
// Convolutions have no bias (batch norm follows each one).
// Shortcuts: option B (a 1x1 stride-2 conv + bn projection where the shape changes, identity elsewhere), not the
// paper's parameter-free option A (zero-padded subsampling), because the engine has no channel-pad op; this adds
// 2,752 parameters to the paper's 269,722: 272,474 in all for 3-channel input and 10 classes (272,186 for
// 1-channel). Keys: conv1.weight, bn1.gamma, stage2.block0.conv1.weight, stage2.block0.shortcut.conv.weight,
// fc.weight, ... Any channel count works (1 for MNIST, 3 for CIFAR); the input must be at least 8x8.
#include <memory>
#include <string>

#include "engine/autograd/functions.h"
#include "nn/init.h"
#include "nn/layers/activation.h"
#include "nn/layers/batch_norm.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/sequential.h"
#include "nn/models/models.h"

namespace geomx::nn {
namespace {

std::unique_ptr<Conv2d> Conv3x3(int64_t in, int64_t out, int stride, InitKind init, Rng& rng) {
  return std::make_unique<Conv2d>(in, out, 3, rng,
                                  Conv2dOptions{.stride = stride, .padding = 1, .bias = false, .init = init});
}

class BasicBlock : public Module {
 public:
  BasicBlock(int64_t in, int64_t out, int stride, InitKind init, Rng& rng) {
    conv1_ = RegisterModule("conv1", Conv3x3(in, out, stride, init, rng));
    bn1_ = RegisterModule("bn1", std::make_unique<BatchNorm2d>(out));
    conv2_ = RegisterModule("conv2", Conv3x3(out, out, 1, init, rng));
    bn2_ = RegisterModule("bn2", std::make_unique<BatchNorm2d>(out));
    if (stride != 1 || in != out) {
      auto shortcut = std::make_unique<Sequential>();
      shortcut->Add("conv", std::make_unique<Conv2d>(
                                in, out, 1, rng, Conv2dOptions{.stride = stride, .bias = false, .init = init}));
      shortcut->Add("bn", std::make_unique<BatchNorm2d>(out));
      shortcut_ = RegisterModule("shortcut", std::move(shortcut));
    }
  }

  autograd::Variable Forward(const autograd::Variable& x) override {
    autograd::Variable h = relu_.Forward(bn1_->Forward(conv1_->Forward(x)));
    h = bn2_->Forward(conv2_->Forward(h));
    return relu_.Forward(autograd::Add(h, shortcut_ != nullptr ? shortcut_->Forward(x) : x));
  }
  std::string TypeName() const override { return "BasicBlock"; }

 private:
  Conv2d* conv1_;
  BatchNorm2d* bn1_;
  Conv2d* conv2_;
  BatchNorm2d* bn2_;
  Sequential* shortcut_ = nullptr;  // null: identity shortcut
  Activation relu_{ActivationKind::kRelu};
};

class ResNet20 : public Module {
 public:
  ResNet20(const ModelConfig& c, InitKind init, Rng& rng) {
    conv1_ = RegisterModule("conv1", Conv3x3(c.in_channels, 16, 1, init, rng));
    bn1_ = RegisterModule("bn1", std::make_unique<BatchNorm2d>(16));
    int64_t in = 16;
    const int64_t widths[] = {16, 32, 64};
    for (int s = 0; s < 3; ++s) {
      auto stage = std::make_unique<Sequential>();
      for (int b = 0; b < 3; ++b) {
        const int stride = (s > 0 && b == 0) ? 2 : 1;
        stage->Add("block" + std::to_string(b), std::make_unique<BasicBlock>(in, widths[s], stride, init, rng));
        in = widths[s];
      }
      stages_[s] = RegisterModule("stage" + std::to_string(s + 1), std::move(stage));
    }
    fc_ = RegisterModule("fc", std::make_unique<Linear>(64, c.num_classes, rng, LinearOptions{.init = init}));
  }

  autograd::Variable Forward(const autograd::Variable& x) override {
    autograd::Variable h = relu_.Forward(bn1_->Forward(conv1_->Forward(x)));
    for (Sequential* stage : stages_) h = stage->Forward(h);
    // Global average pooling: one window over the whole remaining map.
    Pool2dParams gap;
    gap.kind = PoolKind::kAvg;
    gap.kernel_h = gap.stride_h = static_cast<int>(h.shape().dim(2));
    gap.kernel_w = gap.stride_w = static_cast<int>(h.shape().dim(3));
    h = flatten_.Forward(autograd::Pool2d(h, gap));
    return fc_->Forward(h);
  }
  std::string TypeName() const override { return "ResNet20"; }

 private:
  Conv2d* conv1_;
  BatchNorm2d* bn1_;
  Sequential* stages_[3];
  Linear* fc_;
  Activation relu_{ActivationKind::kRelu};
  Flatten flatten_;
};

Result<std::unique_ptr<Module>> MakeResNet20(const ModelConfig& c, Rng& rng) {
  if (c.in_height < 8 || c.in_width < 8) {
    return Status::InvalidArgument("resnet20 needs an input of at least 8x8, got " + std::to_string(c.in_height) +
                                   "x" + std::to_string(c.in_width));
  }
  GEOMX_ASSIGN_OR_RETURN(InitKind init, ParseInitKind(c.init));
  return std::unique_ptr<Module>(std::make_unique<ResNet20>(c, init, rng));
}

GEOMX_REGISTER(
    ModelRegistry, "resnet20", MakeResNet20,
    "CIFAR ResNet-20 (He et al.), 3x3 basic blocks 16/32/64, batch norm, 1x1-conv projection shortcuts");

}  // namespace
}  // namespace geomx::nn
