#include "comm/wire_format.h"

namespace geomx::comm {

const char* CommandName(Command c) {
  // No default: -Wswitch flags a Command added to wire_format.h but not named here.
  switch (c) {
    case Command::kRegister: return "register";
    case Command::kNodeTable: return "node_table";
    case Command::kBarrier: return "barrier";
    case Command::kBarrierDone: return "barrier_done";
    case Command::kHeartbeat: return "heartbeat";
    case Command::kShutdown: return "shutdown";
    case Command::kPush: return "push";
    case Command::kPull: return "pull";
    case Command::kPushPull: return "push_pull";
    case Command::kControl: return "control";
    case Command::kError: return "error";
    case Command::kNodeLeft: return "node_left";
    case Command::kNodeJoined: return "node_joined";
  }
  return "unknown";
}

bool IsKnownCommand(uint8_t value) {
  switch (static_cast<Command>(value)) {
    case Command::kRegister:
    case Command::kNodeTable:
    case Command::kBarrier:
    case Command::kBarrierDone:
    case Command::kHeartbeat:
    case Command::kShutdown:
    case Command::kPush:
    case Command::kPull:
    case Command::kPushPull:
    case Command::kControl:
    case Command::kError:
    case Command::kNodeLeft:
    case Command::kNodeJoined:
      return true;
  }
  return false;
}

}  // namespace geomx::comm
