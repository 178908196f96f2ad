// The geomx binary end to end, as a user runs it: exit codes, run folders, resume, eval, bad input, Ctrl-C.
// Every run happens in a scratch directory so nothing is left in the source tree.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/testutil.h"

namespace geomx::testing {
namespace {
namespace fs = std::filesystem;

std::string Field(const std::string& json, const std::string& key) {
  const auto pos = json.find("\"" + key + "\": ");
  if (pos == std::string::npos) return "";
  const auto start = pos + key.size() + 4;
  const auto end = json.find_first_of(",}", start);
  return json.substr(start, end - start);
}

size_t CountLines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(CliTest, HelpForEverySubcommandShowsAnExample) {
  for (const char* sub : {"train", "eval", "predict", "data", "data list", "data inspect", "algos", "version", "serve",
                          "bench", "bench kernels", "bench comm", "bench algos"}) {
    auto r = RunGeomx(std::string(sub) + " --help");
    EXPECT_EQ(r.exit_code, 0) << sub << "\n" << r.output;
    EXPECT_NE(r.output.find("Example"), std::string::npos) << sub << "\n" << r.output;
  }
  EXPECT_EQ(RunGeomx("--help").exit_code, 0);
}

TEST(CliTest, UnknownFlagsAndSubcommandsAreUserErrors) {
  EXPECT_EQ(RunGeomx("").exit_code, 2);
  EXPECT_EQ(RunGeomx("frobnicate").exit_code, 2);
  EXPECT_EQ(RunGeomx("train").exit_code, 2);  // missing recipe (and no --resume)
  EXPECT_EQ(RunGeomx("train x.yaml --no-such-flag").exit_code, 2);
}

TEST(CliTest, ServeAndBenchRefuseARecipeWithoutTopologyOrConfigs) {
  ScratchDir dir;
  WriteFile(dir / "r.yaml", kSmokeRecipe);
  auto serve = RunGeomx("serve --role server r.yaml", dir.path());
  EXPECT_EQ(serve.exit_code, 2) << serve.output;
  EXPECT_NE(serve.output.find("serve needs a recipe with a topology section"), std::string::npos) << serve.output;
  auto bench = RunGeomx("bench r.yaml", dir.path());
  EXPECT_EQ(bench.exit_code, 2);
}

TEST(CliTest, BenchCommPrintsTheTableAndWritesJson) {
  ScratchDir dir;
  auto r = RunGeomx("bench comm --sizes 4096 --iterations 20 --repeats 1 --json comm.json", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* column : {"raw MB/s", "poll MB/s", "KV MB/s", "vs raw", "poll us/rt"}) {
    EXPECT_NE(r.output.find(column), std::string::npos) << column << "\n" << r.output;
  }
  EXPECT_NE(r.output.find("4 KiB"), std::string::npos) << r.output;
  const std::string json = ReadFile(dir / "comm.json");
  EXPECT_EQ(Field(json, "bytes"), "4096") << json;
  EXPECT_EQ(Field(json, "iterations"), "20") << json;
  for (const char* field : {"ratio", "ratio_blocking", "raw_poll_mb_s", "raw_poll_us_per_roundtrip"}) {
    EXPECT_GT(std::stod(Field(json, field)), 0) << field << "\n" << json;
  }
  auto plain = RunGeomx("bench comm --sizes 4096 --iterations 20", dir.path());
  EXPECT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_NE(plain.output.find("KV MB/s"), std::string::npos) << plain.output;
  auto bad = RunGeomx("bench comm --sizes 4095", dir.path());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("multiple of 4"), std::string::npos) << bad.output;
}

TEST(CliTest, VersionAlgosAndDataList) {
  auto v = RunGeomx("version");
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("geomx "), std::string::npos);
  auto a = RunGeomx("algos --all");
  EXPECT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find("geomx-cnn"), std::string::npos);
  EXPECT_NE(a.output.find("kmeans"), std::string::npos);
  EXPECT_NE(a.output.find("model: {name: rnn}"), std::string::npos) << a.output;
  auto d = RunGeomx("data list");
  EXPECT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("fashion-mnist"), std::string::npos);
}

TEST(CliTest, DataInspectDescribesAFileAndRejectsBadOnes) {
  ScratchDir dir;
  WriteFile(dir / "t.libsvm", "1 qid:1 1:0.5 3:1\n0 qid:1 2:0.25\n2 qid:2 1:1 2:1 3:1\n");
  auto ok = RunGeomx("data inspect t.libsvm", dir.path());
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("libsvm"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("3"), std::string::npos) << ok.output;
  EXPECT_EQ(RunGeomx("data inspect missing.bin", dir.path()).exit_code, 2);
  std::string garbage(4096, '\0');
  garbage[0] = '\x1f';
  garbage[1] = '\x8b';  // a gzip header followed by nothing valid
  WriteFile(dir / "bad.gz", garbage);
  auto bad = RunGeomx("data inspect bad.gz", dir.path());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("bad.gz"), std::string::npos) << bad.output;
}

TEST(CliTest, TrainWritesRunFolderAndEvalAgrees) {
  ScratchDir dir;
  WriteFile(dir / "r.yaml", kSmokeRecipe);
  auto r = RunGeomx("train r.yaml --out run1", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path run = dir / "run1";
  const std::string summary = ReadFile(run / "summary.json");
  EXPECT_EQ(Field(summary, "status"), "\"completed\"");
  EXPECT_EQ(Field(summary, "iterations"), "32");
  EXPECT_EQ(Field(summary, "epochs"), "2");
  EXPECT_EQ(Field(summary, "time_to_target_seconds"), "null");
  for (const char* k : {"wall_seconds", "final_test_accuracy", "best_test_accuracy", "samples_per_second",
                        "peak_rss_bytes", "wan_bytes", "lan_bytes"}) {
    EXPECT_FALSE(Field(summary, k).empty()) << k << " missing in " << summary;
  }
  EXPECT_EQ(CountLines(ReadFile(run / "metrics.jsonl")), 2u);
  EXPECT_EQ(CountLines(ReadFile(run / "metrics.csv")), 3u);  // header + 2 rows
  EXPECT_TRUE(fs::exists(run / "recipe.yaml"));
  EXPECT_TRUE(fs::exists(run / "checkpoints" / "LAST"));

  // The resolved recipe is itself a valid recipe.
  auto again = RunGeomx("train run1/recipe.yaml --dry-run", dir.path());
  EXPECT_EQ(again.exit_code, 0) << again.output;

  auto ev = RunGeomx("eval run1 r.yaml --json", dir.path());
  ASSERT_EQ(ev.exit_code, 0) << ev.output;
  EXPECT_EQ(std::stod(Field(ev.output, "test_accuracy")), std::stod(Field(summary, "final_test_accuracy")));
}

// training.eval_async from a recipe: the metrics rows of `geomx train` hold the same test figures as with the
// evaluations in line (the copy has the weights of its iteration), row for row.
TEST(CliTest, AsynchronousEvaluationsWriteTheSameRows) {
  ScratchDir dir;
  WriteFile(dir / "r.yaml", kSmokeRecipe);
  const std::string common = "train r.yaml --set training.eval_every=3 --set training.eval_limit=40 --out ";
  auto in_line = RunGeomx(common + "in_line", dir.path());
  ASSERT_EQ(in_line.exit_code, 0) << in_line.output;
  auto async = RunGeomx(common + "async --set training.eval_async=true", dir.path());
  ASSERT_EQ(async.exit_code, 0) << async.output;
  std::istringstream a(ReadFile(dir / "in_line" / "metrics.jsonl")), b(ReadFile(dir / "async" / "metrics.jsonl"));
  std::string la, lb;
  size_t rows = 0;
  while (std::getline(a, la)) {
    ASSERT_TRUE(std::getline(b, lb)) << "row " << rows << " missing";
    for (const char* k : {"iteration", "test_accuracy", "test_loss", "test_examples", "loss"}) {
      EXPECT_EQ(Field(lb, k), Field(la, k)) << k << " of row " << rows;
    }
    ++rows;
  }
  EXPECT_FALSE(std::getline(b, lb)) << "an extra row: " << lb;
  EXPECT_EQ(rows, 12u);  // 16 iterations per epoch: 3, 6, 9, 12, 15 and the epoch end, twice
}

TEST(CliTest, TrainWithGradientClippingCompletesAndRejectsANegativeThreshold) {
  ScratchDir dir;
  WriteFile(dir / "r.yaml", kSmokeRecipe);
  auto r = RunGeomx("train r.yaml --out clipped --set optimizer.clip_norm=0.5 --set training.epochs=1", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Field(ReadFile(dir / "clipped" / "summary.json"), "status"), "\"completed\"");
  EXPECT_NE(ReadFile(dir / "clipped" / "recipe.yaml").find("clip_norm: 0.5"), std::string::npos);
  auto bad = RunGeomx("train r.yaml --dry-run --set optimizer.clip_norm=-1", dir.path());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("optimizer.clip_norm"), std::string::npos) << bad.output;
}

// Bad DGT settings stop `geomx train` before anything starts: exit 2, naming the key.
TEST(CliTest, BadDgtSettingsExitTwoNamingTheKey) {
  ScratchDir dir;
  const std::string recipe = std::string(GEOMX_SOURCE_DIR) + "/recipes/geo2x2.yaml";
  for (const auto& [sets, key] : std::vector<std::pair<std::string, std::string>>{
           {"--set accelerators.dgt.k=2", "accelerators.dgt.k"},
           {"--set accelerators.dgt.enabled=true --set accelerators.dgt.block_bytes=1002", "accelerators.dgt.block_bytes"},
           {"--set accelerators.dgt.enabled=true --set sync.mode=diloco", "accelerators.dgt.enabled"},
           // Accepted once, then every local server left the job at its first push (exit 1 after starting).
           {"--set accelerators.dgt.enabled=true --set accelerators.links.global_to_local=fp16",
            "accelerators.links.global_to_local"}}) {
    auto r = RunGeomx("train " + recipe + " --dry-run " + sets, dir.path());
    EXPECT_EQ(r.exit_code, 2) << sets << "\n" << r.output;
    EXPECT_NE(r.output.find(key), std::string::npos) << sets << "\n" << r.output;
  }
  auto ok = RunGeomx("train " + recipe + " --dry-run --set accelerators.dgt.enabled=true", dir.path());
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

TEST(CliTest, ResumeContinuesToTheSameResultAsOneRun) {
  ScratchDir dir;
  WriteFile(dir / "r.yaml", kSmokeRecipe);
  ASSERT_EQ(RunGeomx("train r.yaml --out full", dir.path()).exit_code, 0);
  auto first = RunGeomx("train r.yaml --out part --set training.epochs=1", dir.path());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  // The run's recipe (with epochs=1) differs from r.yaml: naming r.yaml is refused, --set raises the epochs.
  auto mismatch = RunGeomx("train r.yaml --resume part", dir.path());
  EXPECT_EQ(mismatch.exit_code, 2) << mismatch.output;
  EXPECT_NE(mismatch.output.find("differs"), std::string::npos) << mismatch.output;
  auto resumed = RunGeomx("train --resume part --set training.epochs=2", dir.path());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const std::string a = ReadFile(dir / "full" / "summary.json");
  const std::string b = ReadFile(dir / "part" / "summary.json");
  EXPECT_EQ(Field(b, "iterations"), "32");
  EXPECT_EQ(Field(a, "final_test_accuracy"), Field(b, "final_test_accuracy"));
  EXPECT_EQ(Field(a, "final_test_loss"), Field(b, "final_test_loss"));
  EXPECT_EQ(CountLines(ReadFile(dir / "part" / "metrics.jsonl")), 2u);
  // A finished run cannot be resumed without raising the epochs (recorded now: 2).
  EXPECT_EQ(RunGeomx("train --resume part", dir.path()).exit_code, 2);
  EXPECT_EQ(RunGeomx("train --resume nowhere", dir.path()).exit_code, 2);
}

TEST(CliTest, DryRunPrintsPlanAndCreatesNothing) {
  ScratchDir dir;
  WriteFile(dir / "r.yaml", kSmokeRecipe);
  auto r = RunGeomx("train r.yaml --dry-run --set training.epochs=3", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("epochs: 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("parameters"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "runs"));
}

// A recipe with a topology: --dry-run prints every process, its command line and its ports; the role flags are
// checked against the topology (docs/deployment.md).
TEST(CliTest, TopologyDryRunAndRoleFlags) {
  ScratchDir dir;
  WriteFile(dir / "geo.yaml", std::string(kSmokeRecipe) +
                                  "topology:\n  datacentres:\n    - {name: dc-a, workers: 2}\n"
                                  "    - {name: dc-b, scheduler_port: 9100}\n");
  auto plan = RunGeomx("train geo.yaml --dry-run --out planned", dir.path());
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  for (const char* want : {"processes: 10", "central/global-scheduler", "dc-a/worker1", "central/master-worker",
                           "dc-b/scheduler  (scheduler, listens on 127.0.0.1:9100)", "train geo.yaml --party dc-a",
                           "--out planned"}) {
    EXPECT_NE(plan.output.find(want), std::string::npos) << want << "\n" << plan.output;
  }
  EXPECT_FALSE(fs::exists(dir / "planned"));
  auto worker = RunGeomx("train geo.yaml --party dc-a --rank 1 --dry-run", dir.path());
  EXPECT_EQ(worker.exit_code, 0) << worker.output;
  EXPECT_NE(worker.output.find("dc-a/worker1: worker 1 of dc-a (2 workers)"), std::string::npos) << worker.output;
  struct Case {
    std::string args, expect;
  } bad[] = {
      {"train geo.yaml --party dc-c --rank 0", "unknown data centre 'dc-c'"},
      {"train geo.yaml --party dc-b --rank 1", "--rank 1: dc-b has one worker"},
      {"serve --role sever geo.yaml --party dc-a", "did you mean 'server'"},
      {"serve --role worker geo.yaml", "geomx train geo.yaml --party P --rank N"},
      {"serve --role global-server geo.yaml --party dc-a", "central party"},
      {"train --resume somewhere --party dc-a", "a RECIPE file is required"},
      {"train geo.yaml --party dc-a --rank 0 --resume r1 --out r2", "give only --resume"},
  };
  for (const Case& c : bad) {
    auto r = RunGeomx(c.args, dir.path());
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST(CliTest, BadInputExits2AndLeavesNoRunFolder) {
  ScratchDir dir;
  WriteFile(dir / "typo.yaml", std::string(kSmokeRecipe) + "trainig: {epochs: 1}\n");
  WriteFile(dir / "syntax.yaml", "name: [unclosed\n");
  WriteFile(dir / "empty.yaml", "# nothing here yet\n");
  WriteFile(dir / "nodir.yaml", "name: x\nmodel: {name: geomx-cnn}\ndata:\n  name: fashion-mnist\n  path: /no/such/dir\n");
  WriteFile(dir / "nocsv.yaml", "algorithm: {name: logreg}\ndata: {name: csv, path: gone.csv}\n");
  WriteFile(dir / "range.yaml", std::string(kSmokeRecipe).replace(std::string(kSmokeRecipe).find("batch_size: 32"),
                                                                    14, "batch_size: 0"));
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"train missing.yaml", "missing.yaml"},
      {"train typo.yaml", "typo.yaml:13:1"},
      {"train syntax.yaml", "syntax.yaml:"},
      {"train range.yaml", "data.batch_size"},
      {"train typo.yaml --set training.epochs=1", "typo.yaml"},
      {"train " + (dir / "range.yaml").string() + " --set data.batch_size=x", "data.batch_size"},
      {"eval nowhere typo.yaml", "typo.yaml"},
      {"train empty.yaml", "empty.yaml:1:1: the recipe is empty"},
      {"train nodir.yaml", "nodir.yaml:5:9: data.path: "},
      {"train nocsv.yaml", "nocsv.yaml:2:25: data.path: "},
      {"train nodir.yaml --set data.path=/elsewhere", "--set data.path=/elsewhere: data.path: "},
  };
  for (const auto& c : cases) {
    auto r = RunGeomx(c.args, dir.path());
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "runs"));
}

TEST(CliTest, CorruptDataFileExits2NamingFileAndOffset) {
  ScratchDir dir;
  // An IDX image file whose header promises 100 images of 28x28 but holds only 10.
  std::string images;
  auto be32 = [&](uint32_t v) {
    for (int i = 3; i >= 0; --i) images.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  be32(0x00000803);
  be32(100);
  be32(28);
  be32(28);
  images.append(10 * 28 * 28, '\x07');
  std::string labels;
  auto lbe32 = [&](uint32_t v) {
    for (int i = 3; i >= 0; --i) labels.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  lbe32(0x00000801);
  lbe32(100);
  labels.append(100, '\x01');
  for (const char* split : {"train", "t10k"}) {
    WriteFile(dir / "fm" / (std::string(split) + "-images-idx3-ubyte"), images);
    WriteFile(dir / "fm" / (std::string(split) + "-labels-idx1-ubyte"), labels);
  }
  WriteFile(dir / "r.yaml", "name: bad\nmodel: {name: geomx-cnn}\ndata: {name: fashion-mnist, path: fm}\n");
  auto r = RunGeomx("train r.yaml", dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("images-idx3-ubyte"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("offset"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "runs"));
}

TEST(CliTest, TopologyRecipeTrainsOverTheParameterServer) {
  ScratchDir dir;
  WriteFile(dir / "t.yaml", std::string(kSmokeRecipe) + R"(topology:
  central: {global_servers: 2}
  datacentres:
    - {name: dc-a, workers: 2, servers: 1}
    - {name: dc-b, workers: 2, servers: 2}
  split_bytes: 256
)");
  auto r = RunGeomx("train t.yaml --out run", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[dc-a/worker0] eval"), std::string::npos) << "child output is prefixed\n" << r.output;
  const std::string summary = ReadFile(dir / "run" / "summary.json");
  EXPECT_EQ(Field(summary, "status"), "\"completed\"") << summary;
  EXPECT_EQ(Field(summary, "iterations"), "8");  // 512 examples / 4 workers / batch 32 = 4 per epoch, 2 epochs
  EXPECT_GT(std::stod(Field(summary, "final_test_accuracy")), 0.5) << summary;
  const double wan = std::stod(Field(summary, "wan_bytes"));
  const double lan = std::stod(Field(summary, "lan_bytes"));
  EXPECT_GT(wan, 0) << summary;
  EXPECT_GT(lan, wan) << "4 workers talk to their local servers, 2 data centres to the global tier\n" << summary;
  EXPECT_EQ(CountLines(ReadFile(dir / "run" / "metrics.jsonl")), 2u);
  size_t traffic_files = 0;
  for (const auto& e : fs::directory_iterator(dir / "run" / "traffic")) traffic_files += e.path().extension() == ".json";
  EXPECT_EQ(traffic_files, 13u);  // one per process: central 1+2+1, dc-a 1+1+2, dc-b 1+2+2

  // Regression: stopping at the target accuracy stopped only the evaluating worker; the others waited on a round
  // it never joined. Refused before anything starts.
  auto stop = RunGeomx("train t.yaml --out run2 --set training.target_accuracy=0.5 --set training.stop_at_target=true",
                       dir.path());
  EXPECT_EQ(stop.exit_code, 2) << stop.output;
  EXPECT_NE(stop.output.find("training.stop_at_target"), std::string::npos) << stop.output;
  EXPECT_FALSE(fs::exists(dir / "run2"));
}

TEST(CliTest, CtrlCWritesCheckpointAndResumeFinishes) {
  ScratchDir dir;
  WriteFile(dir / "r.yaml", std::string(kSmokeRecipe) + "");
  const std::string out = (dir / "run").string();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (chdir(dir.path().c_str()) != 0) _exit(99);
    freopen("/dev/null", "w", stdout);
    execl(GEOMX_BINARY, GEOMX_BINARY, "train", "r.yaml", "--out", out.c_str(), "--set", "training.epochs=100000",
          "--set", "training.eval_every=4", static_cast<char*>(nullptr));
    _exit(98);
  }
  // Wait (bounded) until training is visibly under way, then interrupt.
  const fs::path metrics = dir / "run" / "metrics.jsonl";
  for (int i = 0; i < 600 && CountLines(ReadFile(metrics)) < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(CountLines(ReadFile(metrics)), 2u) << "training did not start";
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const std::string summary = ReadFile(dir / "run" / "summary.json");
  EXPECT_EQ(Field(summary, "status"), "\"interrupted\"");
  EXPECT_TRUE(fs::exists(dir / "run" / "checkpoints" / "LAST"));
  const int64_t stopped_at = std::stoll(Field(summary, "iterations"));
  auto resumed = RunGeomx("train --resume run --set training.max_iterations=" +
                              std::to_string(stopped_at + 8),
                          dir.path());
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(std::stoll(Field(ReadFile(dir / "run" / "summary.json"), "iterations")), stopped_at + 8);
}

}  // namespace
}  // namespace geomx::testing
