// Keeps the compression codecs that register themselves from their own files (sign.cc, int8.cc) linked into
// every binary: geomx_comm is a static library, and an object nothing references is dropped with its
// registrations. A new codec file adds its Link function here (one line in codecs.cc). Idempotent, thread-safe.
#pragma once

namespace geomx::comm {

void LinkCompressionCodecs();

// Defined by each codec file; empty, they exist only to be referenced.
void LinkSignCodec();
void LinkInt8Codec();
void LinkPowerSgdCodec();

}  // namespace geomx::comm
