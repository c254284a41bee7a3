// write_file_atomic: writing and replacing files, no temporary files left behind, IoError naming
// the path, and the old file untouched when a write fails; the FileDescriptor owner; reading
// regular files within a bound (FIFOs, devices and folders refused at once).
#include "epoch/tensor/file_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "epoch/tensor/error.h"
#include "testing/testing.h"

namespace epoch {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Bytes bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// The message of the IoError that `write` throws ("" and a test failure when none is thrown).
template <typename Write>
std::string io_error_of(Write&& write) {
  try {
    write();
  } catch (const IoError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no IoError";
  return "";
}

TEST(FileIo, WritesAndReplacesAFile) {
  testing::TempDir dir;
  for (const bool durable : {true, false}) {
    const std::string path = dir / (durable ? "durable.bin" : "fast.bin");
    write_file_atomic(path, bytes_of("first version"), durable);
    EXPECT_EQ(read_bytes(path), bytes_of("first version"));
    write_file_atomic(path, bytes_of("v2"), durable);  // shorter: nothing of v1 may remain
    EXPECT_EQ(read_bytes(path), bytes_of("v2"));
    write_file_atomic(path, Bytes{}, durable);
    EXPECT_TRUE(read_bytes(path).empty());
  }
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"durable.bin", "fast.bin"}));
}

TEST(FileIo, WritesPiecesInOrder) {
  testing::TempDir dir;
  const std::string path = dir / "pieces.bin";
  Bytes big(3 << 20);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint8_t>(i * 7 + i / 251);
  int calls = 0;
  write_file_atomic(
      path,
      [&](const AppendBytes& append) {
        ++calls;
        append(bytes_of("ab"));
        append(Bytes{});
        append(big);
        append(bytes_of("z"));
      },
      /*durable=*/true);
  EXPECT_EQ(calls, 1);
  Bytes expected = bytes_of("ab");
  expected.insert(expected.end(), big.begin(), big.end());
  expected.push_back('z');
  EXPECT_EQ(read_bytes(path), expected);
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"pieces.bin"});
}

TEST(FileIo, RelativePathInTheWorkingDirectory) {
  testing::TempDir dir;
  const fs::path old_cwd = fs::current_path();
  fs::current_path(dir.path());
  // No directory part: the directory fsync'ed is ".".
  EXPECT_NO_THROW(write_file_atomic("here.bin", bytes_of("x"), /*durable=*/true));
  fs::current_path(old_cwd);
  EXPECT_EQ(read_bytes(dir / "here.bin"), bytes_of("x"));
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"here.bin"});
}

TEST(FileIo, MissingDirectoryIsAnIoErrorNamingThePath) {
  testing::TempDir dir;
  const std::string path = dir / "no/such/dir/file.bin";
  for (const bool durable : {true, false}) {
    const std::string message =
        io_error_of([&] { write_file_atomic(path, bytes_of("x"), durable); });
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("temporary file"), std::string::npos) << message;
  }
  EXPECT_TRUE(listing(dir.path()).empty());
}

TEST(FileIo, DirectoryInPlaceOfTheFileIsAnIoErrorNamingThePath) {
  testing::TempDir dir;
  const std::string path = dir / "adir";
  fs::create_directory(path);
  fs::create_directory(dir / "adir/inside");  // a non-empty directory
  for (const bool durable : {true, false}) {
    const std::string message =
        io_error_of([&] { write_file_atomic(path, bytes_of("x"), durable); });
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("rename"), std::string::npos) << message;
  }
  EXPECT_TRUE(fs::is_directory(dir / "adir/inside"));
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"adir"});  // temporary file removed
}

TEST(FileIo, FailedWriteLeavesTheOldFileIntact) {
  testing::TempDir dir;
  const std::string path = dir / "ckpt.bin";
  write_file_atomic(path, bytes_of("the old contents"), /*durable=*/true);

  std::vector<std::string> messages;
  {
    const testing::FileSizeLimit disk_full(4096);  // the disk "fills up" half-way
    for (const bool durable : {true, false}) {
      messages.push_back(
          io_error_of([&] { write_file_atomic(path, Bytes(3 * 4096, 1), durable); }));
      messages.push_back(io_error_of([&] {
        write_file_atomic(
            path,
            [](const AppendBytes& append) {
              for (int i = 0; i < 3; ++i) append(Bytes(4096, 2));
            },
            durable);
      }));
    }
  }
  for (const std::string& message : messages) {
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("write failed"), std::string::npos) << message;
  }
  EXPECT_EQ(read_bytes(path), bytes_of("the old contents"));
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"ckpt.bin"});
}

TEST(FileIo, AnExceptionFromFillLeavesTheOldFileIntact) {
  testing::TempDir dir;
  const std::string path = dir / "ckpt.bin";
  write_file_atomic(path, bytes_of("the old contents"), /*durable=*/false);
  EXPECT_THROW(write_file_atomic(
                   path,
                   [](const AppendBytes& append) {
                     append(bytes_of("half of the new"));
                     throw std::runtime_error("device copy failed");
                   },
                   /*durable=*/true),
               std::runtime_error);
  EXPECT_EQ(read_bytes(path), bytes_of("the old contents"));
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"ckpt.bin"});
}

TEST(FileIo, FileDescriptorClosesOnceAndMoves) {
  const int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(raw, 0);
  {
    FileDescriptor a(raw);
    FileDescriptor b(std::move(a));
    EXPECT_EQ(a.get(), -1);  // NOLINT(bugprone-use-after-move): moved-from holds none
    EXPECT_EQ(b.get(), raw);
    FileDescriptor c(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    const int c_raw = c.get();
    ASSERT_GE(c_raw, 0);
    c = std::move(b);  // closes what c held
    EXPECT_EQ(::fcntl(c_raw, F_GETFD), -1);
    EXPECT_EQ(c.get(), raw);
    EXPECT_GE(::fcntl(raw, F_GETFD), 0);
  }
  errno = 0;
  EXPECT_EQ(::fcntl(raw, F_GETFD), -1);  // the destructor closed it
  EXPECT_EQ(errno, EBADF);

  FileDescriptor e(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int e_raw = e.get();
  ASSERT_GE(e_raw, 0);
  EXPECT_EQ(e.close_now(), 0);
  EXPECT_EQ(e.get(), -1);
  EXPECT_EQ(e.close_now(), 0);  // nothing held: nothing closed
  EXPECT_EQ(::fcntl(e_raw, F_GETFD), -1);

  FileDescriptor d(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int d_raw = d.release();
  EXPECT_EQ(d.get(), -1);
  EXPECT_GE(::fcntl(d_raw, F_GETFD), 0);  // released, so still open
  ::close(d_raw);
}

// Reading a whole file: only a regular file within the bound is read; anything else (a
// FIFO, /dev/zero, a folder, a missing file, too many bytes) is one IoError naming the file and
// what it is, at once (a FIFO without a writer never blocks).
TEST(FileIo, ReadsOnlyRegularFilesWithinTheirBound) {
  testing::TempDir dir;
  const std::string text = dir / "a.json";
  std::ofstream(text) << "{\"x\": 1}";
  EXPECT_EQ(read_text_file(text, 100), "{\"x\": 1}");
  EXPECT_EQ(read_regular_file(text, 8).size(), 8u) << "exactly at the bound";
  const std::string big = io_error_of([&] { (void)read_text_file(text, 7); });
  EXPECT_NE(big.find(text + ": is 8 bytes, more than the 7 bytes"), std::string::npos) << big;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  const std::string f = io_error_of([&] { (void)read_text_file(fifo, 1 << 20); });
  EXPECT_NE(f.find(fifo + ": is a FIFO, not a regular file"), std::string::npos) << f;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  const std::string zero = io_error_of([] { (void)read_regular_file("/dev/zero", 1 << 20); });
  EXPECT_NE(zero.find("/dev/zero: is a character device"), std::string::npos) << zero;
  const std::string folder = io_error_of([&] { (void)read_text_file(dir.path(), 1 << 20); });
  EXPECT_NE(folder.find(": is a directory, not a file"), std::string::npos) << folder;
  const std::string missing = io_error_of([&] { (void)read_text_file(dir / "none", 1 << 20); });
  EXPECT_NE(missing.find("none: no such file"), std::string::npos) << missing;
  std::uint64_t size = 0;
  const FileDescriptor fd = open_regular_file(text, 100, &size);
  EXPECT_GE(fd.get(), 0);
  EXPECT_EQ(size, 8u);
  EXPECT_EQ(describe_bytes(17), "17 bytes");
  EXPECT_EQ(describe_bytes(5'200'000'000), "5.2 GB");
  EXPECT_EQ(describe_bytes(64ull << 20), "67 MB");
}

}  // namespace
}  // namespace epoch
