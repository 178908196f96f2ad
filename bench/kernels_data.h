// The data both sides of `geomx bench kernels` train on (kernels_command.cc and bench/peers/torch_cnn.py): the
// real Fashion-MNIST training images, normalised as the fashion-mnist data set does ((x / 255 - 0.2860) / 0.3530 in
// float32, through the data set's per-pixel lookup table), in one example order that geomx computes and hands to
// the peer as a file, so the peer never re-implements the shuffle.
//
// Batch b of size B holds the examples order[(b * B + j) mod n], j = 0 .. B-1: consecutive windows of one seeded
// permutation of the n training examples, wrapping to the start after the last one. Every configuration (batch
// size x threads) starts again at batch 0, on both sides.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "datasets/loader.h"
#include "engine/base/status.h"

namespace geomx::bench {

// The seed of the example order: fixed, so that two runs of the command train on the same batches.
inline constexpr uint64_t kKernelsOrderSeed = 1;

// The training split of Fashion-MNIST in directory `dir`, or, for "auto", in the first existing directory of
// data::DatasetSearchPaths("fashion-mnist") (/usr/share/datasets/fashion-mnist, data/fashion-mnist), normalised as
// training normalises it. Sets *resolved_dir (when non-null) to the directory the images came from, the one to
// give the peer. Errors (user errors, exit 2): kNotFound "--data DIR: ..." naming the missing file or where auto
// looked and how to install the data; kDataLoss for a corrupt or truncated file (names it and the byte offset);
// kInvalidArgument when the images are not 1x28x28 (the model's input).
Result<std::shared_ptr<const data::Dataset>> OpenKernelsTrainingSet(const std::string& dir,
                                                                    std::string* resolved_dir);

// A permutation of [0, num_examples): the identity shuffled by Fisher-Yates (for i = n down to 2, swap elements
// i-1 and Rng(seed).Below(i)), the shuffle the data loader uses. Deterministic in (num_examples, seed).
// num_examples >= 0.
std::vector<int64_t> KernelsExampleOrder(int64_t num_examples, uint64_t seed);

// Example j of batch b of size `batch`: order[(b * batch + j) mod order.size()]. Requires a non-empty order,
// b >= 0, batch >= 1 and 0 <= j < batch.
inline int64_t KernelsBatchExample(const std::vector<int64_t>& order, int64_t b, int batch, int j) {
  const int64_t n = static_cast<int64_t>(order.size());
  return order[static_cast<size_t>((b * batch + j) % n)];
}

// Writes `order` to `path` as raw little-endian int64 values, no header: the file the peer reads (--order).
// kInvalidArgument naming the path when it cannot be written.
Status WriteKernelsOrder(const std::vector<int64_t>& order, const std::string& path);

// Batch b of size `batch` (examples KernelsBatchExample(order, b, batch, j)), assembled on the host the way the
// data loader assembles a training batch: fresh tensors x f32 [batch, example_shape...] filled by Dataset::Get
// (normalised, no augmentation) and y i64 [batch] from Dataset::Label. Requires every index of `order` to be an
// example of `train`, and the preconditions of KernelsBatchExample.
data::Batch AssembleKernelsBatch(const data::Dataset& train, const std::vector<int64_t>& order, int64_t b,
                                 int batch);

}  // namespace geomx::bench
