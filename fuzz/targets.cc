// The scratch files of the reader targets and the trap of broken promises (fuzz/targets.h).
#include "fuzz/targets.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace geomx::fuzz {

namespace internal {
namespace {

void RemoveScratch() {
  std::error_code ec;
  std::filesystem::remove_all(ScratchDir(), ec);
}

}  // namespace

void Broken(const char* target, const char* what) {
  std::fprintf(stderr, "fuzz target %s: broken promise: %s\n", target, what);
  std::fflush(stderr);
  __builtin_trap();
}

const char* ScratchDir() {
  // Never destroyed: the atexit handler that removes the folder runs after static destructors.
  static const std::string* const dir = [] {
    // GEOMX_FUZZ_TMP (scripts/fuzz.sh: one folder it removes, also after a crash skipped the atexit handler),
    // else /dev/shm, else TMPDIR, else /tmp.
    const char* set = std::getenv("GEOMX_FUZZ_TMP");
    std::string base = set != nullptr && *set != '\0' ? set : access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "";
    if (base.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    }
    std::string templ = base + "/geomx-fuzz-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) Broken("scratch", "cannot create a scratch folder");
    auto* made = new std::string(templ);
    std::atexit(RemoveScratch);
    return made;
  }();
  return dir->c_str();
}

std::string WriteScratch(const char* name, const uint8_t* data, size_t size) {
  std::string path = std::string(ScratchDir()) + "/" + name;
  // "r+b" keeps the inode (hard links made by a target see the new bytes); "wb" creates the file the first time.
  FILE* f = std::fopen(path.c_str(), "r+b");
  if (f == nullptr) f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) Broken("scratch", "cannot write a scratch file");
  if (size > 0 && std::fwrite(data, 1, size, f) != size) Broken("scratch", "short write to a scratch file");
  std::fflush(f);
  if (ftruncate(fileno(f), static_cast<off_t>(size)) != 0) Broken("scratch", "cannot truncate a scratch file");
  std::fclose(f);
  return path;
}

}  // namespace internal
}  // namespace geomx::fuzz
