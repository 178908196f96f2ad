#include "comm/compression/codecs.h"

namespace geomx::comm {

void LinkCompressionCodecs() {
  LinkSignCodec();
  LinkInt8Codec();
  LinkPowerSgdCodec();
}

}  // namespace geomx::comm
