// SHA-256 against FIPS 180-4's example digests, at every length around the padding's boundary
// against a digest computed in two ways.
#include "epoch/tensor/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace epoch {
namespace {

TEST(Sha256, TheStandardsExamples) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, LengthsAroundABlockDifferAndRepeat) {
  // 55, 56 and 64 bytes are where the length field moves to a second block.
  std::string previous;
  for (std::size_t n = 50; n <= 130; ++n) {
    const std::string digest = sha256_hex(std::string(n, 'x'));
    EXPECT_EQ(digest.size(), 64u);
    EXPECT_NE(digest, previous) << n;
    EXPECT_EQ(digest, sha256_hex(std::string(n, 'x')));
    previous = digest;
  }
  EXPECT_EQ(sha256_hex(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

}  // namespace
}  // namespace epoch
