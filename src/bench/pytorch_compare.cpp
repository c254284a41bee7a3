// epoch side by side with PyTorch (see pytorch_compare.h).
#include "epoch/bench/pytorch_compare.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <sstream>
#include <vector>

#include "epoch/tensor/error.h"

namespace epoch::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// A number of a reference's JSON, IoError naming the script and key when absent.
double number_of(const json& j, const char* key, const std::string& script) {
  if (!j.contains(key) || !j[key].is_number())
    EPOCH_THROW(IoError, "the PyTorch reference ", script, " printed no number \"", key, "\"");
  return j[key].get<double>();
}

/// `repeats` pairs, alternated (ours, theirs, ours, theirs, ...): the medians of each side
/// and of the per-pair ratios.
PairedResult alternate(int repeats, const std::function<double()>& ours,
                       const std::function<double()>& theirs) {
  std::vector<double> mine, reference, ratios;
  for (int i = 0; i < repeats; ++i) {
    const double a = ours(), b = theirs();
    mine.push_back(a);
    reference.push_back(b);
    ratios.push_back(a / b);
  }
  PairedResult r;
  r.epoch = median(mine);
  r.pytorch = median(reference);
  r.ratio = median(ratios);
  r.repeats = repeats;
  return r;
}

}  // namespace

std::string find_reference_dir(const std::string& given) {
  if (!given.empty()) {
    if (!fs::exists(fs::path(given) / "run_torch.sh"))
      EPOCH_THROW(IoError, given, ": no run_torch.sh (expected the repository's bench/reference)");
    return given;
  }
  std::vector<fs::path> starts{fs::current_path()};
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) starts.push_back(exe.parent_path());
  for (fs::path dir : starts) {
    for (int up = 0; up < 4 && !dir.empty(); ++up, dir = dir.parent_path()) {
      if (fs::exists(dir / "bench" / "reference" / "run_torch.sh"))
        return (dir / "bench" / "reference").string();
      if (dir == dir.parent_path()) break;
    }
  }
  EPOCH_THROW(IoError,
              "bench/reference/run_torch.sh not found: run from the repository or pass "
              "--reference-dir");
}

json run_reference(const std::string& reference_dir, const std::string& script,
                   const std::string& args) {
  const std::string command = "bash '" + reference_dir + "/run_torch.sh' pypi '" + reference_dir +
                              "/" + script + "' " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) EPOCH_THROW(IoError, "cannot run ", command);
  std::string out, last_json;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) {
    out += buf;
    std::string line = buf;
    if (!line.empty() && line[0] == '{') last_json = line;
  }
  const int status = pclose(pipe);
  if (status != 0 || last_json.empty()) {
    std::string tail = out.size() > 600 ? out.substr(out.size() - 600) : out;
    std::replace(tail.begin(), tail.end(), '\n', ' ');
    EPOCH_THROW(IoError, "the PyTorch reference failed (", script, "): ", tail);
  }
  try {
    return json::parse(last_json);
  } catch (const json::exception&) {
    EPOCH_THROW(IoError, "the PyTorch reference ", script, " printed a line that is not JSON");
  }
}

PairedResult compare_compute_with_pytorch(const ComputeBenchConfig& config, int repeats,
                                          const std::string& given_reference_dir,
                                          ComputeBenchResult* last) {
  const std::string reference_dir = find_reference_dir(given_reference_dir);
  const int threads = config.execution.threads > 0
                          ? config.execution.threads
                          : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::ostringstream args;
  args << "--model " << config.model << " --batch-size " << config.batch_size << " --threads "
       << threads << " --warmup " << config.warmup << " --steps " << config.steps << " --json";
  std::string torch_version;
  PairedResult r = alternate(
      repeats,
      [&] {
        const ComputeBenchResult mine = run_compute_bench(config);
        if (last != nullptr) *last = mine;
        return mine.train_images_per_s;
      },
      [&] {
        const json torch = run_reference(reference_dir, "train_bench.py", args.str());
        torch_version = torch.value("torch_version", "");
        return number_of(torch, "train_images_per_s", "train_bench.py");
      });
  r.torch_version = torch_version;
  return r;
}

PairedResult compare_pipeline_with_pytorch(const PipelineBenchConfig& config, int repeats,
                                           const std::string& given_reference_dir,
                                           PipelineBenchResult* last) {
  if (config.model != "catdog" || !config.augment)
    EPOCH_THROW(ConfigError,
                "--compare pytorch --pipeline reproduces catdog's augmented "
                "pipeline only (bench/reference/pipeline_bench.py)");
  const std::string reference_dir = find_reference_dir(given_reference_dir);
  std::ostringstream args;
  args << "'" << config.data << "' --images " << config.images;
  return alternate(
      repeats,
      [&] {
        const PipelineBenchResult mine = run_pipeline_bench(config);
        if (last != nullptr) *last = mine;
        return mine.per_core_per_s;
      },
      [&] {
        return number_of(run_reference(reference_dir, "pipeline_bench.py", args.str()), "per_core",
                         "pipeline_bench.py");
      });
}

}  // namespace epoch::bench
