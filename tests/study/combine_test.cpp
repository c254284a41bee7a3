// Studies across machines: each run records the protocol's fingerprint, the machine and the
// final weights' digest; `combine` pools studies of one protocol, labels each machine's
// configurations, pairs them by seed and counts the seeds that ended with identical bits;
// studies of another protocol, unfinished ones and combinations of combinations are refused
// by name; and a one-ulp perturbation is a different trajectory (different bits), not
// identical bits.
#include "epoch/study/combine.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "epoch/tensor/error.h"
#include "epoch/train/machine.h"
#include "testing/testing.h"

namespace epoch::study {
namespace {

namespace fs = std::filesystem;

template <typename E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

StudyConfig small_study(const fs::path& out, const std::string& machine) {
  StudyConfig c;
  c.configs = "cpu:1,cpu:1+perturb=ulp";
  c.repeats = 2;
  c.limit_train = 512;
  c.limit_test = 256;
  c.machine = machine;
  c.out_dir = out;
  return c;
}

const ConfigComparison& pair_of(const StudyResult& r, const std::string& a, const std::string& b) {
  for (const ConfigComparison& c : r.comparisons)
    if (c.a == a && c.b == b) return c;
  ADD_FAILURE() << "no comparison of " << a << " and " << b;
  return r.comparisons.front();
}

TEST(StudyRecords, EveryRunRecordsTheProtocolTheMachineAndItsWeights) {
  testing::TempDir dir;
  const StudyResult r = run_study(small_study(dir / "a", "hostA"), nullptr);
  ASSERT_EQ(r.runs.size(), 4u);
  const nlohmann::json record = read_json(fs::path(r.runs[0].run_dir) / "study-run.json");
  EXPECT_EQ(record["machine_label"], "hostA");
  EXPECT_EQ(record["machine"]["cpu"], train::this_machine().cpu);
  EXPECT_FALSE(record["machine"]["cpu_isa"].get<std::string>().empty());
  EXPECT_EQ(record["weights_sha256"].get<std::string>().size(), 64u);
  const nlohmann::json& f = record["protocol"];
  EXPECT_EQ(f["protocol"], "autoencoder");
  EXPECT_EQ(f["model"], "autoencoder");
  EXPECT_EQ(f["model_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(f["data_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(f["limit_train"], 512);
  EXPECT_EQ(f["batch_size"], 128);
  EXPECT_TRUE(f.contains("optimizer.lr"));
  EXPECT_FALSE(f.contains("threads"));  // how a run computes: what configurations vary
  EXPECT_FALSE(f.contains("seed"));     // each run's own: what pairs them
  EXPECT_FALSE(f.contains("data"));     // a path: the digest stands in
  // A one-ulp perturbation changes the trajectory: other bits, another figure, every seed.
  const ConfigComparison& c = pair_of(r, "cpu:1", "cpu:1+perturb=ulp");
  EXPECT_EQ(c.seeds, 2);
  EXPECT_EQ(c.identical_bits, 0);
  EXPECT_EQ(c.bits(), "different");
  EXPECT_EQ(c.words().rfind("different bits, ", 0), 0u) << c.words();
  EXPECT_NE(r.runs[0].figure, r.runs[1].figure);
  EXPECT_NE(r.runs[2].figure, r.runs[3].figure);
  const nlohmann::json s = read_json(dir / "a/study.json");
  EXPECT_EQ(s["comparisons"][0]["bits"], "different");
  EXPECT_EQ(s["machines"][0]["label"], "hostA");
}

TEST(StudyCombine, PoolsStudiesOfOneProtocolPairedBySeedAcrossMachines) {
  testing::TempDir dir;
  run_study(small_study(dir / "a", "hostA"), nullptr);
  run_study(small_study(dir / "b", "hostB"), nullptr);
  const StudyResult r = combine_studies({dir / "a", dir / "b"},
                                        dir / "all", nullptr);
  ASSERT_EQ(r.ran.size(), 4u);
  EXPECT_EQ(r.ran[0].name, "hostA/cpu:1");
  EXPECT_EQ(r.ran[3].name, "hostB/cpu:1+perturb=ulp");
  ASSERT_EQ(r.runs.size(), 8u);
  ASSERT_EQ(r.comparisons.size(), 6u);
  ASSERT_EQ(r.machines.size(), 2u);
  // The same configuration on the same CPU with the same binary: the same bits for every seed.
  const ConfigComparison& same = pair_of(r, "hostA/cpu:1", "hostB/cpu:1");
  EXPECT_EQ(same.identical_bits, 2);
  EXPECT_EQ(same.bits(), "identical");
  EXPECT_EQ(same.words().rfind("identical bits in all 2 seeds", 0), 0u) << same.words();
  EXPECT_EQ(pair_of(r, "hostA/cpu:1", "hostB/cpu:1+perturb=ulp").identical_bits, 0);
  // The pooled folder holds what the report reads, under <machine>/<config>/seed-<seed>.
  EXPECT_TRUE(fs::exists(dir / "all/hostB/cpu:1/seed-1/metrics.jsonl"));
  EXPECT_FALSE(fs::exists(dir / "all/hostB/cpu:1/seed-1/checkpoints"));
  const nlohmann::json s = read_json(dir / "all/study.json");
  EXPECT_EQ(s["sources"].size(), 2u);
  EXPECT_EQ(s["runs"].size(), 8u);
  // Not again into a folder that holds something.
  EXPECT_NE(error_of<ConfigError>([&] {
              combine_studies({dir / "a", dir / "b"},
                              dir / "all", nullptr);
            }).find("is not empty"),
            std::string::npos);
  // A combination is not a source.
  EXPECT_NE(error_of<IoError>([&] {
              combine_studies({dir / "all", dir / "a"},
                              dir / "again", nullptr);
            }).find("a combination of studies itself"),
            std::string::npos);
}

TEST(StudyCombine, RefusesAnotherProtocolNamingTheField) {
  testing::TempDir dir;
  run_study(small_study(dir / "a", "hostA"), nullptr);
  StudyConfig other = small_study(dir / "b", "hostB");
  other.limit_train = 384;
  run_study(other, nullptr);
  const std::string e = error_of<ConfigError>([&] {
    combine_studies({dir / "a", dir / "b"}, dir / "all",
                    nullptr);
  });
  EXPECT_NE(e.find("limit_train is 384 there and 512 in"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(dir / "all/study.json"));
  // An unfinished study (a plan, no study.json) is named with the command that finishes it.
  fs::create_directories(dir / "unfinished");
  std::ofstream(dir / "unfinished/study-plan.json") << "{}";
  const std::string u = error_of<IoError>([&] {
    combine_studies({dir / "a", dir / "unfinished"},
                    dir / "all2", nullptr);
  });
  EXPECT_NE(u.find("epoch study --resume"), std::string::npos) << u;
}

TEST(StudyCombine, TellsMachinesOfOneNameApartByFolder) {
  testing::TempDir dir;
  run_study(small_study(dir / "x", "same"), nullptr);
  run_study(small_study(dir / "y", "same"), nullptr);
  const StudyResult r = combine_studies({dir / "x", dir / "y"},
                                        dir / "all", nullptr);
  ASSERT_EQ(r.machines.size(), 2u);
  EXPECT_EQ(r.machines[0].first, "same@x");
  EXPECT_EQ(r.machines[1].first, "same@y");
}

TEST(MachineRecord, ShortNamesOfCpusAndGpus) {
  EXPECT_EQ(train::short_device_name("Intel(R) Core(TM) i5-4590 CPU @ 3.30GHz"), "i5-4590");
  EXPECT_EQ(train::short_device_name("Intel(R) Core(TM) i7-6800K CPU @ 3.40GHz"), "i7-6800K");
  EXPECT_EQ(train::short_device_name("AMD Ryzen 5 3600 6-Core Processor"), "Ryzen-5-3600");
  EXPECT_EQ(train::short_device_name("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"),
            "Xeon-Platinum-8375C");
  EXPECT_EQ(train::short_device_name("AMD EPYC 7B13"), "EPYC-7B13");
  EXPECT_EQ(train::short_device_name("NVIDIA GeForce GTX 750 Ti"), "GTX-750-Ti");
  EXPECT_EQ(train::short_device_name("NVIDIA TITAN RTX"), "TITAN-RTX");
  EXPECT_EQ(train::short_device_name(""), "unknown");
  const train::MachineRecord m = train::this_machine();
  const train::MachineRecord back = train::machine_from_json(m.to_json(), "test");
  EXPECT_EQ(back.to_json(), m.to_json());
  EXPECT_THROW(train::machine_from_json(nlohmann::json{{"host", 1}}, "test"), IoError);
}

}  // namespace
}  // namespace epoch::study
