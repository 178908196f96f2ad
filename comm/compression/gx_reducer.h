// The reducer "gx_sum" (codec comm::kCompressedCodec): every contribution is a compressed frame
// (compressor.h) of the slice's length; the aggregate is the DENSE f32 sum of the decoded frames, in contributor
// order (handlers/reducer.h). A sink that answers a compressed tier encodes that sum again (cli/sync/link_io.h).
// Unlike the other built-in reducers its aggregate is not a payload of its own codec: it is the server's value.
#pragma once

namespace geomx::comm {

// Referenced from handlers/reducer.cc so that the static library keeps the registration. Returns true.
bool GxReducerLinked();

}  // namespace geomx::comm
