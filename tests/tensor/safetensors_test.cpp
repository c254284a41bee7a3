// safetensors: round trips, the exact bytes of a tiny file, every corrupt, truncated and
// hostile header we could think of, and atomic replacement when a save fails.
#include "epoch/tensor/safetensors.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <span>

#include "testing/testing.h"

namespace epoch {
namespace {

namespace fs = std::filesystem;

/// A fresh directory for one test, removed afterwards.
class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("epoch_safetensors_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

/// A file with this header text (unpadded) followed by `data`.
std::string file_with(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

/// Expects load_safetensors(path) to throw a one-line IoError naming path and containing `what`.
void expect_load_error(const std::string& path, const std::string& what) {
  try {
    load_safetensors(path);
    ADD_FAILURE() << "no error for " << what;
  } catch (const IoError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << "expected \"" << what << "\" in: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw(), cb.raw(),
                     static_cast<std::size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

Tensor u8_tensor(const Shape& shape, std::initializer_list<int> values) {
  Tensor t = Tensor::empty(shape, DType::u8);
  std::uint8_t* p = t.data<std::uint8_t>();
  for (int v : values) *p++ = static_cast<std::uint8_t>(v);
  return t;
}

TEST_F(SafetensorsTest, RoundTripKeepsValuesShapesOrderAndMetadata) {
  const std::vector<std::int32_t> ints = {-7, 0, 3, 2147483647};
  const Tensor big = testing::random_tensor({10, 6}, 5);
  const std::vector<NamedTensor> tensors = {
      {"weights", testing::random_tensor({2, 3}, 1)},
      {"scalar", Tensor::scalar(-3.25f)},
      {"labels", Tensor::from_ints({4}, ints)},
      {"pixels", u8_tensor({2, 2, 2}, {0, 1, 127, 128, 200, 254, 255, 9})},
      {"empty", Tensor::zeros({0, 3})},
      {"a_view", big.narrow0(4, 3)},  // a view with an offset: only its rows are saved
  };
  const std::map<std::string, std::string> metadata = {
      {"model", "lenet"}, {"preprocessing", R"({"rescale":0.00392})"}, {"note", "h\u00e9llo"}};
  save_safetensors(path("m.safetensors"), tensors, metadata);

  const SafetensorsFile f = load_safetensors(path("m.safetensors"));
  ASSERT_EQ(f.tensors.size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(f.tensors[i].name, tensors[i].name);
    EXPECT_TRUE(same_bytes(f.tensors[i].tensor, tensors[i].tensor)) << tensors[i].name;
    EXPECT_TRUE(f.tensors[i].tensor.device().is_cpu());
  }
  EXPECT_EQ(f.at("scalar").shape(), Shape{});
  EXPECT_EQ(f.at("scalar").item(), -3.25f);
  EXPECT_EQ(f.at("labels").data<std::int32_t>()[3], 2147483647);
  EXPECT_EQ(f.metadata, metadata);
  EXPECT_EQ(f.find("missing"), nullptr);
  EXPECT_THROW(f.at("missing"), IoError);
  EXPECT_EQ(listing(), std::vector<std::string>{"m.safetensors"});  // no temp file left
}

TEST_F(SafetensorsTest, NoTensorsAndNoMetadata) {
  save_safetensors(path("e.safetensors"), {});
  EXPECT_EQ(read_bytes(path("e.safetensors")), le64(8) + "{}      ");
  const SafetensorsFile f = load_safetensors(path("e.safetensors"));
  EXPECT_TRUE(f.tensors.empty());
  EXPECT_TRUE(f.metadata.empty());
}

TEST_F(SafetensorsTest, ExactByteLayoutOfATinyFile) {
  Tensor b = u8_tensor({}, {7});
  save_safetensors(path("t.safetensors"),
                   {{"a", Tensor::from_vector({2}, {1.0f, -2.0f})}, {"b", b}}, {{"k", "v"}});
  // 130 bytes of JSON padded with 6 spaces to 136 = 0x88, then 1.0f, -2.0f and 7.
  const std::string header =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"U8","shape":[],"data_offsets":[8,9]}})"
      "      ";
  const std::string expected = std::string("\x88\0\0\0\0\0\0\0", 8) + header +
                               std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0\x07", 9);
  const std::string actual = read_bytes(path("t.safetensors"));
  EXPECT_EQ(actual.size(), 8u + 136u + 9u);
  EXPECT_EQ(actual, expected);
}

TEST_F(SafetensorsTest, ReadsAFileWrittenByHandInAnotherOrder) {
  // Header order differs from byte order, fields come in another order with an unknown extra
  // one, there is no padding, and the I32 value is little-endian.
  const std::string header =
      R"({"y":{"dtype":"I32","shape":[1],"data_offsets":[4,8]},)"
      R"("x":{"shape":[4],"dtype":"U8","data_offsets":[0,4],"extra":1},"__metadata__":{}})";
  write_bytes(path("h.safetensors"),
              file_with(header, std::string("\x05\x06\x00\x00\x01\x01\0\0", 8)));
  const SafetensorsFile f = load_safetensors(path("h.safetensors"));
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].name, "x");  // byte order, not header order
  EXPECT_EQ(f.tensors[0].tensor.shape(), Shape{4});
  EXPECT_EQ(f.tensors[0].tensor.data<std::uint8_t>()[1], 6);
  EXPECT_EQ(f.tensors[1].name, "y");
  EXPECT_EQ(f.tensors[1].tensor.data<std::int32_t>()[0], 257);
  EXPECT_TRUE(f.metadata.empty());
}

TEST_F(SafetensorsTest, MissingShortAndAbsurdFiles) {
  expect_load_error(path("nope.safetensors"), "no such file");
  expect_load_error(dir_.string(), "directory");
  // Neither a FIFO (without a writer: never waited for) nor a device is read.
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  expect_load_error(path("fifo"), "is a FIFO, not a regular file");
  expect_load_error("/dev/zero", "is a character device");
  write_bytes(path("f"), "");
  expect_load_error(path("f"), "shorter than the 8-byte");
  write_bytes(path("f"), "abcdefg");
  expect_load_error(path("f"), "shorter than the 8-byte");
  write_bytes(path("f"), le64(100) + "{}");
  expect_load_error(path("f"), "exceeds");
  write_bytes(path("f"), le64(std::uint64_t{1} << 40) + "{}");
  expect_load_error(path("f"), "absurd");
  write_bytes(path("f"), le64(~std::uint64_t{0}) + "{}");
  expect_load_error(path("f"), "absurd");
}

TEST_F(SafetensorsTest, MalformedHeaders) {
  const std::string f = path("f");
  const auto check = [&](const std::string& header, const std::string& data,
                         const std::string& what) {
    write_bytes(f, file_with(header, data));
    expect_load_error(f, what);
  };
  check(R"({"a":)", "", "not valid JSON");
  check("\x01\x02garbage", "", "not valid JSON");
  check(std::string("{\"a\":\"") + '\xff' + "\"}", "", "not valid JSON");  // invalid UTF-8
  check("[1, 2]", "", "not a JSON object");
  check(R"({"a":[1]})", "", "not an object");
  check(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", "abcd", "missing field \"dtype\"");
  check(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", "abcd", "missing field \"shape\"");
  check(R"({"a":{"dtype":"F32","shape":[1]}})", "abcd", "missing field \"data_offsets\"");
  check(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", "abcd", "\"F16\"");
  check(R"({"a":{"dtype":"WAT","shape":[1],"data_offsets":[0,4]}})", "abcd", "\"WAT\"");
  check(R"({"a":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", "abcd", "not a string");
  check(R"({"a":{"dtype":"F32","shape":2,"data_offsets":[0,4]}})", "abcd", "not an array");
  check(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd", "non-negative");
  check(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", "abcd", "non-negative");
  check(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "abcd", "two non-negative");
  check(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", "abcd", "two non-negative");
  check(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", "abcd", "end before");
  check(R"({"__metadata__":{"k":1}})", "", "metadata \"k\" is not a string");
  check(R"({"__metadata__":[]})", "", "\"__metadata__\" is not an object");
}

TEST_F(SafetensorsTest, InconsistentShapesAndOffsets) {
  const std::string f = path("f");
  const auto check = [&](const std::string& header, const std::string& data,
                         const std::string& what) {
    write_bytes(f, file_with(header, data));
    expect_load_error(f, what);
  };
  const std::string d12 = "abcdefghijkl";
  check(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "abcdefgh", "needs 12 bytes");
  check(R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})", "abcd", "reach past");
  check(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
        R"("b":{"dtype":"U8","shape":[8],"data_offsets":[4,12]}})",
        d12, "overlap");
  check(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
        R"("b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}})",
        d12, "gap");
  check(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})", "abcdefgh", "gap");
  check(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", "abcdefgh", "4 trailing bytes");
  check(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})", "abcd",
        "absurdly large");
  check(R"({"a":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,4]}})", "abcd",
        "absurdly large");
  // No elements, but int64 strides would overflow.
  check(R"({"a":{"dtype":"U8","shape":[0,4611686018427387904,4],"data_offsets":[0,0]}})", "",
        "absurdly large");
  check(R"({"__metadata__":{},"__metadata__":{}})", "", "\"__metadata__\" twice");
  check(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
        R"("a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
        "abcdefgh", "\"a\" twice");
}

TEST_F(SafetensorsTest, EveryTruncationOfAValidFileIsAnError) {
  const std::vector<std::int32_t> ints = {1, 2};
  save_safetensors(path("ok"),
                   {{"w", testing::random_tensor({3, 2}, 3)}, {"n", Tensor::from_ints({2}, ints)}},
                   {{"step", "12"}});
  const std::string bytes = read_bytes(path("ok"));
  for (std::size_t len = 0; len < bytes.size(); ++len) {
    write_bytes(path("cut"), bytes.substr(0, len));
    EXPECT_THROW(load_safetensors(path("cut")), IoError) << "truncated to " << len;
  }
  write_bytes(path("long"), bytes + "x");
  expect_load_error(path("long"), "1 trailing bytes");
}

TEST_F(SafetensorsTest, BadArgumentsThrowBeforeWriting) {
  const Tensor t = Tensor::scalar(1.0f);
  EXPECT_THROW(save_safetensors(path("x"), {{"a", t}, {"a", t}}), InvalidArgument);
  EXPECT_THROW(save_safetensors(path("x"), {{"", t}}), InvalidArgument);
  EXPECT_THROW(save_safetensors(path("x"), {{"__metadata__", t}}), InvalidArgument);
  EXPECT_THROW(save_safetensors(path("x"), {{"u", Tensor()}}), InvalidArgument);
  EXPECT_THROW(save_safetensors(path("x"), {{"bad\xff", t}}), InvalidArgument);
  EXPECT_THROW(save_safetensors("", {}), InvalidArgument);
  EXPECT_TRUE(listing().empty());
}

TEST_F(SafetensorsTest, FailedSaveLeavesThePreviousFileIntact) {
  const std::string target = path("ckpt.safetensors");
  save_safetensors(target, {{"w", testing::random_tensor({4}, 1)}}, {{"step", "1"}});
  const std::string before = read_bytes(target);

  // A tensor that cannot be written.
  EXPECT_THROW(save_safetensors(target, {{"w", testing::random_tensor({4}, 2)}, {"u", Tensor()}}),
               InvalidArgument);
  EXPECT_EQ(read_bytes(target), before);

  // The disk "fills up" half-way through the data: RLIMIT_FSIZE makes write() fail with EFBIG.
  bool threw = false;
  std::string message;
  try {
    const testing::FileSizeLimit disk_full(4096);
    save_safetensors(target, {{"w", testing::random_tensor({4096}, 3)}}, {{"step", "2"}});
  } catch (const IoError& e) {
    threw = true;
    message = e.what();
  }
  EXPECT_TRUE(threw);
  EXPECT_NE(message.find(target), std::string::npos) << message;
  EXPECT_EQ(read_bytes(target), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"ckpt.safetensors"});  // temp file removed

  // A target that is a directory: the rename fails and the temp file goes away.
  fs::create_directory(path("adir"));
  EXPECT_THROW(save_safetensors(path("adir"), {{"w", Tensor::scalar(1.0f)}}), IoError);
  EXPECT_EQ(listing(), (std::vector<std::string>{"adir", "ckpt.safetensors"}));

  // A missing directory: nothing to create the temp file in.
  EXPECT_THROW(save_safetensors(path("no/such/dir/x.safetensors"), {}), IoError);

  // A successful save replaces the file.
  save_safetensors(target, {{"w", Tensor::scalar(5.0f)}});
  EXPECT_EQ(load_safetensors(target).at("w").item(), 5.0f);
  EXPECT_EQ(listing(), (std::vector<std::string>{"adir", "ckpt.safetensors"}));
}

TEST_F(SafetensorsTest, BytesOverloadMatchesTheFileReader) {
  save_safetensors(path("ok"), {{"w", testing::random_tensor({3, 2}, 3)}}, {{"k", "v"}});
  const std::string good = read_bytes(path("ok"));
  const std::vector<std::string> cases = {
      good,
      good.substr(0, 5),
      good.substr(0, good.size() - 3),
      good + "x",
      file_with(R"({"a":)", ""),
      file_with(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "abcdefgh"),
      file_with(R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})", "abcd"),
      le64(std::uint64_t{1} << 40) + "{}"};
  // Each case gives the same tensors, or the same message (less its "[at file:line]").
  const auto outcome = [](const std::function<SafetensorsFile()>& load) -> std::string {
    try {
      const SafetensorsFile f = load();
      std::string out;
      for (const NamedTensor& t : f.tensors) {
        const std::size_t n =
            static_cast<std::size_t>(t.tensor.numel()) * dtype_size(t.tensor.dtype());
        out += t.name + shape_str(t.tensor.shape()) +
               std::string(static_cast<const char*>(t.tensor.raw()), n);
      }
      for (const auto& [k, v] : f.metadata) out += k + "=" + v;
      return out;
    } catch (const IoError& e) {
      const std::string msg = e.what();
      return "IoError " + msg.substr(0, msg.find(" [at "));
    }
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    write_bytes(path("case"), cases[i]);
    const std::string from_file = outcome([&] { return load_safetensors(path("case")); });
    const std::span<const std::uint8_t> bytes(
        reinterpret_cast<const std::uint8_t*>(cases[i].data()), cases[i].size());
    EXPECT_EQ(outcome([&] { return load_safetensors_bytes(bytes, path("case")); }), from_file)
        << "case " << i;
    EXPECT_EQ(from_file.rfind("IoError", 0) == 0, i > 0) << "case " << i << ": " << from_file;
  }
}

TEST_F(SafetensorsTest, SavesCudaTensors) {
  if (!memory::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const Tensor host = testing::random_tensor({3, 5}, 11);
  save_safetensors(path("g"), {{"g", host.to(Device::cuda())}});
  EXPECT_TRUE(same_bytes(load_safetensors(path("g")).at("g"), host));
}

}  // namespace
}  // namespace epoch
