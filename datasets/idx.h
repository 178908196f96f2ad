// The IDX file format (MNIST, Fashion-MNIST): a big-endian header {0, 0, type, ndims, dims[ndims] as u32}
// followed by prod(dims) elements of `type`. See docs/data_formats.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"

namespace geomx::data {

enum class IdxType : uint8_t { kU8 = 0x08, kI8 = 0x09, kI16 = 0x0B, kI32 = 0x0C, kF32 = 0x0D, kF64 = 0x0E };

struct IdxHeader {
  IdxType type = IdxType::kU8;
  std::vector<int64_t> dims;
  size_t data_offset = 0;   // where the elements start (4 + 4 * ndims)
  size_t element_size = 1;  // bytes per element
  size_t data_bytes = 0;    // prod(dims) * element_size
};

// "u8", "i8", "i16", "i32", "f32", "f64".
std::string_view IdxTypeName(IdxType t);

// True when `bytes` start like an IDX file (two zero bytes, a known type, 1..4 dims). Cheap; for sniffing.
bool LooksLikeIdx(const uint8_t* bytes, size_t size);

// Parses and validates the header of the IDX file `file` held in `bytes`: magic, type, 1..4 dims, and that the
// file holds exactly the data the dims announce. `what` names the data in errors ("image", "label").
// kDataLoss: "<file>: bad IDX magic ...", "<file>: truncated at byte offset N: expected M bytes of image data",
// "<file>: K unexpected bytes after the data (byte offset N)".
Result<IdxHeader> ParseIdxHeader(const std::vector<uint8_t>& bytes, const std::string& file, std::string_view what);

}  // namespace geomx::data
