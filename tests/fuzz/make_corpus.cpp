// Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/): tiny valid files
// of each kind the parsers read, and a few cut or damaged ones. Run by hand when the parsers
// learn something new: fuzz_make_corpus tests/fuzz/corpus
#include <png.h>
#include <turbojpeg.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "epoch/data/image_codec.h"
#include "epoch/tensor/safetensors.h"
#include "epoch/train/checkpoint.h"
#include "epoch/train/trainer.h"

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using epoch::data::Image;

void save(const fs::path& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  std::printf("%s (%zu bytes)\n", path.string().c_str(), bytes.size());
}

/// A PNG whose IHDR says `w` x `h` (its CRC recomputed), the rest of the file unchanged.
Bytes with_png_size(Bytes png, std::uint32_t w, std::uint32_t h) {
  for (int i = 0; i < 4; ++i) {
    png[16 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(w >> (24 - 8 * i));
    png[20 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(h >> (24 - 8 * i));
  }
  const auto crc = static_cast<std::uint32_t>(crc32(0, png.data() + 12, 17));  // "IHDR" + 13
  for (int i = 0; i < 4; ++i)
    png[29 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(crc >> (24 - 8 * i));
  return png;
}

Bytes head(const Bytes& b, std::size_t n) {
  return Bytes(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
}

/// A w x h image with a little structure (a ramp and a bright corner).
Image picture(int w, int h, int channels) {
  Image img{w, h, channels, Bytes(static_cast<std::size_t>(w * h * channels))};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c)
        img.pixels[static_cast<std::size_t>((y * w + x) * channels + c)] =
            static_cast<std::uint8_t>(x < 3 && y < 3 ? 250 : 20 * x + 30 * y + 60 * c);
  return img;
}

/// TurboJPEG directly, for what encode_jpeg does not make (CMYK, other subsamplings).
Bytes tj_encode(const Bytes& pixels, int w, int h, int format, int subsampling, int flags) {
  tjhandle tj = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  if (tjCompress2(tj, pixels.data(), w, 0, h, format, &out, &size, subsampling, 50, flags) != 0)
    std::fprintf(stderr, "tjCompress2: %s\n", tjGetErrorStr2(tj));
  Bytes bytes(out, out + size);
  tjFree(out);
  tjDestroy(tj);
  return bytes;
}

Bytes png_encode(const Bytes& pixels, int w, int h, png_uint_32 format) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(w);
  png.height = static_cast<png_uint_32>(h);
  png.format = format;
  png_alloc_size_t size = 0;
  png_image_write_to_memory(&png, nullptr, &size, 0, pixels.data(), 0, nullptr);
  Bytes out(size);
  png_image_write_to_memory(&png, out.data(), &size, 0, pixels.data(), 0, nullptr);
  out.resize(size);
  return out;
}

/// An APP1 EXIF segment (big-endian TIFF) with Orientation `o`, spliced in after SOI.
Bytes with_exif(const Bytes& jpg, int o) {
  const Bytes seg = {0xff, 0xe1, 0, 34, 'E', 'x', 'i', 'f', 0, 0,
                     'M',  'M',  0, 42, 0,   0,   0,   8,   0, 1,
                     0x01, 0x12, 0, 3,  0,   0,   0,   1,   0, static_cast<std::uint8_t>(o),
                     0,    0,    0, 0,  0,   0};
  Bytes out = head(jpg, 2);
  out.insert(out.end(), seg.begin(), seg.end());
  out.insert(out.end(), jpg.begin() + 2, jpg.end());
  return out;
}

Bytes gzip(const Bytes& raw) {
  Bytes out(compressBound(static_cast<uLong>(raw.size())) + 32);
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  z.next_in = const_cast<Bytef*>(raw.data());
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

Bytes idx(std::initializer_list<std::uint32_t> dims, const Bytes& payload) {
  Bytes b = {0, 0, 0x08, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(d >> s));
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  using epoch::data::encode_jpeg;

  const fs::path images = root / "fuzz_decode_image";
  fs::create_directories(images);
  const Image rgb = picture(16, 8, 3), gray = picture(8, 8, 1);
  const Bytes baseline = encode_jpeg(rgb, 50);
  save(images / "baseline.jpg", baseline);
  save(images / "progressive.jpg", encode_jpeg(rgb, 50, true));
  save(images / "gray.jpg", encode_jpeg(gray, 50));
  save(images / "exif6.jpg", with_exif(encode_jpeg(picture(8, 16, 3), 50), 6));
  Bytes cmyk(8 * 8 * 4);
  for (std::size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = static_cast<std::uint8_t>(i * 37);
  save(images / "cmyk.jpg", tj_encode(cmyk, 8, 8, TJPF_CMYK, TJSAMP_444, 0));
  save(images / "s422.jpg", tj_encode(rgb.pixels, 16, 8, TJPF_RGB, TJSAMP_422, 0));
  save(images / "s444_progressive.jpg",
       tj_encode(rgb.pixels, 16, 8, TJPF_RGB, TJSAMP_444, TJFLAG_PROGRESSIVE));
  save(images / "cut.jpg", head(baseline, baseline.size() / 2));
  const Bytes png = png_encode(picture(4, 4, 3).pixels, 4, 4, PNG_FORMAT_RGB);
  save(images / "rgb.png", png);
  save(images / "gray.png", png_encode(picture(4, 4, 1).pixels, 4, 4, PNG_FORMAT_GRAY));
  save(images / "rgba.png", png_encode(picture(3, 3, 4).pixels, 3, 3, PNG_FORMAT_RGBA));
  save(images / "gray_alpha.png", png_encode(picture(3, 3, 2).pixels, 3, 3, PNG_FORMAT_GA));
  save(images / "rgb16.png",
       png_encode(picture(3, 2, 6).pixels, 3, 2, PNG_FORMAT_RGB | PNG_FORMAT_FLAG_LINEAR));
  save(images / "cut.png", head(png, png.size() - 20));
  // Decompression bombs: the same 4x4 file with a header that claims far more pixels, above
  // the pixel limit (30000x30000) or within it but more than its few bytes of data can hold.
  save(images / "claims_30000x30000.png", with_png_size(png, 30000, 30000));
  save(images / "claims_1000x1000.png", with_png_size(png, 1000, 1000));

  const fs::path idx_dir = root / "fuzz_idx";
  fs::create_directories(idx_dir);
  const Bytes labels = idx({6}, {0, 1, 2, 3, 4, 5});
  const Bytes pixels = idx({2, 3, 4}, Bytes(24, 7));
  save(idx_dir / "labels.idx", labels);
  save(idx_dir / "images.idx", pixels);
  save(idx_dir / "empty4d.idx", idx({0, 1, 2, 3}, {}));
  save(idx_dir / "images.idx.gz", gzip(pixels));
  save(idx_dir / "cut.idx", head(pixels, 20));
  save(idx_dir / "float.idx", Bytes{0, 0, 0x0d, 1, 0, 0, 0, 1, 0x3f, 0x80, 0, 0});

  const fs::path st_dir = root / "fuzz_safetensors";
  fs::create_directories(st_dir);
  epoch::Tensor u8 = epoch::Tensor::empty({2, 3}, epoch::DType::u8);
  for (int i = 0; i < 6; ++i) u8.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(i);
  const std::vector<std::int32_t> ints = {-1, 7};
  const fs::path tmp = st_dir / "tmp";
  epoch::save_safetensors(
      tmp.string(),
      {{"w", epoch::Tensor::scalar(1.5f)}, {"ids", epoch::Tensor::from_ints({2}, ints)}, {"u", u8}},
      {{"model", "mlp"}, {"step", "3"}});
  const Bytes st = read_all(tmp);
  save(st_dir / "three.safetensors", st);
  save(st_dir / "cut.safetensors", head(st, st.size() - 5));
  epoch::save_safetensors(tmp.string(), {});
  save(st_dir / "empty.safetensors", read_all(tmp));
  fs::remove(tmp);

  // Checkpoints as `epoch train` writes their metadata; the tensors are left out (every real
  // model's are megabytes, too slow to mutate), so the fuzzer works on the metadata fields and
  // the model/tensor look-up that follows them.
  const fs::path ck_dir = root / "fuzz_checkpoint";
  fs::create_directories(ck_dir);
  epoch::train::TrainConfig config;
  config.run.model = "autoencoder";
  epoch::data::Preprocessing pre;
  pre.channels = 1;
  pre.height = 28;
  pre.width = 28;
  const std::map<std::string, std::string> meta = {{"format", epoch::train::kCheckpointFormat},
                                                   {"model", "autoencoder"},
                                                   {"preprocessing", pre.to_json()},
                                                   {"class_names", "[\"a\",\"b\"]"},
                                                   {"epoch", "2"},
                                                   {"step", "40"},
                                                   {"config", config.to_json().dump()},
                                                   {"test_loss", "0.25"},
                                                   {"test_accuracy", "-1"}};
  epoch::save_safetensors(tmp.string(), {}, meta);
  save(ck_dir / "metadata.safetensors", read_all(tmp));
  std::map<std::string, std::string> negative = meta;
  negative["epoch"] = "-5";
  epoch::save_safetensors(tmp.string(), {{"model.0.weight", epoch::Tensor::scalar(1.0f)}},
                          negative);
  save(ck_dir / "negative_epoch.safetensors", read_all(tmp));
  fs::remove(tmp);

  const fs::path cifar_dir = root / "fuzz_cifar10";
  fs::create_directories(cifar_dir);
  auto record = [](int label, int seed) {  // label byte + 3072 pixel bytes
    Bytes r{static_cast<std::uint8_t>(label)};
    for (int i = 0; i < 3072; ++i)
      r.push_back(static_cast<std::uint8_t>((seed * 31 + i * 7) % 251));
    return r;
  };
  Bytes two = record(0, 2);
  const Bytes nine = record(9, 3);
  two.insert(two.end(), nine.begin(), nine.end());
  Bytes cut = record(1, 5);
  const Bytes next = record(2, 6);
  cut.insert(cut.end(), next.begin(), next.begin() + (4000 - 3073));
  save(cifar_dir / "one_record.bin", record(3, 1));
  save(cifar_dir / "two_records.bin", two);
  save(cifar_dir / "label_10.bin", record(10, 4));
  save(cifar_dir / "truncated.bin", cut);
  save(cifar_dir / "empty.bin", {});
  return 0;
}
