// The container deployments run commands the binary takes (docs/deployment.md, "Containers"): every geomx command
// line of docker/compose.geo2x2.yaml and of the Kubernetes base (deploy/k8s/base, the manifests its
// kustomization.yaml lists) is run against the built geomx with --dry-run, its in-container paths mapped to the
// source tree and a scratch folder through the service's or container's own mounts. Each must exit 0 and print
// the process its service or container is named after; together they must be exactly the processes that
// `geomx train RECIPE --dry-run` plans for the recipe's topology (11 for GEO-2x2); the processes of one party
// must share one network namespace whose address is the host every process gives that party. No Docker needed.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "tests/testutil.h"

namespace geomx::testing {
namespace {
namespace fs = std::filesystem;

// One geomx process of a deployment file.
struct Process {
  std::string where;                // "docker/compose.geo2x2.yaml: service dc-a-worker0"
  std::string name;                 // the process its service or container is named after: "dc-a/worker0"
  std::string netns;                // what owns its network namespace: a compose service, a Kubernetes Job's pod
  std::vector<std::string> argv;    // as written, after compose interpolation; paths still in-container
  std::vector<std::string> raw;     // compose: as written, before interpolation
  std::map<std::string, fs::path> mounts;  // in-container path (a folder or a file) -> local path
};

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Compose's interpolation with no variable set: ${NAME:-default} and ${NAME-default} give the default, ${NAME}
// and $NAME nothing, $$ a literal $. `defaults` collects NAME -> default.
std::string Interpolate(const std::string& in, std::map<std::string, std::string>* defaults) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '$') {
      out += in[i];
      continue;
    }
    if (i + 1 < in.size() && in[i + 1] == '$') {
      out += '$';
      ++i;
    } else if (i + 1 < in.size() && in[i + 1] == '{') {
      const size_t close = in.find('}', i);
      if (close == std::string::npos) {
        ADD_FAILURE() << "unterminated ${ in: " << in;
        return out;
      }
      const std::string body = in.substr(i + 2, close - i - 2);
      const size_t dash = body.find('-');
      const std::string var = body.substr(0, dash == std::string::npos ? body.size() : dash);
      const std::string value = dash == std::string::npos ? "" : body.substr(dash + 1);
      // ${NAME:-default} leaves `var` ending with ':'
      const std::string name = !var.empty() && var.back() == ':' ? var.substr(0, var.size() - 1) : var;
      EXPECT_TRUE(std::regex_match(name, std::regex("[A-Z_][A-Z0-9_]*"))) << "bad variable in: " << in;
      if (defaults != nullptr) (*defaults)[name] = value;
      out += value;
      i = close;
    } else {
      size_t j = i + 1;
      while (j < in.size() && (std::isalnum(static_cast<unsigned char>(in[j])) || in[j] == '_')) ++j;
      i = j - 1;  // $NAME: unset, nothing
    }
  }
  return out;
}

std::vector<std::string> Strings(const YAML::Node& seq, std::map<std::string, std::string>* defaults = nullptr) {
  std::vector<std::string> out;
  if (!seq.IsSequence()) return out;
  for (const YAML::Node& n : seq) out.push_back(defaults ? Interpolate(n.as<std::string>(), defaults) : n.Scalar());
  return out;
}

// The value of every `--set key=value`, the last one winning, and the flags in order.
std::map<std::string, std::string> SetFlags(const std::vector<std::string>& argv, std::vector<std::string>* all) {
  std::map<std::string, std::string> sets;
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] != "--set") continue;
    const std::string& kv = argv[i + 1];
    const size_t eq = kv.find('=');
    EXPECT_NE(eq, std::string::npos) << "--set " << kv;
    if (eq == std::string::npos) continue;
    sets[kv.substr(0, eq)] = kv.substr(eq + 1);
    if (all != nullptr) all->push_back(kv);
  }
  return sets;
}

// A scalar of `root` at a recipe key path such as "topology.links.wan.bandwidth" or "topology.datacentres[1].host";
// empty when absent.
std::string ScalarAt(const YAML::Node& root, const std::string& path) {
  YAML::Node node;
  node.reset(root);  // rebinds (operator= would assign through to the recipe's node)
  std::istringstream in(path);
  for (std::string part; std::getline(in, part, '.');) {
    const size_t bracket = part.find('[');
    const std::string key = part.substr(0, bracket);
    const YAML::Node& at = node;  // const: a lookup must not insert the key
    if (!at.IsMap() || !at[key]) return "";
    node.reset(at[key]);
    if (bracket != std::string::npos) {
      const size_t index = std::stoul(part.substr(bracket + 1));
      const YAML::Node& seq = node;
      if (!seq.IsSequence() || index >= seq.size()) return "";
      node.reset(seq[index]);
    }
  }
  return node.IsScalar() ? node.Scalar() : "";
}

// party name -> its host as the --set flags give it ("" when no flag sets it).
std::map<std::string, std::string> PartyHosts(const std::map<std::string, std::string>& sets,
                                              const YAML::Node& recipe) {
  std::map<std::string, std::string> hosts;
  auto flag = [&](const std::string& key) { return sets.count(key) ? sets.at(key) : std::string(); };
  hosts["central"] = flag("topology.central.host");
  const YAML::Node dcs = recipe["topology"]["datacentres"];
  for (size_t i = 0; i < dcs.size(); ++i) {
    hosts[dcs[i]["name"].as<std::string>()] = flag("topology.datacentres[" + std::to_string(i) + "].host");
  }
  return hosts;
}

// `arg` with an in-container path prefix replaced by its local path (the longest matching mount).
std::string MapPath(const std::string& arg, const std::map<std::string, fs::path>& mounts) {
  std::string best;
  for (const auto& [inside, local] : mounts) {
    const bool match = arg == inside || arg.rfind(inside + "/", 0) == 0;
    if (match && inside.size() > best.size()) best = inside;
  }
  if (best.empty()) return arg;
  return (mounts.at(best).string() + arg.substr(best.size()));
}

// The processes `geomx train RECIPE --dry-run` plans: lines "  central/global-scheduler  (global-scheduler, ...".
std::set<std::string> PlannedProcesses(const fs::path& recipe) {
  CommandResult r = RunGeomx("train " + Quote(recipe.string()) + " --dry-run", SourceDir());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::set<std::string> names;
  std::istringstream in(r.output);
  const std::regex line("  ([a-z0-9-]+/[a-z0-9-]+)  \\(.*");
  std::smatch m;
  for (std::string l; std::getline(in, l);) {
    if (std::regex_match(l, m, line)) names.insert(m[1]);
  }
  return names;
}

// Runs one process with --dry-run: exit 0, the named process, and schedulers with fixed ports.
void ExpectResolves(const Process& p) {
  std::string args;
  for (const std::string& a : p.argv) args += Quote(MapPath(a, p.mounts)) + " ";
  CommandResult r = RunGeomx(args + "--dry-run", SourceDir());
  EXPECT_EQ(r.exit_code, 0) << p.where << ": geomx " << args << "--dry-run\n" << r.output;
  EXPECT_EQ(r.output.rfind(p.name + ": ", 0), 0u) << p.where << " is named " << p.name << "; geomx says:\n" << r.output;
  EXPECT_EQ(r.output.find("<picked at start>"), std::string::npos)
      << p.where << ": every scheduler needs a fixed port across containers\n" << r.output;
}

// Checks what all deployments share: the processes are exactly the topology's, one network namespace per party,
// and the parties' hosts: `host_of(p, party)` is the host p must give `party` (for p's own party, the address of
// its namespace).
template <typename HostOf>
void ExpectDeployment(const std::vector<Process>& procs, const fs::path& recipe_local, HostOf host_of) {
  const YAML::Node recipe = YAML::LoadFile(recipe_local.string());
  std::multiset<std::string> names;
  std::map<std::string, std::set<std::string>> netns_of_party;
  for (const Process& p : procs) {
    names.insert(p.name);
    const std::string party = p.name.substr(0, p.name.find('/'));
    netns_of_party[party].insert(p.netns);
    const std::map<std::string, std::string> hosts = PartyHosts(SetFlags(p.argv, nullptr), recipe);
    for (const auto& [other, host] : hosts) {
      EXPECT_EQ(host, host_of(p, other)) << p.where << ": the host of party " << other;
    }
  }
  const std::set<std::string> planned = PlannedProcesses(recipe_local);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), planned);
  EXPECT_EQ(names.size(), planned.size()) << "a process is started twice";
  std::set<std::string> all_netns;
  for (const auto& [party, owners] : netns_of_party) {
    EXPECT_EQ(owners.size(), 1u) << "the processes of " << party << " are in several network namespaces";
    all_netns.insert(owners.begin(), owners.end());
  }
  EXPECT_EQ(all_netns.size(), netns_of_party.size()) << "two parties share a network namespace";
}

// ---- Docker Compose ----

struct ComposeFile {
  std::vector<Process> procs;
  std::map<std::string, std::string> address;   // namespace-owning service -> its fixed address on its network
  std::map<std::string, std::string> hostname;  // namespace-owning service -> its host name
  std::map<std::string, std::string> defaults;  // variable -> default
};

ComposeFile LoadCompose(const fs::path& file, const fs::path& scratch) {
  ComposeFile c;
  const YAML::Node services = YAML::LoadFile(file.string())["services"];
  EXPECT_TRUE(services.IsMap()) << file;
  for (const auto& kv : services) {
    const std::string svc = kv.first.as<std::string>();
    const YAML::Node s = kv.second;
    EXPECT_EQ(Interpolate(s["restart"].as<std::string>("<none>"), nullptr), "no") << svc << ": restart policy";
    if (!s["network_mode"] && s["networks"]) {
      for (const auto& net : s["networks"]) {
        if (net.second["ipv4_address"]) c.address[svc] = net.second["ipv4_address"].as<std::string>();
      }
      c.hostname[svc] = s["hostname"].as<std::string>("");
    }
    if (s["entrypoint"] || !s["command"] || s["command"][0].as<std::string>() == "keys") continue;  // helpers
    Process p;
    p.where = file.filename().string() + ": service " + svc;
    EXPECT_EQ(Interpolate(s["image"].as<std::string>(""), &c.defaults), "geomx:cpu") << p.where;
    p.argv = Strings(s["command"], &c.defaults);
    p.raw = Strings(s["command"]);
    const std::string mode = s["network_mode"].as<std::string>("");
    EXPECT_EQ(mode.rfind("service:", 0), 0u) << p.where << ": joins no party's namespace";
    p.netns = mode.substr(std::min(mode.size(), std::string("service:").size()));
    for (const std::string& v : Strings(s["volumes"])) {
      std::vector<std::string> parts;
      std::istringstream in(v);
      for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
      if (parts.size() < 2) continue;
      const bool bind = parts[0].rfind(".", 0) == 0 || parts[0].rfind("/", 0) == 0;
      p.mounts[parts[1]] = bind ? fs::weakly_canonical(file.parent_path() / parts[0]) : scratch / parts[0];
    }
    p.name = svc;  // completed below, once the owners' host names are known
    c.procs.push_back(p);
  }
  for (Process& p : c.procs) {
    const std::string party = c.hostname.count(p.netns) ? c.hostname[p.netns] : "?";
    EXPECT_EQ(p.name.rfind(party + "-", 0), 0u) << p.where << ": service names are <party>-<process>";
    p.name = party + "/" + p.name.substr(std::min(p.name.size(), party.size() + 1));
  }
  return c;
}

TEST(DeployCommandsTest, EveryComposeServiceIsAProcessOfTheTopology) {
  ScratchDir scratch;
  const fs::path file = SourceDir() / "docker" / "compose.geo2x2.yaml";
  ComposeFile c = LoadCompose(file, scratch.path());
  ASSERT_EQ(c.procs.size(), 11u);  // GEO-2x2: 3 central processes, 4 in each data centre
  fs::path recipe;
  std::vector<std::string> first_sets;
  for (const Process& p : c.procs) {
    ExpectResolves(p);
    recipe = MapPath(p.argv.at(p.argv[0] == "serve" ? 3 : 1), p.mounts);
    std::vector<std::string> sets;
    SetFlags(p.argv, &sets);
    if (first_sets.empty()) first_sets = sets;
    EXPECT_EQ(sets, first_sets) << p.where << ": every process gets the same --set flags";
    EXPECT_TRUE(c.address.count(p.netns)) << p.where << ": " << p.netns << " has no fixed address";
  }
  EXPECT_EQ(recipe, fs::weakly_canonical(SourceDir() / "recipes" / "geo2x2.yaml"));
  // The party's host is the address of the namespace its processes share; the owner is named as the party.
  std::map<std::string, std::string> address_of_party;
  for (const auto& [svc, host] : c.hostname) {
    EXPECT_EQ(svc, host) << "the service holding " << host << "'s namespace is named after it";
    address_of_party[host] = c.address[svc];
  }
  ExpectDeployment(c.procs, recipe, [&](const Process&, const std::string& party) {
    return address_of_party.count(party) ? address_of_party[party] : "<no namespace for " + party + ">";
  });
  // A variable that overrides a key the recipe sets defaults to the recipe's own value: by default the job is
  // the recipe as written.
  const YAML::Node r = YAML::LoadFile(recipe.string());
  std::vector<std::string> raw_sets;
  SetFlags(c.procs.front().raw, &raw_sets);
  int overriding = 0;
  for (const std::string& kv : raw_sets) {
    if (kv.find("${") == std::string::npos) continue;
    const std::string key = kv.substr(0, kv.find('='));
    const std::string in_recipe = ScalarAt(r, key);
    if (in_recipe.empty()) continue;
    const std::string value = Interpolate(kv.substr(kv.find('=') + 1), nullptr);
    EXPECT_EQ(value, in_recipe) << "--set " << kv << " defaults to " << value << "; the recipe says " << in_recipe;
    ++overriding;
  }
  EXPECT_EQ(overriding, 2);  // topology.links.wan.bandwidth and .latency
  for (const char* var : {"GEOMX_IMAGE", "GEOMX_WAN_BANDWIDTH", "GEOMX_WAN_LATENCY", "GEOMX_MAX_ITERATIONS",
                          "GEOMX_THREADS", "GEOMX_RUN"}) {
    EXPECT_TRUE(c.defaults.count(var)) << var;
    const std::string header = ReadFile(file).substr(0, ReadFile(file).find("\nservices:"));
    EXPECT_NE(header.find(std::string(var)), std::string::npos) << var << " is documented in the header";
  }
}

TEST(DeployCommandsTest, ComposeHelpersAndTheImageAgree) {
  const std::string dockerfile = ReadFile(SourceDir() / "docker" / "Dockerfile.cpu");
  // Services without an entrypoint run the image's: geomx, as a non-root user, from /opt/geomx.
  EXPECT_NE(dockerfile.find("ENTRYPOINT [\"geomx\"]"), std::string::npos);
  EXPECT_NE(dockerfile.find("USER geomx"), std::string::npos);
  EXPECT_NE(dockerfile.find("WORKDIR /opt/geomx"), std::string::npos);
  const YAML::Node services = YAML::LoadFile((SourceDir() / "docker" / "compose.geo2x2.yaml").string())["services"];
  // The evaluating worker opens a prepared run folder: it waits for runs-init, which prepares the same folder.
  std::map<std::string, std::string> defaults;
  const std::vector<std::string> worker = Strings(services["dc-a-worker0"]["command"], &defaults);
  const auto out = std::find(worker.begin(), worker.end(), "--out");
  ASSERT_NE(out, worker.end());
  const std::string init = Interpolate(services["runs-init"]["command"][0].as<std::string>(), nullptr);
  EXPECT_NE(init.find("dir=\"" + *(out + 1) + "\""), std::string::npos) << init;
  EXPECT_EQ(services["dc-a-worker0"]["depends_on"]["runs-init"]["condition"].as<std::string>(""),
            "service_completed_successfully");
  // WAN shaping is opt-in: only in the netem profile, one per party namespace, with NET_ADMIN.
  int shapers = 0;
  for (const auto& kv : services) {
    const YAML::Node s = kv.second;
    if (!s["cap_add"]) continue;
    EXPECT_EQ(s["profiles"][0].as<std::string>(""), "netem") << kv.first;
    EXPECT_EQ(s["cap_add"][0].as<std::string>(), "NET_ADMIN");
    EXPECT_EQ(Strings(s["entrypoint"]).at(0), "tc") << kv.first;
    ++shapers;
  }
  EXPECT_EQ(shapers, 3);
}

TEST(DeployCommandsTest, ComposeInterpolationAsComposeDoesIt) {
  std::map<std::string, std::string> d;
  EXPECT_EQ(Interpolate("a=${X:-50mbit}", &d), "a=50mbit");
  EXPECT_EQ(Interpolate("${Y-0}/${Z}/$W/$$x", &d), "0///$x");
  EXPECT_EQ(d["X"], "50mbit");
  EXPECT_EQ(d["Y"], "0");
  EXPECT_EQ(d["Z"], "");
  EXPECT_EQ(MapPath("/etc/geomx/r.yaml", {{"/etc/geomx", "/src/k"}, {"/etc", "/x"}}), "/src/k/r.yaml");
  EXPECT_EQ(MapPath("/etc/geomxy", {{"/etc/geomx", "/src/k"}}), "/etc/geomxy");
}

// ---- Kubernetes ----

TEST(DeployCommandsTest, EveryKubernetesContainerIsAProcessOfTheTopology) {
  ScratchDir scratch;
  const fs::path base = SourceDir() / "deploy" / "k8s" / "base";
  const YAML::Node kustomization = YAML::LoadFile((base / "kustomization.yaml").string());
  // configMapGenerator: ConfigMap name -> key -> local file.
  std::map<std::string, std::map<std::string, fs::path>> config_maps;
  for (const YAML::Node& g : kustomization["configMapGenerator"]) {
    for (const std::string& f : Strings(g["files"])) config_maps[g["name"].as<std::string>()][f] = base / f;
  }
  std::vector<Process> procs;
  std::map<std::string, std::string> party_of_service;  // headless Service -> the party its selector picks
  std::vector<std::pair<std::string, YAML::Node>> selectors;
  std::map<std::string, YAML::Node> pod_labels;  // Job -> its pod's labels
  std::map<std::string, std::string> pod_party;  // Job -> geomx.io/party
  std::map<std::string, std::vector<std::string>> sets_of_job;
  for (const std::string& resource : Strings(kustomization["resources"])) {
    for (const YAML::Node& doc : YAML::LoadAllFromFile((base / resource).string())) {
      const std::string kind = doc["kind"].as<std::string>("");
      const std::string name = doc["metadata"]["name"].as<std::string>("");
      if (kind == "Service") {
        EXPECT_EQ(doc["spec"]["clusterIP"].as<std::string>(""), "None") << name << " is headless";
        selectors.emplace_back(name, doc["spec"]["selector"]);
        continue;
      }
      if (kind != "Job") continue;
      EXPECT_EQ(doc["spec"]["backoffLimit"].as<int>(-1), 0) << name;
      const YAML::Node pod = doc["spec"]["template"];
      EXPECT_EQ(pod["spec"]["restartPolicy"].as<std::string>(""), "Never") << name;
      pod_labels[name] = pod["metadata"]["labels"];
      pod_party[name] = pod["metadata"]["labels"]["geomx.io/party"].as<std::string>("");
      std::map<std::string, YAML::Node> volumes;
      for (const YAML::Node& v : pod["spec"]["volumes"]) volumes[v["name"].as<std::string>()] = v;
      for (const YAML::Node& c : pod["spec"]["containers"]) {
        Process p;
        p.where = resource + ": container " + c["name"].as<std::string>();
        p.name = pod_party[name] + "/" + c["name"].as<std::string>();
        p.netns = name;
        EXPECT_FALSE(c["command"]) << p.where << ": runs the image's entrypoint, geomx";
        EXPECT_EQ(c["image"].as<std::string>(""), "geomx:cpu") << p.where;
        p.argv = Strings(c["args"]);
        for (const YAML::Node& m : c["volumeMounts"]) {
          const YAML::Node v = volumes[m["name"].as<std::string>()];
          const std::string at = m["mountPath"].as<std::string>();
          if (v["configMap"]) {
            for (const auto& [key, local] : config_maps[v["configMap"]["name"].as<std::string>()]) {
              p.mounts[at + "/" + key] = local;
            }
          } else {
            p.mounts[at] = scratch.path() / name / m["name"].as<std::string>();
          }
        }
        // $(VAR) references: each defined in the container's env; POD_IP is the pod's address.
        std::map<std::string, std::string> env;
        for (const YAML::Node& e : c["env"]) {
          env[e["name"].as<std::string>()] = e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>("");
        }
        Process resolvable = p;  // with a stand-in pod IP for $(POD_IP)
        const std::string pod_ip = "10.244." + std::to_string(pod_party.size()) + ".7";
        for (std::string& a : resolvable.argv) {
          for (size_t at; (at = a.find("$(")) != std::string::npos;) {
            const size_t close = a.find(')', at);
            ASSERT_NE(close, std::string::npos) << p.where << ": " << a;
            const std::string var = a.substr(at + 2, close - at - 2);
            EXPECT_EQ(env[var], "status.podIP") << p.where << ": $(" << var << ") is the pod's IP";
            a.replace(at, close - at + 1, pod_ip);
          }
        }
        ExpectResolves(resolvable);
        std::vector<std::string> sets;
        SetFlags(p.argv, &sets);
        if (!sets_of_job.count(name)) sets_of_job[name] = sets;
        EXPECT_EQ(sets, sets_of_job[name]) << p.where << ": the processes of a pod get the same --set flags";
        procs.push_back(p);
      }
    }
  }
  ASSERT_EQ(procs.size(), 11u);
  // A Service names a party when its selector picks exactly that party's pod.
  for (const auto& [service, selector] : selectors) {
    for (const auto& [job, labels] : pod_labels) {
      bool all = true;
      for (const auto& kv : selector) all = all && labels[kv.first.as<std::string>()].as<std::string>("") ==
                                                             kv.second.as<std::string>();
      if (all) {
        EXPECT_FALSE(party_of_service.count(service)) << service << " selects several pods";
        party_of_service[service] = pod_party[job];
      }
    }
    EXPECT_EQ(party_of_service[service], service) << "the Service of a party is named after it";
  }
  const fs::path recipe = base / "geo2x2.yaml";
  EXPECT_EQ(ReadFile(recipe), ReadFile(SourceDir() / "recipes" / "geo2x2.yaml"))
      << "deploy/k8s/base/geo2x2.yaml must be a copy of recipes/geo2x2.yaml";
  // Hosts, as written: a party's own processes bind the pod's IP; the others reach it by its Service's name.
  ExpectDeployment(procs, recipe, [&](const Process& p, const std::string& party) -> std::string {
    if (p.name.rfind(party + "/", 0) == 0) return "$(POD_IP)";
    for (const auto& [service, picked] : party_of_service) {
      if (picked == party) return service;
    }
    return "<no Service for " + party + ">";
  });
}

}  // namespace
}  // namespace geomx::testing
