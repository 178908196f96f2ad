// OneDnnContext: the oneDNN state of one CpuBackend (the CPU engine, a primitive cache, a scratchpad pool and the
// thread count), plus the small helpers the onednn_*.cc kernels share. This header and the onednn_*.cc files are the
// only places dnnl.hpp is visible (docs/style.md R20); nothing outside engine/cpu/ includes it.
//
// Why a cache: creating a oneDNN primitive (descriptor, implementation search, JIT code generation) costs from
// microseconds to milliseconds, while a training loop runs the same few shapes millions of times. Every kernel
// builds a OneDnnKey from (op kind, shapes, params) and asks GetOrCreate(); the primitive is created once per key
// and reused for the life of the context.
//
// Thread-safety: thread-safe. The cache is guarded by one mutex (creation of a new primitive runs under it; it is
// rare). A cached primitive may be executed by several threads at once because every primitive is created with a
// user-managed scratchpad (oneDNN's library scratchpad is per primitive in this build, which forbids concurrent
// execution of one primitive) and Execute() hands each call its own scratchpad buffer from a pool.
//
// Formats: kernels wrap the tensors' own plain memory (nchw, oihw, nc: zero copies). A primitive that is faster on
// blocked formats (convolution) is created with format_tag::any and lists its reordered arguments; Execute() then
// converts those through pooled temporary buffers, so callers always see plain tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/base/status.h"
#include "engine/shape.h"
#include "engine/tensor.h"

namespace geomx {

// The kinds of cached primitives: the first element of every OneDnnKey, so two ops with equal shapes never share
// an entry. Append only (values are not persisted, but keep them stable for debugging).
enum class OneDnnOp : int64_t {
  kMatMul = 1,
  kLinear = 2,
  kConvForward = 3,
  kConvBackwardData = 4,
  kConvBackwardFilter = 5,
  kPoolForward = 6,
  kPoolBackward = 7,
  kBatchNormTraining = 8,
  kBatchNormInference = 9,
  kBatchNormBackward = 10,
  kEltwiseForward = 11,
  kEltwiseBackward = 12,
  kSoftmaxForward = 13,
  kSoftmaxBackward = 14,
  kRnnForward = 15,
  kRnnBackward = 16,
};

// A primitive-cache key: the op kind followed by every shape and parameter that changes the primitive. Value type.
// Callers must add everything that the primitive's descriptor depends on (a missing field silently reuses a
// primitive built for other parameters).
class OneDnnKey {
 public:
  explicit OneDnnKey(OneDnnOp op) { fields_.push_back(static_cast<int64_t>(op)); }

  OneDnnKey& Add(int64_t v) {
    fields_.push_back(v);
    return *this;
  }
  // Rank, then the dims (so [2,3] and [2],[3] differ).
  OneDnnKey& Add(const Shape& s);
  // The float's bit pattern (eps and the like).
  OneDnnKey& AddFloat(float f);

  bool operator==(const OneDnnKey& o) const { return fields_ == o.fields_; }
  size_t Hash() const;

 private:
  std::vector<int64_t> fields_;
};

struct OneDnnKeyHash {
  size_t operator()(const OneDnnKey& k) const { return k.Hash(); }
};

// An argument that a primitive wants in another memory format (a blocked one chosen with format_tag::any) than
// the tensor's plain layout. Execute() routes it through a temporary buffer: reordered in before the primitive
// (inputs) or out after it (outputs).
struct OneDnnReorderedArg {
  int arg = 0;  // DNNL_ARG_* of the main primitive
  bool is_output = false;
  dnnl::memory::desc internal;    // the primitive's format
  dnnl::primitive reorder;        // plain -> internal for inputs, internal -> plain for outputs
  dnnl::memory::desc scratchpad;  // the reorder's own scratchpad (usually zero-sized)
};

// One cached primitive and the memory descriptors queried from its primitive_desc that callers need later.
struct OneDnnPrimitive {
  dnnl::primitive primitive;
  dnnl::memory::desc workspace;               // zero-sized when the primitive takes no workspace
  dnnl::memory::desc scratchpad;              // zero-sized when the primitive needs no scratchpad
  std::vector<OneDnnReorderedArg> reordered;  // empty when every argument is in its plain format
};

// Builds a OneDnnPrimitive from a primitive_desc of type Prim::primitive_desc.
template <typename Prim>
OneDnnPrimitive MakeOneDnnPrimitive(const typename Prim::primitive_desc& pd) {
  return OneDnnPrimitive{Prim(pd), pd.workspace_desc(), pd.scratchpad_desc()};
}

// Records in `p` that argument `arg` must be converted between the tensor's `plain` format and the primitive's
// `internal` one. No-op when the two are equal. Call from a GetOrCreate factory (may throw dnnl::error).
void OneDnnAddReorder(const dnnl::engine& eng, int arg, const dnnl::memory::desc& plain,
                      const dnnl::memory::desc& internal, bool is_output, OneDnnPrimitive* p);

// The attribute every cached primitive is created with: user scratchpad (see the thread-safety note above).
dnnl::primitive_attr OneDnnDefaultAttr();

// Plain row-major f32 descriptor of `dims` (format a, ab, abc, abcd, ... by rank; nchw / oihw / nc for the usual
// ranks). Aborts for ranks outside [1, 6].
dnnl::memory::desc OneDnnPlainDesc(const Shape& shape);

// Converts a oneDNN exception into a Status naming the op ("oneDNN Conv2dForward: could not create ...").
Status OneDnnError(const char* op, const dnnl::error& e);

class OneDnnContext {
 public:
  // Creates the CPU engine (index 0). Aborts when oneDNN cannot create it (it always can on a working system).
  OneDnnContext();
  ~OneDnnContext();
  OneDnnContext(const OneDnnContext&) = delete;
  OneDnnContext& operator=(const OneDnnContext&) = delete;

  // Worker threads for oneDNN kernels (its OpenMP runtime): n > 0 sets that many, n <= 0 restores the count the
  // process started with. OpenMP keeps this setting per calling thread: it applies to kernels launched from the
  // thread that calls it (the training thread, in practice).
  void SetNumThreads(int n);

  const dnnl::engine& engine() const { return engine_; }

  // Wraps a contiguous f32 tensor's memory (no copy) with descriptor `md`. The tensor must outlive the memory's
  // use; `md` must describe no more bytes than the tensor holds.
  dnnl::memory Wrap(const Tensor& t, const dnnl::memory::desc& md) const;
  // Wraps raw memory (workspace bytes and the like). Same lifetime rule.
  dnnl::memory WrapRaw(void* data, const dnnl::memory::desc& md) const;

  // Returns the primitive cached under `key`, creating it with `make` on first use. The pointer stays valid for
  // the context's lifetime (entries are never evicted; a training job uses a bounded set of shapes). `make` may
  // throw dnnl::error: the error is returned as kInternal (prefixed with `op`) and nothing is cached. `make` runs
  // under the cache lock and must not call back into this context.
  Result<const OneDnnPrimitive*> GetOrCreate(const char* op, const OneDnnKey& key,
                                             const std::function<OneDnnPrimitive()>& make);

  // Executes `p` synchronously on a fresh stream with `args` (DNNL_ARG_* -> memory in plain formats), adding a
  // scratchpad from the pool when the primitive needs one and running the reorders of p.reordered around it
  // (their temporary buffers also come from the pool). Returns kInternal (prefixed with `op`) on a oneDNN error.
  Status Execute(const char* op, const OneDnnPrimitive& p, std::unordered_map<int, dnnl::memory> args);

  // Number of cached primitives (for tests of the cache).
  size_t cache_size_for_testing() const;

 private:
  // A 64-byte aligned byte buffer, reused across Execute() calls.
  struct ScratchBuffer {
    std::unique_ptr<std::byte[]> storage;
    void* aligned = nullptr;
    size_t size = 0;  // usable bytes at `aligned`
  };
  // A pool buffer of at least `nbytes`, handed back to the pool when the lease dies. Move-only.
  class ScratchLease {
   public:
    ScratchLease(OneDnnContext* ctx, size_t nbytes);
    ~ScratchLease();
    ScratchLease(ScratchLease&& o) noexcept = default;
    ScratchLease& operator=(ScratchLease&&) = delete;
    void* data() const { return buf_->aligned; }

   private:
    OneDnnContext* ctx_;  // not owned; outlives the lease (leases live inside one Execute call)
    std::unique_ptr<ScratchBuffer> buf_;
  };
  std::unique_ptr<ScratchBuffer> AcquireScratch(size_t nbytes);
  void ReleaseScratch(std::unique_ptr<ScratchBuffer> buf);
  // Adds DNNL_ARG_SCRATCHPAD to `args` when `md` is not empty, keeping its buffer alive in `leases`.
  void AddScratchpad(const dnnl::memory::desc& md, std::unordered_map<int, dnnl::memory>* args,
                     std::vector<ScratchLease>* leases);

  dnnl::engine engine_;
  int default_num_threads_ = 0;  // OpenMP's max threads at construction

  mutable std::mutex cache_mu_;
  std::unordered_map<OneDnnKey, OneDnnPrimitive, OneDnnKeyHash> cache_;  // guarded by cache_mu_

  std::mutex scratch_mu_;
  std::vector<std::unique_ptr<ScratchBuffer>> free_scratch_;  // guarded by scratch_mu_; a few per concurrent call
};

}  // namespace geomx
