// The job's process group over MPI (see process_group.h).
#include "epoch/dist/process_group.h"

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

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

void ProcessGroup::broadcast(void* data, std::int64_t bytes, int root, const char* what) {
  if (!distributed()) return;
  const std::vector<std::uint64_t> sizes = all_gather(static_cast<std::uint64_t>(bytes));
  for (std::size_t r = 0; r < sizes.size(); ++r)
    if (sizes[r] != sizes[static_cast<std::size_t>(root)])
      EPOCH_THROW(RanksDisagree, "ranks disagree on the size of ", what, ": rank ", root, " sends ",
                  sizes[static_cast<std::size_t>(root)], " bytes, rank ", r, " expects ", sizes[r],
                  " (every rank of a job must run the same program)");
  if (bytes == 0) return;
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

std::vector<std::string> ProcessGroup::all_gather(const std::string& text) {
  if (!distributed()) return {text};
  const std::vector<std::uint64_t> sizes = all_gather(static_cast<std::uint64_t>(text.size()));
  std::vector<int> counts(sizes.size()), offsets(sizes.size());
  std::uint64_t total = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    if (sizes[r] > static_cast<std::uint64_t>(kMaxCount) ||
        total + sizes[r] > static_cast<std::uint64_t>(kMaxCount))
      EPOCH_THROW(IoError, "MPI_Allgatherv: rank ", r, "'s ", sizes[r],
                  " bytes are more than one gather carries");
    counts[r] = static_cast<int>(sizes[r]);
    offsets[r] = static_cast<int>(total);
    total += sizes[r];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  {
    const std::lock_guard<std::mutex> lock(mpi_mutex());
    check(MPI_Allgatherv(text.data(), static_cast<int>(text.size()), MPI_CHAR, all.data(),
                         counts.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD),
          "MPI_Allgatherv");
  }
  std::vector<std::string> out;
  for (std::size_t r = 0; r < sizes.size(); ++r)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), sizes[r]));
  return out;
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

namespace {

/// Settings as text, each name and value preceded by its length, so no byte of either can
/// be mistaken for a separator.
std::string encode_settings(const std::vector<Setting>& settings) {
  std::string out;
  for (const Setting& s : settings)
    for (const std::string* part : {&s.name, &s.value})
      out += std::to_string(part->size()) + ":" + *part;
  return out;
}

/// encode_settings' inverse; nullopt for text that is not such an encoding.
std::optional<std::vector<Setting>> decode_settings(const std::string& text) {
  std::vector<Setting> out;
  std::size_t at = 0;
  const auto field = [&](std::string& into) {
    const std::size_t colon = text.find(':', at);
    if (colon == std::string::npos || colon == at || colon - at > 12) return false;
    std::size_t n = 0;
    for (std::size_t i = at; i < colon; ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      n = n * 10 + static_cast<std::size_t>(text[i] - '0');
    }
    if (n > text.size() - colon - 1) return false;
    into = text.substr(colon + 1, n);
    at = colon + 1 + n;
    return true;
  };
  while (at < text.size()) {
    Setting s;
    if (!field(s.name) || !field(s.value)) return std::nullopt;
    out.push_back(std::move(s));
  }
  return out;
}

/// A value for a message, "(none)" when empty; a long one cut to the part around where it
/// first differs from `other`.
std::string shown(const std::string& value, const std::string& other) {
  if (value.empty()) return "(none)";
  constexpr std::size_t kLong = 80, kBefore = 24, kWindow = 60;
  if (value.size() <= kLong) return value;
  std::size_t at = 0;
  while (at < value.size() && at < other.size() && value[at] == other[at]) ++at;
  const std::size_t from = at > kBefore ? at - kBefore : 0;
  return (from > 0 ? "..." : "") + value.substr(from, kWindow) +
         (from + kWindow < value.size() ? "..." : "");
}

}  // namespace

namespace {

/// Where `mine` first differs from `lead` (in lead's order, then a setting lead lacks): the
/// setting's name, lead's value and mine.
struct Difference {
  std::string name, lead_value, value;
};
Difference first_difference(const std::vector<Setting>& lead, const std::vector<Setting>& mine) {
  std::map<std::string, std::string> by_name;
  for (const Setting& s : mine) by_name.emplace(s.name, s.value);
  for (const Setting& s : lead) {
    const auto it = by_name.find(s.name);
    const std::string value = it == by_name.end() ? "(not set)" : it->second;
    if (value != s.value) return {s.name, s.value, value};
    by_name.erase(s.name);
  }
  if (!by_name.empty()) return {by_name.begin()->first, "(not set)", by_name.begin()->second};
  return {"the order of their settings", "", ""};
}

}  // namespace

void expect_same_settings(ProcessGroup& group, const std::vector<Setting>& settings,
                          const std::string& what) {
  if (!group.distributed()) return;
  const std::vector<std::string> all = group.all_gather(encode_settings(settings));
  const std::optional<std::vector<Setting>> lead = decode_settings(all[0]);
  // Each differing rank's first difference; the message names the lowest such rank's setting
  // and every rank whose first difference is that one.
  std::optional<Difference> named;
  std::vector<std::pair<std::size_t, std::string>> ranks;  // (rank, its value)
  std::size_t elsewhere = 0;  // ranks that differ first on another setting
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    const std::optional<std::vector<Setting>> mine = decode_settings(all[r]);
    const Difference d = lead && mine ? first_difference(*lead, *mine)
                                      : Difference{"their settings", "another encoding",
                                                   "another encoding (another epoch version?)"};
    if (!named) named = d;
    if (d.name == named->name) {
      ranks.emplace_back(r, d.value);
    } else {
      ++elsewhere;
    }
  }
  if (!named) return;
  std::string listed;
  constexpr std::size_t kNamed = 4;
  for (std::size_t i = 0; i < ranks.size() && i < kNamed; ++i)
    listed += ", rank " + std::to_string(ranks[i].first) + " has " +
              shown(ranks[i].second, named->lead_value);
  if (ranks.size() > kNamed) listed += " (and " + std::to_string(ranks.size() - kNamed) + " more)";
  EPOCH_THROW(RanksDisagree, "ranks disagree on ", named->name, ": rank 0 has ",
              shown(named->lead_value, ranks.empty() ? "" : ranks[0].second), listed,
              elsewhere > 0
                  ? "; " + std::to_string(elsewhere) + " other rank(s) differ on other settings"
                  : "",
              " (every rank of ", what, " must be given the same)");
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
