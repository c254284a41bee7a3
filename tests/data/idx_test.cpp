// IDX reader: raw and gzip round trips of files the test writes itself, and every malformed,
// truncated or hostile file that must end in one clear IoError naming the file.
#include "epoch/data/idx.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <functional>
#include <span>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace epoch::data {
namespace {

namespace fs = std::filesystem;

class IdxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("epoch_idx_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

/// IDX bytes: 00 00 type ndims, big-endian dims, then the payload.
std::string idx_bytes(int type, const std::vector<std::uint32_t>& dims,
                      const std::string& payload) {
  std::string s = {'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>(d >> shift));
  return s + payload;
}

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 37 + 11) % 256);
  return s;
}

void write_raw(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
}

std::string read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Expects read_idx(path) to throw a one-line IoError naming path and containing `what`.
void expect_error(const std::string& path, const std::string& what) {
  try {
    read_idx(path);
    ADD_FAILURE() << "no error for " << what;
  } catch (const IoError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << "expected \"" << what << "\" in: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

void expect_tensor(const Tensor& t, const Shape& shape, const std::string& payload) {
  EXPECT_EQ(t.dtype(), DType::u8);
  EXPECT_TRUE(t.device().is_cpu());
  ASSERT_EQ(t.shape(), shape);
  ASSERT_EQ(static_cast<std::size_t>(t.numel()), payload.size());
  EXPECT_EQ(std::memcmp(t.raw(), payload.data(), payload.size()), 0);
}

TEST_F(IdxTest, RawRoundTripForOneToFourDims) {
  const std::string p3 = pattern(3 * 4 * 5);
  write_raw(path("a"), idx_bytes(0x08, {3, 4, 5}, p3));
  expect_tensor(read_idx(path("a")), {3, 4, 5}, p3);
  write_raw(path("b"), idx_bytes(0x08, {7}, pattern(7)));
  expect_tensor(read_idx(path("b")), {7}, pattern(7));
  write_raw(path("c"), idx_bytes(0x08, {2, 1, 3, 2}, pattern(12)));
  expect_tensor(read_idx(path("c")), {2, 1, 3, 2}, pattern(12));
  write_raw(path("d"), idx_bytes(0x08, {0, 28, 28}, ""));
  expect_tensor(read_idx(path("d")), {0, 28, 28}, "");
}

TEST_F(IdxTest, GzipIsDetectedByMagicNotByName) {
  const std::string payload = pattern(6 * 28 * 28);
  const std::string bytes = idx_bytes(0x08, {6, 28, 28}, payload);
  write_gz(path("images.gz"), bytes);
  write_gz(path("no-extension"), bytes);  // compressed, plain name
  write_raw(path("raw.gz"), bytes);       // raw, misleading name
  const std::string gz = read_raw(path("no-extension"));
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_LT(gz.size(), bytes.size());
  for (const char* name : {"images.gz", "no-extension", "raw.gz"})
    expect_tensor(read_idx(path(name)), {6, 28, 28}, payload);
}

TEST_F(IdxTest, WrongMagicTypeOrDimCount) {
  write_raw(path("f"), std::string("\x01\x00\x08\x01\x00\x00\x00\x01x", 9));
  expect_error(path("f"), "not an IDX file");
  write_raw(path("f"), std::string("PK\x03\x04 zip file", 13));
  expect_error(path("f"), "not an IDX file");
  write_raw(path("f"), idx_bytes(0x0D, {2}, std::string(8, 'x')));
  expect_error(path("f"), "type code 0x0d (float)");
  write_raw(path("f"), idx_bytes(0x0C, {2}, std::string(8, 'x')));
  expect_error(path("f"), "type code 0x0c (int)");
  write_raw(path("f"), idx_bytes(0x08, {}, ""));
  expect_error(path("f"), "0 dims");
  write_raw(path("f"), idx_bytes(0x08, {1, 1, 1, 1, 1}, "x"));
  expect_error(path("f"), "5 dims");
}

TEST_F(IdxTest, TruncatedHeaderPayloadAndTrailingBytes) {
  write_raw(path("f"), std::string("\0\0", 2));
  expect_error(path("f"), "expected 4 magic bytes, got 2");
  const std::string full = idx_bytes(0x08, {2, 3, 4}, pattern(24));
  write_raw(path("f"), full.substr(0, 10));
  expect_error(path("f"), "truncated IDX header: expected 16 bytes, got 10");
  write_raw(path("f"), full.substr(0, 16 + 23));
  expect_error(path("f"), "truncated IDX payload: expected 24 bytes");
  expect_error(path("f"), "got 23");
  write_raw(path("f"), full + "abc");
  expect_error(path("f"), "3 trailing bytes");
  // The same inside a well-formed gzip stream.
  write_gz(path("g"), full.substr(0, 16 + 20));
  expect_error(path("g"), "expected 24 bytes");
  write_gz(path("g"), full + "z");
  expect_error(path("g"), "1 trailing bytes");
  // Every cut of a raw file is an error.
  for (std::size_t len = 0; len < full.size(); ++len) {
    write_raw(path("cut"), full.substr(0, len));
    EXPECT_THROW(read_idx(path("cut")), IoError) << len;
  }
}

TEST_F(IdxTest, CutOrCorruptGzipStream) {
  const std::string bytes = idx_bytes(0x08, {100, 100}, pattern(10000));
  write_gz(path("ok.gz"), bytes);
  const std::string gz = read_raw(path("ok.gz"));
  write_raw(path("cut.gz"), gz.substr(0, gz.size() / 2));
  EXPECT_THROW(read_idx(path("cut.gz")), IoError);
  write_raw(path("cut.gz"), gz.substr(0, gz.size() - 4));  // only the length trailer missing
  EXPECT_THROW(read_idx(path("cut.gz")), IoError);
  std::string bad = gz;
  for (std::size_t i = 20; i < 40 && i < bad.size(); ++i) bad[i] = static_cast<char>(~bad[i]);
  write_raw(path("bad.gz"), bad);
  EXPECT_THROW(read_idx(path("bad.gz")), IoError);
  write_raw(path("tiny.gz"), "\x1f\x8b");
  EXPECT_THROW(read_idx(path("tiny.gz")), IoError);
}

TEST_F(IdxTest, HugeDimsAreRefusedBeforeAllocating) {
  write_raw(path("f"), idx_bytes(0x08, {65536, 65536, 65536, 65536}, "x"));
  expect_error(path("f"), "exceed the limit");
  write_raw(path("f"), idx_bytes(0x08, {0xFFFFFFFFu, 0xFFFFFFFFu}, "x"));
  expect_error(path("f"), "exceed the limit");
  // Empty, yet its strides would overflow (found by fuzz_idx).
  write_raw(path("f"), idx_bytes(0x08, {0, 0x10000001u, 0x00600000u, 0x00080300u}, ""));
  expect_error(path("f"), "exceed the limit");
  write_raw(path("f"), idx_bytes(0x08, {(1u << 31) + 1}, "x"));
  expect_error(path("f"), "exceed the limit");
  // Exactly at the limit the header is acceptable; the missing payload is the error.
  write_raw(path("f"), idx_bytes(0x08, {1u << 16, 1u << 15}, "x"));
  expect_error(path("f"), "truncated IDX payload");
}

TEST_F(IdxTest, EmptyFileDirectoryAndMissingFile) {
  write_raw(path("empty"), "");
  expect_error(path("empty"), "empty file");
  expect_error(dir_.string(), "is a directory");
  expect_error(path("missing"), "no such file");
}

TEST_F(IdxTest, FifosAndDevicesAreRefusedWithoutReading) {
  alarm(20);  // the old reader blocked on a FIFO for ever and read /dev/zero to the end
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  expect_error(path("pipe"), "is a FIFO, not a regular file");
  fs::create_symlink("/dev/zero", path("zero.idx"));
  expect_error(path("zero.idx"), "is a character device, not a regular file");
  expect_error("/dev/zero", "is a character device");
  alarm(0);
}

TEST_F(IdxTest, AGzipStreamIsInflatedNoFurtherThanItsDimsAndALittleMore) {
  // 64 MB of zeros after a 4-byte payload inflate from 64 KB of gzip; counting them all is
  // what a bomb of terabytes would make the reader do. The count stops past 1 MiB.
  const std::string bomb = idx_bytes(0x08, {4}, "abcd") + std::string(std::size_t{64} << 20, '\0');
  write_gz(path("bomb.gz"), bomb);
  EXPECT_LT(fs::file_size(path("bomb.gz")), std::uintmax_t{1} << 20);
  expect_error(path("bomb.gz"), "more than 1048576 trailing bytes after the 4-byte IDX payload");
  const std::string gz = read_raw(path("bomb.gz"));
  try {
    read_idx_bytes({reinterpret_cast<const std::uint8_t*>(gz.data()), gz.size()}, "bomb");
    ADD_FAILURE() << "read a gzip bomb";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 1048576 trailing bytes"), std::string::npos)
        << e.what();
  }
}

/// The outcome of one read, for comparing the file and in-memory readers: the tensor's shape
/// and bytes, or the error message without its "[at file:line]" suffix.
std::string outcome(const std::function<Tensor()>& read) {
  try {
    const Tensor t = read();
    return shape_str(t.shape()) + " " +
           std::string(static_cast<const char*>(t.raw()), static_cast<std::size_t>(t.numel()));
  } catch (const IoError& e) {
    const std::string msg = e.what();
    return "IoError " + msg.substr(0, msg.find(" [at "));
  }
}

TEST_F(IdxTest, BytesOverloadMatchesTheFileReader) {
  const std::string full = idx_bytes(0x08, {20, 30}, pattern(600));
  write_gz(path("gz"), full);
  const std::string gz = read_raw(path("gz"));
  write_gz(path("gz2"), full.substr(0, 100));
  const std::string first = read_raw(path("gz2"));
  write_gz(path("gz3"), full.substr(100));
  const std::string concatenated = first + read_raw(path("gz3"));  // two gzip members
  std::string flipped = gz;
  flipped[flipped.size() - 6] = static_cast<char>(~flipped[flipped.size() - 6]);  // CRC
  const std::vector<std::string> cases = {
      full,         full.substr(0, 3),     full.substr(0, 300), full + "x",
      gz,           gz.substr(0, 2),       gz.substr(0, 30),    gz.substr(0, gz.size() - 1),
      concatenated, gz + "trailing bytes", flipped,             "",
      idx_bytes(0x0D, {2}, "12345678"),    idx_bytes(0x08, {0xFFFFFFFFu, 0xFFFFFFFFu}, "x")};
  int errors = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    write_raw(path("case"), cases[i]);
    const std::string from_file = outcome([&] { return read_idx(path("case")); });
    const std::span<const std::uint8_t> bytes(
        reinterpret_cast<const std::uint8_t*>(cases[i].data()), cases[i].size());
    EXPECT_EQ(outcome([&] { return read_idx_bytes(bytes, path("case")); }), from_file)
        << "case " << i;
    errors += from_file.rfind("IoError", 0) == 0;
  }
  EXPECT_EQ(outcome([&] { return read_idx_bytes({}, "x"); }).substr(0, 10), "IoError x:");
  EXPECT_EQ(errors, 10);  // all but full, gz, concatenated, gz + trailing bytes
}

}  // namespace
}  // namespace epoch::data
