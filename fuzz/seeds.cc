// fuzz_seeds <dir>: writes the binary seeds of the corpora (tests/fuzz/corpus/<target>/, docs/fuzzing.md) from the
// project's own encoders, so the seeds follow the formats as they are. Names: "ok-*" are inputs the target accepts,
// "bad-*" inputs it refuses (the corpus replay test checks both). The text seeds (recipe, csv, libsvm) are written
// by hand.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "comm/codec.h"
#include "comm/compression/codecs.h"
#include "comm/compression/compressor.h"
#include "comm/handlers/payloads.h"
#include "comm/node.h"
#include "datasets/cifar10.h"

namespace {

std::string g_dir;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::filesystem::path dir = std::filesystem::path(g_dir) / target;
  std::filesystem::create_directories(dir);
  FILE* f = std::fopen((dir / name).c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::perror(name.c_str());
    std::exit(1);
  }
  std::fclose(f);
}

std::string Str(const geomx::Bytes& b) { return std::string(b.view()); }

// A message seed: the selector byte, then the encoding; with a truncated twin that must be refused.
void Message(char selector, const std::string& name, const std::string& enc, bool truncated_twin = true) {
  Write("message", "ok-" + name, std::string(1, selector) + enc);
  if (truncated_twin && enc.size() > 1) {
    Write("message", "bad-" + name + "-truncated", std::string(1, selector) + enc.substr(0, enc.size() - 1));
  }
}

void Messages() {
  using namespace geomx::comm;
  Meta push;
  push.command = Command::kPush;
  push.sender = 9;
  push.recipient = 1;
  push.timestamp = 17;
  push.round = 3;
  push.keys = {0, 5, 1u << 20};
  push.lens = {10, 1000, 3};
  push.codec = kCompressedCodec;
  push.priority = -2;
  Message(0, "meta-push", Str(EncodeMeta(push)));
  Meta control;
  control.command = Command::kControl;
  control.body = EncodeFields({{"name", "sgd"}, {"lr", "0.1"}});
  Message(0, "meta-control", Str(EncodeMeta(control)));
  Meta error;
  error.command = Command::kError;
  error.request = false;
  error.status_code = 3;
  error.body = "meta: 3 trailing bytes";
  Message(0, "meta-error", Str(EncodeMeta(error)));
  Message(1, "fields", EncodeFields({{"name", "momentum"}, {"lr", NumberField(0.05)}, {"momentum", "0.9"}}));
  Message(1, "fields-empty", EncodeFields({}), false);

  RegisterRequest reg;
  reg.node = {.id = -1, .role = NodeRole::kWorker, .rank = 1, .name = "dc-a/worker1", .party = "dc-a",
              .endpoint = "tcp://127.0.0.1:5001"};
  reg.tier = "dc-a";
  reg.num_servers = 1;
  reg.num_workers = 2;
  Message(2, "register", EncodeRegisterRequest(reg));
  std::vector<NodeInfo> table = {
      {.id = 0, .role = NodeRole::kScheduler, .rank = 0, .name = "dc-a/scheduler", .party = "dc-a",
       .endpoint = "tcp://127.0.0.1:5000"},
      {.id = 1, .role = NodeRole::kServer, .rank = 0, .name = "dc-a/server0", .party = "dc-a",
       .endpoint = "tcp://127.0.0.1:5002"},
      reg.node};
  table[2].id = 2;
  Message(3, "node-table", EncodeNodeTable(table));

  const std::vector<uint64_t> rows = {7, 2};
  const std::vector<float> values = {1, 2, 3, -4, 0.5f, 6};
  Message(4, "row-sparse", Str(EncodeRowSparse(3, rows, values)));
  const std::vector<geomx::Bytes> records = {geomx::Bytes::Copy("abc"), geomx::Bytes::Copy(""),
                                             geomx::Bytes::Copy("record")};
  Message(5, "concat", Str(EncodeRecords(records)));
  const std::vector<Neighbor> nb = {{0.5f, 3, 1}, {0.25f, 9, 0}, {2.0f, 1, 1}};
  Message(6, "topk", Str(EncodeTopK(2, nb)));
  const std::vector<Neighbor> grid = {{0.5f, 3, 1}, {0.25f, 9, 0}, {1.0f, 4, 2}, {3.0f, 5, 2}};
  Message(7, "topk-rows", Str(*EncodeTopKRows(2, 2, grid)));
  Message(8, "weighted", Str(EncodeWeighted(2.5, values)));
  const std::vector<float> exact = {3, 4};
  Message(9, "half-sum", Str(*EncodeHalfSum(values, exact)));
}

void Frames() {
  using namespace geomx::comm;
  LinkCompressionCodecs();
  CompressorConfig config;
  config.ratio = 0.1f;
  config.sign_block = 16;
  config.int8_block = 8;
  config.powersgd_rank = 2;
  for (const char* name : {"raw", "fp16", "sparse", "bsc", "sign", "int8", "powersgd"}) {
    auto compressor = MakeCompressor(name, config);
    if (!compressor.ok()) {
      std::fprintf(stderr, "%s: %s\n", name, compressor.status().ToString().c_str());
      std::exit(1);
    }
    for (size_t n : {size_t{1}, size_t{37}, size_t{300}}) {
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = (i % 7 == 3) ? 0.0f : static_cast<float>(i % 11) - 4.5f;
      CompressorState state;
      auto frame = (*compressor)->Encode(v, state);
      if (!frame.ok()) {
        std::fprintf(stderr, "%s/%zu: %s\n", name, n, frame.status().ToString().c_str());
        std::exit(1);
      }
      const std::string f = Str(*frame);
      const std::string base = std::string(name) + "-" + std::to_string(n);
      Write("frame", "ok-" + base, f);
      if (n == 37) {
        Write("frame", "bad-" + base + "-truncated", f.substr(0, f.size() - 1));
        Write("frame", "bad-" + base + "-trailing", f + '\0');
      }
    }
  }
  // A header alone is a valid empty kRaw frame; a bad magic, an unknown kind and a non-zero reserved byte are not.
  Write("frame", "ok-raw-0-header-only", std::string("GXC1") + std::string(12, '\0'));
  const std::string one = std::string("\x01\0\0\0\0\0\0\0\0\0\x80\x3f", 12);  // u64 length 1, f32 1.0
  Write("frame", "bad-magic", std::string("GXC2\0\0\0\0", 8) + one);
  Write("frame", "bad-unknown-kind", std::string("GXC1\x09\0\0\0", 8) + one);
  Write("frame", "bad-reserved-byte", std::string("GXC1\0\x01\0\0", 8) + one);
}

std::string BigEndian32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

void Idx() {
  // 3 images of 4x5 u8, a 1-d label file, a 2-d i32 tensor.
  std::string images = std::string("\0\0\x08\x03", 4) + BigEndian32(3) + BigEndian32(4) + BigEndian32(5);
  for (int i = 0; i < 60; ++i) images += static_cast<char>(i * 4);
  Write("idx", "ok-images-u8-3d", images);
  Write("idx", "bad-images-truncated", images.substr(0, images.size() - 1));
  Write("idx", "bad-images-trailing", images + "x");
  const std::string labels = std::string("\0\0\x08\x01", 4) + BigEndian32(4) + std::string("\x01\x00\x09\x03", 4);
  Write("idx", "bad-labels-u8-1d", labels);  // a label file is not an image file: the image reader refuses it
  std::string tensor = std::string("\0\0\x0c\x02", 4) + BigEndian32(2) + BigEndian32(2);
  tensor += std::string(16, '\x01');
  Write("idx", "bad-tensor-i32-2d", tensor);  // inspectable, but not images
  Write("idx", "bad-magic", std::string("\0\0\x07\x03", 4) + BigEndian32(0));
}

void Cifar() {
  std::string two;
  for (int r = 0; r < 2; ++r) {
    two += static_cast<char>(r == 0 ? 3 : 9);
    for (size_t i = 0; i < geomx::data::kCifar10ImageBytes; ++i) two += static_cast<char>((i * 7 + r) % 256);
  }
  Write("cifar", "ok-two-records", two);
  Write("cifar", "bad-truncated", two.substr(0, two.size() - 100));
  std::string bad_label = two;
  bad_label[geomx::data::kCifar10RecordBytes] = 10;
  Write("cifar", "bad-label-10", bad_label);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds <dir>  (writes <dir>/{message,frame,idx,cifar}/)\n");
    return 2;
  }
  g_dir = argv[1];
  Messages();
  Frames();
  Idx();
  Cifar();
  return 0;
}
