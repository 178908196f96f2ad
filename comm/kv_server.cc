#include "comm/kv_server.h"

#include <set>
#include <string>
#include <utility>

#include "comm/postoffice.h"
#include "engine/base/logging.h"

namespace geomx::comm {
namespace {

// Framing rules every request must follow before a handler sees it (see kv_server.h).
Status CheckFraming(const Meta& meta, const std::vector<Bytes>& data) {
  if (meta.command == Command::kControl) return Status::Ok();
  if (meta.keys.size() != meta.lens.size()) {
    return Status::InvalidArgument(std::to_string(meta.keys.size()) + " keys but " +
                                   std::to_string(meta.lens.size()) + " lens");
  }
  std::set<uint64_t> seen;
  for (uint64_t k : meta.keys) {
    if (!seen.insert(k).second) return Status::InvalidArgument("wire key " + std::to_string(k) + " repeated");
  }
  if (meta.command == Command::kPull) {
    // A pull of a non-dense codec may select what it wants (row-sparse: the row ids), one frame per key.
    if (data.empty() || (!meta.codec.empty() && data.size() == meta.keys.size())) return Status::Ok();
    return Status::InvalidArgument("a pull carries " + std::to_string(data.size()) + " frames");
  }
  if (data.size() != meta.keys.size()) {
    return Status::InvalidArgument(std::to_string(meta.keys.size()) + " keys but " + std::to_string(data.size()) +
                                   " data frames");
  }
  if (meta.codec.empty()) {
    for (size_t i = 0; i < data.size(); ++i) {
      if (data[i].size() != uint64_t{meta.lens[i]} * sizeof(float)) {
        return Status::InvalidArgument("wire key " + std::to_string(meta.keys[i]) + ": lens says " +
                                       std::to_string(meta.lens[i]) + " floats, the frame has " +
                                       std::to_string(data[i].size()) + " bytes");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

KvServer::KvServer(Postoffice* po, int app_id, ServerHandler* handler) : po_(po), app_id_(app_id), handler_(handler) {
  po_->RegisterCustomer(app_id_, [this](Message&& msg) { OnMessage(std::move(msg)); });
}

KvServer::~KvServer() { po_->UnregisterCustomer(app_id_); }

void KvServer::OnMessage(Message&& msg) {
  const Meta& meta = msg.meta;
  const bool known = meta.command == Command::kPush || meta.command == Command::kPull ||
                     meta.command == Command::kPushPull || meta.command == Command::kControl;
  if (!meta.request || !known) {
    GEOMX_LOG(kWarning) << "kv server (app " << app_id_ << "): dropped " << (meta.request ? "request " : "response ")
                        << CommandName(meta.command) << " from " << po_->Describe(meta.sender);
    return;
  }
  KvRequest req{std::move(msg.meta), std::move(msg.data)};
  Status framing = CheckFraming(req.meta, req.data);
  if (!framing.ok()) {
    GEOMX_LOG(kWarning) << "kv server (app " << app_id_ << "): refused " << CommandName(req.meta.command)
                        << " from " << po_->Describe(req.meta.sender) << ": " << framing.message();
    Respond(req, {}, framing.WithContext(po_->Describe(po_->my_id()) + " refused " +
                                         CommandName(req.meta.command) + " (ts=" +
                                         std::to_string(req.meta.timestamp) + ")"));
    return;
  }
  handler_->Handle(req, *this);
}

void KvServer::RespondControl(const KvRequest& req, const Status& status, std::string body) {
  Message m;
  m.meta.command = Command::kControl;
  m.meta.app_id = req.meta.app_id;
  m.meta.timestamp = req.meta.timestamp;
  m.meta.round = req.meta.round;
  m.meta.request = false;
  if (!status.ok()) {
    m.meta.status_code = static_cast<int32_t>(status.code());
    m.meta.body = status.message();
  } else {
    m.meta.body = std::move(body);
  }
  Status s = po_->Send(req.meta.sender, std::move(m));
  if (!s.ok()) {
    GEOMX_LOG(kWarning) << "kv server (app " << app_id_ << "): could not answer control of "
                        << po_->Describe(req.meta.sender) << ": " << s.ToString();
  }
}

void KvServer::Respond(const KvRequest& req, std::vector<Bytes> data, const Status& status) {
  Message m;
  m.meta.command = req.meta.command;
  m.meta.app_id = req.meta.app_id;
  m.meta.timestamp = req.meta.timestamp;
  m.meta.round = req.meta.round;
  m.meta.request = false;
  m.meta.codec = req.meta.codec;
  if (!status.ok()) {
    m.meta.status_code = static_cast<int32_t>(status.code());
    m.meta.body = status.message();
  } else if (!data.empty()) {
    m.meta.body = req.reply_body;
    GEOMX_CHECK_EQ(data.size(), req.meta.keys.size()) << "KvServer::Respond: one frame per key";
    m.meta.keys = req.meta.keys;
    m.meta.lens.reserve(data.size());
    for (const Bytes& d : data) {
      m.meta.lens.push_back(static_cast<uint32_t>(req.meta.codec.empty() ? d.size() / sizeof(float) : d.size()));
    }
    m.data = std::move(data);
  }
  Status s = po_->Send(req.meta.sender, std::move(m));
  if (!s.ok()) {
    GEOMX_LOG(kWarning) << "kv server (app " << app_id_ << "): could not answer " << po_->Describe(req.meta.sender)
                        << " (ts=" << req.meta.timestamp << "): " << s.ToString();
  }
}

}  // namespace geomx::comm
