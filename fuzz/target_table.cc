// Targets(): the table of all fuzz targets (fuzz/targets.h), here with the recipe target since it needs cli/.
#include "fuzz/targets.h"

namespace geomx::fuzz {

std::span<const Target> Targets() {
  static const Target kTargets[] = {
      {"recipe", FuzzRecipe}, {"message", FuzzMessage}, {"frame", FuzzFrame},   {"idx", FuzzIdx},
      {"csv", FuzzCsv},       {"libsvm", FuzzLibsvm},   {"cifar", FuzzCifar},
  };
  return kTargets;
}

}  // namespace geomx::fuzz
