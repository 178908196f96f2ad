#include "datasets/label_encoder.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "engine/base/check.h"

namespace geomx::data {

bool LabelEncoder::ParseNumber(std::string_view s, double* out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(*out);
}

void LabelEncoder::Add(std::string_view label) {
  GEOMX_CHECK(!finalized_) << "LabelEncoder::Add after Finalize";
  double v;
  if (all_numeric_ && ParseNumber(label, &v)) {
    numbers_.insert(v);
  } else {
    all_numeric_ = false;
  }
  if (texts_.find(label) == texts_.end()) texts_.emplace(label);
}

void LabelEncoder::Finalize() {
  GEOMX_CHECK(!finalized_);
  finalized_ = true;
  if (all_numeric_ && !numbers_.empty()) {
    bool identity = true;
    for (double v : numbers_) identity = identity && v >= 0 && v < 65536 && v == std::floor(v);
    if (identity) {
      mode_ = Mode::kIdentity;
      num_classes_ = static_cast<int>(*numbers_.rbegin()) + 1;
      return;
    }
    mode_ = Mode::kNumeric;
    for (double v : numbers_) {
      number_ids_[v] = num_classes_++;
      std::ostringstream name;
      name << v;
      class_names_.push_back(name.str());
    }
    return;
  }
  mode_ = Mode::kText;
  for (const auto& t : texts_) {
    text_ids_.emplace(t, num_classes_++);
    class_names_.push_back(t);
  }
}

int64_t LabelEncoder::Encode(std::string_view label) const {
  GEOMX_CHECK(finalized_) << "LabelEncoder::Encode before Finalize";
  double v;
  switch (mode_) {
    case Mode::kIdentity:
      if (!ParseNumber(label, &v) || v < 0 || v >= num_classes_ || v != std::floor(v)) return -1;
      return static_cast<int64_t>(v);
    case Mode::kNumeric: {
      if (!ParseNumber(label, &v)) return -1;
      auto it = number_ids_.find(v);
      return it == number_ids_.end() ? -1 : it->second;
    }
    case Mode::kText: {
      auto it = text_ids_.find(label);
      return it == text_ids_.end() ? -1 : it->second;
    }
  }
  return -1;
}

}  // namespace geomx::data
