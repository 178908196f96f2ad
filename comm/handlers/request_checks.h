// Request checks shared by the aggregating handlers (sync_aggregator.h, async_aggregator.h): everything a request
// must satisfy before a handler looks at its keys' state. Requests come from peers, so every check answers with
// kInvalidArgument naming the key, never asserts. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/key_layout.h"
#include "comm/kv_server.h"
#include "engine/base/status.h"

namespace geomx::comm {

// "key K slice S" of a wire key, for error messages.
std::string KeyText(uint64_t wire_key);

// The number of worker contributions merged into one push (Meta.body field kNumMergedField; absent = 1).
Result<int> ParseNumMerged(const std::string& body);

// The sender's training loss (Meta.body field kLossField), or nullopt when absent; kInvalidArgument when it is
// not a finite number.
Result<std::optional<double>> ParseLoss(const std::string& body);

// Node ids as a body field's text: "4,6" (EncodeNodeIds) and back. ParseNodeIds: kInvalidArgument naming `what`
// for anything but a comma-separated list of distinct ids >= 1, at most 4,096 of them ("" is the empty list).
std::string EncodeNodeIds(const std::vector<int>& ids);
Result<std::vector<int>> ParseNodeIds(std::string_view text, const std::string& what);

// The other senders a relayed push covers (Meta.body field kCoversField), empty when absent; kInvalidArgument
// for anything but a comma-separated list of distinct node ids >= 1 (at most 4,096).
Result<std::vector<int>> ParseCovers(const std::string& body);

// Answers the requests a handler need not dispatch: a kControl request (passed to `on_control`, kUnimplemented when
// unset), a codec other than the handler's `codec` (the one of its `reducer`), and a round below kInitRound.
// Returns true when it answered (the caller must not), false for a push or pull to dispatch.
bool AnswerUndispatchable(const KvRequest& req, KvServer& server,
                          const std::function<Status(const KvRequest&)>& on_control, const std::string& codec,
                          const std::string& reducer);

// Key i of `req` must be in `layout`, be served by `my_rank`, and (for the dense codec, `codec` empty) carry
// exactly the slice's length in floats.
Status CheckRequestKey(const KeyLayout& layout, const KvRequest& req, size_t i, int my_rank, const std::string& codec);

}  // namespace geomx::comm
