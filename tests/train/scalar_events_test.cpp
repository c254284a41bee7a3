// TensorBoard event files: read back by a small reader of our own (framing, both CRCs, the
// protobuf fields), the errors of an unwritable folder or a full disk, MetricsLog's scalars and
// its restart mark on a resumed run, and TensorBoard's own reader where it is installed.
#include "epoch/train/scalar_events.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "epoch/tensor/error.h"
#include "epoch/train/metrics_log.h"
#include "epoch/train/run_dir.h"
#include "testing/testing.h"

namespace epoch::train {
namespace {
namespace fs = std::filesystem;

// Bit by bit, unlike the table of the writer, so the two share no code.
std::uint32_t crc32c(const std::string& bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : bytes) {
    crc ^= static_cast<std::uint8_t>(ch);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::uint32_t masked(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

struct Cursor {
  const std::string& bytes;
  std::size_t pos = 0;

  bool done() const { return pos >= bytes.size(); }
  std::uint64_t fixed(int n) {
    if (pos + n > bytes.size()) throw std::runtime_error("truncated fixed-width field");
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i)
      v |= std::uint64_t{static_cast<std::uint8_t>(bytes[pos++])} << 8 * i;
    return v;
  }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const std::uint64_t b = fixed(1);
      v |= (b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw std::runtime_error("varint longer than 10 bytes");
  }
  std::string take(std::uint64_t n) {
    if (pos + n > bytes.size()) throw std::runtime_error("truncated length-delimited field");
    std::string s = bytes.substr(pos, n);
    pos += n;
    return s;
  }
  void skip(int wire_type) {
    switch (wire_type) {
      case 0:
        varint();
        break;
      case 1:
        fixed(8);
        break;
      case 2:
        take(varint());
        break;
      case 5:
        fixed(4);
        break;
      default:
        throw std::runtime_error("bad wire type " + std::to_string(wire_type));
    }
  }
};

struct Event {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> values;
  std::uint64_t session_status = 0;  // 1: START
};

Event parse_event(const std::string& bytes) {
  Event e;
  for (Cursor c{bytes}; !c.done();) {
    const std::uint64_t key = c.varint();
    const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
    if (field == 1 && wire == 1) {
      e.wall_time = std::bit_cast<double>(c.fixed(8));
    } else if (field == 2 && wire == 0) {
      e.step = static_cast<std::int64_t>(c.varint());
    } else if (field == 3 && wire == 2) {
      e.file_version = c.take(c.varint());
    } else if (field == 5 && wire == 2) {
      const std::string summary = c.take(c.varint());
      for (Cursor s{summary}; !s.done();) {
        if (s.varint() != (1 << 3 | 2)) throw std::runtime_error("Summary: not a Value");
        const std::string value = s.take(s.varint());
        std::pair<std::string, float> v;
        for (Cursor f{value}; !f.done();) {
          const std::uint64_t k = f.varint();
          if (k == (1 << 3 | 2))
            v.first = f.take(f.varint());
          else if (k == (2 << 3 | 5))
            v.second = std::bit_cast<float>(static_cast<std::uint32_t>(f.fixed(4)));
          else
            f.skip(static_cast<int>(k & 7));
        }
        e.values.push_back(v);
      }
    } else if (field == 7 && wire == 2) {
      const std::string log = c.take(c.varint());
      for (Cursor s{log}; !s.done();) {
        const std::uint64_t k = s.varint();
        if (k == (1 << 3 | 0))
          e.session_status = s.varint();
        else
          s.skip(static_cast<int>(k & 7));
      }
    } else {
      c.skip(wire);
    }
  }
  return e;
}

// Every record of a TFRecord file, both CRCs of each checked.
std::vector<Event> read_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<Event> events;
  for (Cursor c{bytes}; !c.done();) {
    const std::string length = c.take(8);
    const std::uint64_t n = Cursor{length}.fixed(8);
    EXPECT_EQ(c.fixed(4), masked(crc32c(length))) << "length CRC of record " << events.size();
    const std::string data = c.take(n);
    EXPECT_EQ(c.fixed(4), masked(crc32c(data))) << "data CRC of record " << events.size();
    events.push_back(parse_event(data));
  }
  return events;
}

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find("tfevents") != std::string::npos)
      out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ScalarEvents, TheTestCrcIsCrc32c) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the standard check value
}

TEST(ScalarEvents, EventsReadBackWithTheirStepsTagsAndValues) {
  testing::TempDir dir;
  const double before =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string path;
  {
    ScalarEvents events(dir.path());
    path = events.path();
    events.write(0, {{"step/loss", 2.5}});
    events.write(10, {{"step/loss", 0.31}, {"step/lr", 1e-3}});
    events.write(std::int64_t{1} << 40, {{"epoch/test_loss", -7.25}});
  }
  EXPECT_EQ(event_files(dir.path()), std::vector<std::string>{path});
  const std::string name = fs::path(path).filename().string();
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;

  const std::vector<Event> events = read_events(path);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_TRUE(events[0].values.empty());
  for (const Event& e : events) {
    EXPECT_GE(e.wall_time, std::floor(before));
    EXPECT_LT(e.wall_time, before + 60);
  }
  EXPECT_EQ(events[1].step, 0);
  EXPECT_EQ(events[1].values, (std::vector<std::pair<std::string, float>>{{"step/loss", 2.5f}}));
  EXPECT_EQ(events[2].step, 10);
  EXPECT_EQ(events[2].values,
            (std::vector<std::pair<std::string, float>>{{"step/loss", 0.31f}, {"step/lr", 1e-3f}}));
  EXPECT_EQ(events[3].step, std::int64_t{1} << 40);
  EXPECT_EQ(events[3].values,
            (std::vector<std::pair<std::string, float>>{{"epoch/test_loss", -7.25f}}));
  for (std::size_t i = 1; i < events.size(); ++i) EXPECT_TRUE(events[i].file_version.empty());
}

TEST(ScalarEvents, EachWriterGetsItsOwnFile) {
  testing::TempDir dir;
  ScalarEvents first(dir.path());
  ScalarEvents second(dir.path());  // the same second, the same process
  EXPECT_NE(first.path(), second.path());
  EXPECT_EQ(event_files(dir.path()).size(), 2u);
  second.restart(42);
  const std::vector<Event> events = read_events(second.path());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_EQ(events[1].session_status, 1u);
  EXPECT_EQ(events[1].step, 42);
}

std::string io_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const IoError& e) {
    return e.what();
  }
  return "(no IoError)";
}

TEST(ScalarEvents, AnUnwritableFolderIsOneClearError) {
  testing::TempDir dir;
  const std::string missing = dir / "no/such/run";
  const std::string message = io_error_of([&] { ScalarEvents events(missing); });
  EXPECT_NE(message.find(missing + "/events.out.tfevents."), std::string::npos) << message;
  EXPECT_NE(message.find("cannot open for writing: No such file or directory"), std::string::npos)
      << message;

  std::ofstream(dir / "a_file") << "x";  // a file where the folder should be
  const std::string not_dir = io_error_of([&] { ScalarEvents events(dir / "a_file"); });
  EXPECT_NE(not_dir.find(dir / "a_file/events.out.tfevents."), std::string::npos) << not_dir;
  EXPECT_NE(not_dir.find("cannot open for writing"), std::string::npos) << not_dir;
}

TEST(ScalarEvents, AFullDiskIsAWriteError) {
  testing::TempDir dir;
  ScalarEvents events(dir.path());
  std::string message;
  {
    const testing::FileSizeLimit disk_full(256);
    std::vector<std::pair<std::string, double>> many;
    for (int i = 0; i < 64; ++i) many.emplace_back("step/value_" + std::to_string(i), i);
    message = io_error_of([&] { events.write(1, many); });
  }
  EXPECT_NE(message.find(events.path() + ": write failed"), std::string::npos) << message;
}

using Scalars = std::vector<std::pair<std::string, float>>;

// The records of a short image run, with the fields that must not become scalars.
void log_a_short_run(const std::string& path, double loss_at_20) {
  MetricsLog log(path);
  log.write({{"kind", "step"}, {"epoch", 1}, {"step", 10}, {"loss", 0.75}, {"lr", 0.001}});
  log.write({{"kind", "step"}, {"epoch", 1}, {"step", 20}, {"loss", loss_at_20}, {"lr", 0.001}});
  log.write({{"kind", "epoch"},
             {"epoch", 1},
             {"step", 20},
             {"train_loss", 0.5},
             {"test_loss", 0.625},
             {"test_accuracy", nullptr},
             {"images_per_s", 1234.5},
             {"diverged", false},
             {"model", "lenet"},
             {"nan_loss", std::numeric_limits<double>::quiet_NaN()}});
  log.write({{"kind", "note"}, {"loss", 1.0}});  // no step: metrics.jsonl only
}

TEST(MetricsLog, WritesJsonLinesAndTheSameScalarsToAnEventFile) {
  testing::TempDir dir;
  log_a_short_run(dir / "metrics.jsonl", 0.5);

  std::ifstream in(dir / "metrics.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1]["loss"], 0.5);

  const std::vector<std::string> files = event_files(dir.path());
  ASSERT_EQ(files.size(), 1u);
  const std::vector<Event> events = read_events(files[0]);
  ASSERT_EQ(events.size(), 4u);  // the version, two steps, one epoch
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_EQ(events[1].step, 10);
  EXPECT_EQ(events[1].values, (Scalars{{"step/loss", 0.75f}, {"step/lr", 0.001f}}));
  EXPECT_EQ(events[2].step, 20);
  EXPECT_EQ(events[3].step, 20);
  EXPECT_EQ(events[3].values, (Scalars{{"epoch/images_per_s", 1234.5f},
                                       {"epoch/test_loss", 0.625f},
                                       {"epoch/train_loss", 0.5f}}));
}

TEST(MetricsLog, AResumedRunMarksItsRestartInANewEventFile) {
  testing::TempDir dir;
  log_a_short_run(dir / "metrics.jsonl", 0.5);
  truncate_metrics_after(dir.path(), 10);  // killed after step 20, checkpointed at step 10
  {
    MetricsLog resumed(dir / "metrics.jsonl");
    resumed.write({{"kind", "step"}, {"epoch", 1}, {"step", 20}, {"loss", 0.25}});
  }
  const std::vector<std::string> files = event_files(dir.path());
  ASSERT_EQ(files.size(), 2u);
  const std::vector<Event> events = read_events(files[1]);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_EQ(events[1].session_status, 1u);  // START: the steps from 11 on are orphans
  EXPECT_EQ(events[1].step, 11);
  EXPECT_EQ(events[2].values, (Scalars{{"step/loss", 0.25f}}));
}

// The Python that has TensorBoard: EPOCH_TEST_PYTHON, else the venv that
// scripts/setup-test-tools.sh makes, else python3 on the PATH.
std::string tools_python() {
  if (const char* named = std::getenv("EPOCH_TEST_PYTHON"); named != nullptr && *named != '\0')
    return named;
  const std::string venv = std::string(EPOCH_SOURCE_DIR) + "/.venv-tools/bin/python";
  if (fs::exists(venv)) return venv;
  return "python3";
}

// Runs tests/train/read_tensorboard.py on `dir`: its `tag step value` lines.
std::vector<std::tuple<std::string, std::int64_t, float>> read_with_tensorboard(
    const std::string& dir, const std::string& err_file) {
  const std::string cmd = tools_python() + " " + EPOCH_SOURCE_DIR +
                          "/tests/train/read_tensorboard.py " + dir + " 2>" + err_file;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = fread(buf.data(), 1, buf.size(), pipe)) > 0;) out.append(buf.data(), n);
  const int status = pclose(pipe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream err(err_file);
    throw std::runtime_error(
        cmd + " failed:\n" +
        std::string((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>()));
  }
  std::vector<std::tuple<std::string, std::int64_t, float>> rows;
  std::istringstream lines(out);
  std::string tag;
  std::int64_t step = 0;
  double value = 0;
  while (lines >> tag >> step >> value) rows.emplace_back(tag, step, static_cast<float>(value));
  return rows;
}

TEST(ScalarEvents, TensorBoardReadsTheScalarsAndDropsOrphanedSteps) {
  const std::string python = tools_python();
  if (std::system((python + " -c 'import tensorboard' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << python
                 << " cannot import tensorboard (scripts/setup-test-tools.sh installs it)";
  testing::TempDir dir;
  const std::string run = dir / "run";
  fs::create_directories(run);
  log_a_short_run(run + "/metrics.jsonl", 0.5);
  truncate_metrics_after(run, 10);
  {
    MetricsLog resumed(run + "/metrics.jsonl");
    resumed.write({{"kind", "step"}, {"epoch", 1}, {"step", 20}, {"loss", 0.25}, {"lr", 0.001}});
  }
  const std::vector<std::tuple<std::string, std::int64_t, float>> expected = {
      {"step/loss", 10, 0.75f},
      {"step/loss", 20, 0.25f},  // the resumed run's, not the orphan's 0.5
      {"step/lr", 10, 0.001f},
      {"step/lr", 20, 0.001f}};
  EXPECT_EQ(read_with_tensorboard(run, dir / "stderr.txt"), expected);
}

}  // namespace
}  // namespace epoch::train
