// Security of the container deployments (docs/deployment.md, docs/security.md): the Compose job writes its keys
// before any role starts and every role uses them; the Kubernetes Secrets that deploy/k8s/make-key-secrets.sh
// writes hold exactly what each party's Job maps, and the key directory a container then sees loads for its own
// process (pair checked) with every member's public key, and no other party's secret.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "comm/curve.h"
#include "tests/testutil.h"

namespace geomx::testing {
namespace {
namespace fs = std::filesystem;

std::string Base64Decode(const std::string& in) {
  static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const size_t v = kAlphabet.find(c);
    if (v == std::string::npos) continue;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

std::vector<std::string> Strings(const YAML::Node& seq) {
  std::vector<std::string> v;
  for (const auto& n : seq) v.push_back(n.as<std::string>());
  return v;
}

// The value of the last `--set KEY=...` in argv ("" when absent).
std::string SetValue(const std::vector<std::string>& argv, const std::string& key) {
  std::string value;
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--set" && argv[i + 1].rfind(key + "=", 0) == 0) value = argv[i + 1].substr(key.size() + 1);
  }
  return value;
}

TEST(DeploySecurityTest, ComposeWritesTheKeysBeforeEveryRoleAndEveryRoleUsesThem) {
  const YAML::Node compose = YAML::LoadFile((SourceDir() / "docker" / "compose.geo2x2.yaml").string());
  const YAML::Node keys = compose["services"]["keys"];
  ASSERT_TRUE(keys) << "a one-shot service writes the job's keys";
  const std::vector<std::string> generate = Strings(keys["command"]);
  ASSERT_GE(generate.size(), 5u);
  EXPECT_EQ(generate[0], "keys");
  EXPECT_EQ(generate[1], "generate");
  const std::string dir = generate[2];
  EXPECT_EQ(generate[3], "--recipe");
  int roles = 0;
  for (const auto& svc : compose["services"]) {
    const YAML::Node s = svc.second;
    if (!s["command"] || s["entrypoint"]) continue;
    const std::vector<std::string> argv = Strings(s["command"]);
    if (argv[0] != "serve" && argv[0] != "train") continue;
    ++roles;
    const std::string name = svc.first.as<std::string>();
    EXPECT_EQ(SetValue(argv, "security.keys"), dir) << name;
    EXPECT_EQ(argv[argv[0] == "serve" ? 3 : 1], generate[4]) << name << ": the keys are the recipe's members";
    ASSERT_TRUE(s["depends_on"] && s["depends_on"]["keys"]) << name << " must start after the keys exist";
    EXPECT_EQ(s["depends_on"]["keys"]["condition"].as<std::string>(), "service_completed_successfully") << name;
    // The key folder is on a volume the role mounts, as the keys service mounts it.
    EXPECT_EQ(Strings(s["volumes"]), Strings(keys["volumes"])) << name;
  }
  EXPECT_EQ(roles, 11);
}

TEST(DeploySecurityTest, KubernetesSecretsHoldWhatEachPartysJobMaps) {
  ScratchDir scratch;
  const fs::path out = scratch / "secrets";
  const CommandResult made =
      RunShell("cd '" + SourceDir().string() + "' && deploy/k8s/make-key-secrets.sh '" + out.string() +
               "' recipes/geo2x2.yaml '" + GEOMX_BINARY + "'");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  // Keys are never overwritten: a second run into the same folder is refused.
  EXPECT_EQ(RunShell("cd '" + SourceDir().string() + "' && deploy/k8s/make-key-secrets.sh '" + out.string() +
                     "' recipes/geo2x2.yaml '" + GEOMX_BINARY + "'")
                .exit_code,
            2);
  std::set<std::string> all_members;
  for (const char* party : {"central", "dc-a", "dc-b"}) {
    const YAML::Node secret = YAML::LoadFile((out / ("keys-" + std::string(party) + ".yaml")).string());
    EXPECT_EQ(secret["metadata"]["name"].as<std::string>(), "geomx-keys-" + std::string(party));
    std::map<std::string, std::string> data;
    for (const auto& kv : secret["data"]) data[kv.first.as<std::string>()] = Base64Decode(kv.second.as<std::string>());
    for (const auto& [key, value] : data) {
      if (key.size() > 7 && key.substr(key.size() - 7) == ".secret") {
        EXPECT_EQ(key.rfind(std::string(party) + ".", 0), 0u) << key << " is another party's secret";
      }
    }
    const YAML::Node job = YAML::LoadFile((SourceDir() / "deploy" / "k8s" / "base" /
                                           ("job-" + std::string(party) + ".yaml")).string());
    const YAML::Node spec = job["spec"]["template"]["spec"];
    // Materialise the secret volume as the kubelet would (items: key -> path).
    const fs::path mounted = scratch / ("mount-" + std::string(party));
    bool found_volume = false;
    for (const auto& v : spec["volumes"]) {
      if (v["name"].as<std::string>() != "keys") continue;
      found_volume = true;
      EXPECT_EQ(v["secret"]["secretName"].as<std::string>(), "geomx-keys-" + std::string(party));
      for (const auto& item : v["secret"]["items"]) {
        const std::string key = item["key"].as<std::string>();
        ASSERT_TRUE(data.count(key)) << party << ": the Job maps " << key << ", the Secret lacks it";
        fs::create_directories((mounted / item["path"].as<std::string>()).parent_path());
        WriteFile(mounted / item["path"].as<std::string>(), data[key]);
      }
    }
    ASSERT_TRUE(found_volume) << party;
    Result<std::map<std::string, std::string>> publics = comm::LoadPublicKeys(mounted.string());
    ASSERT_TRUE(publics.ok()) << publics.status().ToString();
    EXPECT_EQ(publics->size(), 11u) << party << " sees every member's public key";
    for (const auto& c : spec["containers"]) {
      const std::string member = std::string(party) + "/" + c["name"].as<std::string>();
      all_members.insert(member);
      const std::vector<std::string> argv = Strings(c["args"]);
      EXPECT_EQ(SetValue(argv, "security.keys"), "/etc/geomx-keys") << member;
      bool mounts_keys = false;
      for (const auto& m : c["volumeMounts"]) {
        mounts_keys |= m["name"].as<std::string>() == "keys" && m["mountPath"].as<std::string>() == "/etc/geomx-keys";
      }
      EXPECT_TRUE(mounts_keys) << member;
      Result<comm::CurveIdentity> id = comm::LoadIdentity(mounted.string(), member);
      EXPECT_TRUE(id.ok()) << member << ": " << id.status().ToString();
      if (id.ok()) {
        EXPECT_EQ(publics->at(member), id->public_key) << member;
      }
    }
  }
  EXPECT_EQ(all_members.size(), 11u);
}

}  // namespace
}  // namespace geomx::testing
