// Builders of tar archives and gzip streams for the fetch and unpack tests, byte by byte from the POSIX ustar
// layout (so the reader is checked against an independent writer). Test-only code.
#pragma once

#include <string>

namespace geomx::testing {

// One ustar entry: a 512-byte header (`name` up to 100 bytes, or split into prefix/name up to 255) and `contents`
// padded to 512 bytes. `type`: '0' file, '5' directory, '2' symlink, 'L' GNU long name, 'x' pax header.
// `bad_checksum` stores a wrong header checksum.
std::string TarEntry(const std::string& name, const std::string& contents, char type = '0',
                     bool bad_checksum = false);
// A GNU long-name record followed by the file entry itself (for names over 100 bytes).
std::string TarLongNameEntry(const std::string& name, const std::string& contents);
// The end-of-archive marker: two zero blocks.
std::string TarEnd();
// `bytes` as one gzip member (zlib deflate with a gzip wrapper).
std::string Gzip(const std::string& bytes);

}  // namespace geomx::testing
