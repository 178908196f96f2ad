// The fuzz targets' entry functions (docs/fuzzing.md). Each feeds one input to a decoder or reader that takes
// untrusted bytes and checks what the code promises about it: never a crash, hang, abort or an allocation the
// input does not justify, every error a Status, and the round-trip properties the headers state. A broken promise
// that is not a sanitizer report traps (__builtin_trap), so libFuzzer records the input as a crash.
//
// The same functions run under libFuzzer (fuzz/<name>_fuzz.cc, GEOMX_FUZZ=ON, clang) and in the corpus replay test
// of the normal build (tests/fuzz/corpus_replay_test.cc), which feeds them every seed and every crash input found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "engine/base/status.h"

namespace geomx::fuzz {

// Each returns Ok when the input was accepted by the code under test, else the first error it reported.
// recipe: cli::ParseRecipe of the input's YAML (up to the first "\n---overrides---\n"; the lines after it are
//         --set overrides), and when accepted, RecipeToYaml must parse again.
Status FuzzRecipe(const uint8_t* data, size_t size);
// message: byte 0 picks one of comm::DecodeMeta, DecodeFields, DecodeRegisterRequest, DecodeNodeTable and the
//          reducer payload decoders (handlers/payloads.h); what decodes must encode and decode again the same.
Status FuzzMessage(const uint8_t* data, size_t size);
// frame: comm::FrameLength / ValidateFrame / DecodeFrame / AddFrame of every registered frame kind (raw, fp16,
//        sparse, sign, int8, powersgd) on the input as one compressed frame.
Status FuzzFrame(const uint8_t* data, size_t size);
// idx: ParseIdxHeader, LooksLikeIdx, and, through a file, InspectDataFile and the fashion-mnist IDX image reader.
Status FuzzIdx(const uint8_t* data, size_t size);
// csv: ParseCsvTable, and, through a file, InspectDataFile and OpenTable("csv"); bytes 0-1 pick the options.
Status FuzzCsv(const uint8_t* data, size_t size);
// libsvm: ParseLibsvm, LooksLikeLibsvm, and, through a file, InspectDataFile and OpenTable("libsvm"); bytes 0-1
//         pick the options.
Status FuzzLibsvm(const uint8_t* data, size_t size);
// cifar: ValidateCifar10Batch, and, through files, InspectDataFile and the "cifar10" dataset (the input is every
//        batch file of the split).
Status FuzzCifar(const uint8_t* data, size_t size);

struct Target {
  const char* name;  // the corpus folder: tests/fuzz/corpus/<name>/, tests/fuzz/regressions/<name>/
  Status (*run)(const uint8_t* data, size_t size);
};
// The seven targets above, in this order: recipe, message, frame, idx, csv, libsvm, cifar.
std::span<const Target> Targets();

// Allocations a fuzz input may justify: the readers bound theirs by the input size. Larger inputs are not fuzzed.
inline constexpr size_t kMaxInputBytes = size_t{1} << 20;

namespace internal {
// Aborts through __builtin_trap with `what` on stderr: a broken promise that is not a sanitizer report.
[[noreturn]] void Broken(const char* target, const char* what);
// A private folder (under GEOMX_FUZZ_TMP, else /dev/shm, else TMPDIR), made once per process, for the readers
// that take a path. Files are rewritten in place for each input.
const char* ScratchDir();
// Writes `size` bytes to ScratchDir()/name and returns the path.
std::string WriteScratch(const char* name, const uint8_t* data, size_t size);
}  // namespace internal

}  // namespace geomx::fuzz
