#include "comm/curve.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <zmq.h>

#include "comm/zmq_van.h"
#include "tests/testutil.h"

namespace geomx::comm {
namespace {

namespace fs = std::filesystem;
using geomx::testing::ReadFile;
using geomx::testing::ScratchDir;
using geomx::testing::WriteFile;

std::string Trimmed(const std::string& s) { return s.substr(0, s.find_last_not_of("\r\n") + 1); }

unsigned Mode(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 0777;
}

// ---- key files ----

TEST(CurveKeysTest, MemberOfStripsTheNodeSuffix) {
  EXPECT_EQ(MemberOf("dc-a/server0@global"), "dc-a/server0");
  EXPECT_EQ(MemberOf("dc-a/worker1@state-server"), "dc-a/worker1");
  EXPECT_EQ(MemberOf("central/master-worker"), "central/master-worker");
}

TEST(CurveKeysTest, MemberNames) {
  for (const char* good : {"central/global-scheduler", "dc-a/worker1", "dc_b.2/server0", "A/b-c.d_e"}) {
    EXPECT_TRUE(CheckMemberName(good).ok()) << good;
  }
  for (const char* bad : {"", "dc-a", "dc-a/", "/worker0", "dc-a/../x", "../x", "../x/y", ".hidden/x", "dc-a/.x",
                          "dc a/x", "a/b/c", "dc-a/worker0@global", "dc-a/w..0", "dc-a/w*"}) {
    Status s = CheckMemberName(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    std::string quoted = "'";
    quoted.append(bad).append("'");
    EXPECT_NE(s.message().find(quoted), std::string::npos) << s.message();
  }
  ScratchDir dir;
  EXPECT_EQ(GenerateKeys(dir.path().string(), {"dc-a/worker0", "dc-a/../../etc"}, false).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(fs::is_empty(dir.path()));  // nothing written for a list with a bad name
  EXPECT_EQ(LoadIdentity(dir.path().string(), "../x/y").status().code(), StatusCode::kInvalidArgument);
}

TEST(CurveKeysTest, GenerateLoadRoundTrip) {
  ScratchDir scratch;
  const std::string dir = (scratch / "keys").string();
  ASSERT_TRUE(GenerateKeys(dir, {"central/global-scheduler", "dc-a/worker1", "dc-a/worker1"}, false).ok());
  const fs::path pub = fs::path(dir) / "dc-a" / "worker1.pub";
  const fs::path secret = fs::path(dir) / "dc-a" / "worker1.secret";
  const std::string pub_text = ReadFile(pub);
  ASSERT_EQ(pub_text.size(), 41u);
  EXPECT_EQ(pub_text.back(), '\n');
  EXPECT_EQ(ReadFile(secret).size(), 41u);
  EXPECT_EQ(Mode(secret), 0600u);
  EXPECT_EQ(Mode(fs::path(dir) / "dc-a"), 0700u);
  EXPECT_EQ(Mode(fs::path(dir) / "central"), 0700u);
  EXPECT_FALSE(fs::exists(pub.string() + ".tmp"));

  Result<CurveIdentity> id = LoadIdentity(dir, "dc-a/worker1");
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->member, "dc-a/worker1");
  EXPECT_EQ(id->public_key, Trimmed(pub_text));
  EXPECT_EQ(id->secret_key, Trimmed(ReadFile(secret)));
  EXPECT_EQ(id->key_dir, dir);
  char derived[41];  // libzmq's own derivation of the public key from the secret one
  ASSERT_EQ(zmq_curve_public(derived, id->secret_key.c_str()), 0);
  EXPECT_EQ(id->public_key, derived);

  Result<std::map<std::string, std::string>> keys = LoadPublicKeys(dir);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ(keys->at("dc-a/worker1"), id->public_key);
  EXPECT_EQ(keys->at("central/global-scheduler"),
            Trimmed(ReadFile(fs::path(dir) / "central" / "global-scheduler.pub")));
  EXPECT_NE(keys->at("central/global-scheduler"), keys->at("dc-a/worker1"));
}

TEST(CurveKeysTest, ExistingKeysAreReplacedOnlyWithForce) {
  ScratchDir scratch;
  const std::string dir = scratch.path().string();
  ASSERT_TRUE(GenerateKeys(dir, {"dc-a/worker1"}, false).ok());
  const fs::path pub = scratch / "dc-a" / "worker1.pub";
  const std::string before = ReadFile(pub);
  Status again = GenerateKeys(dir, {"dc-a/worker0", "dc-a/worker1"}, false);
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(again.message().find("worker1."), std::string::npos) << again.message();
  EXPECT_NE(again.message().find("--force"), std::string::npos) << again.message();
  EXPECT_FALSE(fs::exists(scratch / "dc-a" / "worker0.pub"));  // refused before writing anything
  EXPECT_EQ(ReadFile(pub), before);
  ASSERT_TRUE(GenerateKeys(dir, {"dc-a/worker0", "dc-a/worker1"}, true).ok());
  EXPECT_NE(ReadFile(pub), before);
  EXPECT_TRUE(LoadIdentity(dir, "dc-a/worker1").ok());
  EXPECT_TRUE(LoadIdentity(dir, "dc-a/worker0").ok());
}

TEST(CurveKeysTest, MalformedAndMismatchedFilesAreRefusedNamingTheFile) {
  ScratchDir scratch;
  const std::string dir = scratch.path().string();
  ASSERT_TRUE(GenerateKeys(dir, {"dc-a/worker0", "dc-a/worker1"}, false).ok());
  const fs::path pub1 = scratch / "dc-a" / "worker1.pub";
  const std::string good = ReadFile(pub1);
  auto expect_refused = [&](const std::string& contents, StatusCode code) {
    WriteFile(pub1, contents);
    Result<CurveIdentity> id = LoadIdentity(dir, "dc-a/worker1");
    EXPECT_EQ(id.status().code(), code) << contents.substr(0, 60);
    EXPECT_NE(id.status().message().find(pub1.string()), std::string::npos) << id.status().message();
    Result<std::map<std::string, std::string>> keys = LoadPublicKeys(dir);
    EXPECT_FALSE(keys.ok());
    EXPECT_NE(keys.status().message().find(pub1.string()), std::string::npos) << keys.status().message();
  };
  expect_refused(good.substr(0, 39) + "\n", StatusCode::kDataLoss);         // one character short
  expect_refused(std::string("~").append(good.substr(1)), StatusCode::kDataLoss);  // not a Z85 character
  expect_refused("", StatusCode::kDataLoss);
  expect_refused(std::string(5000, 'a'), StatusCode::kDataLoss);           // larger than any key file
  expect_refused(std::string(40, '#') + "\n", StatusCode::kDataLoss);      // Z85 digits, but above 2^32 per group
  // The public key of another member: a pair that does not match.
  const std::string pub0 = ReadFile(scratch / "dc-a" / "worker0.pub");
  WriteFile(pub1, pub0);
  Result<CurveIdentity> mismatched = LoadIdentity(dir, "dc-a/worker1");
  EXPECT_EQ(mismatched.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mismatched.status().message().find("worker1.secret"), std::string::npos);
  EXPECT_NE(mismatched.status().message().find("worker1.pub"), std::string::npos);
  // ... and, for the directory, two members sharing one key.
  Result<std::map<std::string, std::string>> shared = LoadPublicKeys(dir);
  EXPECT_EQ(shared.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(shared.status().message().find("same public key"), std::string::npos) << shared.status().message();
  WriteFile(pub1, good);
  // A missing secret is a user error naming the file.
  fs::remove(scratch / "dc-a" / "worker1.secret");
  Result<CurveIdentity> missing = LoadIdentity(dir, "dc-a/worker1");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("worker1.secret"), std::string::npos);
  EXPECT_TRUE(missing.status().IsUserError());
  // A public key file whose name is no member name.
  WriteFile(scratch / "dc-a" / "bad name.pub", pub0);
  Result<std::map<std::string, std::string>> bad_name = LoadPublicKeys(dir);
  EXPECT_EQ(bad_name.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_name.status().message().find("bad name.pub"), std::string::npos);
}

TEST(CurveKeysTest, EmptyOrMissingDirectoryIsRefused) {
  ScratchDir scratch;
  EXPECT_EQ(LoadPublicKeys(scratch.path().string()).status().code(), StatusCode::kNotFound);
  fs::create_directories(scratch / "dc-a");
  WriteFile(scratch / "dc-a" / "README", "not a key");
  EXPECT_EQ(LoadPublicKeys(scratch.path().string()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(LoadPublicKeys((scratch / "nope").string()).status().code(), StatusCode::kNotFound);
}

// ---- CURVE on ZmqVan ----

// Accepts TCP connections and relays them to `target_port` on 127.0.0.1, recording every byte either way: what
// a wiretap between two hosts would see.
class RecordingRelay {
 public:
  explicit RecordingRelay(int target_port) : target_port_(target_port) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(listen_fd_, 16), 0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~RecordingRelay() {
    stop_ = true;
    thread_.join();
    for (int fd : fds_) close(fd);
    close(listen_fd_);
  }
  int port() const { return port_; }
  std::string recorded() {
    std::lock_guard<std::mutex> lock(mu_);
    return recorded_;
  }

 private:
  void Loop() {
    while (!stop_) {
      std::vector<pollfd> items = {{listen_fd_, POLLIN, 0}};
      for (int fd : fds_) items.push_back({fd, POLLIN, 0});
      if (poll(items.data(), items.size(), 20) <= 0) continue;
      if ((items[0].revents & POLLIN) != 0) Accept();
      for (size_t i = 1; i < items.size(); ++i) {
        if ((items[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        const int from = items[i].fd;
        const size_t k = static_cast<size_t>(std::find(fds_.begin(), fds_.end(), from) - fds_.begin());
        if (k >= fds_.size()) continue;  // closed earlier in this round
        const int to = fds_[k ^ 1];      // pairs: [2j] = accepted client side, [2j + 1] = server side
        char buf[65536];
        const ssize_t n = read(from, buf, sizeof(buf));
        if (n > 0) {  // recorded before it is passed on: once the receiver has it, the recording has it (CI race)
          std::lock_guard<std::mutex> lock(mu_);
          recorded_.append(buf, static_cast<size_t>(n));
        }
        if (n <= 0 || !WriteAll(to, buf, static_cast<size_t>(n))) {
          close(fds_[k & ~size_t{1}]);
          close(fds_[k | 1]);
          fds_.erase(fds_.begin() + static_cast<long>(k & ~size_t{1}), fds_.begin() + static_cast<long>((k | 1) + 1));
          continue;
        }
      }
    }
  }
  void Accept() {
    const int client = accept(listen_fd_, nullptr, nullptr);
    if (client < 0) return;
    const int server = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(target_port_));
    if (connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(client);
      close(server);
      return;
    }
    fds_.push_back(client);
    fds_.push_back(server);
  }
  static bool WriteAll(int fd, const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = write(fd, p, n);
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  const int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::vector<int> fds_;  // relay thread only
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string recorded_;  // GUARDED_BY(mu_)
  std::thread thread_;
};

int PortOf(const std::string& endpoint) { return std::stoi(endpoint.substr(endpoint.rfind(':') + 1)); }

Message MakeMessage(int64_t ts, std::vector<Bytes> data) {
  Message m;
  m.meta.command = Command::kPush;
  m.meta.sender = 2;
  m.meta.recipient = 1;
  m.meta.timestamp = ts;
  for (size_t i = 0; i < data.size(); ++i) {
    m.meta.keys.push_back(100 + i);
    m.meta.lens.push_back(static_cast<uint32_t>(data[i].size()));
  }
  m.data = std::move(data);
  return m;
}

// 1024 floats 3.14159f followed by 64 distinctive floats: a gradient someone could recognise on the wire.
std::vector<float> SecretPattern() {
  std::vector<float> v(1024, 3.14159f);
  for (int i = 0; i < 64; ++i) v.push_back(1000.0f + 0.5f * static_cast<float>(i * i));
  return v;
}

class CurveVanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (scratch_ / "keys").string();
    ASSERT_TRUE(GenerateKeys(dir_, {"dc-a/server0", "dc-a/worker0", "dc-a/worker1"}, false).ok());
    // A stranger: a valid key pair, but not in the job's key directory.
    ASSERT_TRUE(GenerateKeys((scratch_ / "other").string(), {"dc-x/stranger"}, false).ok());
    Result<std::map<std::string, std::string>> keys = LoadPublicKeys(dir_);
    ASSERT_TRUE(keys.ok()) << keys.status().ToString();
    peer_keys_ = std::make_shared<const std::map<std::string, std::string>>(*keys);
    std::map<std::string, std::string> admitted;
    for (const auto& [member, key] : *keys) admitted[key] = member;
    ASSERT_TRUE(context_.EnableCurve(admitted).ok());
  }

  ZmqVanOptions Secure(const std::string& member, const std::string& dir = "") {
    Result<CurveIdentity> id = LoadIdentity(dir.empty() ? dir_ : dir, member);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    ZmqVanOptions o;
    if (id.ok()) o.curve = *id;
    o.peer_keys = peer_keys_;
    return o;
  }
  // A bound server van; its endpoint in *endpoint.
  std::unique_ptr<ZmqVan> Server(ZmqVanOptions o, std::string* endpoint) {
    auto van = std::make_unique<ZmqVan>(&context_, std::move(o));
    Result<std::string> bound = van->Bind("tcp://127.0.0.1:0");
    EXPECT_TRUE(bound.ok()) << bound.status().ToString();
    if (bound.ok()) *endpoint = *bound;
    return van;
  }

  ScratchDir scratch_;
  std::string dir_;
  std::shared_ptr<const std::map<std::string, std::string>> peer_keys_;
  ZmqContext context_;  // destroyed after the vans of each test (they are locals)
};

TEST_F(CurveVanTest, AdmittedClientDelivers) {
  std::string endpoint;
  auto server = Server(Secure("dc-a/server0"), &endpoint);
  ZmqVan client(&context_, Secure("dc-a/worker1"));
  ASSERT_TRUE(client.Connect(1, endpoint, LinkClass::kLan, "dc-a/server0@global").ok());
  ASSERT_TRUE(client.Send(1, MakeMessage(7, {Bytes::Copy("hello")})).ok());
  Message got;
  Status s = server->Recv(&got, 10000);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(got.meta.timestamp, 7);
  ASSERT_EQ(got.data.size(), 1u);
  EXPECT_EQ(got.data[0].view(), "hello");
  EXPECT_EQ(got.peer, "dc-a/worker1");  // from the key it proved to hold, not from anything it wrote
  EXPECT_EQ(context_.refused_handshakes(), 0u);
}

TEST_F(CurveVanTest, MisconfiguredCurveVansFailClearly) {
  ZmqVan client(&context_, Secure("dc-a/worker1"));
  Status no_key = client.Connect(1, "tcp://127.0.0.1:1", LinkClass::kLan, "dc-b/worker9@global");
  EXPECT_EQ(no_key.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(no_key.message().find("'dc-b/worker9'"), std::string::npos) << no_key.message();
  EXPECT_NE(no_key.message().find(dir_), std::string::npos) << no_key.message();
  EXPECT_EQ(client.Connect(1, "tcp://127.0.0.1:1", LinkClass::kLan, "").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(client.Bind("inproc://curve").status().code(), StatusCode::kInvalidArgument);
  ZmqContext no_zap;  // CURVE without a ZAP handler would admit every key
  ZmqVan server(&no_zap, Secure("dc-a/server0"));
  EXPECT_EQ(server.Bind("tcp://127.0.0.1:0").status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(CurveVanTest, StrangerKeyIsRefused) {
  std::string endpoint;
  auto server = Server(Secure("dc-a/server0"), &endpoint);
  ZmqVan stranger(&context_, Secure("dc-x/stranger", (scratch_ / "other").string()));
  ASSERT_TRUE(stranger.Connect(1, endpoint, LinkClass::kLan, "dc-a/server0").ok());
  ASSERT_TRUE(stranger.Send(1, MakeMessage(1, {Bytes::Copy("let me in")})).ok());
  for (int i = 0; i < 2000 && context_.refused_handshakes() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(context_.refused_handshakes(), 0u);
  Message got;
  EXPECT_EQ(server->Recv(&got, 500).code(), StatusCode::kDeadlineExceeded);
  // The server still serves the members of the job.
  ZmqVan client(&context_, Secure("dc-a/worker0"));
  ASSERT_TRUE(client.Connect(1, endpoint, LinkClass::kLan, "dc-a/server0").ok());
  ASSERT_TRUE(client.Send(1, MakeMessage(2, {Bytes::Copy("member")})).ok());
  ASSERT_TRUE(server->Recv(&got, 10000).ok());
  EXPECT_EQ(got.meta.timestamp, 2);
  EXPECT_EQ(got.peer, "dc-a/worker0");
}

// With CURVE a datagram is sealed with the sender's secret key and the receiver's public key: it opens only for
// the member the receiver connected under that node id. Another member (a listed key) claiming that node id, or a
// stranger, gets nothing through; the real member still does.
TEST_F(CurveVanTest, DatagramsAreSealedAndOpenOnlyForTheListedSender) {
  auto with_datagrams = [](ZmqVanOptions o) {
    o.datagrams = true;
    return o;
  };
  std::string endpoint;
  auto server = Server(with_datagrams(Secure("dc-a/server0")), &endpoint);
  auto bound = [&](ZmqVan& van) {
    Result<std::string> at = van.Bind("tcp://127.0.0.1:0");
    EXPECT_TRUE(at.ok()) << at.status().ToString();
    return at.ok() ? *at : std::string();
  };
  ZmqVan client(&context_, with_datagrams(Secure("dc-a/worker1")));
  const std::string client_at = bound(client);
  ASSERT_TRUE(client.Connect(1, endpoint, LinkClass::kWan, "dc-a/server0@global").ok());
  ASSERT_TRUE(server->Connect(2, client_at, LinkClass::kWan, "dc-a/worker1@global").ok());
  const std::vector<float> secret = SecretPattern();
  Message m = MakeMessage(9, {Bytes::CopyVector(std::vector<float>(secret.begin(), secret.begin() + 300))});
  ASSERT_TRUE(client.SendDatagram(1, m).ok());
  Message got;
  ASSERT_TRUE(server->Recv(&got, 10000).ok());
  EXPECT_EQ(got.meta.timestamp, 9);
  EXPECT_EQ(got.peer, "dc-a/worker1");
  ASSERT_EQ(got.data.size(), 1u);
  EXPECT_EQ(got.data[0].view(), m.data[0].view());
  // worker0 holds a listed key but claims worker1's node id (2): its seal does not open with worker1's key.
  ZmqVan impostor(&context_, with_datagrams(Secure("dc-a/worker0")));
  bound(impostor);
  ASSERT_TRUE(impostor.Connect(1, endpoint, LinkClass::kWan, "dc-a/server0").ok());
  ASSERT_TRUE(impostor.SendDatagram(1, MakeMessage(10, {Bytes::Copy("forged")})).ok());
  ZmqVan stranger(&context_, with_datagrams(Secure("dc-x/stranger", (scratch_ / "other").string())));
  bound(stranger);
  ASSERT_TRUE(stranger.Connect(1, endpoint, LinkClass::kWan, "dc-a/server0").ok());
  ASSERT_TRUE(stranger.SendDatagram(1, MakeMessage(11, {Bytes::Copy("forged")})).ok());
  EXPECT_EQ(server->Recv(&got, 500).code(), StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(client.SendDatagram(1, MakeMessage(12, {Bytes::Copy("real")})).ok());
  ASSERT_TRUE(server->Recv(&got, 10000).ok());
  EXPECT_EQ(got.meta.timestamp, 12);
  EXPECT_EQ(got.peer, "dc-a/worker1");
}

TEST_F(CurveVanTest, PlainTextClientDeliversNothing) {
  std::string endpoint;
  auto server = Server(Secure("dc-a/server0"), &endpoint);
  ZmqVan plain(&context_);
  ASSERT_TRUE(plain.Connect(1, endpoint, LinkClass::kLan, "").ok());
  ASSERT_TRUE(plain.Send(1, MakeMessage(1, {Bytes::Copy("plain")})).ok());
  Message got;
  EXPECT_EQ(server->Recv(&got, 500).code(), StatusCode::kDeadlineExceeded);
}

// What a wiretap sees: the gradient in the clear without CURVE (the control), never with it.
TEST_F(CurveVanTest, WiretapSeesNoPayloadWithCurve) {
  const std::vector<float> pattern = SecretPattern();
  const std::string needle(reinterpret_cast<const char*>(pattern.data()), pattern.size() * sizeof(float));
  for (bool curve : {false, true}) {
    SCOPED_TRACE(curve ? "curve" : "plain");
    std::string endpoint;
    auto server = Server(curve ? Secure("dc-a/server0") : ZmqVanOptions{}, &endpoint);
    RecordingRelay relay(PortOf(endpoint));
    ZmqVan client(&context_, curve ? Secure("dc-a/worker1") : ZmqVanOptions{});
    ASSERT_TRUE(
        client.Connect(1, "tcp://127.0.0.1:" + std::to_string(relay.port()), LinkClass::kWan, "dc-a/server0")
            .ok());
    ASSERT_TRUE(client.Send(1, MakeMessage(3, {Bytes::CopyVector(pattern)})).ok());
    Message got;
    ASSERT_TRUE(server->Recv(&got, 10000).ok());  // it went through the relay
    ASSERT_EQ(got.data.size(), 1u);
    EXPECT_EQ(got.data[0].view(), needle);
    EXPECT_EQ(got.peer, curve ? "dc-a/worker1" : "");
    const std::string wire = relay.recorded();
    EXPECT_GT(wire.size(), needle.size());
    const bool seen = wire.find(needle) != std::string::npos;
    // A quarter of the pattern is enough to recognise it.
    const bool part_seen = wire.find(needle.substr(needle.size() - 256)) != std::string::npos;
    EXPECT_EQ(seen, !curve);
    EXPECT_EQ(part_seen, !curve);
  }
}

// A frame over max_frame_bytes is refused (the connection drops, the message is lost) and the van keeps
// receiving. With CURVE the limit still counts plain bytes: a frame of exactly the limit gets through.
TEST_F(CurveVanTest, FrameOverTheLimitIsRefusedAndTheVanKeepsWorking) {
  constexpr size_t kLimit = 64 * 1024;
  for (bool curve : {false, true}) {
    SCOPED_TRACE(curve ? "curve" : "plain");
    ZmqVanOptions server_options = curve ? Secure("dc-a/server0") : ZmqVanOptions{};
    server_options.max_frame_bytes = kLimit;
    std::string endpoint;
    auto server = Server(server_options, &endpoint);
    ZmqVan client(&context_, curve ? Secure("dc-a/worker1") : ZmqVanOptions{});
    ASSERT_TRUE(client.Connect(1, endpoint, LinkClass::kLan, "dc-a/server0").ok());
    Message got;
    // The limit is per frame: two frames of exactly the limit make a message twice as large, accepted.
    ASSERT_TRUE(client.Send(1, MakeMessage(1, {Bytes(kLimit), Bytes(kLimit)})).ok());
    ASSERT_TRUE(server->Recv(&got, 10000).ok());
    EXPECT_EQ(got.meta.timestamp, 1);
    EXPECT_EQ(got.data_bytes(), 2 * kLimit);

    ASSERT_TRUE(client.Send(1, MakeMessage(2, {Bytes(16), Bytes(kLimit + 1)})).ok());
    EXPECT_EQ(server->Recv(&got, 500).code(), StatusCode::kDeadlineExceeded);
    // ZeroMQ reconnects; a message sent now arrives (retried: it may be sent before the drop was noticed).
    bool delivered = false;
    for (int64_t ts = 10; ts < 30 && !delivered; ++ts) {
      ASSERT_TRUE(client.Send(1, MakeMessage(ts, {Bytes::Copy("after")})).ok());
      Status s = server->Recv(&got, 1000);
      if (s.ok()) {
        delivered = true;
        EXPECT_GE(got.meta.timestamp, 10);
        ASSERT_EQ(got.data.size(), 1u);
        EXPECT_EQ(got.data[0].view(), "after");
      }
    }
    EXPECT_TRUE(delivered);
  }
}

// A raw ZMTP 3.0 peer (NULL mechanism) announces a frame of 2^31 bytes: the default max_frame_bytes (1 GiB) makes
// libzmq drop the connection on reading the size, without trying to allocate it; the van keeps working.
TEST_F(CurveVanTest, HugeFrameClaimIsRefusedBeforeAllocation) {
  std::string endpoint;
  auto server = Server(ZmqVanOptions{}, &endpoint);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(PortOf(endpoint)));
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  std::string out(64, '\0');  // greeting: signature, version 3.0, mechanism NULL, as-server 0, filler
  out[0] = '\xff';
  out[9] = '\x7f';
  out[10] = 3;
  out.replace(12, 4, "NULL");
  std::string ready;  // READY command with Socket-Type PUSH
  ready.append("\x05READY").append("\x0bSocket-Type").append(std::string("\0\0\0\x04", 4)).append("PUSH");
  out.append(1, '\x04').append(1, static_cast<char>(ready.size())).append(ready);
  out.append(1, '\x02');  // a long message frame of 2^31 bytes (an allocation that would succeed)
  for (int shift = 56; shift >= 0; shift -= 8) out.append(1, static_cast<char>((uint64_t{1} << 31) >> shift));
  out.append(4096, 'z');
  ASSERT_EQ(write(fd, out.data(), out.size()), static_cast<ssize_t>(out.size()));
  bool closed = false;
  for (int i = 0; i < 100 && !closed; ++i) {
    pollfd item = {fd, POLLIN, 0};
    if (poll(&item, 1, 100) <= 0) continue;
    char buf[4096];
    closed = read(fd, buf, sizeof(buf)) <= 0;  // the server's greeting first, then end of stream
  }
  close(fd);
  EXPECT_TRUE(closed);
  Message got;
  EXPECT_EQ(server->Recv(&got, 200).code(), StatusCode::kDeadlineExceeded);
  ZmqVan client(&context_);
  ASSERT_TRUE(client.Connect(1, endpoint, LinkClass::kLan, "").ok());
  ASSERT_TRUE(client.Send(1, MakeMessage(5, {Bytes::Copy("still here")})).ok());
  ASSERT_TRUE(server->Recv(&got, 10000).ok());
  EXPECT_EQ(got.meta.timestamp, 5);
}

TEST_F(CurveVanTest, MessageWithTooManyFramesIsDropped) {
  ZmqVanOptions server_options = Secure("dc-a/server0");
  server_options.max_frames = 8;
  std::string endpoint;
  auto server = Server(server_options, &endpoint);
  ZmqVan client(&context_, Secure("dc-a/worker1"));
  ASSERT_TRUE(client.Connect(1, endpoint, LinkClass::kLan, "dc-a/server0").ok());
  ASSERT_TRUE(client.Send(1, MakeMessage(1, std::vector<Bytes>(9, Bytes::Copy("x")))).ok());
  ASSERT_TRUE(client.Send(1, MakeMessage(2, std::vector<Bytes>(8, Bytes::Copy("y")))).ok());
  Message got;
  Status dropped = server->Recv(&got, 10000);
  EXPECT_EQ(dropped.code(), StatusCode::kDataLoss);
  EXPECT_NE(dropped.message().find("9 data frames"), std::string::npos) << dropped.message();
  EXPECT_NE(dropped.message().find("at most 8"), std::string::npos) << dropped.message();
  ASSERT_TRUE(server->Recv(&got, 10000).ok());
  EXPECT_EQ(got.meta.timestamp, 2);
  ASSERT_EQ(got.data.size(), 8u);
  EXPECT_EQ(got.data[7].view(), "y");
}

}  // namespace
}  // namespace geomx::comm
