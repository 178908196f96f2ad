// A request that an aggregating handler (sync_aggregator.h, async_aggregator.h) answers once every one of its keys
// has a value or one of them failed: each key holds a KeyWaiter until its value is known; Resolve records it, and
// a request whose last key that was goes to the ReadyList, which RespondAll answers (outside the handler's lock).
// Not thread-safe by itself: the handler serialises Resolve under its mutex.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "comm/kv_server.h"
#include "engine/base/bytes.h"
#include "engine/base/status.h"

namespace geomx::comm {

struct PendingRequest {
  KvRequest req;
  KvServer* server = nullptr;
  std::vector<Bytes> values;  // per key of req
  size_t remaining = 0;       // keys without a value yet
  Status error;               // the first failure; the whole request is answered with it
  bool wants_values = false;  // pull / pushpull
};

struct KeyWaiter {
  std::shared_ptr<PendingRequest> pending;
  size_t index = 0;  // the key's position in pending->req
};

using ReadyList = std::vector<std::shared_ptr<PendingRequest>>;

// A request waiting for all its keys (a request without keys is complete at once: the caller puts it on the list).
std::shared_ptr<PendingRequest> NewPending(const KvRequest& req, KvServer& server);
// Gives one waiter its value or error; a request whose last key this was goes to `ready`.
void Resolve(const KeyWaiter& w, const Status& status, const Bytes& value, ReadyList* ready);
// Answers the completed requests: the first error, or the values (pull, pushpull), or an empty success (push).
void RespondAll(const ReadyList& ready);

}  // namespace geomx::comm
