// DataConfig: what `data:` in a recipe says. Parsed and validated in cli/recipe.cc; consumed by OpenDataset().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace geomx::data {

enum class PartitionKind : uint8_t { kIid, kByClass, kDirichlet };

struct DataConfig {
  // mnist | fashion-mnist | cifar10 | csv | libsvm | image-folder | synthetic (DatasetNames()); the table-only
  // generators friedman1 (regression) and letor-synthetic (ranking) serve classical algorithms (OpenTable)
  std::string name = "fashion-mnist";
  // Directory (idx, cifar10, image-folder: containing train/ and test/) or "auto" (well-known locations,
  // e.g. /usr/share/datasets/fashion-mnist). For csv/libsvm: the training file; `test_path` the test file.
  std::string path = "auto";
  std::string test_path;       // csv | libsvm: optional test file; empty => split off test_fraction
  float test_fraction = 0.2f;  // csv | libsvm without test_path: (0, 1)
  int batch_size = 32;         // >= 1
  PartitionKind partition = PartitionKind::kIid;
  float dirichlet_alpha = 0.5f;  // partition: dirichlet(alpha), alpha > 0
  bool shuffle = true;
  int prefetch = 2;       // batches prepared ahead by the loader thread, >= 0 (0: no thread)
  bool normalize = true;  // images: (x/255 - mean)/std with per-dataset constants
  bool augment = false;   // images: random crop (pad 4 for cifar10, 2 otherwise) + horizontal flip
  // Keep only the examples of these classes, in train and test (labels keep their ids); empty = every class.
  // Datasets for models (OpenDataset), not the tables of classical algorithms.
  std::vector<int64_t> classes;
  // With `classes`: a prediction is the most likely of those classes, the model's other outputs ignored (test
  // accuracy and loss, eval, predict: train::ScoredClasses). The recipe refuses it without `classes`.
  bool score_within_classes = false;
  // csv
  int label_column = -1;  // index of the label column; -1 => last
  bool header = true;     // first row is a header
  // csv, libsvm: accept NaN and infinite feature values; by default they are refused with the file and line
  bool allow_nan = false;
  // libsvm: number of features (0 => the largest feature index seen; indices are 1-based, index k is column k-1)
  int num_features = 0;
  // image-folder: decoded images are resized to this
  int image_height = 32, image_width = 32, image_channels = 3;
  // synthetic: a deterministic Gaussian-blob classification set
  int64_t synthetic_train = 2048, synthetic_test = 512;
  int synthetic_classes = 10;
  std::vector<int64_t> synthetic_shape = {1, 8, 8};  // one example's shape (letor-synthetic: features per document)
  uint64_t synthetic_seed = 1234;                    // the same seed gives the same class centres and examples
  // Classical algorithms (datasets/table.h): column scaling fitted on the training table (none | standard |
  // minmax | maxabs) and a cap on training rows (0 = all; a fixed-seed random subsample).
  std::string scale = "none";
  int64_t max_train_examples = 0;
};

}  // namespace geomx::data
