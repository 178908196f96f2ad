// Argument checks shared by the files that implement engine/ops.h (ops.cc, ops_indexed.cc). A failed check is a
// programmer error (ops.h): it aborts naming the op and the argument. Internal to the engine.
#pragma once

#include "engine/backend.h"
#include "engine/backend_registry.h"
#include "engine/base/check.h"
#include "engine/tensor.h"

namespace geomx::ops {

inline void CheckDefined(const char* op, const Tensor& t, const char* name) {
  GEOMX_CHECK(t.defined()) << op << ": `" << name << "` is undefined";
}

inline void CheckF32(const char* op, const Tensor& t, const char* name) {
  CheckDefined(op, t, name);
  GEOMX_CHECK(t.dtype() == DType::kF32) << op << ": `" << name << "` must be f32, got " << t.ToString();
}

inline void CheckSameDevice(const char* op, const Tensor& a, const Tensor& b) {
  GEOMX_CHECK(a.device() == b.device()) << op << ": tensors on different devices: " << a.ToString() << " and "
                                        << b.ToString();
}

inline void CheckShape(const char* op, const Tensor& t, const Shape& want, const char* name) {
  GEOMX_CHECK(t.shape() == want) << op << ": `" << name << "` must have shape " << want.ToString() << ", got "
                                 << t.shape().ToString();
}

inline Backend& BackendOf(const Tensor& t) { return BackendFor(t.device()); }

}  // namespace geomx::ops
