// The machine a run ran on: what `epoch info` shows, what a run's config.json and a study's
// records keep, and the short name `epoch study combine` labels a machine's configurations by.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace epoch::train {

struct GpuRecord {
  std::string name;     // "NVIDIA TITAN RTX"
  std::string driver;   // the CUDA driver's version, "13.0"
  std::string runtime;  // the CUDA runtime's, "13.0"
};

struct MachineRecord {
  std::string host;
  std::string cpu;         // the CPU's brand string
  std::string cpu_isa;     // the level epoch's own kernels ran at ("x86-64-v3")
  std::string onednn_isa;  // oneDNN's ("avx2"), "none" without oneDNN
  int logical_cores = 0;
  int ranks = 1;  // the processes training together (mpirun -np N)
  std::vector<GpuRecord> gpus;
  std::string cudnn;  // the cuDNN library's version, "" without cuDNN
  std::string epoch_version;
  std::string compiler;
  nlohmann::json to_json() const;
};

/// This process's machine (the GPUs only when CUDA is built in and a device is visible).
MachineRecord this_machine();
/// A record read back (a study's); IoError naming `what` and the key that is missing or wrong.
MachineRecord machine_from_json(const nlohmann::json& j, const std::string& what);

/// A CPU's or GPU's name without the maker's marks, as one word: "Intel(R) Core(TM) i5-4590
/// CPU @ 3.30GHz" -> "i5-4590", "AMD Ryzen 5 3600 6-Core Processor" -> "Ryzen-5-3600",
/// "NVIDIA GeForce GTX 750 Ti" -> "GTX-750-Ti"; "unknown" when nothing is left.
std::string short_device_name(const std::string& name);

}  // namespace epoch::train
