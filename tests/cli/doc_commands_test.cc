// The commands the documentation shows are commands the binary takes: every `geomx ...` line of README.md and the
// docs parses (`geomx --parse-only`, hidden), the recipes they name exist, the worked multi-host example of
// docs/deployment.md resolves role by role with --dry-run, `geomx --help` lists a form of every subcommand, and the
// Makefile's `make run` builds only the binary without flipping the warning flag of a CI build.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil.h"

namespace geomx::testing {
namespace {
namespace fs = std::filesystem;

struct DocCommand {
  std::string where;  // "README.md:42"
  std::string args;   // what follows `geomx`
};

// `geomx` command lines of a Markdown file: lines of fenced code blocks and of 4-space indented blocks whose first
// word is geomx, build/geomx or ./build/geomx (after an optional "$ "), with backslash continuations joined and a
// trailing "# comment" removed.
std::vector<DocCommand> CommandsOf(const fs::path& file, const std::string& name) {
  std::ifstream in(file);
  std::vector<DocCommand> out;
  std::string line, pending;
  int number = 0, pending_line = 0;
  bool fenced = false;
  while (std::getline(in, line)) {
    ++number;
    if (line.rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    const bool indented = line.rfind("    ", 0) == 0;
    if (!fenced && !indented && pending.empty()) continue;
    std::string text = line.substr(line.find_first_not_of(' ') == std::string::npos ? line.size()
                                                                                     : line.find_first_not_of(' '));
    if (pending.empty()) {
      if (text.rfind("$ ", 0) == 0) text.erase(0, 2);
      bool command = false;
      for (const char* prefix : {"geomx ", "build/geomx ", "./build/geomx "}) {
        if (text.rfind(prefix, 0) == 0) {
          text.erase(0, std::string(prefix).size());
          command = true;
          break;
        }
      }
      if (!command) continue;
      pending_line = number;
    }
    const size_t comment = text.find(" #");
    if (comment != std::string::npos) text.resize(comment);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    if (!text.empty() && text.back() == '\\') {
      text.pop_back();
      while (!text.empty() && text.back() == ' ') text.pop_back();
      pending += text + " ";
      continue;
    }
    pending += text;
    out.push_back({name + ":" + std::to_string(pending_line), pending});
    pending.clear();
  }
  return out;
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string t; in >> t;) w.push_back(t);
  return w;
}

TEST(DocCommandsTest, EveryCommandInTheReadmeAndTheDocsParses) {
  size_t checked = 0;
  for (const char* doc : {"README.md", "docs/cli.md", "docs/deployment.md", "docs/algorithms.md", "docs/benchmarks.md",
                          "docs/synchronization.md", "docs/accelerators.md", "docs/security.md", "recipes/README.md"}) {
    const fs::path file = SourceDir() / doc;
    ASSERT_TRUE(fs::exists(file)) << file;
    for (const DocCommand& c : CommandsOf(file, doc)) {
      CommandResult r = RunGeomx("--parse-only " + c.args, SourceDir());
      EXPECT_EQ(r.exit_code, 0) << c.where << ": geomx " << c.args << "\n" << r.output;
      EXPECT_NE(r.output.find("parsed: "), std::string::npos) << c.where << "\n" << r.output;
      for (const std::string& w : Words(c.args)) {
        if (w.rfind("recipes/", 0) == 0 && w.find('*') == std::string::npos) {
          EXPECT_TRUE(fs::exists(SourceDir() / w)) << c.where << ": " << w << " does not exist";
        }
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 20u);  // the README alone shows more than 20
}

TEST(DocCommandsTest, TheParserFindsCommandsAndCatchesABadOne) {
  ScratchDir dir;
  const fs::path md = dir.path() / "x.md";
  std::ofstream(md) << "text geomx train no\n```sh\nbuild/geomx train recipes/quickstart.yaml   # one\n"
                       "geomx bench kernels \\\n  --threads 1\nls\n```\n    $ geomx data list\n";
  const std::vector<DocCommand> c = CommandsOf(md, "x.md");
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].args, "train recipes/quickstart.yaml");
  EXPECT_EQ(c[0].where, "x.md:3");
  EXPECT_EQ(c[1].args, "bench kernels --threads 1");
  EXPECT_EQ(c[2].args, "data list");
  EXPECT_EQ(RunGeomx("--parse-only bench kernels --no-such-flag").exit_code, 2);
  EXPECT_EQ(RunGeomx("--parse-only frobnicate").exit_code, 2);
  CommandResult ok = RunGeomx("--parse-only data list");
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_NE(ok.output.find("parsed: data list"), std::string::npos) << ok.output;
}

// docs/deployment.md's three-host example, run as written (each process with --dry-run, from the folder holding
// the example's geo3.yaml): every role resolves.
TEST(DocCommandsTest, TheMultiHostExampleResolvesRoleByRole) {
  const std::string docs = ReadFile(SourceDir() / "docs" / "deployment.md");
  const size_t at = docs.find("```yaml\nname: geo3");
  ASSERT_NE(at, std::string::npos);
  const size_t stop = docs.find("```", at + 8);
  ScratchDir dir;
  std::ofstream(dir.path() / "geo3.yaml") << docs.substr(at + 8, stop - at - 8);
  int roles = 0;
  for (const DocCommand& c : CommandsOf(SourceDir() / "docs" / "deployment.md", "docs/deployment.md")) {
    if (c.args.find("geo3.yaml") == std::string::npos || c.args.find("--dry-run") != std::string::npos) continue;
    CommandResult r = RunGeomx(c.args + " --dry-run", dir.path());
    EXPECT_EQ(r.exit_code, 0) << c.where << ": geomx " << c.args << "\n" << r.output;
    ++roles;
  }
  EXPECT_EQ(roles, 11);  // 3 central processes, 4 in each data centre
}

std::vector<std::string> SubcommandsListed(const std::string& help) {
  std::vector<std::string> names;
  const size_t at = help.find("Subcommands:\n");
  if (at == std::string::npos) return names;
  std::istringstream in(help.substr(at + 13));
  for (std::string line; std::getline(in, line) && !line.empty();) {
    if (line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ') names.push_back(Words(line).front());
  }
  return names;
}

TEST(DocCommandsTest, HelpListsAFormOfEverySubcommand) {
  const CommandResult top = RunGeomx("--help");
  ASSERT_EQ(top.exit_code, 0);
  const size_t forms = top.output.find("Forms");
  ASSERT_NE(forms, std::string::npos) << top.output;
  const std::string form_text = top.output.substr(forms);
  const std::vector<std::string> subs = SubcommandsListed(top.output);
  EXPECT_GE(subs.size(), 9u) << top.output;
  for (const std::string& sub : subs) {
    const bool listed = form_text.find("geomx " + sub + " ") != std::string::npos ||
                        form_text.find("geomx " + sub + "\n") != std::string::npos;
    EXPECT_TRUE(listed) << sub << " has no form in `geomx --help`";
    const CommandResult inner = RunGeomx(sub + " --help");
    for (const std::string& subsub : SubcommandsListed(inner.output)) {
      const std::string form = "geomx " + sub + " " + subsub;
      EXPECT_NE(form_text.find(form), std::string::npos) << form << " has no form in `geomx --help`";
    }
  }
  EXPECT_NE(form_text.find("geomx bench RECIPE --configs"), std::string::npos);
}

// `make run` builds only the binary, and without CI it does not pass the warning flag, so that after
// `CI=true make test` the same build folder is reused as it is.
TEST(DocCommandsTest, MakeRunReusesTheTestBuild) {
  auto make = [](const std::string& args) {
    return RunShell("make -n -C '" + SourceDir().string() + "' " + args).output;
  };
  const std::string run = make("run BUILD=/nonexistent-build CI=");
  EXPECT_NE(run.find("--target geomx"), std::string::npos) << run;
  EXPECT_EQ(run.find("GEOMX_WERROR"), std::string::npos) << run;
  EXPECT_NE(run.find("geomx train recipes/quickstart_2dc.yaml"), std::string::npos) << run;
  const std::string ci_test = make("test BUILD=/nonexistent-build CI=true");
  EXPECT_NE(ci_test.find("-DGEOMX_WERROR=ON"), std::string::npos) << ci_test;
  EXPECT_NE(ci_test.find("ctest"), std::string::npos) << ci_test;
}

}  // namespace
}  // namespace geomx::testing
