// Warnings: one line each without developer locations, the first few of a kind shown and the
// rest counted into one summary line, safe from many threads.
#include "epoch/tensor/warnings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "epoch/tensor/text.h"

namespace epoch {
namespace {

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string text(1 << 16, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  return text;
}

TEST(Warnings, LocationsAreDropped) {
  EXPECT_EQ(without_location("a.png: empty file [at /src/data/image_codec.cpp:406]"),
            "a.png: empty file");
  EXPECT_EQ(without_location("outer: inner [check `x > 0` failed at f.cpp:3] [at g.cpp:9]"),
            "outer: inner");
  EXPECT_EQ(without_location("a [b] c [not a location]"), "a [b] c [not a location]");
  // A wrapped message leaves its marker in the middle; a check's expression may hold brackets.
  EXPECT_EQ(without_location("no report written: x.json: bad [at /b/src/report/r.cpp:12] "
                             "(line 3) [at /b/src/cli/c.cpp:40]"),
            "no report written: x.json: bad (line 3)");
  EXPECT_EQ(without_location("shape [check `a[0] == b[1]` failed at /b/src/ops/x.cpp:7], then"),
            "shape, then");
  EXPECT_EQ(without_location("keep [at the start] and [at x:y]"),
            "keep [at the start] and [at x:y]");
}

TEST(Text, Utf8IsCheckedAndBadBytesArePrintedAsEscapes) {
  EXPECT_TRUE(valid_utf8("plain"));
  EXPECT_TRUE(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x88"));
  EXPECT_FALSE(valid_utf8("bad\xff"));
  EXPECT_FALSE(valid_utf8("\xc3"));              // cut
  EXPECT_FALSE(valid_utf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(valid_utf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_EQ(printable("bad\xff\xfename"), "bad\\xff\\xfename");
  EXPECT_EQ(printable("caf\xc3\xa9\n"), "caf\xc3\xa9\\x0a");
}

TEST(Warnings, TheFirstFewAreShownThenCounted) {
  std::FILE* f = std::tmpfile();
  {
    Warnings w(f, 3);
    for (int i = 0; i < 10; ++i) w.warn("bad images", "file" + std::to_string(i) + " [at x.cpp:1]");
    w.warn("temporary files", "removed two");
    EXPECT_EQ(w.count("bad images"), 10);
    EXPECT_EQ(w.count("nothing"), 0);
    w.summarize();
    w.warn("bad images", "file10");
  }  // the destructor summarizes what came after
  const std::string text = read_all(f);
  std::fclose(f);
  EXPECT_EQ(text,
            "epoch: warning: file0\n"
            "epoch: warning: file1\n"
            "epoch: warning: file2\n"
            "epoch: warning: removed two\n"
            "epoch: warning: 7 more bad images not shown\n"
            "epoch: warning: 1 more bad images not shown\n");
}

TEST(Warnings, ManyThreadsCountExactly) {
  Warnings w(nullptr, 5);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) w.warn("k", "m");
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(w.count("k"), 8000);
}

}  // namespace
}  // namespace epoch
