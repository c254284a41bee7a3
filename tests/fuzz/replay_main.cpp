// Runs a fuzz target without libFuzzer (any compiler; CTest's smoke test, sanitized under
// make test-asan): every file named or found in the directories named, then deterministic
// mutations of each (bit flips, truncations, insertions, deletions, interesting values).
// Fails, saving the input to fuzz-replay-failure.bin, when an exception escapes the target.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

Bytes read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// FNV-1a of the bytes: each file's mutations depend on its contents only.
std::uint64_t fnv1a(const Bytes& bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

/// One to three random edits of `input`.
Bytes mutate(const Bytes& input, std::mt19937_64& rng) {
  static const std::uint32_t interesting[] = {0,     1,      0x7f,   0x80,       0xff,
                                              0x100, 0x7fff, 0xffff, 0x7fffffff, 0xffffffff};
  Bytes b = input;
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits; ++e) {
    const std::size_t n = b.size();
    const std::size_t pos = n > 0 ? rng() % n : 0;
    switch (rng() % 7) {
      case 0:  // flip a bit
        if (n > 0) b[pos] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
        break;
      case 1:  // truncate
        b.resize(n > 0 ? rng() % n : 0);
        break;
      case 2: {  // insert 1-8 random bytes
        Bytes extra(1 + rng() % 8);
        for (auto& x : extra) x = static_cast<std::uint8_t>(rng());
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(pos), extra.begin(), extra.end());
        break;
      }
      case 3:  // an interesting byte
        if (n > 0) b[pos] = static_cast<std::uint8_t>(interesting[rng() % 5]);
        break;
      case 4: {  // an interesting 16- or 32-bit value, either byte order
        const std::uint32_t v = interesting[rng() % std::size(interesting)];
        const std::size_t width = rng() % 2 == 0 ? 2 : 4;
        const bool big_endian = rng() % 2 == 0;
        for (std::size_t i = 0; i < width && pos + i < n; ++i) {
          const std::size_t shift = 8 * (big_endian ? width - 1 - i : i);
          b[pos + i] = static_cast<std::uint8_t>(v >> shift);
        }
        break;
      }
      case 5: {  // delete a range
        const std::size_t len = std::min<std::size_t>(n - pos, 1 + rng() % 16);
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(pos),
                b.begin() + static_cast<std::ptrdiff_t>(pos + len));
        break;
      }
      default: {  // copy a range over another place
        if (n < 2) break;
        const std::size_t from = rng() % n, len = 1 + rng() % std::min<std::size_t>(n - from, 32);
        const Bytes chunk(b.begin() + static_cast<std::ptrdiff_t>(from),
                          b.begin() + static_cast<std::ptrdiff_t>(from + len));
        for (std::size_t i = 0; i < len && pos + i < n; ++i) b[pos + i] = chunk[i];
        break;
      }
    }
  }
  return b;
}

/// Runs one input; false (after reporting and saving it) when an exception escapes.
bool run(const Bytes& input, const std::string& what) {
  try {
    LLVMFuzzerTestOneInput(input.data(), input.size());
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding: %s: exception escaped: %s\n", what.c_str(), e.what());
  } catch (...) {
    std::fprintf(stderr, "finding: %s: a non-std exception escaped\n", what.c_str());
  }
  std::ofstream("fuzz-replay-failure.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(input.data()),
             static_cast<std::streamsize>(input.size()));
  std::fprintf(stderr, "the input is saved as fuzz-replay-failure.bin\n");
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 2000;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--mutations" && i + 1 < argc) {
      mutations = std::strtol(argv[++i], nullptr, 10);
    } else if (fs::is_directory(arg)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::directory_iterator(arg))
        if (entry.is_regular_file()) found.push_back(entry.path());
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(arg)) {
      files.emplace_back(arg);
    } else {
      std::fprintf(stderr, "usage: %s [--mutations N] FILE_OR_DIR...  (%s: not found)\n", argv[0],
                   arg.c_str());
      return 2;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "%s: no input files\n", argv[0]);
    return 2;
  }
  long runs = 0;
  for (const fs::path& file : files) {
    const Bytes input = read_all(file);
    if (!run(input, file.string())) return 1;
    std::mt19937_64 rng(fnv1a(input));
    for (long m = 0; m < mutations; ++m) {
      if (!run(mutate(input, rng), file.string() + " mutation " + std::to_string(m))) return 1;
    }
    runs += 1 + mutations;
  }
  std::printf("%ld inputs from %zu files, nothing escaped\n", runs, files.size());
  return 0;
}
