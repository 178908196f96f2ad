// ModelConfig: what `model:` in a recipe says, plus the input geometry the dataset fills in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace geomx::nn {

struct ModelConfig {
  std::string name = "geomx-cnn";  // geomx-cnn | mlp | lenet5 | resnet20 (ModelNames())
  std::vector<int> hidden = {256, 128};  // mlp: hidden layer widths
  std::string activation = "relu";       // mlp: relu | tanh | sigmoid | gelu
  float dropout = 0.0f;                  // mlp: dropout probability after each hidden layer, [0, 1)
  std::string init = "kaiming";          // kaiming | xavier: weight init of conv/linear layers
  std::string cell = "lstm";             // rnn: lstm | gru
  // Incremental training (nn/transfer.h): start from this run folder's last checkpoint or this checkpoint file
  // ("" = fresh weights), and freeze the first `freeze` parameterised layers. Applied by the caller, not by
  // CreateModel.
  std::string init_from;
  int freeze = 0;
  // Input geometry, filled from the dataset by the caller (not recipe keys).
  int in_channels = 1;
  int in_height = 28;
  int in_width = 28;
  int num_classes = 10;
};

}  // namespace geomx::nn
