// LabelEncoder: turns the label text of CSV and LIBSVM files into class ids. Not thread-safe (build, then read).
//
// Rule: when every label is a non-negative integer below 65536 ("3", "3.0", "+3"), the id is that integer and
// num_classes is max + 1 (so MNIST-style "0".."9" keep their meaning and a class absent from one split keeps its
// id). Otherwise the distinct labels are sorted (numerically when all are numbers: "-1" < "+1"; else by text) and
// numbered 0..K-1; class_names() then holds them.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace geomx::data {

class LabelEncoder {
 public:
  // Collects a label (call for every label of every split before Finalize()).
  void Add(std::string_view label);
  // Fixes the mapping. Add() after Finalize() is a programmer error.
  void Finalize();
  // The id of a label that was Add()ed; -1 for one that was not.
  int64_t Encode(std::string_view label) const;
  int num_classes() const { return num_classes_; }
  const std::vector<std::string>& class_names() const { return class_names_; }

 private:
  enum class Mode : uint8_t { kIdentity, kNumeric, kText };
  static bool ParseNumber(std::string_view s, double* out);

  bool finalized_ = false;
  bool all_numeric_ = true;
  std::set<double> numbers_;
  std::set<std::string, std::less<>> texts_;
  Mode mode_ = Mode::kIdentity;
  std::map<double, int64_t> number_ids_;
  std::map<std::string, int64_t, std::less<>> text_ids_;
  int num_classes_ = 0;
  std::vector<std::string> class_names_;
};

}  // namespace geomx::data
