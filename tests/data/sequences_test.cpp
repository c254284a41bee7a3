// Sequence folders: scanning (order, hidden files, empty and missing folders), clip cutting, and
// clip batches: the frames as written, resized to the model's size, identical for any thread
// count, and corrupt, truncated or vanished frames skipped (their clip) or refused; a sequence
// linked twice read once, and frames that are FIFOs or devices refused without blocking.
#include "epoch/data/sequences.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "epoch/data/image.h"
#include "epoch/data/image_codec.h"
#include "epoch/data/synth_video.h"
#include "testing/testing.h"

namespace epoch::data {
namespace {

namespace fs = std::filesystem;

// dir/<seq>/frame_<t>.png: frame t of sequence s has every pixel 10 s + t (gray 8x6).
void write_frames(const std::string& dir, const std::vector<std::int64_t>& lengths) {
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    const fs::path seq = fs::path(dir) / std::string("s").append(std::to_string(s));
    fs::create_directories(seq);
    for (std::int64_t t = 0; t < lengths[s]; ++t) {
      Image img;
      img.width = 8;
      img.height = 6;
      img.channels = 1;
      img.pixels.assign(48, static_cast<std::uint8_t>(10 * s + static_cast<std::size_t>(t)));
      char name[32];
      std::snprintf(name, sizeof name, "frame_%03lld.png", static_cast<long long>(t));
      write_png((seq / name).string(), img);
    }
  }
}

Preprocessing gray(std::int64_t h, std::int64_t w) {
  Preprocessing p;
  p.channels = 1;
  p.height = h;
  p.width = w;
  p.rescale = 1.0f;
  return p;
}

TEST(Sequences, ScansSequencesAndFramesInNameOrder) {
  testing::TempDir dir;
  write_frames(dir.path(), {3, 12});
  std::ofstream(dir / "s0/notes.txt") << "not a frame";
  std::ofstream(dir / "s1/.hidden.png") << "not a frame either";
  fs::create_directories(dir / ".cache");
  const SequenceFolder f = scan_sequence_folder(dir.path());
  ASSERT_EQ(f.names, (std::vector<std::string>{"s0", "s1"}));
  ASSERT_EQ(f.frames[0].size(), 3u);
  ASSERT_EQ(f.frames[1].size(), 12u);
  EXPECT_EQ(fs::path(f.frames[1][10]).filename(), "frame_010.png");  // 010 after 009, not 001
  EXPECT_EQ(f.total_frames(), 15);
}

TEST(Sequences, RefusesFoldersWithoutSequencesOrFrames) {
  testing::TempDir dir;
  EXPECT_THROW(scan_sequence_folder(dir / "missing"), IoError);
  EXPECT_THROW(scan_sequence_folder(dir.path()), ConfigError);  // no subfolders
  write_frames(dir.path(), {2});
  fs::create_directories(dir / "s9");
  try {
    scan_sequence_folder(dir.path());
    FAIL() << "an empty sequence was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("s9: a sequence without"), std::string::npos) << e.what();
  }
}

TEST(Sequences, CutsWholeClipsPerSequence) {
  testing::TempDir dir;
  write_frames(dir.path(), {3, 7});
  const SequenceFolder f = scan_sequence_folder(dir.path());
  EXPECT_EQ(cut_clips(f, 3, 3), (std::vector<Clip>{{0, 0}, {1, 0}, {1, 3}}));
  EXPECT_EQ(cut_clips(f, 4, 2), (std::vector<Clip>{{1, 0}, {1, 2}}));
  EXPECT_EQ(cut_clips(f, 7, 1), (std::vector<Clip>{{1, 0}}));
  EXPECT_THROW(cut_clips(f, 8, 1), ConfigError);
  EXPECT_THROW(cut_clips(f, 0, 1), ConfigError);
  EXPECT_THROW(cut_clips(f, 2, 0), ConfigError);
}

TEST(Sequences, ReadsClipsAsBatchesOfFrames) {
  testing::TempDir dir;
  write_frames(dir.path(), {4, 6});
  const SequenceFolder f = scan_sequence_folder(dir.path());
  const ClipReader reader(f, gray(6, 8), 3);
  const ClipBatch b = reader.read({{1, 2}, {0, 1}});
  ASSERT_EQ(b.x.shape(), (Shape{2, 3, 1, 6, 8}));
  EXPECT_TRUE(b.bad_files.empty());
  for (std::int64_t t = 0; t < 3; ++t) {
    EXPECT_EQ(b.x.f32()[(0 * 3 + t) * 48], 10.0f + 2 + t);  // sequence 1 from frame 2
    EXPECT_EQ(b.x.f32()[(1 * 3 + t) * 48 + 47], 1.0f + t);  // sequence 0 from frame 1
  }
  EXPECT_THROW(reader.read({{0, 2}}), InvalidArgument);  // frames 2..4 of a 4-frame sequence
  EXPECT_THROW(reader.read({{2, 0}}), InvalidArgument);
}

TEST(Sequences, ClipBatchesAreTheSameForAnyThreadCount) {
  testing::TempDir dir;
  VideoSynthConfig c;
  c.out_dir = dir / "v";
  c.sequences = 2;
  c.val_sequences = 0;
  c.frames = 5;
  c.width = 40;
  c.height = 30;
  c.format = "jpeg";
  write_synth_video(c);
  const SequenceFolder f = scan_sequence_folder(dir / "v/train");
  Preprocessing p;
  p.channels = 3;
  p.height = 24;  // resized from 40x30
  p.width = 32;
  const ClipReader reader(f, p, 4);
  const std::vector<Clip> clips = cut_clips(f, 4, 1);
  ASSERT_EQ(clips.size(), 4u);
  omp_set_num_threads(1);
  const ClipBatch one = reader.read(clips);
  omp_set_num_threads(3);
  const ClipBatch three = reader.read(clips);
  omp_set_num_threads(omp_get_num_procs());
  EXPECT_TRUE(testing::allclose(one.x, three.x, 0.0f, 0.0f));
  float lo = 1.0f, hi = 0.0f;
  for (float v : one.x.to_vector()) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GE(lo, 0.0f);
  EXPECT_LE(hi, 1.0f);
  EXPECT_GT(hi - lo, 0.3f);  // real pictures, rescaled to [0, 1]
}

TEST(Sequences, ABadFrameSkipsItsClipOrFailsTheBatch) {
  testing::TempDir dir;
  write_frames(dir.path(), {4, 4, 4});
  const SequenceFolder f = scan_sequence_folder(dir.path());
  std::ofstream(f.frames[1][2], std::ios::trunc) << "corrupt";  // not an image
  const std::string png = f.frames[2][0];
  fs::resize_file(png, fs::file_size(png) / 2);  // truncated
  const ClipReader reader(f, gray(6, 8), 2);
  const std::vector<Clip> clips = {{0, 0}, {1, 0}, {1, 2}, {2, 2}, {2, 0}};
  Warnings warnings(nullptr);
  const ClipBatch b = reader.read(clips, OnBadImage::skip, &warnings);
  EXPECT_EQ(b.clips, (std::vector<Clip>{{0, 0}, {1, 0}, {2, 2}}));
  ASSERT_EQ(b.x.size(0), 3);
  EXPECT_EQ(b.x.f32()[2 * 2 * 48], 22.0f);  // the third kept clip: sequence 2 from frame 2
  EXPECT_EQ(b.bad_files, (std::vector<std::string>{f.frames[1][2], f.frames[2][0]}));
  EXPECT_EQ(warnings.count("bad images"), 2);
  try {
    reader.read(clips, OnBadImage::fail);
    FAIL() << "a corrupt frame was accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(f.frames[1][2]), std::string::npos) << e.what();
  }
  fs::remove(f.frames[0][1]);  // a frame that vanished after the scan
  EXPECT_EQ(reader.read({{0, 0}, {0, 2}}).clips, (std::vector<Clip>{{0, 2}}));
}

TEST(Sequences, ASequenceLinkedTwiceIsReadOnceWithAWarning) {
  testing::TempDir dir;
  write_frames(dir.path(), {3, 4});
  fs::create_directory_symlink(dir / "s1", dir / "a_copy");  // sorts before the real s1
  fs::create_directory_symlink(dir.path(), dir / "z_root");  // the folder itself
  Warnings warnings(nullptr);
  const SequenceFolder f = scan_sequence_folder(dir.path(), &warnings);
  EXPECT_EQ(f.names, (std::vector<std::string>{"s0", "s1"}));  // the real folder kept
  EXPECT_EQ(f.total_frames(), 7);
  EXPECT_EQ(warnings.count("linked sequences"), 2);
  // The message names the link and what it duplicates.
  std::FILE* text = std::tmpfile();
  ASSERT_NE(text, nullptr);
  {
    Warnings shown(text);
    scan_sequence_folder(dir.path(), &shown);
  }
  std::rewind(text);
  std::string printed(4096, '\0');
  printed.resize(std::fread(printed.data(), 1, printed.size(), text));
  std::fclose(text);
  EXPECT_NE(printed.find(dir / "a_copy" + ": the same sequence folder as " + (dir / "s1")),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find(dir / "z_root"), std::string::npos) << printed;
  // Two links to a folder outside: the first by name is kept.
  testing::TempDir other;
  write_frames(other.path(), {5});
  fs::create_directory_symlink(other / "s0", dir / "x1");
  fs::create_directory_symlink(other / "s0", dir / "x2");
  EXPECT_EQ(scan_sequence_folder(dir.path()).names,
            (std::vector<std::string>{"s0", "s1", "x1"}));
}

TEST(Sequences, FramesThatAreFifosDevicesOrFoldersAreBadFramesAndNeverBlock) {
  alarm(20);  // a FIFO frame used to be left out silently; one read would block for ever
  testing::TempDir dir;
  write_frames(dir.path(), {4, 4, 4});
  ASSERT_EQ(::mkfifo((dir / "s0/frame_001b.png").c_str(), 0600), 0);
  fs::create_symlink("/dev/zero", dir / "s1/frame_001b.png");
  fs::create_directory(dir / "s2/frame_001b.png");
  const SequenceFolder f = scan_sequence_folder(dir.path());
  ASSERT_EQ(f.total_frames(), 15);  // listed: left out, they would close the gap unseen
  EXPECT_EQ(fs::path(f.frames[0][2]).filename(), "frame_001b.png");
  const ClipReader reader(f, gray(6, 8), 2);
  std::FILE* text = std::tmpfile();
  ASSERT_NE(text, nullptr);
  {
    Warnings warnings(text);
    const ClipBatch b =
        reader.read({{0, 0}, {0, 1}, {1, 2}, {2, 2}, {2, 3}, {0, 3}}, OnBadImage::skip, &warnings);
    EXPECT_EQ(b.clips, (std::vector<Clip>{{0, 0}, {2, 3}, {0, 3}}));
    EXPECT_EQ(warnings.count("bad images"), 3);
  }
  std::rewind(text);
  std::string printed(8192, '\0');
  printed.resize(std::fread(printed.data(), 1, printed.size(), text));
  std::fclose(text);
  EXPECT_NE(printed.find(f.frames[0][2] + ": is a FIFO"), std::string::npos) << printed;
  EXPECT_NE(printed.find(f.frames[1][2] + ": is a character device"), std::string::npos)
      << printed;
  try {
    reader.read({{2, 1}}, OnBadImage::fail);
    FAIL() << "a folder was read as a frame";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(f.frames[2][2] + ": is a directory"), std::string::npos)
        << e.what();
  }
  alarm(0);
}

TEST(Sequences, AFileIsNotASequenceFolder) {
  testing::TempDir dir;
  write_frames(dir.path(), {2});
  for (const std::string& path : {dir / "s0/frame_000.png", std::string("/dev/null")}) {
    try {
      scan_one_sequence(path);
      FAIL() << "scanned " << path;
    } catch (const IoError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ": is ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find("not a folder"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(scan_sequence_folder(dir / "s0/frame_000.png"), IoError);
}

}  // namespace
}  // namespace epoch::data
