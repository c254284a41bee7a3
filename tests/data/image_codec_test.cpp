// Image decoding and encoding: JPEG/PNG round trips of images made here, CMYK, EXIF orientation
// spliced into encoded files, DCT-domain scaling, and truncated, corrupt and hostile inputs
// that must each end in one IoError naming the file.
#include "epoch/data/image_codec.h"

#include <gtest/gtest.h>
#include <png.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "testing/testing.h"

namespace epoch::data {
namespace {

using Bytes = std::vector<std::uint8_t>;

/// A smooth image (JPEG keeps it well): channel c at (x, y) is a ramp in a direction of its own.
Image smooth_image(std::int64_t w, std::int64_t h, std::int64_t channels) {
  Image img{w, h, channels, Bytes(static_cast<std::size_t>(w * h * channels))};
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x)
      for (std::int64_t c = 0; c < channels; ++c) {
        const std::int64_t v = c == 0   ? 30 + 200 * x / w
                               : c == 1 ? 30 + 200 * y / h
                                        : 230 - 100 * (x + y) / (w + h);
        img.pixels[static_cast<std::size_t>((y * w + x) * channels + c)] =
            static_cast<std::uint8_t>(v);
      }
  return img;
}

double mean_abs_error(const Image& a, const Image& b) {
  EXPECT_EQ(a.pixels.size(), b.pixels.size());
  double sum = 0;
  for (std::size_t i = 0; i < a.pixels.size() && i < b.pixels.size(); ++i)
    sum += std::abs(int{a.pixels[i]} - int{b.pixels[i]});
  return sum / static_cast<double>(std::max<std::size_t>(a.pixels.size(), 1));
}

std::uint8_t at(const Image& img, std::int64_t x, std::int64_t y, std::int64_t c = 0) {
  return img.pixels[static_cast<std::size_t>((y * img.width + x) * img.channels + c)];
}

/// Byte offset of the first marker FF `code` (scanning from the start), or npos.
std::size_t find_marker(const Bytes& jpg, std::uint8_t code) {
  for (std::size_t i = 2; i + 1 < jpg.size(); ++i)
    if (jpg[i] == 0xff && jpg[i + 1] == code) return i;
  return std::string::npos;
}

void expect_io_error(const Bytes& bytes, const std::string& name, const std::string& problem,
                     const DecodeOptions& options = {}) {
  try {
    decode_image(bytes, name, options);
    ADD_FAILURE() << name << ": decoded, expected an IoError containing \"" << problem << "\"";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(name + ": ", 0), 0u) << what;
    EXPECT_NE(what.find(problem), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

// ---------------------------------------------------------------- round trips

TEST(ImageCodec, RgbJpegRoundTrip) {
  const Image img = smooth_image(67, 45, 3);  // not a multiple of the 16x16 MCU
  const Bytes jpg = encode_jpeg(img, 95);
  EXPECT_EQ(sniff_image_format(jpg), ImageFormat::jpeg);
  EXPECT_EQ(find_marker(jpg, 0xc2), std::string::npos);  // baseline, not progressive
  const Image out = decode_image(jpg, "rgb.jpg");
  ASSERT_EQ(out.width, 67);
  ASSERT_EQ(out.height, 45);
  ASSERT_EQ(out.channels, 3);
  EXPECT_LT(mean_abs_error(out, img), 1.5);
  // Lower quality: smaller file, larger error.
  const Bytes rough = encode_jpeg(img, 20);
  EXPECT_LT(rough.size(), jpg.size());
  EXPECT_GT(mean_abs_error(decode_image(rough, "rough.jpg"), img), mean_abs_error(out, img));
}

TEST(ImageCodec, GrayJpegRoundTrip) {
  const Image img = smooth_image(33, 20, 1);
  const Image out = decode_image(encode_jpeg(img, 95), "gray.jpg");
  ASSERT_EQ(out.channels, 1);
  ASSERT_EQ(out.width, 33);
  ASSERT_EQ(out.height, 20);
  EXPECT_LT(mean_abs_error(out, img), 1.0);
}

TEST(ImageCodec, ProgressiveJpegRoundTrip) {
  const Image img = smooth_image(50, 40, 3);
  const Bytes jpg = encode_jpeg(img, 95, /*progressive=*/true);
  EXPECT_NE(find_marker(jpg, 0xc2), std::string::npos);  // SOF2: progressive
  const Image out = decode_image(jpg, "progressive.jpg");
  EXPECT_EQ(out.width, 50);
  EXPECT_EQ(out.height, 40);
  EXPECT_LT(mean_abs_error(out, img), 1.5);
  const Image gray = decode_image(encode_jpeg(smooth_image(50, 40, 1), 95, true), "pg.jpg");
  EXPECT_EQ(gray.channels, 1);
}

TEST(ImageCodec, WriteJpegIsAtomicAndReadable) {
  testing::TempDir dir;
  const Image img = smooth_image(20, 10, 3);
  write_jpeg(dir / "a.jpg", img, 90);
  write_jpeg(dir / "a.jpg", smooth_image(8, 8, 1), 90);  // replaces it
  const Image back = read_image(dir / "a.jpg");
  EXPECT_EQ(back.width, 8);
  EXPECT_EQ(back.channels, 1);
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "a.jpg");  // no temporary file left behind
  }
  EXPECT_EQ(files, 1u);
  try {
    write_jpeg(dir / "missing/b.jpg", img);
    ADD_FAILURE() << "wrote into a missing directory";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "missing/b.jpg"), std::string::npos) << e.what();
  }
}

TEST(ImageCodec, EncodeRejectsBadArguments) {
  Image img = smooth_image(4, 4, 3);
  EXPECT_THROW(encode_jpeg(img, 0), InvalidArgument);
  EXPECT_THROW(encode_jpeg(img, 101), InvalidArgument);
  Image two = smooth_image(4, 4, 2);
  EXPECT_THROW(encode_jpeg(two), InvalidArgument);
  Image short_buffer = img;
  short_buffer.pixels.pop_back();
  EXPECT_THROW(encode_jpeg(short_buffer), InvalidArgument);
  Image empty;
  empty.channels = 3;
  EXPECT_THROW(encode_jpeg(empty), InvalidArgument);
  EXPECT_THROW(write_jpeg("unused.jpg", empty), InvalidArgument);
}

// ---------------------------------------------------------------- PNG

Bytes png_bytes(const Bytes& pixels, int w, int h, png_uint_32 format) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(w);
  png.height = static_cast<png_uint_32>(h);
  png.format = format;
  png_alloc_size_t size = 0;
  EXPECT_NE(png_image_write_to_memory(&png, nullptr, &size, 0, pixels.data(), 0, nullptr), 0);
  Bytes out(size);
  EXPECT_NE(png_image_write_to_memory(&png, out.data(), &size, 0, pixels.data(), 0, nullptr), 0);
  out.resize(size);
  return out;
}

TEST(ImageCodec, PngFromMemory) {
  const Image rgb = smooth_image(13, 7, 3);
  const Bytes png = png_bytes(rgb.pixels, 13, 7, PNG_FORMAT_RGB);
  EXPECT_EQ(sniff_image_format(png), ImageFormat::png);
  const Image out = decode_image(png, "rgb.png");
  EXPECT_EQ(out.width, 13);
  EXPECT_EQ(out.height, 7);
  EXPECT_EQ(out.channels, 3);
  EXPECT_EQ(out.pixels, rgb.pixels);  // lossless

  const Image gray = smooth_image(5, 9, 1);
  const Image gray_out = decode_image(png_bytes(gray.pixels, 5, 9, PNG_FORMAT_GRAY), "g.png");
  EXPECT_EQ(gray_out.channels, 1);
  EXPECT_EQ(gray_out.pixels, gray.pixels);

  // Alpha is composited on white: transparent -> 255, opaque -> the colour.
  const Bytes rgba = {10, 20, 30, 0, 10, 20, 30, 255};
  const Image flat = decode_image(png_bytes(rgba, 2, 1, PNG_FORMAT_RGBA), "a.png");
  EXPECT_EQ(flat.channels, 3);
  EXPECT_EQ(flat.pixels, (Bytes{255, 255, 255, 10, 20, 30}));
  const Bytes gray_alpha = {100, 0, 100, 255};
  const Image ga = decode_image(png_bytes(gray_alpha, 2, 1, PNG_FORMAT_GA), "ga.png");
  EXPECT_EQ(ga.channels, 1);
  EXPECT_EQ(ga.pixels, (Bytes{255, 100}));
}

TEST(ImageCodec, ReadPngUsesTheSameDecoder) {
  testing::TempDir dir;
  const Image img = smooth_image(6, 4, 3);
  write_png(dir / "x.png", img);
  EXPECT_EQ(read_png(dir / "x.png").pixels, img.pixels);
  EXPECT_EQ(read_image(dir / "x.png").pixels, img.pixels);
  write_jpeg(dir / "y.png", img);  // a JPEG called .png
  EXPECT_THROW(read_png(dir / "y.png"), IoError);
  EXPECT_EQ(read_image(dir / "y.png").width, 6);  // read_image goes by content
}

// ---------------------------------------------------------------- CMYK

TEST(ImageCodec, CmykJpegConvertsToRgb) {
  // Quadrants in Adobe's inverted CMYK (255 = no ink), the convention of the Adobe APP14
  // segment libjpeg-turbo writes: red, green / white, black.
  const int w = 32, h = 32;
  const std::uint8_t quads[4][4] = {
      {255, 0, 0, 255}, {0, 255, 0, 255}, {255, 255, 255, 255}, {255, 255, 255, 0}};
  const std::uint8_t rgb[4][3] = {{255, 0, 0}, {0, 255, 0}, {255, 255, 255}, {0, 0, 0}};
  Bytes cmyk(static_cast<std::size_t>(w * h * 4));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      std::memcpy(&cmyk[static_cast<std::size_t>((y * w + x) * 4)], quads[(y / 16) * 2 + x / 16],
                  4);
  tjhandle tj = tjInitCompress();
  ASSERT_NE(tj, nullptr);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(tjCompress2(tj, cmyk.data(), w, 0, h, TJPF_CMYK, &out, &size, TJSAMP_444, 95, 0), 0)
      << tjGetErrorStr2(tj);
  const Bytes jpg(out, out + size);
  tjFree(out);
  tjDestroy(tj);
  const std::size_t app14 = find_marker(jpg, 0xee);
  ASSERT_NE(app14, std::string::npos);
  EXPECT_EQ(std::memcmp(&jpg[app14 + 4], "Adobe", 5), 0);

  const Image img = decode_image(jpg, "cmyk.jpg");
  ASSERT_EQ(img.channels, 3);
  ASSERT_EQ(img.width, w);
  for (int q = 0; q < 4; ++q) {
    const int cx = (q % 2) * 16 + 8, cy = (q / 2) * 16 + 8;  // quadrant centres
    for (int c = 0; c < 3; ++c)
      EXPECT_NEAR(at(img, cx, cy, c), rgb[q][c], 12) << "quadrant " << q << " channel " << c;
  }
  // Downscaling works for CMYK too.
  DecodeOptions small;
  small.min_width = small.min_height = 8;
  const Image tiny = decode_image(jpg, "cmyk.jpg", small);
  EXPECT_EQ(tiny.width, 8);
  EXPECT_NEAR(at(tiny, 6, 6, 0), 0, 20);  // the black quadrant, bottom right
}

// ---------------------------------------------------------------- EXIF orientation

/// An APP1 segment "Exif\0\0" + TIFF (II or MM) with IFD0 holding a dummy tag and Orientation.
Bytes exif_segment(int orientation, bool big_endian) {
  Bytes tiff;
  auto put16 = [&](unsigned v) {
    if (big_endian) {
      tiff.push_back(static_cast<std::uint8_t>(v >> 8));
      tiff.push_back(static_cast<std::uint8_t>(v));
    } else {
      tiff.push_back(static_cast<std::uint8_t>(v));
      tiff.push_back(static_cast<std::uint8_t>(v >> 8));
    }
  };
  auto put32 = [&](std::uint32_t v) {
    if (big_endian) {
      put16(v >> 16);
      put16(v & 0xffff);
    } else {
      put16(v & 0xffff);
      put16(v >> 16);
    }
  };
  tiff.push_back(big_endian ? 'M' : 'I');
  tiff.push_back(big_endian ? 'M' : 'I');
  put16(42);
  put32(8);       // IFD0 right after the header
  put16(2);       // two entries
  put16(0x010f);  // Make, ASCII, 4 bytes inline
  put16(2);
  put32(4);
  for (char ch : {'e', 'p', 'o', '\0'}) tiff.push_back(static_cast<std::uint8_t>(ch));
  put16(0x0112);  // Orientation, SHORT, 1
  put16(3);
  put32(1);
  put16(static_cast<unsigned>(orientation));
  put16(0);
  put32(0);  // no next IFD
  const std::uint8_t head[10] = {0xff, 0xe1, 0, 0, 'E', 'x', 'i', 'f', 0, 0};
  Bytes seg(sizeof(head) + tiff.size());
  std::copy(head, head + sizeof(head), seg.begin());
  std::copy(tiff.begin(), tiff.end(), seg.begin() + sizeof(head));
  const std::size_t length = seg.size() - 2;
  seg[2] = static_cast<std::uint8_t>(length >> 8);
  seg[3] = static_cast<std::uint8_t>(length);
  return seg;
}

/// `jpg` with `segment` inserted right after SOI.
Bytes splice(const Bytes& jpg, const Bytes& segment) {
  Bytes out(jpg.size() + segment.size());
  std::copy(jpg.begin(), jpg.begin() + 2, out.begin());
  std::copy(segment.begin(), segment.end(), out.begin() + 2);
  std::copy(jpg.begin() + 2, jpg.end(),
            out.begin() + 2 + static_cast<std::ptrdiff_t>(segment.size()));
  return out;
}

/// 64x32, black, with a white 16x16 block in the top-left corner and a grey one top-right.
Image marked_image() {
  Image img{64, 32, 3, Bytes(64 * 32 * 3, 0)};
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x)
      for (int c = 0; c < 3; ++c) {
        img.pixels[static_cast<std::size_t>((y * 64 + x) * 3 + c)] = 255;
        img.pixels[static_cast<std::size_t>((y * 64 + 48 + x) * 3 + c)] = 128;
      }
  return img;
}

/// The colour (first channel) near corner `corner` (0 TL, 1 TR, 2 BL, 3 BR).
int corner_value(const Image& img, int corner) {
  const std::int64_t x = corner % 2 == 0 ? 4 : img.width - 5;
  const std::int64_t y = corner / 2 == 0 ? 4 : img.height - 5;
  return at(img, x, y);
}

TEST(ImageCodec, ExifOrientationMapsCorners) {
  const Bytes plain = encode_jpeg(marked_image(), 95);
  // Where the stored top-left (white) and top-right (grey) blocks are displayed, per EXIF.
  enum { TL, TR, BL, BR };
  const int white_at[9] = {0, TL, TR, BR, BL, TL, TR, BR, BL};
  const int grey_at[9] = {0, TR, TL, BL, BR, BL, BR, TR, TL};
  for (bool big_endian : {false, true}) {
    for (int o = 1; o <= 8; ++o) {
      SCOPED_TRACE("orientation " + std::to_string(o) + (big_endian ? " MM" : " II"));
      const Bytes jpg = splice(plain, exif_segment(o, big_endian));
      const Image img = decode_image(jpg, "exif.jpg");
      EXPECT_EQ(img.width, o >= 5 ? 32 : 64);
      EXPECT_EQ(img.height, o >= 5 ? 64 : 32);
      for (int corner = 0; corner < 4; ++corner) {
        const int expected = corner == white_at[o] ? 255 : corner == grey_at[o] ? 128 : 0;
        EXPECT_NEAR(corner_value(img, corner), expected, 8) << "corner " << corner;
      }
      DecodeOptions raw;
      raw.apply_exif_orientation = false;
      EXPECT_EQ(decode_image(jpg, "exif.jpg", raw).width, 64);
    }
  }
}

TEST(ImageCodec, ExifOrientationIsAnExactRemap) {
  // Every pixel: display (x, y) of the oriented image equals the stored pixel the EXIF
  // definition names, computed here independently.
  const Bytes plain = encode_jpeg(smooth_image(24, 10, 3), 90);
  DecodeOptions raw;
  raw.apply_exif_orientation = false;
  const Image stored = decode_image(plain, "s.jpg", raw);
  const std::int64_t w = stored.width, h = stored.height;
  for (int o = 1; o <= 8; ++o) {
    const Image img = decode_image(splice(plain, exif_segment(o, o % 2 == 0)), "o.jpg");
    for (std::int64_t y = 0; y < img.height; ++y)
      for (std::int64_t x = 0; x < img.width; ++x) {
        // The stored pixel shown at (x, y), per orientation 1-8 (TIFF 6.0 / EXIF 2.3).
        const std::int64_t sx[9] = {0, x, w - 1 - x, w - 1 - x, x, y, y, w - 1 - y, w - 1 - y};
        const std::int64_t sy[9] = {0, y, y, h - 1 - y, h - 1 - y, x, h - 1 - x, h - 1 - x, x};
        for (int c = 0; c < 3; ++c)
          ASSERT_EQ(at(img, x, y, c), at(stored, sx[o], sy[o], c)) << "orientation " << o;
      }
  }
}

TEST(ImageCodec, BadExifIsIgnored) {
  const Bytes plain = encode_jpeg(marked_image(), 90);
  const Bytes good = exif_segment(6, false);
  std::vector<Bytes> bad;
  Bytes v = good;
  v[40] = 9;  // orientation 9: out of range (the second entry's value: 10 + 8 + 2 + 12 + 8)
  bad.push_back(v);
  v = good;
  v[10] = 'X';  // byte order mark
  bad.push_back(v);
  v = good;
  v[14] = 0xff;  // IFD0 offset far past the end
  v[15] = 0xff;
  bad.push_back(v);
  v = good;
  v[18] = 1;  // the IFD counts one entry: Orientation lies outside it
  bad.push_back(v);
  v = good;
  v[34] = 4;  // Orientation with type LONG
  bad.push_back(v);
  v = good;
  v.resize(26);  // segment cut inside the first entry (its length field fixed below)
  bad.push_back(v);
  v = good;
  v.resize(38);  // cut inside the Orientation entry
  bad.push_back(v);
  v = good;
  v.resize(12);  // "Exif\0\0" and two bytes of TIFF
  bad.push_back(v);
  for (std::size_t i = 0; i < bad.size(); ++i) {
    Bytes seg = bad[i];
    seg[2] = static_cast<std::uint8_t>((seg.size() - 2) >> 8);
    seg[3] = static_cast<std::uint8_t>(seg.size() - 2);
    const Image img = decode_image(splice(plain, seg), "bad_exif.jpg");
    EXPECT_EQ(img.width, 64) << "case " << i;  // orientation 1
    EXPECT_NEAR(corner_value(img, 0), 255, 8) << "case " << i;
  }
  // The value really sits where the cases above poke (else they would prove nothing).
  EXPECT_EQ(good[40], 6);
  EXPECT_EQ(decode_image(splice(plain, good), "good.jpg").width, 32);
}

// ---------------------------------------------------------------- DCT-domain scaling

TEST(ImageCodec, DctScalingPicksTheSmallestSufficientFactor) {
  const Bytes jpg = encode_jpeg(smooth_image(500, 375, 3), 85);
  auto decoded_size = [&](std::int64_t mw, std::int64_t mh) {
    DecodeOptions o;
    o.min_width = mw;
    o.min_height = mh;
    const Image img = decode_image(jpg, "scale.jpg", o);
    EXPECT_EQ(img.pixels.size(), static_cast<std::size_t>(img.width * img.height * 3));
    return std::make_pair(img.width, img.height);
  };
  using P = std::pair<std::int64_t, std::int64_t>;
  EXPECT_EQ(decoded_size(0, 0), P(500, 375));
  EXPECT_EQ(decoded_size(64, 64), P(125, 94));       // 1/4 (1/8 gives 63x47)
  EXPECT_EQ(decoded_size(63, 47), P(63, 47));        // 1/8
  EXPECT_EQ(decoded_size(1, 1), P(63, 47));          // 1/8
  EXPECT_EQ(decoded_size(125, 95), P(250, 188));     // 1/2
  EXPECT_EQ(decoded_size(250, 188), P(250, 188));    // 1/2
  EXPECT_EQ(decoded_size(251, 100), P(500, 375));    // full size
  EXPECT_EQ(decoded_size(0, 200), P(500, 375));      // height alone decides
  EXPECT_EQ(decoded_size(1000, 1000), P(500, 375));  // larger than the image: full size
  // Smooth content survives downscaling: the 1/4 image matches a box-filtered original.
  DecodeOptions quarter;
  quarter.min_width = quarter.min_height = 64;
  const Image small = decode_image(jpg, "scale.jpg", quarter);
  const Image full = decode_image(jpg, "scale.jpg");
  EXPECT_NEAR(at(small, 60, 40, 0), at(full, 241, 161, 0), 6);

  // With EXIF rotation (5-8) the minimum applies to the displayed, swapped size.
  const Bytes rotated = splice(jpg, exif_segment(6, true));
  DecodeOptions o;
  o.min_width = 125;
  o.min_height = 94;
  const Image img = decode_image(rotated, "rot.jpg", o);
  EXPECT_EQ(img.width, 188);  // 1/4 would be 94 wide once rotated: too narrow
  EXPECT_EQ(img.height, 250);
  o.min_width = 94;
  o.min_height = 125;
  EXPECT_EQ(decode_image(rotated, "rot.jpg", o).width, 94);
}

// ---------------------------------------------------------------- sniffing and bad input

TEST(ImageCodec, SniffsFormats) {
  EXPECT_EQ(sniff_image_format(Bytes{}), ImageFormat::unknown);
  EXPECT_EQ(sniff_image_format(Bytes{0xff, 0xd8}), ImageFormat::unknown);
  EXPECT_EQ(sniff_image_format(Bytes{0xff, 0xd8, 0xff}), ImageFormat::jpeg);
  EXPECT_EQ(sniff_image_format(Bytes{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}),
            ImageFormat::png);
  EXPECT_EQ(sniff_image_format(Bytes{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a}), ImageFormat::unknown);
  EXPECT_EQ(sniff_image_format(Bytes{'G', 'I', 'F', '8', '9', 'a', 0, 0}), ImageFormat::unknown);
}

TEST(ImageCodec, EmptyShortAndForeignInputs) {
  expect_io_error({}, "x.jpg", "empty file");
  expect_io_error({0xff}, "one.jpg", "truncated");
  expect_io_error({'x'}, "one.jpg", "not a JPEG or PNG image");
  const std::string text = "These are my notes, not a picture.\n";
  expect_io_error(Bytes(text.begin(), text.end()), "notes.jpg", "not a JPEG or PNG image");
  const Bytes gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0, 0, 0};
  expect_io_error(gif, "anim.gif", "not a JPEG or PNG image");
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    Bytes noise(1 + rng() % 300);
    for (auto& b : noise) b = static_cast<std::uint8_t>(rng());
    if (trial % 2 == 0) {  // half of them behind a real signature
      noise.insert(noise.begin(), {0xff, 0xd8, 0xff});
    } else if (trial % 4 == 1) {
      noise.insert(noise.begin(), {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'});
    }
    EXPECT_THROW(decode_image(noise, "noise.jpg"), IoError) << "trial " << trial;
  }
}

TEST(ImageCodec, EveryTruncationIsAnError) {
  const Image img = smooth_image(40, 24, 3);
  const std::vector<std::pair<std::string, Bytes>> files = {
      {"baseline.jpg", encode_jpeg(img, 90)},
      {"progressive.jpg", encode_jpeg(img, 90, true)},
      {"gray.jpg", encode_jpeg(smooth_image(40, 24, 1), 90)},
      {"exif.jpg", splice(encode_jpeg(img, 90), exif_segment(6, false))},
      {"rgb.png", png_bytes(img.pixels, 40, 24, PNG_FORMAT_RGB)},
      {"gray.png", png_bytes(smooth_image(40, 24, 1).pixels, 40, 24, PNG_FORMAT_GRAY)},
  };
  DecodeOptions scaled;
  scaled.min_width = scaled.min_height = 8;
  for (const auto& [name, bytes] : files) {
    ASSERT_NO_THROW(decode_image(bytes, name));
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      const Bytes cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
      EXPECT_THROW(decode_image(cut, name), IoError) << name << " cut to " << n << " bytes";
      if (n % 7 == 0) {
        EXPECT_THROW(decode_image(cut, name, scaled), IoError) << name << " cut to " << n;
      }
    }
  }
  Bytes jpg = encode_jpeg(smooth_image(200, 150, 3), 90);
  jpg.resize(jpg.size() * 2 / 3);
  expect_io_error(jpg, "cats/001.jpg", "corrupt or truncated JPEG (Premature end of JPEG file)");
}

TEST(ImageCodec, AFailureLeavesTheDecoderUsable) {
  // libjpeg-turbo 2.1.5 leaves a handle mid-header after a failed header read; the next good
  // file must still decode (the decoder replaces its handle after any failure).
  const Bytes good = encode_jpeg(smooth_image(24, 16, 3), 90);
  const Bytes progressive = encode_jpeg(smooth_image(24, 16, 3), 90, true);
  for (std::size_t cut : {std::size_t{4}, std::size_t{40}, std::size_t{200}, good.size() - 2}) {
    EXPECT_THROW(decode_image(Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut)),
                              "cut.jpg"),
                 IoError);
    EXPECT_EQ(decode_image(good, "good.jpg").width, 24) << "after a cut to " << cut;
    EXPECT_EQ(decode_image(progressive, "good.jpg").width, 24) << "after a cut to " << cut;
  }
  // And encoding baseline after progressive gives valid files (separate handles).
  EXPECT_EQ(decode_image(encode_jpeg(smooth_image(24, 16, 3), 90), "b.jpg").height, 16);
}

TEST(ImageCodec, GarbageInsideTheScanIsAnError) {
  const Image img = smooth_image(64, 64, 3);
  const Bytes jpg = encode_jpeg(img, 90);
  const std::size_t sos = find_marker(jpg, 0xda);
  ASSERT_NE(sos, std::string::npos);
  std::mt19937 rng(11);
  int errors = 0;
  for (int trial = 0; trial < 50; ++trial) {
    Bytes bad = jpg;
    const std::size_t start = sos + 20 + rng() % ((bad.size() - sos - 60) / 2);
    for (std::size_t i = start; i < start + 30; ++i) bad[i] = static_cast<std::uint8_t>(rng());
    try {
      const Image out = decode_image(bad, "garbage.jpg");
      EXPECT_EQ(out.pixels.size(), img.pixels.size());  // undetectable damage: still whole
    } catch (const IoError& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find("garbage.jpg: corrupt"), std::string::npos);
    }
  }
  // Random bytes in Huffman-coded data almost always break the code (libjpeg warns, which is
  // an error here); the rare undetectable case still yields a whole image.
  EXPECT_GT(errors, 40);
  Bytes ff = jpg;  // a run of FF: fill bytes where entropy-coded data should be
  std::fill(ff.begin() + static_cast<std::ptrdiff_t>(sos) + 20, ff.end() - 200, std::uint8_t{0xff});
  EXPECT_THROW(decode_image(ff, "ff.jpg"), IoError);
}

TEST(ImageCodec, HostileSizesAreRefusedBeforeDecoding) {
  Bytes jpg = encode_jpeg(smooth_image(16, 16, 3), 90);
  const std::size_t sof = find_marker(jpg, 0xc0);
  ASSERT_NE(sof, std::string::npos);
  Bytes huge = jpg;
  huge[sof + 5] = 0x9c;  // height 40000
  huge[sof + 6] = 0x40;
  expect_io_error(huge, "huge.jpg", "above the limit of 32768");
  Bytes zero = jpg;
  zero[sof + 7] = 0;  // width 0
  zero[sof + 8] = 0;
  EXPECT_THROW(decode_image(zero, "zero.jpg"), IoError);
  DecodeOptions capped;
  capped.max_pixels = 255;
  expect_io_error(jpg, "big.jpg", "above the limit of 255 pixels", capped);
  expect_io_error(png_bytes(Bytes(16 * 16, 7), 16, 16, PNG_FORMAT_GRAY), "big.png",
                  "above the limit of 255 pixels", capped);
  capped.max_pixels = 256;
  EXPECT_EQ(decode_image(jpg, "ok.jpg", capped).width, 16);
}

TEST(ImageCodec, DecompressionBombsAreRefusedFromTheHeader) {
  // 30000x30000 claimed by a 70-byte file: above the default pixel limit.
  EXPECT_GT(std::int64_t{30000} * 30000, kDefaultMaxImagePixels);
  expect_io_error(testing::png_claiming(30000, 30000, 1), "bomb.png",
                  "above the limit of " + std::to_string(kDefaultMaxImagePixels));
  // Under the pixel limit, but its few bytes of image data cannot hold what the header claims:
  // refused before the 300 MB of pixels would be allocated.
  expect_io_error(testing::png_claiming(10000, 10000, 1), "liar.png",
                  "cannot hold the 10000x10000");
  // A true image of the same kind decodes.
  EXPECT_EQ(decode_image(testing::png_claiming(64, 48, 48), "ok.png").height, 48);
}

TEST(ImageCodec, MissingFileOrDirectoryIsNamed) {
  testing::TempDir dir;
  try {
    read_image(dir / "nothing.jpg");
    ADD_FAILURE() << "read a missing file";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir / "nothing.jpg: no such file", 0), 0u) << e.what();
  }
  try {
    read_image(dir.path());
    ADD_FAILURE() << "read a directory";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir.path() + ": is a directory", 0), 0u) << e.what();
  }
  std::ofstream(dir / "notes.jpg") << "shopping list";
  try {
    read_image(dir / "notes.jpg");
    ADD_FAILURE() << "decoded text";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir / "notes.jpg: not a JPEG or PNG image", 0), 0u);
  }
  std::ofstream(dir / "empty.png").flush();
  EXPECT_THROW(read_image(dir / "empty.png"), IoError);
  EXPECT_EQ(read_file_bytes(dir / "notes.jpg").size(), 13u);
}

TEST(ImageCodec, FifosDevicesAndFoldersAreRefusedAtOnce) {
  // Under the old reader /dev/zero grew without end and a FIFO blocked for ever: the alarm
  // ends a regression in seconds.
  alarm(20);
  testing::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "pipe.png").c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", dir / "zero.jpg");
  std::filesystem::create_directory(dir / "folder.png");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir / "pipe.png", ": is a FIFO, not a regular file"},
      {dir / "zero.jpg", ": is a character device, not a regular file"},
      {"/dev/zero", ": is a character device, not a regular file"},
      {dir / "folder.png", ": is a directory, not a file"}};
  for (const auto& [path, problem] : cases) {
    for (const bool decode : {false, true}) {
      try {
        if (decode)
          read_image(path);
        else
          read_file_bytes(path);
        ADD_FAILURE() << "read " << path;
      } catch (const IoError& e) {
        EXPECT_EQ(std::string(e.what()).rfind(path + problem, 0), 0u) << e.what();
      }
    }
  }
  alarm(0);
}

TEST(ImageCodec, DecodesFromManyThreadsAtOnce) {
  const Image img = smooth_image(48, 32, 3);
  const Bytes jpg = encode_jpeg(img, 90, true);
  const Image expected = decode_image(jpg, "t.jpg");
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        if (decode_image(jpg, "t.jpg").pixels != expected.pixels) ++mismatches[t];
        if (encode_jpeg(img, 90, true) != jpg) ++mismatches[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace epoch::data
