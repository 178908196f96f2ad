// The role flags (cli/role_command.h): `serve --role R [--party P] [--rank N]` and `train --party P --rank N`
// are checked against the recipe's topology before any role starts.
#include "cli/role_command.h"

#include <gtest/gtest.h>

#include <string>

namespace geomx::cli {
namespace {

Recipe TwoDcs() {
  Result<Recipe> r = ParseRecipe(R"(topology:
  central: {global_servers: 2, scheduler_port: 9000}
  datacentres:
    - {name: dc-a, workers: 2, servers: 1, host: 10.0.0.2, scheduler_port: 9100}
    - {name: dc-b, workers: 3, servers: 2}
)",
                                 "geo.yaml");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Recipe{};
}

RoleFlags Flags(const std::string& role, const std::string& party = "", int rank = 0) {
  RoleFlags f;
  f.role = role;
  f.party = party;
  f.rank = rank;
  f.out = "runs/x";
  return f;
}

std::string Error(const Recipe& recipe, const RoleFlags& flags) {
  Result<RoleSpec> r = ResolveRoleSpec(recipe, flags);
  EXPECT_FALSE(r.ok()) << flags.role << " " << flags.party << " " << flags.rank;
  return r.ok() ? "" : r.status().message();
}

TEST(RoleFlagsTest, ResolvesEveryRole) {
  Recipe r = TwoDcs();
  struct Case {
    RoleFlags flags;
    RoleSpec::Kind kind;
    std::string name;
  } cases[] = {
      {Flags("global-scheduler"), RoleSpec::Kind::kGlobalScheduler, "central/global-scheduler"},
      {Flags("global-server", "", 1), RoleSpec::Kind::kGlobalServer, "central/global-server1"},
      {Flags("global-server", "central", 0), RoleSpec::Kind::kGlobalServer, "central/global-server0"},
      {Flags("master-worker"), RoleSpec::Kind::kMasterWorker, "central/master-worker"},
      {Flags("scheduler", "dc-b"), RoleSpec::Kind::kScheduler, "dc-b/scheduler"},
      {Flags("server", "dc-b", 1), RoleSpec::Kind::kServer, "dc-b/server1"},
      {Flags("worker", "dc-a", 1), RoleSpec::Kind::kWorker, "dc-a/worker1"},
  };
  for (const Case& c : cases) {
    Result<RoleSpec> spec = ResolveRoleSpec(r, c.flags);
    ASSERT_TRUE(spec.ok()) << c.name << ": " << spec.status().ToString();
    EXPECT_EQ(spec->kind, c.kind);
    EXPECT_EQ(spec->rank, c.flags.rank);
    EXPECT_EQ(spec->out_dir, "runs/x");
    EXPECT_EQ(ProcessName(*spec), c.name);
  }
  EXPECT_EQ(DescribeRole(r, *ResolveRoleSpec(r, Flags("worker", "dc-a", 1))),
            "worker 1 of dc-a (2 workers); scheduler 10.0.0.2:9100");
  EXPECT_EQ(DescribeRole(r, *ResolveRoleSpec(r, Flags("global-scheduler"))),
            "global scheduler of 2 global servers and 2 data centres; listens on 127.0.0.1:9000");
  EXPECT_EQ(DescribeRole(r, *ResolveRoleSpec(r, Flags("scheduler", "dc-b"))),
            "scheduler of dc-b (2 servers, 3 workers); listens on 127.0.0.1:<picked at start>");
}

TEST(RoleFlagsTest, BadFlagsNameTheFlag) {
  Recipe r = TwoDcs();
  EXPECT_EQ(Error(r, Flags("sever", "dc-a")),
            "--role: unknown role 'sever' (did you mean 'server'?); roles: global-scheduler, global-server, scheduler, "
            "server, master-worker, state-server");
  EXPECT_EQ(Error(r, Flags("server", "dc-c")),
            "--party: unknown data centre 'dc-c' (did you mean 'dc-a'?); the recipe has: dc-a, dc-b");
  EXPECT_EQ(Error(r, Flags("server")),
            "--party: the server belongs to a data centre; name it with --party (dc-a, dc-b)");
  EXPECT_EQ(Error(r, Flags("worker", "central")),
            "--party: the worker belongs to a data centre; name it with --party (dc-a, dc-b)");
  EXPECT_EQ(Error(r, Flags("global-server", "dc-a")),
            "--party: the global-server runs in the central party; omit --party (or give --party central), got 'dc-a'");
  EXPECT_EQ(Error(r, Flags("worker", "dc-a", 2)), "--rank 2: dc-a has 2 workers (ranks 0..1)");
  EXPECT_EQ(Error(r, Flags("server", "dc-a", 1)), "--rank 1: dc-a has one server; its rank is 0");
  EXPECT_EQ(Error(r, Flags("global-server", "", 2)), "--rank 2: the topology has 2 global servers (ranks 0..1)");
  EXPECT_EQ(Error(r, Flags("global-scheduler", "", 1)), "--rank 1: there is one global-scheduler; its rank is 0");
  EXPECT_EQ(Error(r, Flags("scheduler", "dc-a", 1)), "--rank 1: dc-a has one scheduler; its rank is 0");
  EXPECT_EQ(Error(r, Flags("worker", "dc-a", -1)), "--rank must be >= 0, got -1");
  EXPECT_EQ(Error(r, Flags("state-server")),
            "--role state-server: the state server coordinates sync.mode esync; the recipe's sync.mode is 'fsa'");
}

TEST(RoleFlagsTest, ARecipeWithoutTopologyIsRefused) {
  Result<Recipe> plain = ParseRecipe("name: solo\n", "solo.yaml");
  ASSERT_TRUE(plain.ok());
  Result<RoleSpec> r = ResolveRoleSpec(*plain, Flags("server", "dc-a"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind("serve needs a recipe with a topology section", 0), 0u) << r.status().message();
  EXPECT_EQ(ResolveRoleSpec(*plain, Flags("worker", "dc-a")).status().message().rfind("train --party needs", 0), 0u);
}

}  // namespace
}  // namespace geomx::cli
