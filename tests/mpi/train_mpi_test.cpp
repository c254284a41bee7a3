// Data-parallel training under mpirun, end to end (CTest label mpi): N ranks of batch B train
// as one process of batch N x B on the same samples; repeated runs give the same bits; rank 0
// alone writes; a rank that fails or is killed ends the whole job quickly, and the last
// checkpoint resumes to the bits of an uninterrupted run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_testing.h"
#include "epoch/data/image.h"
#include "epoch/tensor/random.h"
#include "nlohmann/json.hpp"
#include "testing/testing.h"

namespace epoch::testing {
namespace {

using nlohmann::json;

std::string mpirun(int np) {
  return std::string(EPOCH_MPIRUN) + " --allow-run-as-root --oversubscribe -np " +
         std::to_string(np) + " ";
}

// `mpirun -np N CMD` (or CMD alone for np 0), CMD a whole program line (MPMD contexts
// included), under timeout(1) so a hang fails.
CommandResult run_shell_job(int np, const std::string& cmd, const TempDir& dir,
                            int timeout_s = 120) {
  const std::string err_file = dir / "stderr.txt";
  CommandResult r;
  FILE* pipe = popen(("timeout " + std::to_string(timeout_s) + " " +
                      (np > 0 ? mpirun(np) : std::string()) + cmd + " 2>" + err_file)
                         .c_str(),
                     "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(err_file);
  r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return r;
}

// `mpirun -np N epoch ARGS` (or epoch alone for np 0).
CommandResult run_job(int np, const std::string& args, const TempDir& dir, int timeout_s = 120) {
  return run_shell_job(np, std::string(EPOCH_TEST_BINARY) + " " + args, dir, timeout_s);
}

// The autoencoder: no dropout and no batch norm, so shards and one big batch see the same math.
// SGD, whose step scales with the gradient (Adam's would hide a gradient summed, not averaged).
std::string autoencoder_args(const std::string& out, std::int64_t batch) {
  return "train --model autoencoder --data synthetic --synthetic-count 512 --limit-test 256 "
         "--optimizer sgd --lr 0.5 --epochs 2 --threads 1 --seed 11 --log-every 1 --quiet --json "
         "--batch-size " +
         std::to_string(batch) + " --out " + out;
}

std::vector<double> step_losses(const std::string& run_dir) {
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::vector<double> losses;
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line);
    if (j["kind"] == "step") losses.push_back(j["loss"].get<double>());
  }
  return losses;
}

// The one JSON line `--json` prints.
json summary(const CommandResult& r) {
  const auto start = r.out.rfind('\n', r.out.size() >= 2 ? r.out.size() - 2 : 0);
  return json::parse(start == std::string::npos ? r.out : r.out.substr(start + 1));
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double rel) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], rel * std::fabs(b[i])) << "step " << i + 1;
}

TEST(DataParallel, RanksOfBatchBTrainAsOneProcessOfTheGlobalBatch) {
  TempDir dir;
  const std::string one = dir / "one", two = dir / "two", four = dir / "four";
  const CommandResult r1 = run_job(0, autoencoder_args(one, 32), dir);
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  const CommandResult r2 = run_job(2, autoencoder_args(two, 16), dir);
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  const CommandResult r4 = run_job(4, autoencoder_args(four, 8), dir);
  ASSERT_EQ(r4.exit_code, 0) << r4.err;
  const std::vector<double> l1 = step_losses(one);
  ASSERT_EQ(l1.size(), 32u);  // 2 epochs of 512 / 32
  // Float sums in another order (per-rank products, then the all-reduce): measured within
  // 5e-8 relative over the 32 steps; a gradient summed instead of averaged, or a wrong shard,
  // is off by far more.
  expect_close(step_losses(two), l1, 1e-5);
  expect_close(step_losses(four), l1, 1e-5);
  const json s1 = summary(r1), s2 = summary(r2), s4 = summary(r4);
  EXPECT_NEAR(s2["test_loss"].get<double>(), s1["test_loss"].get<double>(),
              1e-5 * s1["test_loss"].get<double>());
  EXPECT_NEAR(s4["test_loss"].get<double>(), s1["test_loss"].get<double>(),
              1e-5 * s1["test_loss"].get<double>());
  EXPECT_EQ(s2["world_size"], 2);
  EXPECT_EQ(s2["global_batch_size"], 32);
  EXPECT_EQ(s4["world_size"], 4);
  std::ifstream cfg(two + "/config.json");
  const json c = json::parse(cfg);
  EXPECT_EQ(c["world_size"], 2);
  EXPECT_EQ(c["global_batch_size"], 32);
  // Only rank 0 printed its summary.
  EXPECT_EQ(count_lines(r2.out), 1) << r2.out;
  EXPECT_EQ(count_lines(r4.out), 1) << r4.out;
}

// A study under mpirun: every run trains on both ranks (each with half the protocol's batch, so
// the protocol is the one-process study's), rank 0 alone prints and writes, and the study
// combines with one made by a single process, labelled by its ranks.
TEST(DataParallel, AStudyUnderMpirunCombinesWithASingleProcessStudy) {
  TempDir dir;
  const std::string study =
      "study --configs cpu:1,cpu:1+perturb=ulp --repeats 2 --limit-train 256 --limit-test 128 "
      "--out ";
  const CommandResult one = run_job(0, study + (dir / "one"), dir, 300);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const CommandResult two = run_job(2, study + (dir / "two"), dir, 300);
  ASSERT_EQ(two.exit_code, 0) << two.err;
  std::size_t lines = 0;
  for (std::size_t at = two.out.find("study: cpu:1 seed 0:"); at != std::string::npos;
       at = two.out.find("study: cpu:1 seed 0:", at + 1))
    ++lines;
  EXPECT_EQ(lines, 1u) << two.out;
  std::ifstream record(dir / "two/cpu:1/seed-0/study-run.json");
  const json r = json::parse(record);
  EXPECT_EQ(r["machine"]["ranks"], 2);
  EXPECT_EQ(r["protocol"]["batch_size"], 128);  // the global batch, as one process's
  const CommandResult all = run_job(
      0, "study combine " + (dir / "one") + " " + (dir / "two") + " --json --out " + (dir / "all"),
      dir);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const json j = json::parse(all.out);
  ASSERT_EQ(j["machines"].size(), 2u);
  const std::string label = j["machines"][1]["label"];
  EXPECT_EQ(label.substr(label.size() - 2), "x2") << label;
  ASSERT_EQ(j["comparisons"].size(), 6u);
  for (const json& c : j["comparisons"]) EXPECT_EQ(c["seeds"], 2);
}

// A Caffe net with its Intel-Caffe solver (LARS, warm-up, max_iter as the length) under mpirun,
// as a cluster user starts it: the ranks agree on the file's SHA-256 with the rest, train, and
// two ranks of batch B take the steps one process of batch 2B takes.
TEST(DataParallel, ACaffeNetAndSolverTrainOnTwoRanks) {
  TempDir dir;
  const std::string caffe = std::string(EPOCH_SOURCE_DIR) + "/tests/models/caffe/";
  {
    std::ofstream solver(dir / "solver.prototxt");
    solver << "base_lr: 0.02\nmomentum: 0.9\nweight_decay: 0.0005\nlr_policy: \"poly\"\n"
              "power: 2\nmax_iter: 12\nlocal_lr_auto: true\nlocal_gw_ratio: 0.001\n"
              "warmup_iter: 2\n";
  }
  const auto args = [&](const std::string& out, int batch) {
    return "train --model " + caffe + "lenet_train_test.prototxt --solver " +
           (dir / "solver.prototxt") + " --input-shape 1,28,28 --data synthetic " +
           "--synthetic-count 192 --limit-test 64 --threads 1 --log-every 1 --quiet --json " +
           "--batch-size " + std::to_string(batch) + " --out " + out;
  };
  const CommandResult one = run_job(0, args(dir / "one", 32), dir);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const CommandResult two = run_job(2, args(dir / "two", 16), dir);
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(summary(two)["world_size"], 2);
  EXPECT_EQ(summary(two)["steps"], 12);  // the solver's max_iter
  std::ifstream cfg(dir / "two/config.json");
  const json c = json::parse(cfg);
  EXPECT_EQ(c["optimizer"]["name"], "lars");
  EXPECT_EQ(c["model_sha256"].get<std::string>().size(), 64u + 1 + 64);  // net:solver
  const std::vector<double> l1 = step_losses(dir / "one"), l2 = step_losses(dir / "two");
  ASSERT_EQ(l1.size(), 12u);
  EXPECT_LT(l2.back(), l2.front());
  // Dropout draws per sample position differ between one process and two shards: the first
  // step's loss (before any update or dropout difference reaches it) agrees.
  EXPECT_NEAR(l2.front(), l1.front(), 1e-5 * std::fabs(l1.front()));
}

TEST(DataParallel, RepeatedRunsGiveTheSameBits) {
  TempDir dir;
  const std::string a = dir / "a", b = dir / "b";
  // fmnist-cnn: batch norm statistics per rank, dropout, every rank-dependent piece
  const std::string args =
      "train --model fmnist-cnn --data synthetic --synthetic-count 256 --limit-test 128 "
      "--epochs 1 --threads 1 --seed 4 --log-every 1 --quiet --json --batch-size 16 "
      "--check-ranks-every 1 --out ";
  const CommandResult ra = run_job(2, args + a, dir), rb = run_job(2, args + b, dir);
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_EQ(step_losses(a), step_losses(b));
  EXPECT_EQ(summary(ra)["test_loss"], summary(rb)["test_loss"]);
  EXPECT_EQ(summary(ra)["test_accuracy"], summary(rb)["test_accuracy"]);
}

TEST(DataParallel, ARankThatFailsEndsTheJobNamingIt) {
  TempDir dir;
  // Two programs in one job that agree on every setting, but --data is a relative path and
  // rank 1 starts in a folder without it: rank 1 fails on its own, after the ranks agreed.
  const std::filesystem::path here = dir / "here", elsewhere = dir / "elsewhere";
  for (const char* cls : {"a", "b"}) {
    std::filesystem::create_directories(here / "images" / cls);
    for (int i = 0; i < 4; ++i)
      data::write_png((here / "images" / cls / (std::to_string(i) + ".png")).string(),
                      data::Image{28, 28, 1, std::vector<std::uint8_t>(28 * 28, 40 * i)});
  }
  std::filesystem::create_directories(elsewhere);
  const std::string train = std::string(EPOCH_TEST_BINARY) +
                            " train --model autoencoder --data images --val-split 0.25 "
                            "--epochs 1 --threads 1 --quiet --out " +
                            std::string(dir / "run");
  const std::string cmd = "sh -c 'cd " + here.string() + " && exec " + train + "' : -np 1 " +
                          "sh -c 'cd " + elsewhere.string() + " && exec " + train + "'";
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = run_shell_job(1, cmd, dir, 60);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << "the job hung";
  EXPECT_LT(s, 30.0);
  EXPECT_NE(r.err.find("epoch: error (rank 1 of 2)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("images"), std::string::npos) << r.err;
}

// Ranks started with different settings (mpirun's MPMD form, a script's typo, another config
// file): the job ends on every rank within seconds, before any collective trusts a size, with
// one line from rank 0 naming the setting, the ranks and both values.
struct Disagreement {
  std::string flag, value;  // rank 1's value of one setting (flag "": rank 1 runs `value`)
  std::string named;        // the setting the line must name
};

// The common command with `flag` given `value` instead.
std::string with_setting(const std::string& base, const std::string& flag,
                         const std::string& value) {
  if (flag.empty()) return value;
  const std::size_t at = base.find(" " + flag + " ");
  if (at == std::string::npos) return base + " " + flag + " " + value;
  const std::size_t from = at + flag.size() + 2, to = base.find(' ', from);
  return base.substr(0, from) + value + (to == std::string::npos ? "" : base.substr(to));
}

class RanksDisagree : public ::testing::TestWithParam<Disagreement> {};

TEST_P(RanksDisagree, EndTheJobWithOneLineNamingTheSetting) {
  const Disagreement& d = GetParam();
  TempDir dir;
  const std::string run = dir / "run";
  const std::string base =
      "train --model autoencoder --data synthetic --synthetic-count 256 --limit-test 64 "
      "--epochs 1 --threads 1 --batch-size 32 --quiet --out " +
      run;
  const std::string other = with_setting(base, d.flag, d.value);
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r =
      run_job(1, base + " : -np 1 " + std::string(EPOCH_TEST_BINARY) + " " + other, dir, 60);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << "the job hung";
  EXPECT_LT(s, 30.0);
  const std::string line = "epoch: error: ranks disagree on " + d.named + ": rank 0 has ";
  EXPECT_NE(r.err.find(line), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(", rank 1 has "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("ranks disagree"), r.err.rfind("ranks disagree")) << "one line: " << r.err;
  for (const char* crash : {"Segmentation", "corrupted", "signal", "internal error", "[at "})
    EXPECT_EQ(r.err.find(crash), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(run) / "config.json"))
      << "nothing is written before the ranks agree";
}

INSTANTIATE_TEST_SUITE_P(
    Settings, RanksDisagree,
    ::testing::Values(
        Disagreement{"--model", "fmnist-cnn", "--model"},
        Disagreement{"--bucket-mib", "0.01", "--bucket-mib"},
        Disagreement{"--limit-train", "128", "--limit-train"},
        Disagreement{"--batch-size", "16", "--batch-size"}, Disagreement{"--seed", "2", "--seed"},
        Disagreement{"--epochs", "2", "--epochs"},
        Disagreement{"--determinism", "strict", "--determinism"},
        Disagreement{"", "bench --model autoencoder --batch-size 32 --threads 1 --steps 10 --json",
                     "the command"}),
    [](const ::testing::TestParamInfo<Disagreement>& info) {
      std::string name;
      for (char c : info.param.named)
        if (std::isalnum(static_cast<unsigned char>(c))) name += c;
      return name;
    });

// epoch bench sweeps: a rank with a shorter --threads list would leave the others waiting in
// the next measurement's collectives.
TEST(DataParallel, BenchRanksWithOtherSweepsAreNamed) {
  TempDir dir;
  const std::string bench = " bench --model autoencoder --batch-size 16 --steps 10 --json ";
  const CommandResult r = run_job(
      1, bench + "--threads 1,2 : -np 1 " + std::string(EPOCH_TEST_BINARY) + bench + "--threads 1",
      dir, 60);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << "the job hung";
  EXPECT_NE(r.err.find("ranks disagree on the bench flags: rank 0 has "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("threads=[1, 2]"), std::string::npos) << r.err;
}

// The reverse of the first case: the rank with the larger model is rank 1.
TEST(DataParallel, ALargerModelOnAnotherRankIsNamedToo) {
  TempDir dir;
  const std::string common =
      " --data synthetic --synthetic-count 256 --limit-test 64 --epochs 1 --threads 1 --quiet "
      "--out " +
      std::string(dir / "run");
  const CommandResult r =
      run_job(1,
              "train --model fmnist-cnn" + common + " : -np 1 " + std::string(EPOCH_TEST_BINARY) +
                  " train --model autoencoder" + common,
              dir, 60);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << "the job hung";
  EXPECT_NE(r.err.find("ranks disagree on --model: rank 0 has \"fmnist-cnn\", rank 1 has "
                       "\"autoencoder\""),
            std::string::npos)
      << r.err;
}

TEST(DataParallel, AKilledRankEndsTheJobAndTheRunResumesToTheSameBits) {
  TempDir dir;
  const std::string whole = dir / "whole", cut = dir / "cut";
  // A constant rate without warm-up: a run planned for one epoch and extended to two on
  // resuming follows the same schedule as one planned for two.
  const std::string args =
      "train --model autoencoder --data synthetic --synthetic-count 2048 --limit-test 256 "
      "--threads 1 --seed 9 --log-every 1 --quiet --json --batch-size 32 --schedule constant "
      "--warmup-steps 0 ";
  const CommandResult rw = run_job(2, args + "--epochs 2 --out " + whole, dir);
  ASSERT_EQ(rw.exit_code, 0) << rw.err;
  const CommandResult first = run_job(2, args + "--epochs 1 --out " + cut, dir);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string resume = "train --resume " + cut + " --epochs 2 --quiet --json";
  // Resume; rank 1 is killed (SIGKILL) once step 34 (of 32 + 32) is logged.
  const std::string killer =
      "sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then (while ! grep -q \"\\\"step\\\":34\" " +
      cut + "/metrics.jsonl 2>/dev/null; do sleep 0.02; done; kill -9 $$) & fi; exec " +
      std::string(EPOCH_TEST_BINARY) + " " + resume + "'";
  const std::string err_file = dir / "kill.txt";
  const auto start = std::chrono::steady_clock::now();
  const int status =
      std::system(("timeout 60 " + mpirun(2) + killer + " >/dev/null 2>" + err_file).c_str());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(status, 0);
  EXPECT_NE(WEXITSTATUS(status), 124) << "the job hung";
  EXPECT_LT(s, 30.0);
  // The epoch-1 checkpoint is intact and the resumed run ends as the uninterrupted one.
  const CommandResult resumed = run_job(2, resume, dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(summary(resumed)["test_loss"], summary(rw)["test_loss"]);
  EXPECT_EQ(step_losses(cut), step_losses(whole));
}

TEST(DataParallel, ARankWhoseShareIsAllBadImagesStaysInStep) {
  // 16 files, 3 of them not images: at batch 1 per rank, a step's share of one rank (or of
  // both) is sometimes nothing. Such a rank still takes part, with no gradient of its own, and
  // the shares are what survived, so 2 ranks x 1 train as 1 process x 2 on the same files.
  TempDir dir;
  const std::filesystem::path data = dir / "data";
  for (const char* split : {"train", "validation"})
    for (const char* cls : {"a", "b"}) std::filesystem::create_directories(data / split / cls);
  RandomStream rng(3, 0);
  for (int i = 0; i < 17; ++i) {
    data::Image im{28, 28, 1, std::vector<std::uint8_t>(28 * 28)};
    for (auto& p : im.pixels) p = static_cast<std::uint8_t>(rng.next_bits() & 0xFF);
    const std::string split = i < 13 ? "train" : "validation";
    data::write_png((data / split / (i % 2 ? "a" : "b") / (std::to_string(i) + ".png")).string(),
                    im);
  }
  for (int i = 0; i < 3; ++i)
    std::ofstream(data / "train" / (i % 2 ? "a" : "b") / ("bad" + std::to_string(i) + ".png"))
        << "not an image";
  const auto args = [&](const std::string& out, int batch) {
    return "train --model autoencoder --data " + data.string() +
           " --optimizer sgd --lr 0.5 --epochs 3 --threads 1 --workers 0 --seed 5 "
           "--log-every 1 --check-ranks-every 1 --quiet --json --batch-size " +
           std::to_string(batch) + " --out " + out;
  };
  const std::string one = dir / "one", two = dir / "two";
  const CommandResult r1 = run_job(0, args(one, 2), dir);
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  const CommandResult r2 = run_job(2, args(two, 1), dir, 60);
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_NE(r2.err.find("bad"), std::string::npos) << r2.err;
  const std::vector<double> l1 = step_losses(one);
  EXPECT_GE(l1.size(), 3u * 5u);  // at least 13 / 2 rounded down steps per epoch
  expect_close(step_losses(two), l1, 1e-5);
}

TEST(DataParallel, ResumingOnAnotherNumberOfRanksIsRefused) {
  TempDir dir;
  const std::string run = dir / "run";
  ASSERT_EQ(run_job(2,
                    "train --model autoencoder --data synthetic --synthetic-count 256 "
                    "--limit-test 64 --epochs 1 --threads 1 --quiet --out " +
                        run,
                    dir)
                .exit_code,
            0);
  const CommandResult r = run_job(0, "train --resume " + run + " --quiet", dir);
  expect_one_line_error(r, 1, "trained on 2 process(es), this launch has 1");
}

// epoch bench under mpirun: every rank steps on its own batch with the gradients averaged;
// rank 0 alone reports, with the step's communication.
TEST(DataParallel, SrunTasksThatNoMpiPluginJoinedAreRefused) {
  // `srun -n 2` without --mpi=pmix: two processes that would each train alone into one run
  // directory. Slurm's environment says so; the run stops before it writes anything.
  TempDir dir;
  const std::string run = dir / "run";
  const CommandResult r = run_epoch(
      "train --model autoencoder --data synthetic --synthetic-count 64 --epochs 1 --quiet --out " +
          run,
      dir, "-u OMPI_COMM_WORLD_SIZE -u PMIX_RANK SLURM_STEP_NUM_TASKS=2 SLURM_MPI_TYPE=none");
  expect_one_line_error(r, 1, "srun started 2 tasks but no MPI plugin joined them (none)");
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(run) / "metrics.jsonl"));
  // One task is a single process, as without Slurm.
  const CommandResult one = run_epoch(
      "train --model autoencoder --data synthetic --synthetic-count 64 --limit-test 32 "
      "--epochs 1 --threads 1 --quiet --out " +
          run,
      dir, "SLURM_STEP_NUM_TASKS=1");
  EXPECT_EQ(one.exit_code, 0) << one.err;
}

TEST(DataParallel, BenchReportsTheStepsCommunication) {
  TempDir dir;
  const CommandResult r = run_job(
      2, "bench --model autoencoder --batch-size 64 --threads 1 --steps 10 --warmup 2 --json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(count_lines(r.out), 1) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["comm_bytes_per_step"], 435536 * 4) << "the autoencoder's gradients";
  EXPECT_GT(j["comm_ms_median"].get<double>(), 0.0);
  EXPECT_GE(j["comm_hidden_fraction"].get<double>(), 0.0);
  EXPECT_LE(j["comm_hidden_fraction"].get<double>(), 1.0);
  EXPECT_NEAR(j["global_train_images_per_s"].get<double>(),
              2 * j["train_images_per_s"].get<double>(), 1e-6);
}

// epoch scale launches the runs itself and reports efficiency, the all-reduce against plain
// MPI_Allreduce, and a labelled projection, as a table, JSON and an SVG.
TEST(Scale, MeasuresTheRankCountsAndProjects) {
  TempDir dir;
  const std::string out = dir / "scale";
  const CommandResult r = run_epoch(
      "scale --model autoencoder --ranks 1,2 --batch-size 64 "
      "--steps 10 --warmup 2 --json --out " +
          out,
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["points"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["points"][0]["efficiency"].get<double>(), 1.0);
  const json& two = j["points"][1];
  EXPECT_EQ(two["ranks"], 2);
  EXPECT_GT(two["efficiency"].get<double>(), 0.0);  // a measurement: CI shares its cores
  EXPECT_GT(two["plain_bus_gbytes_per_s"].get<double>(), 0.0);
  EXPECT_GT(two["bucketed_over_plain_bandwidth"].get<double>(), 0.0);
  EXPECT_EQ(j["gradient_bytes"], 435536 * 4);
  ASSERT_EQ(j["projection"]["points"].size(), 7u);  // 16 ... 1024 nodes
  EXPECT_NE(j["projection"]["label"].get<std::string>().find("not a measurement"),
            std::string::npos);
  double previous = 1.0;
  for (const json& q : j["projection"]["points"]) {
    EXPECT_LE(q["efficiency"].get<double>(), previous);
    previous = q["efficiency"].get<double>();
  }
  EXPECT_EQ(j["source"]["efficiency"], 0.73);
  std::ifstream svg(out + "/scale.svg");
  const std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.rfind("<svg", 0), 0u);
  std::ifstream saved(out + "/scale.json");
  EXPECT_EQ(json::parse(saved)["model"], "autoencoder");
}

TEST(Scale, RefusesRankListsWithoutTheBaseline) {
  TempDir dir;
  expect_one_line_error(run_epoch("scale --ranks 2,4", dir), 1, "--ranks must start with 1");
}

TEST(Scale, RefusesMoreRanksThanCoresUnlessAskedToOversubscribe) {
  TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  expect_one_line_error(run_epoch("scale --model autoencoder --ranks 1,1000", dir), 1,
                        "--ranks 1000: more ranks than this machine's");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0)
      << "refused before any rank starts";
}

TEST(Scale, RefusesRanksThatWouldNeedMoreMemoryThanThereIs) {
  // Asked to oversubscribe, 1000 ranks are measured on one first: each needs tens of MiB at
  // least, so 1000 need more than this machine has; the line says how much.
  TempDir dir;
  const CommandResult r = run_epoch(
      "scale --model autoencoder --ranks 1,1000 --oversubscribe --batch-size 8 --steps 10 "
      "--warmup 1 --json",
      dir);
  expect_one_line_error(r, 1, "--ranks 1000: the ranks would need about ");
  EXPECT_NE(r.err.find("MiB each, measured on one rank"), std::string::npos) << r.err;
}

TEST(Scale, ChecksItsFlagsBeforeStartingMpirun) {
  TempDir dir;
  expect_one_line_error(run_epoch("scale --model autoencoder --steps 5", dir), 2, "--steps");
  expect_one_line_error(run_epoch("scale --model autoencoder --warmup -3", dir), 2, "--warmup");
  const CommandResult huge = run_epoch("scale --model autoencoder --bandwidth-gbps 1e308", dir);
  expect_one_line_error(huge, 2, "--bandwidth-gbps");
  EXPECT_LT(huge.err.size(), 200u) << huge.err;
  expect_one_line_error(run_epoch("scale --model autoencoder --latency-us 1e300", dir), 2,
                        "--latency-us");
}

// A signal to `epoch scale` takes its mpirun and every rank down with it, within seconds.
TEST(Scale, ASignalTakesMpirunAndItsRanksDown) {
  for (const int sig : {SIGTERM, SIGINT}) {
    TempDir dir;
    const std::string marker = "--batch-size " + std::to_string(30 + sig);  // unique per case
    const std::string cmd = std::string("exec ") + EPOCH_TEST_BINARY +
                            " scale --model autoencoder --ranks 1,2 --steps 100000 --warmup 0 " +
                            marker + " --json >/dev/null 2>&1";
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    // A rank's command line starts with the epoch binary (mpirun's, which names the same
    // arguments, starts with mpirun; the shell that runs pgrep with sh): waiting for a rank,
    // not for mpirun alone, so the signal finds the job running, not still being launched.
    const std::string ranks =
        "pgrep -f '^[^ ]*epoch bench --model autoencoder " + marker + "' >/dev/null";
    bool started = false;
    for (int i = 0; i < 300 && !started; ++i) {
      started = std::system(ranks.c_str()) == 0;
      if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(started) << "the ranks never started";
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::kill(pid, sig);
    int status = 0;
    bool ended = false;
    for (int i = 0; i < 150 && !ended; ++i) {
      ended = ::waitpid(pid, &status, WNOHANG) == pid;
      if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!ended) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
    EXPECT_TRUE(ended) << "epoch scale outlived signal " << sig << " by 15 s";
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = std::system(ranks.c_str()) != 0 &&
             std::system(("pgrep -f '[m]pirun.*" + marker + "' >/dev/null").c_str()) != 0;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(gone) << "mpirun or a rank outlived epoch scale (signal " << sig << ")";
    std::system(("pkill -9 -f '^[^ ]*epoch bench --model autoencoder " + marker + "'").c_str());
  }
}

}  // namespace
}  // namespace epoch::testing
