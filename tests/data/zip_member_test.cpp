// read_zip_member on Keras's own .keras archive (stored) and a deflated one, then every
// truncation and a sweep of corrupted bytes: the member as written or one IoError, never a
// crash or other bytes.
#include "epoch/data/zip_member.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "epoch/tensor/error.h"

namespace epoch::data {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(EPOCH_SOURCE_DIR) + "/tests/models/keras/" + name,
                   std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(ZipMember, ReadsStoredAndDeflatedMembers) {
  const std::string stored = read_zip_member(fixture("residual.keras"), "config.json", "r.keras");
  const std::string deflated =
      read_zip_member(fixture("residual_deflated.keras"), "config.json", "d.keras");
  EXPECT_EQ(stored, deflated);
  EXPECT_EQ(stored.rfind("{\"module\": \"keras", 0), 0u) << stored.substr(0, 40);
  EXPECT_NE(read_zip_member(fixture("residual.keras"), "metadata.json", "r.keras").find("keras"),
            std::string::npos);
}

TEST(ZipMember, RefusesWhatIsNotThere) {
  const std::string zip = fixture("residual.keras");
  try {
    read_zip_member(zip, "model.json", "r.keras");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("r.keras: the zip archive holds no model.json"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(read_zip_member("not a zip at all, just some text", "config.json", "x"), IoError);
  EXPECT_THROW(read_zip_member("", "config.json", "x"), IoError);
  EXPECT_THROW(read_zip_member(zip, "config.json", "x", 100), IoError);  // beyond max_bytes
}

TEST(ZipMember, TruncatedAndCorruptArchivesGiveOneError) {
  for (const char* name : {"residual.keras", "residual_deflated.keras"}) {
    const std::string zip = fixture(name);
    ASSERT_GT(zip.size(), 1000u);
    for (std::size_t keep = 0; keep < zip.size(); keep += 1 + zip.size() / 97) {
      try {
        (void)read_zip_member(zip.substr(0, keep), "config.json", name);
      } catch (const IoError&) {
      }
    }
    // A changed byte is an error or (outside the member: its own header, another member) the
    // same member: the CRC-32 catches a change inside it.
    const std::string good = read_zip_member(zip, "config.json", name);
    std::string bad = zip;
    for (std::size_t i = 0; i < bad.size(); i += 1 + bad.size() / 613) {
      bad[i] = static_cast<char>(bad[i] ^ 0x5a);
      try {
        EXPECT_EQ(read_zip_member(bad, "config.json", name), good) << "byte " << i;
      } catch (const IoError&) {
      }
      bad[i] = zip[i];
    }
  }
}

}  // namespace
}  // namespace epoch::data
