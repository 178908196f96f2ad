// Checkpoint file format v1 (docs/checkpoint_format.md): a 24-byte header, the payload (meta + tensor records)
// and a CRC-32 of the payload. The file is built in memory (checkpoints of the built-in models are a few MB),
// written to "<path>.tmp", fsync'ed and renamed, so readers see either the old or the new file.
#include "nn/checkpoint.h"

#include <array>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include "engine/base/check.h"
#include "engine/base/file_write.h"

namespace geomx::nn {
namespace {

// Tensor bytes are copied raw; the format is little-endian.
static_assert(std::endian::native == std::endian::little, "checkpoint I/O assumes a little-endian host");

constexpr size_t kHeaderSize = 24;  // magic(8) version(4) flags(4) payload_size(8)
constexpr size_t kTrailerSize = 4;  // crc32
constexpr int kMaxRank = 8;

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

// CRC-32 (IEEE 802.3, the zlib/PNG polynomial), so `python -c 'zlib.crc32(...)'` can check a file.
uint32_t Crc32(const char* data, size_t n) {
  static constexpr std::array<uint32_t, 256> kTable = MakeCrcTable();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = kTable[(c ^ static_cast<uint8_t>(data[i])) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string Hex(uint32_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

template <typename T>
void Put(std::string* out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out->append(bytes, sizeof(T));
}

void PutString(std::string* out, const std::string& s) {
  Put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

// Bounds-checked cursor over the file bytes. Every failure is kDataLoss naming `what` and the absolute offset.
class Reader {
 public:
  Reader(const std::string& bytes, size_t begin, size_t end) : bytes_(bytes), pos_(begin), end_(end) {}
  size_t offset() const { return pos_; }

  template <typename T>
  Status Get(T* v, const std::string& what) {
    GEOMX_RETURN_IF_ERROR(Need(sizeof(T), what));
    std::memcpy(v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }
  Status GetString(std::string* s, const std::string& what) {
    uint32_t n = 0;
    GEOMX_RETURN_IF_ERROR(Get(&n, what + " length"));
    GEOMX_RETURN_IF_ERROR(Need(n, what));
    s->assign(bytes_.data() + pos_, n);
    pos_ += n;
    return Status::Ok();
  }
  Status GetBytes(void* dst, size_t n, const std::string& what) {
    GEOMX_RETURN_IF_ERROR(Need(n, what));
    if (n > 0) std::memcpy(dst, bytes_.data() + pos_, n);
    pos_ += n;
    return Status::Ok();
  }
  Status Need(size_t n, const std::string& what) const {
    if (end_ - pos_ >= n) return Status::Ok();
    return Status::DataLoss(what + " at offset " + std::to_string(pos_) + ": needs " + std::to_string(n) +
                            " bytes, only " + std::to_string(end_ - pos_) + " left in the payload");
  }

 private:
  const std::string& bytes_;
  size_t pos_;
  size_t end_;
};

std::string EncodePayload(const std::map<std::string, Tensor>& tensors, const CheckpointMeta& meta) {
  std::string p;
  Put<int64_t>(&p, meta.iteration);
  Put<int64_t>(&p, meta.epoch);
  Put<int64_t>(&p, meta.optimizer_step);
  PutString(&p, meta.model_name);
  PutString(&p, meta.extra_json);
  Put<uint32_t>(&p, static_cast<uint32_t>(tensors.size()));
  for (const auto& [name, tensor] : tensors) {
    GEOMX_CHECK(!name.empty() && tensor.defined())
        << "checkpoint: empty name or undefined tensor '" << name << "'";
    GEOMX_CHECK_LE(tensor.rank(), kMaxRank) << "checkpoint: tensor '" << name << "'";
    const Tensor host = tensor.To(Device::Cpu());
    PutString(&p, name);
    Put<uint8_t>(&p, static_cast<uint8_t>(host.dtype()));
    Put<uint8_t>(&p, static_cast<uint8_t>(host.rank()));
    for (int64_t d : host.shape().dims()) Put<int64_t>(&p, d);
    Put<uint64_t>(&p, host.nbytes());
    p.append(static_cast<const char*>(host.raw_data()), host.nbytes());
  }
  return p;
}

Status DecodeTensor(Reader& r, std::map<std::string, Tensor>* tensors) {
  const size_t record = r.offset();
  std::string name;
  GEOMX_RETURN_IF_ERROR(r.GetString(&name, "tensor name (record at offset " + std::to_string(record) + ")"));
  const std::string ctx = "tensor '" + name + "'";
  uint8_t dtype = 0, rank = 0;
  GEOMX_RETURN_IF_ERROR(r.Get(&dtype, ctx + " dtype"));
  GEOMX_RETURN_IF_ERROR(r.Get(&rank, ctx + " rank"));
  if (dtype > static_cast<uint8_t>(DType::kU8) || rank > kMaxRank) {
    return Status::DataLoss(ctx + " at offset " + std::to_string(record) + ": bad dtype " + std::to_string(dtype) +
                            " or rank " + std::to_string(rank));
  }
  std::vector<int64_t> dims(rank);
  int64_t numel = 1;
  for (int64_t& d : dims) {
    GEOMX_RETURN_IF_ERROR(r.Get(&d, ctx + " shape"));
    if (d < 0 || (d > 0 && numel > std::numeric_limits<int64_t>::max() / d)) {
      return Status::DataLoss(ctx + " at offset " + std::to_string(r.offset()) + ": bad dimension " +
                              std::to_string(d));
    }
    numel *= d;
  }
  uint64_t nbytes = 0;
  GEOMX_RETURN_IF_ERROR(r.Get(&nbytes, ctx + " byte count"));
  const DType type = static_cast<DType>(dtype);
  if (numel > std::numeric_limits<int64_t>::max() / 8 || nbytes != static_cast<uint64_t>(numel) * SizeOf(type)) {
    return Status::DataLoss(ctx + " at offset " + std::to_string(r.offset()) + ": " + std::to_string(nbytes) +
                            " data bytes do not match its shape and dtype");
  }
  GEOMX_RETURN_IF_ERROR(r.Need(nbytes, ctx + " data"));
  Tensor t = Tensor::Empty(Shape(std::move(dims)), type);
  GEOMX_RETURN_IF_ERROR(r.GetBytes(t.raw_data(), nbytes, ctx + " data"));
  if (!tensors->emplace(name, std::move(t)).second) {
    return Status::DataLoss(ctx + " at offset " + std::to_string(record) + ": duplicate name");
  }
  return Status::Ok();
}

Status DecodeFile(const std::string& bytes, std::map<std::string, Tensor>* tensors, CheckpointMeta* meta) {
  if (bytes.size() < kHeaderSize) {
    return Status::DataLoss("truncated header at offset " + std::to_string(bytes.size()) + ": a checkpoint has " +
                            std::to_string(kHeaderSize) + " header bytes");
  }
  if (std::memcmp(bytes.data(), kCheckpointMagic, sizeof(kCheckpointMagic)) != 0) {
    return Status::DataLoss("bad magic at offset 0: not a geomx checkpoint");
  }
  uint32_t version = 0, flags = 0;
  uint64_t payload_size = 0;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&flags, bytes.data() + 12, 4);
  std::memcpy(&payload_size, bytes.data() + 16, 8);
  if (version == 0) return Status::DataLoss("bad version 0 at offset 8");
  if (version > kCheckpointVersion) {
    return Status::Unimplemented("checkpoint format version " + std::to_string(version) +
                                 " is newer than this build reads (" + std::to_string(kCheckpointVersion) + ")");
  }
  if (flags != 0) return Status::DataLoss("unknown flags " + Hex(flags) + " at offset 12");
  const size_t body = bytes.size() - kHeaderSize;
  if (payload_size > body || body - payload_size < kTrailerSize) {
    return Status::DataLoss("truncated at offset " + std::to_string(bytes.size()) + ": the header announces " +
                            std::to_string(payload_size) + " payload bytes, so the file should have " +
                            std::to_string(kHeaderSize + payload_size + kTrailerSize) + " bytes");
  }
  const size_t end = kHeaderSize + static_cast<size_t>(payload_size);
  if (bytes.size() != end + kTrailerSize) {
    return Status::DataLoss("unexpected trailing bytes at offset " + std::to_string(end + kTrailerSize));
  }
  uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + end, 4);
  const uint32_t computed = Crc32(bytes.data() + kHeaderSize, payload_size);
  if (stored != computed) {
    return Status::DataLoss("checksum mismatch: CRC-32 stored at offset " + std::to_string(end) + " is " +
                            Hex(stored) + ", payload bytes [" + std::to_string(kHeaderSize) + ", " +
                            std::to_string(end) + ") give " + Hex(computed));
  }
  Reader r(bytes, kHeaderSize, end);
  CheckpointMeta m;
  GEOMX_RETURN_IF_ERROR(r.Get(&m.iteration, "meta.iteration"));
  GEOMX_RETURN_IF_ERROR(r.Get(&m.epoch, "meta.epoch"));
  GEOMX_RETURN_IF_ERROR(r.Get(&m.optimizer_step, "meta.optimizer_step"));
  GEOMX_RETURN_IF_ERROR(r.GetString(&m.model_name, "meta.model_name"));
  GEOMX_RETURN_IF_ERROR(r.GetString(&m.extra_json, "meta.extra_json"));
  uint32_t count = 0;
  GEOMX_RETURN_IF_ERROR(r.Get(&count, "tensor count"));
  std::map<std::string, Tensor> out;
  for (uint32_t i = 0; i < count; ++i) GEOMX_RETURN_IF_ERROR(DecodeTensor(r, &out));
  if (r.offset() != end) {
    return Status::DataLoss("payload has " + std::to_string(end - r.offset()) + " unread bytes at offset " +
                            std::to_string(r.offset()));
  }
  if (tensors != nullptr) *tensors = std::move(out);
  if (meta != nullptr) *meta = std::move(m);
  return Status::Ok();
}

}  // namespace

Status WriteTensorFile(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                       const CheckpointMeta& meta) {
  std::string file(kCheckpointMagic, sizeof(kCheckpointMagic));
  Put<uint32_t>(&file, kCheckpointVersion);
  Put<uint32_t>(&file, 0);  // flags
  const std::string payload = EncodePayload(tensors, meta);
  Put<uint64_t>(&file, payload.size());
  file += payload;
  Put<uint32_t>(&file, Crc32(payload.data(), payload.size()));

  return WriteFileAtomically(path, file);
}

Status ReadTensorFile(const std::filesystem::path& path, std::map<std::string, Tensor>* tensors,
                      CheckpointMeta* meta) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open checkpoint '" + path.string() + "'");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Status::DataLoss("cannot read checkpoint '" + path.string() + "'");
  return DecodeFile(buffer.str(), tensors, meta).WithContext("checkpoint '" + path.string() + "'");
}

Status SaveCheckpoint(const std::filesystem::path& path, Module& model, const Optimizer* optimizer,
                      const CheckpointMeta& meta) {
  std::map<std::string, Tensor> tensors;
  for (Parameter* p : model.Parameters()) {
    GEOMX_CHECK(tensors.emplace(p->key(), p->data()).second) << "duplicate parameter key '" << p->key() << "'";
  }
  for (const auto& [name, t] : model.Buffers()) {
    GEOMX_CHECK(tensors.emplace(name, *t).second) << "buffer name '" << name << "' is also a parameter key";
  }
  CheckpointMeta m = meta;
  if (optimizer != nullptr) {
    for (const auto& [name, t] : optimizer->StateDict()) tensors.emplace(kCheckpointOptimizerPrefix + name, t);
    m.optimizer_step = optimizer->step();
  }
  return WriteTensorFile(path, tensors, m);
}

Status LoadCheckpoint(const std::filesystem::path& path, Module& model, Optimizer* optimizer,
                      CheckpointMeta* meta) {
  std::map<std::string, Tensor> tensors;
  CheckpointMeta stored;
  GEOMX_RETURN_IF_ERROR(ReadTensorFile(path, &tensors, &stored));
  const std::string ctx = "checkpoint '" + path.string() + "' (model '" + stored.model_name + "')";

  // Pass 1: match every model tensor (nothing changes yet).
  std::vector<std::pair<Tensor, const Tensor*>> copies;  // destination (shares the model's storage), source
  std::set<std::string> used;
  std::map<std::string, Shape> param_shapes;
  auto match = [&](const std::string& name, const Tensor& dst) -> Status {
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      return Status::InvalidArgument(ctx + ": has no tensor '" + name + "' needed by the model");
    }
    const Tensor& src = it->second;
    if (src.shape() != dst.shape() || src.dtype() != dst.dtype()) {
      return Status::InvalidArgument(ctx + ": tensor '" + name + "' is " + std::string(DTypeName(src.dtype())) +
                                     src.shape().ToString() + ", the model has " +
                                     std::string(DTypeName(dst.dtype())) + dst.shape().ToString());
    }
    used.insert(name);
    copies.emplace_back(dst, &src);
    return Status::Ok();
  };
  for (Parameter* p : model.Parameters()) {
    GEOMX_RETURN_IF_ERROR(match(p->key(), p->data()));
    param_shapes.emplace(p->key(), p->data().shape());
  }
  for (const auto& [name, t] : model.Buffers()) GEOMX_RETURN_IF_ERROR(match(name, *t));

  const std::string prefix = kCheckpointOptimizerPrefix;
  std::map<std::string, Tensor> optimizer_state;
  for (const auto& [name, t] : tensors) {
    if (used.count(name) > 0) continue;
    if (name.rfind(prefix, 0) != 0) {
      return Status::InvalidArgument(ctx + ": tensor '" + name + "' is not in the model");
    }
    const std::string entry = name.substr(prefix.size());
    const std::string key = entry.substr(0, entry.rfind('/'));
    auto shape = param_shapes.find(key);
    if (shape == param_shapes.end() || shape->second != t.shape()) {
      return Status::InvalidArgument(ctx + ": optimizer state '" + entry + "' matches no parameter of the model");
    }
    optimizer_state.emplace(entry, t);
  }
  // Pass 2: the optimizer validates before it changes; then the model is overwritten.
  if (optimizer != nullptr) {
    GEOMX_RETURN_IF_ERROR(optimizer->LoadState(optimizer_state, stored.optimizer_step).WithContext(ctx));
  }
  for (auto& [dst, src] : copies) dst.CopyFrom(*src);
  if (meta != nullptr) *meta = std::move(stored);
  return Status::Ok();
}

}  // namespace geomx::nn
