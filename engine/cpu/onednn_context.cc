#include "engine/cpu/onednn_context.h"

#include <cstring>
#include <string>
#include <utility>

#include <omp.h>

#include "engine/base/check.h"

namespace geomx {

OneDnnKey& OneDnnKey::Add(const Shape& s) {
  fields_.push_back(s.rank());
  for (int64_t d : s.dims()) fields_.push_back(d);
  return *this;
}

OneDnnKey& OneDnnKey::AddFloat(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof(bits));
  fields_.push_back(bits);
  return *this;
}

size_t OneDnnKey::Hash() const {
  // FNV-1a over the fields, then a final mix: keys are short (under ~20 fields), so this is cheap.
  uint64_t h = 1469598103934665603ull;
  for (int64_t f : fields_) {
    h ^= static_cast<uint64_t>(f);
    h *= 1099511628211ull;
  }
  h ^= h >> 29;
  return static_cast<size_t>(h);
}

void OneDnnAddReorder(const dnnl::engine& eng, int arg, const dnnl::memory::desc& plain,
                      const dnnl::memory::desc& internal, bool is_output, OneDnnPrimitive* p) {
  if (plain == internal) return;
  const dnnl::memory::desc& from = is_output ? internal : plain;
  const dnnl::memory::desc& to = is_output ? plain : internal;
  dnnl::reorder::primitive_desc pd(eng, from, eng, to, OneDnnDefaultAttr());
  p->reordered.push_back(OneDnnReorderedArg{arg, is_output, internal, dnnl::reorder(pd), pd.scratchpad_desc()});
}

dnnl::primitive_attr OneDnnDefaultAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::memory::desc OneDnnPlainDesc(const Shape& shape) {
  const std::vector<int64_t>& dims = shape.dims();
  using tag = dnnl::memory::format_tag;
  static constexpr tag kTags[] = {tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde, tag::abcdef};
  GEOMX_CHECK(!dims.empty() && dims.size() <= 6) << "OneDnnPlainDesc: rank " << dims.size();
  return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), dnnl::memory::data_type::f32,
                            kTags[dims.size() - 1]);
}

Status OneDnnError(const char* op, const dnnl::error& e) {
  return Status::Internal(std::string("oneDNN ") + op + ": " + e.what() + " (status " +
                          std::to_string(static_cast<int>(e.status)) + ")");
}

OneDnnContext::OneDnnContext() : engine_(dnnl::engine::kind::cpu, 0), default_num_threads_(omp_get_max_threads()) {}

OneDnnContext::~OneDnnContext() = default;

void OneDnnContext::SetNumThreads(int n) { omp_set_num_threads(n > 0 ? n : default_num_threads_); }

dnnl::memory OneDnnContext::Wrap(const Tensor& t, const dnnl::memory::desc& md) const {
  GEOMX_DCHECK(t.dtype() == DType::kF32 && t.device().is_cpu());
  GEOMX_DCHECK(md.get_size() <= t.nbytes());
  return dnnl::memory(md, engine_, t.raw_data());
}

dnnl::memory OneDnnContext::WrapRaw(void* data, const dnnl::memory::desc& md) const {
  return dnnl::memory(md, engine_, data);
}

Result<const OneDnnPrimitive*> OneDnnContext::GetOrCreate(const char* op, const OneDnnKey& key,
                                                          const std::function<OneDnnPrimitive()>& make) {
  std::lock_guard<std::mutex> lock(cache_mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return &it->second;  // unordered_map nodes never move: the pointer stays valid
  try {
    return &cache_.emplace(key, make()).first->second;
  } catch (const dnnl::error& e) {
    return OneDnnError(op, e);
  }
}

Status OneDnnContext::Execute(const char* op, const OneDnnPrimitive& p, std::unordered_map<int, dnnl::memory> args) {
  std::vector<ScratchLease> leases;  // returned to the pool when this function exits, error or not
  try {
    // A stream per call: CPU streams are cheap, and a shared stream would serialise unrelated threads. The CPU
    // stream runs each execute() to completion in order, so the reorders need no waits in between.
    dnnl::stream stream(engine_);
    std::vector<std::pair<const OneDnnReorderedArg*, dnnl::memory>> outputs;  // (reorder, plain destination)
    for (const OneDnnReorderedArg& r : p.reordered) {
      auto it = args.find(r.arg);
      GEOMX_CHECK(it != args.end()) << "oneDNN " << op << ": missing argument " << r.arg;
      leases.emplace_back(this, r.internal.get_size());
      dnnl::memory internal(r.internal, engine_, leases.back().data());
      if (r.is_output) {
        outputs.emplace_back(&r, it->second);
      } else {
        std::unordered_map<int, dnnl::memory> rargs = {{DNNL_ARG_FROM, it->second}, {DNNL_ARG_TO, internal}};
        AddScratchpad(r.scratchpad, &rargs, &leases);
        r.reorder.execute(stream, rargs);
      }
      it->second = internal;
    }
    AddScratchpad(p.scratchpad, &args, &leases);
    p.primitive.execute(stream, args);
    for (auto& [r, plain] : outputs) {
      std::unordered_map<int, dnnl::memory> rargs = {{DNNL_ARG_FROM, args.at(r->arg)}, {DNNL_ARG_TO, plain}};
      AddScratchpad(r->scratchpad, &rargs, &leases);
      r->reorder.execute(stream, rargs);
    }
    stream.wait();
  } catch (const dnnl::error& e) {
    return OneDnnError(op, e);
  }
  return Status::Ok();
}

void OneDnnContext::AddScratchpad(const dnnl::memory::desc& md, std::unordered_map<int, dnnl::memory>* args,
                                  std::vector<ScratchLease>* leases) {
  const size_t nbytes = md.get_size();
  if (nbytes == 0) return;
  leases->emplace_back(this, nbytes);
  (*args)[DNNL_ARG_SCRATCHPAD] = dnnl::memory(md, engine_, leases->back().data());
}

OneDnnContext::ScratchLease::ScratchLease(OneDnnContext* ctx, size_t nbytes)
    : ctx_(ctx), buf_(ctx->AcquireScratch(nbytes)) {}

OneDnnContext::ScratchLease::~ScratchLease() {
  if (buf_) ctx_->ReleaseScratch(std::move(buf_));
}

size_t OneDnnContext::cache_size_for_testing() const {
  std::lock_guard<std::mutex> lock(cache_mu_);
  return cache_.size();
}

std::unique_ptr<OneDnnContext::ScratchBuffer> OneDnnContext::AcquireScratch(size_t nbytes) {
  std::unique_ptr<ScratchBuffer> buf;
  {
    // The smallest free buffer that fits, else the largest (grown below): after warm-up every call finds a fit.
    std::lock_guard<std::mutex> lock(scratch_mu_);
    // Is a buffer of size `a` a better pick than one of size `b`?
    auto better = [nbytes](size_t a, size_t b) { return a >= nbytes ? (b < nbytes || a < b) : (b < nbytes && a > b); };
    size_t pick = free_scratch_.size();
    for (size_t i = 0; i < free_scratch_.size(); ++i) {
      if (pick == free_scratch_.size() || better(free_scratch_[i]->size, free_scratch_[pick]->size)) pick = i;
    }
    if (pick < free_scratch_.size()) {
      buf = std::move(free_scratch_[pick]);
      free_scratch_.erase(free_scratch_.begin() + static_cast<std::ptrdiff_t>(pick));
    }
  }
  if (!buf) buf = std::make_unique<ScratchBuffer>();
  if (buf->size < nbytes) {
    // Grow with headroom so alternating shapes do not reallocate every call.
    constexpr size_t kAlign = 64;
    const size_t want = nbytes + nbytes / 4;
    buf->storage = std::make_unique_for_overwrite<std::byte[]>(want + kAlign);
    auto addr = reinterpret_cast<uintptr_t>(buf->storage.get());
    buf->aligned = reinterpret_cast<void*>((addr + kAlign - 1) & ~(uintptr_t{kAlign} - 1));
    buf->size = want;
  }
  return buf;
}

void OneDnnContext::ReleaseScratch(std::unique_ptr<ScratchBuffer> buf) {
  std::lock_guard<std::mutex> lock(scratch_mu_);
  free_scratch_.push_back(std::move(buf));
}

}  // namespace geomx
