// SHA-256 (FIPS 180-4) of bytes and of files, as lowercase hex: what `geomx data fetch` checks every download
// against. Backed by OpenSSL's EVP interface (libssl-dev); pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "engine/base/status.h"

namespace geomx::data {

// The digest of `bytes` as 64 lowercase hex characters.
std::string Sha256Hex(std::string_view bytes);

// The digest of the file at `path`, read in chunks (any size). Errors name the file: kNotFound (missing),
// kInternal (read error or a failing digest library).
Result<std::string> Sha256OfFile(const std::string& path);

}  // namespace geomx::data
