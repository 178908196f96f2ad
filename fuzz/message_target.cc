// message: the decoders of what peers send (comm/codec.h, comm/node.h, comm/handlers/payloads.h). The first byte
// picks the decoder; what it accepts must re-encode to a buffer that decodes again to the same encoding.
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "comm/codec.h"
#include "comm/handlers/payloads.h"
#include "comm/node.h"
#include "fuzz/targets.h"

namespace geomx::fuzz {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) internal::Broken("message", what);
}

// Keeps the first error (the return value of FuzzMessage); an error must say what is wrong.
void Note(const Status& s, Status* first) {
  if (s.ok()) return;
  Check(!s.message().empty(), "an error without a message");
  if (first->ok()) *first = s;
}

void Meta(const uint8_t* data, size_t size, Status* first) {
  comm::Meta meta;
  const Status s = comm::DecodeMeta(data, size, &meta);
  Note(s, first);
  if (!s.ok()) return;
  const Bytes enc = comm::EncodeMeta(meta);
  Check(comm::EncodedMetaSize(meta) == enc.size(), "EncodedMetaSize differs from EncodeMeta's size");
  comm::Meta again;
  Check(comm::DecodeMeta(enc.data(), enc.size(), &again).ok(), "EncodeMeta of a decoded meta does not decode");
  const Bytes enc2 = comm::EncodeMeta(again);
  Check(enc2.view() == enc.view(), "meta: decode(encode(m)) encodes differently");
}

void Fields(std::string_view text, Status* first) {
  std::map<std::string, std::string> fields = {{"stale", "entry"}};
  const Status s = comm::DecodeFields(text, &fields);
  Note(s, first);
  if (!s.ok()) return;
  std::map<std::string, std::string> again;
  Check(comm::DecodeFields(comm::EncodeFields(fields), &again).ok(), "EncodeFields does not decode");
  Check(again == fields, "fields: decode(encode(f)) != f");
}

void Register(std::string_view text, Status* first) {
  const Result<comm::RegisterRequest> r = comm::DecodeRegisterRequest(text);
  Note(r.status(), first);
  if (!r.ok()) return;
  const std::string enc = comm::EncodeRegisterRequest(*r);
  const Result<comm::RegisterRequest> again = comm::DecodeRegisterRequest(enc);
  Check(again.ok(), "EncodeRegisterRequest does not decode");
  Check(comm::EncodeRegisterRequest(*again) == enc, "register: decode(encode(r)) encodes differently");
}

void NodeTable(std::string_view text, Status* first) {
  const Result<std::vector<comm::NodeInfo>> t = comm::DecodeNodeTable(text);
  Note(t.status(), first);
  if (!t.ok()) return;
  const std::string enc = comm::EncodeNodeTable(*t);
  const Result<std::vector<comm::NodeInfo>> again = comm::DecodeNodeTable(enc);
  Check(again.ok(), "EncodeNodeTable does not decode");
  Check(comm::EncodeNodeTable(*again) == enc, "node table: decode(encode(t)) encodes differently");
}

// The reducer payloads; those whose layout is fully fixed re-encode to the very input bytes.
void Payload(int which, const Bytes& in, Status* first) {
  switch (which) {
    case 4:
      if (auto r = comm::DecodeRowSparse(in); r.ok()) {
        Check(r->values.size() == r->rows.size() * r->width, "row_sparse: values != rows x width");
        Check(comm::EncodeRowSparse(r->width, r->rows, r->values).view() == in.view(),
              "row_sparse: re-encoding differs");
      } else {
        Note(r.status(), first);
      }
      break;
    case 5:
      if (auto r = comm::DecodeRecords(in); r.ok()) {
        Check(comm::EncodeRecords(*r).view() == in.view(), "concat: re-encoding differs");
      } else {
        Note(r.status(), first);
      }
      break;
    case 6:
      if (auto r = comm::DecodeTopK(in); r.ok()) {
        Check(r->neighbors.size() <= r->k, "topk_merge: more than k neighbours");
        Check(comm::DecodeTopK(comm::EncodeTopK(r->k, r->neighbors)).ok(), "topk_merge: re-encoding does not decode");
      } else {
        Note(r.status(), first);
      }
      break;
    case 7:
      if (auto r = comm::DecodeTopKRows(in); r.ok()) {
        Check(r->entries.size() == r->k * r->queries, "topk_rows: entries != queries x k");
        Result<Bytes> enc = comm::EncodeTopKRows(r->k, r->queries, r->entries);
        Check(enc.ok() && comm::DecodeTopKRows(*enc).ok(), "topk_rows: re-encoding does not decode");
      } else {
        Note(r.status(), first);
      }
      break;
    case 8:
      if (auto r = comm::DecodeWeighted(in); r.ok()) {
        Check(comm::EncodeWeighted(r->weight, r->values).view() == in.view(), "weighted_average: re-encoding differs");
      } else {
        Note(r.status(), first);
      }
      break;
    default:
      if (auto r = comm::DecodeHalfSum(in); !r.ok()) Note(r.status(), first);
      break;
  }
}

}  // namespace

Status FuzzMessage(const uint8_t* data, size_t size) {
  if (size == 0) return Status::InvalidArgument("empty input: the first byte selects the decoder");
  if (size > kMaxInputBytes) return Status::OutOfRange("input too large");
  // The first byte selects the decoder (mod 10): 0 meta, 1 fields, 2 register request, 3 node table, 4 row_sparse,
  // 5 concat, 6 topk_merge, 7 topk_rows, 8 weighted_average, 9 half_sum. The rest is its input.
  const int which = data[0] % 10;
  ++data;
  --size;
  Status first;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  switch (which) {
    case 0: Meta(data, size, &first); break;
    case 1: Fields(text, &first); break;
    case 2: Register(text, &first); break;
    case 3: NodeTable(text, &first); break;
    default: Payload(which, Bytes::Copy(data, size), &first); break;
  }
  return first;
}

}  // namespace geomx::fuzz
