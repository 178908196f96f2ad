// Security through the geomx binary (docs/security.md): `geomx keys generate`, a one-host topology run with
// CurveZMQ on (the launcher makes RUN/keys), and roles started by hand with a key directory, as on several hosts.
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cli/free_ports.h"
#include "tests/testutil.h"

namespace geomx::testing {
namespace {
namespace fs = std::filesystem;

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string JsonField(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size() + 4;
  return json.substr(begin, json.find_first_of(",}", begin) - begin);
}

// 2 data centres (2 + 1 workers), one global server: 10 processes, 10 members.
std::string Recipe(const std::string& topology_extra = "") {
  return "name: sec\nseed: 3\nmodel: {name: mlp, hidden: [16]}\n"
         "data: {name: synthetic, batch_size: 32, synthetic_train: 384, synthetic_test: 128,\n"
         "       synthetic_classes: 3, synthetic_shape: [8]}\n"
         "optimizer: {name: adam, lr: 0.01}\ntraining: {epochs: 2}\ntopology:\n" +
         topology_extra +
         "  datacentres:\n"
         "    - {name: dc-a, workers: 2}\n"
         "    - {name: dc-b, workers: 1}\n";
}

// `geomx train` of Recipe() into dir/run with encryption on and `flags`; its summary.json, once the run completed
// (a test failure otherwise).
std::string TrainEncrypted(const ScratchDir& dir, const std::string& flags) {
  WriteFile(dir / "t.yaml", Recipe());
  auto run = RunGeomx("train t.yaml --out run --set security.encryption=on " + flags, dir.path());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const std::string s = ReadFile(dir / "run" / "summary.json");
  EXPECT_EQ(JsonField(s, "status"), "\"completed\"") << s << "\n" << run.output;
  return s;
}

const std::vector<std::string> kMembers = {"central/global-scheduler", "central/global-server0",
                                           "central/master-worker",    "dc-a/scheduler",
                                           "dc-a/server0",             "dc-a/worker0",
                                           "dc-a/worker1",             "dc-b/scheduler",
                                           "dc-b/server0",             "dc-b/worker0"};

TEST(SecurityCliTest, KeysGenerateWritesEveryMembersPairOnce) {
  ScratchDir dir;
  WriteFile(dir / "geo.yaml", Recipe());
  auto r = RunGeomx("keys generate keys --recipe geo.yaml", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r.output, "wrote 10 key pairs")) << r.output;
  for (const std::string& m : kMembers) {
    const std::string pub = ReadFile(dir / "keys" / (m + ".pub"));
    EXPECT_EQ(pub.size(), 41u) << m << ": 40 Z85 characters and a newline";
    struct stat st{};
    ASSERT_EQ(stat((dir / "keys" / (m + ".secret")).c_str(), &st), 0) << m;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << m << ": the secret key is the owner's only";
  }
  const std::string before = ReadFile(dir / "keys" / "dc-a" / "worker1.pub");
  auto again = RunGeomx("keys generate keys --recipe geo.yaml", dir.path());
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_TRUE(Has(again.output, "--force")) << again.output;
  EXPECT_EQ(ReadFile(dir / "keys" / "dc-a" / "worker1.pub"), before) << "nothing overwritten without --force";
  auto one = RunGeomx("keys generate keys --name dc-a/worker1 --force", dir.path());
  EXPECT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(ReadFile(dir / "keys" / "dc-a" / "worker1.pub"), before);

  auto nothing = RunGeomx("keys generate k2", dir.path());
  EXPECT_EQ(nothing.exit_code, 2) << nothing.output;
  EXPECT_TRUE(Has(nothing.output, "--recipe")) << nothing.output;
  auto bad = RunGeomx("keys generate k3 --name ../etc", dir.path());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_FALSE(fs::exists(dir / "k3" / ".." / "etc.pub"));
  EXPECT_EQ(RunGeomx("keys", dir.path()).exit_code, 2);
}

// Security on for a one-host run: the launcher writes RUN/keys, every link is CURVE, and the run trains to the same
// result as without encryption (same seed, same data, same synchronous rounds).
TEST(SecurityCliTest, OneHostRunWithEncryptionOnTrainsLikeWithout) {
  ScratchDir dir;
  WriteFile(dir / "t.yaml", Recipe());
  auto plan = RunGeomx("train t.yaml --dry-run --set security.encryption=on --out planned", dir.path());
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_TRUE(Has(plan.output, "security: on (CurveZMQ")) << plan.output;
  EXPECT_TRUE(Has(plan.output, "security.keys=planned/keys")) << plan.output;
  auto plain_plan = RunGeomx("train t.yaml --dry-run", dir.path());
  EXPECT_TRUE(Has(plain_plan.output, "security: off (security.encryption: auto, every host is loopback)"))
      << plain_plan.output;

  auto secure = RunGeomx("train t.yaml --out secure --set security.encryption=on", dir.path());
  ASSERT_EQ(secure.exit_code, 0) << secure.output;
  auto plain = RunGeomx("train t.yaml --out plain", dir.path());
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  for (const std::string& m : kMembers) EXPECT_TRUE(fs::exists(dir / "secure" / "keys" / (m + ".secret"))) << m;
  EXPECT_FALSE(fs::exists(dir / "plain" / "keys"));
  const std::string s = ReadFile(dir / "secure" / "summary.json");
  const std::string p = ReadFile(dir / "plain" / "summary.json");
  EXPECT_EQ(JsonField(s, "status"), "\"completed\"") << s;
  EXPECT_EQ(JsonField(s, "iterations"), JsonField(p, "iterations"));
  EXPECT_NEAR(std::stod(JsonField(s, "final_test_accuracy")), std::stod(JsonField(p, "final_test_accuracy")), 0.02)
      << s << "\n" << p;
  // CURVE adds its own framing: the same messages take more bytes on the wire.
  EXPECT_GT(std::stod(JsonField(s, "wan_bytes")), 0.0);
}

// DGT's low-priority blocks travel as UDP datagrams sealed with the members' keys (comm/datagram_socket.h): the
// processes of an encrypted one-host run send them and the run completes with the blocks counted per channel.
TEST(SecurityCliTest, DgtDatagramsTravelSealedOverUdp) {
  ScratchDir dir;
  const std::string s = TrainEncrypted(dir, "--set accelerators.dgt.enabled=true --set accelerators.dgt.block_bytes=16 "
                                            "--set accelerators.dgt.k=0.3");
  EXPECT_GT(std::stod(JsonField(s, "dgt_blocks_0")), 0.0) << s;
  EXPECT_GT(std::stod(JsonField(s, "dgt_blocks_1")), 0.0) << s;  // datagrams were sent
  EXPECT_GT(std::stod(JsonField(s, "final_test_accuracy")), 0.5) << s;  // 3 classes: it learned
}

// tcp-priority-4bit: each channel is a CURVE connection of its own (the same member's key, admitted by the ZAP
// handler like the main one) carrying 4-bit blocks; the encrypted run completes and learns.
TEST(SecurityCliTest, DgtPriorityChannelsAreEncryptedConnectionsOfTheirOwn) {
  ScratchDir dir;
  const std::string s = TrainEncrypted(dir, "--set accelerators.dgt.enabled=true --set accelerators.dgt.block_bytes=16 "
                                            "--set accelerators.dgt.k=0.3 --set accelerators.dgt.deadline=1s "
                                            "--set accelerators.dgt.mode=tcp-priority-4bit");
  EXPECT_GT(std::stod(JsonField(s, "dgt_blocks_1")), 0.0) << s;
  // Every channel block was at the global server when its round closed: the channel connections work (had they
  // not, every block would be counted here, each round after a 1 s wait).
  EXPECT_EQ(std::stod(JsonField(s, "dgt_lost_1")), 0.0) << s;
  EXPECT_GT(std::stod(JsonField(s, "final_test_accuracy")), 0.5) << s;
}

// TSEngine on both tiers with encryption: the workers of dc-a send each other values over CURVE connections of
// their own (worker to worker, the members' keys), as the local servers do between data centres; the run completes
// and learns, and overlays.jsonl holds each round's overlay from the global server and from both local servers.
TEST(SecurityCliTest, TsEngineRelaysBetweenWorkersOverEncryptedConnections) {
  ScratchDir dir;
  const std::string s = TrainEncrypted(dir, "--set accelerators.tsengine.enabled=true --set accelerators.tsengine."
                                            "tier=both --set accelerators.tsengine.max_greedy=0.5");
  EXPECT_GT(std::stod(JsonField(s, "final_test_accuracy")), 0.5) << s;  // 3 classes: it learned
  const int rounds = std::stoi(JsonField(s, "iterations"));
  std::map<std::string, int> lines;
  int dc_a_worker_to_worker = 0;
  std::istringstream overlays(ReadFile(dir / "run" / "overlays.jsonl"));
  for (std::string line; std::getline(overlays, line);) {
    for (const char* server : {"central/global-server0", "dc-a/server0", "dc-b/server0"}) {
      lines[server] += Has(line, std::string("\"server\":\"") + server + "\"");
    }
    dc_a_worker_to_worker += Has(line, "{\"from\":\"dc-a/worker0\",\"to\":\"dc-a/worker1\"") ||
                             Has(line, "{\"from\":\"dc-a/worker1\",\"to\":\"dc-a/worker0\"");
  }
  for (const auto& [server, n] : lines) EXPECT_EQ(n, rounds) << server;
  // max_greedy 0.5: the workers probe each other's links in about half of the rounds, over their own connections.
  EXPECT_GT(dc_a_worker_to_worker, 0);
}

// As docs/security.md tells multi-host users: generate the keys once, start every role with security.keys.
TEST(SecurityCliTest, RolesStartedByHandWithAKeyDirectoryTrainToTheEnd) {
  ScratchDir dir;
  Result<std::vector<int>> ports = cli::PickFreePorts("127.0.0.1", 3);
  ASSERT_TRUE(ports.ok()) << ports.status().ToString();
  const std::vector<int>& p = *ports;
  WriteFile(dir / "geo.yaml", Recipe("  central: {scheduler_port: " + std::to_string(p[0]) + "}\n") +
                                  "  timeouts: {rendezvous: 60s}\nsecurity: {encryption: on, keys: keys}\n");
  // dc-a's and dc-b's scheduler ports.
  const std::string ports_flags = " --set topology.datacentres[0].scheduler_port=" + std::to_string(p[1]) +
                                  " --set topology.datacentres[1].scheduler_port=" + std::to_string(p[2]);
  // Without keys a role refuses to start, naming what is missing.
  auto no_dir = RunGeomx("serve --role global-scheduler geo.yaml --out run/c" + ports_flags, dir.path());
  EXPECT_EQ(no_dir.exit_code, 2) << no_dir.output;
  EXPECT_TRUE(Has(no_dir.output, "keys")) << no_dir.output;
  auto unset = RunGeomx("serve --role global-scheduler geo.yaml --set security.keys= --out run/c" + ports_flags,
                        dir.path());
  EXPECT_EQ(unset.exit_code, 2) << unset.output;
  EXPECT_TRUE(Has(unset.output, "security.keys")) << unset.output;

  ASSERT_EQ(RunGeomx("keys generate keys --recipe geo.yaml", dir.path()).exit_code, 0);
  fs::remove(dir / "keys" / "dc-b" / "worker0.secret");
  auto no_secret = RunGeomx("train geo.yaml --party dc-b --rank 0 --out run/b" + ports_flags, dir.path());
  EXPECT_EQ(no_secret.exit_code, 2) << no_secret.output;
  EXPECT_TRUE(Has(no_secret.output, "worker0.secret")) << no_secret.output;
  ASSERT_EQ(RunGeomx("keys generate keys --name dc-b/worker0 --force", dir.path()).exit_code, 0);

  const std::vector<std::string> commands = {
      "serve --role global-scheduler geo.yaml --out run/central",
      "serve --role global-server geo.yaml --rank 0 --out run/central",
      "serve --role master-worker geo.yaml --out run/central",
      "serve --role scheduler geo.yaml --party dc-a --out run/dc-a",
      "serve --role server geo.yaml --party dc-a --rank 0 --out run/dc-a",
      "train geo.yaml --party dc-a --rank 0 --out run/dc-a",
      "train geo.yaml --party dc-a --rank 1 --out run/dc-a",
      "serve --role scheduler geo.yaml --party dc-b --out run/dc-b",
      "serve --role server geo.yaml --party dc-b --rank 0 --out run/dc-b",
      "train geo.yaml --party dc-b --rank 0 --out run/dc-b",
  };
  std::vector<CommandResult> results(commands.size());
  std::vector<std::thread> processes;
  for (size_t i = 0; i < commands.size(); ++i) {
    processes.emplace_back([&, i] { results[i] = RunGeomx(commands[i] + ports_flags, dir.path()); });
  }
  for (std::thread& t : processes) t.join();
  for (size_t i = 0; i < commands.size(); ++i) {
    EXPECT_EQ(results[i].exit_code, 0) << commands[i] << "\n" << results[i].output;
  }
  const std::string summary = ReadFile(dir / "run" / "dc-a" / "summary.json");
  EXPECT_EQ(JsonField(summary, "status"), "\"completed\"") << summary;
}

}  // namespace
}  // namespace geomx::testing
