#include "comm/handlers/pending_request.h"

#include <utility>

namespace geomx::comm {

std::shared_ptr<PendingRequest> NewPending(const KvRequest& req, KvServer& server) {
  auto p = std::make_shared<PendingRequest>();
  p->req = req;
  p->server = &server;
  p->values.resize(req.meta.keys.size());
  p->remaining = req.meta.keys.size();
  p->wants_values = req.meta.command != Command::kPush;
  return p;
}

void Resolve(const KeyWaiter& w, const Status& status, const Bytes& value, ReadyList* ready) {
  PendingRequest& p = *w.pending;
  if (!status.ok()) {
    if (p.error.ok()) p.error = status;
  } else {
    p.values[w.index] = value;
  }
  if (--p.remaining == 0) ready->push_back(w.pending);
}

void RespondAll(const ReadyList& ready) {
  for (const auto& p : ready) {
    if (!p->error.ok()) {
      p->server->Respond(p->req, {}, p->error);
    } else if (p->wants_values) {
      p->server->Respond(p->req, std::move(p->values));
    } else {
      p->server->Respond(p->req, {});
    }
  }
}

}  // namespace geomx::comm
