// Placeholder so that the CLI links while the parameter-server roles are being integrated: the integrator
// replaces this file entirely.
#include "cli/roles.h"

namespace geomx::cli {

Status RunRole(const Recipe&, const RoleSpec&, const std::atomic<bool>*) {
  return Status::Unimplemented("parameter-server roles are being integrated");
}

}  // namespace geomx::cli
