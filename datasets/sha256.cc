#include "datasets/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/base/check.h"

namespace geomx::data {
namespace {

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

std::string Hex(const unsigned char* d, unsigned n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (unsigned i = 0; i < n; ++i) {
    out[2 * i] = kDigits[d[i] >> 4];
    out[2 * i + 1] = kDigits[d[i] & 15];
  }
  return out;
}

// Null when OpenSSL cannot set up a SHA-256 context (out of memory, or a broken provider configuration).
MdCtx NewSha256() {
  MdCtx ctx(EVP_MD_CTX_new());
  if (ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) ctx.reset();
  return ctx;
}

std::string Finish(EVP_MD_CTX* ctx) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  if (EVP_DigestFinal_ex(ctx, d, &n) != 1) return "";
  return Hex(d, n);
}

}  // namespace

std::string Sha256Hex(std::string_view bytes) {
  MdCtx ctx = NewSha256();
  GEOMX_CHECK(ctx != nullptr) << "OpenSSL: cannot create a SHA-256 context";
  GEOMX_CHECK(EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) == 1) << "OpenSSL: SHA-256 update failed";
  const std::string hex = Finish(ctx.get());
  GEOMX_CHECK(!hex.empty()) << "OpenSSL: SHA-256 final failed";
  return hex;
}

Result<std::string> Sha256OfFile(const std::string& path) {
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::Internal(path + ": cannot open: " + std::strerror(errno));
  }
  MdCtx ctx = NewSha256();
  if (!ctx) return Status::Internal(path + ": OpenSSL cannot create a SHA-256 context");
  std::vector<unsigned char> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) {
    if (EVP_DigestUpdate(ctx.get(), buf.data(), n) != 1) return Status::Internal(path + ": SHA-256 update failed");
  }
  if (std::ferror(f.get())) return Status::Internal(path + ": read error: " + std::strerror(errno));
  std::string hex = Finish(ctx.get());
  if (hex.empty()) return Status::Internal(path + ": SHA-256 final failed");
  return hex;
}

}  // namespace geomx::data
