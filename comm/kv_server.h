// KvServer: the server side of the key-value protocol for one app id. It receives requests (kPush, kPull,
// kPushPull, kControl) through its Postoffice, checks their framing, and hands them to a ServerHandler that holds
// the policy (aggregate, update, forward). The handler answers with Respond(), at once or later (deferred, e.g.
// when the last worker of a round has pushed), from any thread.
//
// Framing checked before the handler sees a request (a violation is answered with kInvalidArgument, never a
// crash and never silence): keys.size() == lens.size(); for kPush/kPushPull one data frame per key; for codec ""
// (dense f32) frame i holds exactly lens[i] floats; for kPull no data frames, except that a pull of a non-dense
// codec may carry one frame per key selecting what it wants (row_sparse: the u64 row ids); no duplicate key. A request for
// another command is dropped (logged).
//
// Responses echo command, app_id, timestamp, round, codec and keys; data frames are one per key (values) or none
// (push acks and errors), with lens = floats per frame for codec "" and bytes per frame otherwise; an error sets
// Meta.status_code and puts the message in Meta.body.
//
// Ownership: borrows the Postoffice and the handler (both must outlive the KvServer). Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "comm/message.h"
#include "engine/base/bytes.h"
#include "engine/base/status.h"

namespace geomx::comm {

class Postoffice;
class KvServer;

struct KvRequest {
  Meta meta;
  std::vector<Bytes> data;
  // Never on the wire: a handler decorator's note to the requester (DGT: which blocks arrived), sent in Meta.body
  // of a successful answer. Handlers that keep a request to answer later keep it with the request.
  std::string reply_body;
};

// The policy of a server. Handle() runs on the Postoffice's receive thread and must not block on the network; it
// must eventually call server.Respond(req, ...) exactly once for every request (it may copy `req`).
class ServerHandler {
 public:
  virtual ~ServerHandler() = default;
  virtual void Handle(const KvRequest& req, KvServer& server) = 0;
};

class KvServer {
 public:
  // Registers as the customer `app_id` of `po`.
  KvServer(Postoffice* po, int app_id, ServerHandler* handler);
  ~KvServer();  // unregisters (must not run on the Postoffice's receive thread)

  KvServer(const KvServer&) = delete;
  KvServer& operator=(const KvServer&) = delete;

  // Answers `req`. `data`: one frame per request key (pull / pushpull values) or empty. A non-OK `status` sends
  // an error response (data ignored). Thread-safe; send failures are logged (the requester times out).
  void Respond(const KvRequest& req, std::vector<Bytes> data, const Status& status = Status::Ok());
  // Answers a kControl request: OK with `body` (read by KvWorker::QueryControl), or the error.
  void RespondControl(const KvRequest& req, const Status& status, std::string body = "");

  Postoffice* postoffice() const { return po_; }
  int app_id() const { return app_id_; }

 private:
  void OnMessage(Message&& msg);

  Postoffice* const po_;
  const int app_id_;
  ServerHandler* const handler_;
};

}  // namespace geomx::comm
