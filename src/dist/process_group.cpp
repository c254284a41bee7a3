// The job's process group over MPI (see process_group.h).
#include "epoch/dist/process_group.h"

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>

#include "epoch/tensor/error.h"

namespace epoch::dist {
namespace {

std::mutex& mpi_mutex() {  // MPI_THREAD_SERIALIZED: one call at a time
  static std::mutex m;
  return m;
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  EPOCH_THROW(IoError, what, " failed: ", std::string(text, static_cast<std::size_t>(len)));
}

// MPI counts are ints: larger buffers go in pieces.
constexpr std::int64_t kMaxCount = std::numeric_limits<int>::max() / 2;

}  // namespace

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                          "MPI_LOCALNRANKS", "MV2_COMM_WORLD_SIZE"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

ProcessGroup& ProcessGroup::world() {
  static ProcessGroup group;
  return group;
}

ProcessGroup::ProcessGroup() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) host_ = name;
  if (!launched_by_mpi()) {
    // `srun -n N` without an MPI plugin starts N copies that know nothing of each other: N
    // separate trainings writing one run directory. Refuse instead of training N times.
    const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
    if (tasks != nullptr && std::atoi(tasks) > 1) {
      const char* plugin = std::getenv("SLURM_MPI_TYPE");
      EPOCH_THROW(ConfigError, "srun started ", tasks, " tasks but no MPI plugin joined them (",
                  plugin != nullptr ? plugin : "none",
                  "): run srun --mpi=pmix (or set MpiDefault=pmix in slurm.conf)");
    }
    return;
  }
  // Open MPI's blocking calls spin by default; yielding keeps a waiting rank from taking a
  // core from the compute threads (the environment's own setting wins).
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    EPOCH_THROW(ConfigError, "the MPI library offers thread level ", provided,
                ", epoch needs MPI_THREAD_SERIALIZED");
  }
  mpi_ = true;
  // Errors come back as codes (check() turns them into exceptions), not as an abort inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm host;  // the ranks that share this host's memory
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &host),
        "MPI_Comm_split_type");
  MPI_Comm_rank(host, &local_rank_);
  MPI_Comm_free(&host);
}

ProcessGroup::~ProcessGroup() {
  if (!mpi_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized == 0) MPI_Finalize();
}

std::string ProcessGroup::describe() const {
  if (!distributed()) return "a single process";
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " on " + host_;
}

std::string ProcessGroup::library() const {
  if (!mpi_) return "";
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<std::size_t>(len));
  if (const auto comma = s.find(','); comma != std::string::npos) s.resize(comma);
  return s;
}

void ProcessGroup::broadcast(void* data, std::int64_t bytes, int root) {
  if (!distributed() || bytes == 0) return;
  const std::lock_guard<std::mutex> lock(mpi_mutex());
  auto* p = static_cast<char*>(data);
  for (std::int64_t at = 0; at < bytes; at += kMaxCount) {
    const int count = static_cast<int>(std::min(kMaxCount, bytes - at));
    check(MPI_Bcast(p + at, count, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
}

namespace {

/// MPI_Allreduce (sum, in place) of n elements in pieces MPI's int count can hold.
template <typename T>
void all_reduce_in_pieces(T* data, std::int64_t n, MPI_Datatype type) {
  const std::lock_guard<std::mutex> lock(mpi_mutex());
  for (std::int64_t at = 0; at < n; at += kMaxCount) {
    const int count = static_cast<int>(std::min(kMaxCount, n - at));
    check(MPI_Allreduce(MPI_IN_PLACE, data + at, count, type, MPI_SUM, MPI_COMM_WORLD),
          "MPI_Allreduce");
  }
}

}  // namespace

void ProcessGroup::all_reduce_sum(float* data, std::int64_t n) {
  if (distributed() && n > 0) all_reduce_in_pieces(data, n, MPI_FLOAT);
}

void ProcessGroup::all_reduce_sum(double* data, std::int64_t n) {
  if (distributed() && n > 0) all_reduce_in_pieces(data, n, MPI_DOUBLE);
}

std::vector<std::uint64_t> ProcessGroup::all_gather(std::uint64_t value) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(size_), value);
  if (!distributed()) return all;
  const std::lock_guard<std::mutex> lock(mpi_mutex());
  check(MPI_Allgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD),
        "MPI_Allgather");
  return all;
}

void ProcessGroup::barrier() {
  if (!distributed()) return;
  const std::lock_guard<std::mutex> lock(mpi_mutex());
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

void ProcessGroup::abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

std::uint64_t checksum(const void* data, std::int64_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ static_cast<std::uint64_t>(bytes);
  std::int64_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

void expect_same_on_every_rank(ProcessGroup& group, std::uint64_t value, const std::string& where) {
  if (!group.distributed()) return;
  const std::vector<std::uint64_t> all = group.all_gather(value);
  std::string differ;
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  if (!differ.empty())
    EPOCH_THROW(NumericalError, "ranks diverged: ", where, " on rank",
                differ.find(',') != std::string::npos ? "s " : " ", differ,
                " differ from rank 0's (every rank must hold the same values)");
}

}  // namespace epoch::dist
