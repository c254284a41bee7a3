// Winograd F(4x4, 3x3) convolution on 8-channel blocked activations (see conv2d_winograd.h).
//
// The transforms (B^T d B, A^T M A, A dY A^T) run on AVX2 vectors of the 8 channels of a block,
// so they need no shuffles. The tiles go through in blocks that all threads share, each block in
// three phases with a barrier between them: the threads transform the block's tiles (split by
// tile); then each of the 36 positions is one matrix product, split by (position, band of output
// channels): forward M[tile][k] = sum_c V[tile][c] U[c][k], backward weights dU[c][k] +=
// sum_tile V[tile][c] dM[tile][k]; then (forward) the threads transform the products back. Each
// element of a product is one thread's full sum in a fixed order, so the bits depend on neither
// timing nor the thread count, and dU exists once, not once per thread. The products run a 6x16
// register-blocked micro-kernel. The weights' transforms run on vectors of 8 output channels.
// The buffers are kept by the calling thread between calls (the largest call's size).
#include "cpu/conv2d_winograd.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "cpu/cpu_features.h"

// Every function below is compiled for AVX2 and FMA, whatever the build's target (see
// cpu_features.h); conv2d_winograd_supported refuses a CPU without them.
#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace epoch::cpu {

using kernels::Conv2dDims;

namespace {

using i64 = std::int64_t;

constexpr i64 kB = 8;                  // channels per block: one AVX2 vector
constexpr i64 kPos = 36;               // positions of a transformed 6x6 tile
constexpr i64 kBlockFloats = 1 << 20;  // about what a block's V and M hold, in floats (4 MiB)
constexpr i64 kMinTileBlock = 48;      // the fewest tiles a block takes (each U is used as often)
constexpr i64 kBand = 64;              // output channels per unit of a block's products
constexpr i64 kSerialWork = 1 << 21;   // multiply-adds below which one thread does it all

// G of F(4x4, 3x3) (points 0, 1, -1, 2, -2 and infinity): U = G g G^T. In double for the
// weight gradient's G^T dU G; the forward's float transforms take each entry rounded (kGf).
constexpr double kG[6][3] = {{1.0 / 4, 0, 0},
                             {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                             {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                             {1.0 / 24, 1.0 / 12, 1.0 / 6},
                             {1.0 / 24, -1.0 / 12, 1.0 / 6},
                             {0, 0, 1}};
inline __m256 kGf(int i, int j) { return _mm256_set1_ps(static_cast<float>(kG[i][j])); }

// The output's 4x4 tiles, in (n, tile row, tile column) order, and the blocks they go through
// in: as many tiles as keep a block's transformed inputs and products near kBlockFloats, at
// least kMinTileBlock (so each transformed weight is used that often per pass), a multiple of 6
// (the micro-kernel's rows).
struct Tiling {
  i64 tiles_h = 0, tiles_w = 0, tiles = 0, block = 0, blocks = 0;
};

Tiling tiling(const Conv2dDims& d) {
  Tiling t;
  t.tiles_h = (d.OH + 3) / 4;
  t.tiles_w = (d.OW + 3) / 4;
  t.tiles = d.N * t.tiles_h * t.tiles_w;
  const i64 fit = kBlockFloats / (kPos * (d.C + d.OC));
  t.block = std::min((std::max(fit, kMinTileBlock) + 5) / 6 * 6, t.tiles);
  t.blocks = t.block > 0 ? (t.tiles + t.block - 1) / t.block : 0;
  return t;
}

struct TilePlace {
  i64 n, oh0, ow0;
};

TilePlace place(const Tiling& t, i64 tile) {
  const i64 per_image = t.tiles_h * t.tiles_w;
  const i64 in_image = tile % per_image;
  return {tile / per_image, (in_image / t.tiles_w) * 4, (in_image % t.tiles_w) * 4};
}

// The threads a call runs on: one below kSerialWork multiply-adds.
int threads_for(i64 work) { return work < kSerialWork ? 1 : omp_get_max_threads(); }

// Buffers kept by the calling thread between calls, one per use, grown as needed and never
// initialized (every element is written before it is read).
enum Buffer { kU, kV, kM, kFlipped, kBuffers };

float* buffer(Buffer which, i64 floats) {
  struct Kept {
    std::unique_ptr<float[]> data;
    i64 size = 0;
  };
  thread_local Kept kept[kBuffers];
  Kept& k = kept[which];
  if (k.size < floats) {
    k.data.reset();  // the old one first, so the two never exist together
    k.data.reset(new float[static_cast<std::size_t>(floats)]);
    k.size = floats;
  }
  return k.data.get();
}

// Unit u of a block's 36 x bands products: its position and its band of output channels.
struct Unit {
  i64 p, k0, width;
};

Unit unit(i64 u, i64 K) {
  const i64 bands = (K + kBand - 1) / kBand, k0 = (u % bands) * kBand;
  return {u / bands, k0, std::min(kBand, K - k0)};
}

i64 units(i64 K) { return kPos * ((K + kBand - 1) / kBand); }

// ---- the transforms, on 8-channel vectors ----

// r = B^T d for one column of 6.
inline void input_column(const __m256 d[6], __m256 r[6]) {
  const __m256 two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f);
  const __m256 five = _mm256_set1_ps(5.0f);
  r[0] = _mm256_fmadd_ps(four, d[0], _mm256_fnmadd_ps(five, d[2], d[4]));
  r[1] = _mm256_fnmadd_ps(four, _mm256_add_ps(d[1], d[2]), _mm256_add_ps(d[3], d[4]));
  r[2] = _mm256_fmadd_ps(four, _mm256_sub_ps(d[1], d[2]), _mm256_sub_ps(d[4], d[3]));
  r[3] = _mm256_fmadd_ps(two, _mm256_sub_ps(d[3], d[1]), _mm256_sub_ps(d[4], d[2]));
  r[4] = _mm256_fmadd_ps(two, _mm256_sub_ps(d[1], d[3]), _mm256_sub_ps(d[4], d[2]));
  r[5] = _mm256_fmadd_ps(four, d[1], _mm256_fnmadd_ps(five, d[3], d[5]));
}

// o = A^T m for one column of 6.
inline void output_column(const __m256 m[6], __m256 o[4]) {
  const __m256 s12 = _mm256_add_ps(m[1], m[2]), d12 = _mm256_sub_ps(m[1], m[2]);
  const __m256 s34 = _mm256_add_ps(m[3], m[4]), d34 = _mm256_sub_ps(m[3], m[4]);
  o[0] = _mm256_add_ps(_mm256_add_ps(m[0], s12), s34);
  o[1] = _mm256_fmadd_ps(_mm256_set1_ps(2.0f), d34, d12);
  o[2] = _mm256_fmadd_ps(_mm256_set1_ps(4.0f), s34, s12);
  o[3] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.0f), d34, d12), m[5]);
}

// m = A y for one column of 4 (the adjoint of output_column).
inline void gradient_column(const __m256 y[4], __m256 m[6]) {
  const __m256 s02 = _mm256_add_ps(y[0], y[2]), s13 = _mm256_add_ps(y[1], y[3]);
  const __m256 e = _mm256_fmadd_ps(_mm256_set1_ps(4.0f), y[2], y[0]);
  const __m256 f = _mm256_fmadd_ps(_mm256_set1_ps(8.0f), y[3], _mm256_add_ps(y[1], y[1]));
  m[0] = y[0];
  m[1] = _mm256_add_ps(s02, s13);
  m[2] = _mm256_sub_ps(s02, s13);
  m[3] = _mm256_add_ps(e, f);
  m[4] = _mm256_sub_ps(e, f);
  m[5] = y[3];
}

inline bool inside(i64 i, i64 n) { return i >= 0 && i < n; }

// The second pass of a 2-D transform: each row of t (the first pass's output, column by column)
// through `column`, which gives 6 values; value j of row i goes to out[(i * 6 + j) * stride].
template <int Rows, int Cols, typename Column>
inline void rows_to_positions(__m256 (&t)[Rows][Cols], Column column, float* out, i64 stride) {
#pragma GCC unroll 6
  for (int i = 0; i < Rows; ++i) {
    __m256 r[6];
    column(t[i], r);
#pragma GCC unroll 6
    for (int j = 0; j < 6; ++j) _mm256_storeu_ps(out + (i * 6 + j) * stride, r[j]);
  }
}

// V = B^T d B of the 6x6 tile of `plane` ((rows, cols, 8)) whose top-left pixel is (i0, j0),
// zero outside the plane; position p goes to v[p * stride]. The loops are unrolled (GCC keeps
// the columns in registers then), and a tile wholly inside the plane loads without checks.
template <bool kWhole>
inline void input_tile_of(const float* plane, i64 rows, i64 cols, i64 i0, i64 j0, float* v,
                          i64 stride) {
  __m256 t[6][6];
#pragma GCC unroll 6
  for (int j = 0; j < 6; ++j) {
    __m256 col[6], r[6];
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i)
      col[i] = kWhole || (inside(i0 + i, rows) && inside(j0 + j, cols))
                   ? _mm256_loadu_ps(plane + ((i0 + i) * cols + j0 + j) * kB)
                   : _mm256_setzero_ps();
    input_column(col, r);
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) t[i][j] = r[i];
  }
  rows_to_positions(
      t, [](const __m256* d, __m256* r) { input_column(d, r); }, v, stride);
}

inline void input_tile(const float* plane, i64 rows, i64 cols, i64 i0, i64 j0, float* v,
                       i64 stride) {
  if (i0 >= 0 && j0 >= 0 && i0 + 6 <= rows && j0 + 6 <= cols)
    input_tile_of<true>(plane, rows, cols, i0, j0, v, stride);
  else
    input_tile_of<false>(plane, rows, cols, i0, j0, v, stride);
}

// y = A^T M A (+ bias, then ReLU) of one tile, M's position p at m[p * stride], written to the
// 4x4 pixels of `plane` ((rows, cols, 8)) from (i0, j0) that lie inside it.
inline void output_tile(const float* m, i64 stride, __m256 bias, bool relu, float* plane, i64 rows,
                        i64 cols, i64 i0, i64 j0) {
  __m256 t[4][6];
#pragma GCC unroll 6
  for (int j = 0; j < 6; ++j) {
    __m256 col[6], o[4];
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) col[i] = _mm256_loadu_ps(m + (i * 6 + j) * stride);
    output_column(col, o);
#pragma GCC unroll 6
    for (int i = 0; i < 4; ++i) t[i][j] = o[i];
  }
  const __m256 zero = _mm256_setzero_ps();
  for (int i = 0; i < 4 && i0 + i < rows; ++i) {
    __m256 o[4];
    output_column(t[i], o);
    for (int j = 0; j < 4 && j0 + j < cols; ++j) {
      __m256 v = _mm256_add_ps(o[j], bias);
      if (relu) v = _mm256_max_ps(v, zero);
      _mm256_storeu_ps(plane + ((i0 + i) * cols + j0 + j) * kB, v);
    }
  }
}

// dM = A dY A^T of the 4x4 tile of `plane` ((rows, cols, 8)) from (i0, j0), zero outside it;
// position p goes to dm[p * stride].
inline void gradient_tile(const float* plane, i64 rows, i64 cols, i64 i0, i64 j0, float* dm,
                          i64 stride) {
  __m256 t[6][4];
#pragma GCC unroll 6
  for (int j = 0; j < 4; ++j) {
    __m256 col[4], m[6];
#pragma GCC unroll 6
    for (int i = 0; i < 4; ++i)
      col[i] = i0 + i < rows && j0 + j < cols
                   ? _mm256_loadu_ps(plane + ((i0 + i) * cols + j0 + j) * kB)
                   : _mm256_setzero_ps();
    gradient_column(col, m);
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) t[i][j] = m[i];
  }
  rows_to_positions(
      t, [](const __m256* y, __m256* m) { gradient_column(y, m); }, dm, stride);
}

// ---- the matrix products ----

// c[r][0 .. 8 NV) (+)= sum over p < depth of a(r, p) * b[p][0 .. 8 NV), for R rows; a(r, p) is
// a[r * a_row + p * a_depth].
template <int R, int NV, bool kAccumulate>
inline void micro_kernel(const float* a, i64 a_row, i64 a_depth, const float* b, i64 ldb, float* c,
                         i64 ldc, i64 depth) {
  // Fully unrolled over r and j, so that GCC keeps acc in registers.
  __m256 acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j)
      acc[r][j] = kAccumulate ? _mm256_loadu_ps(c + r * ldc + j * 8) : _mm256_setzero_ps();
  for (i64 p = 0; p < depth; ++p) {
    __m256 bv[NV];
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) bv[j] = _mm256_loadu_ps(b + p * ldb + j * 8);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * a_row + p * a_depth);
#pragma GCC unroll 2
      for (int j = 0; j < NV; ++j) acc[r][j] = _mm256_fmadd_ps(av, bv[j], acc[r][j]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) _mm256_storeu_ps(c + r * ldc + j * 8, acc[r][j]);
}

template <int NV, bool kAccumulate>
void rows_of(i64 rows, const float* a, i64 a_row, i64 a_depth, const float* b, i64 ldb, float* c,
             i64 ldc, i64 depth) {
  i64 r = 0;
  for (; r + 6 <= rows; r += 6)
    micro_kernel<6, NV, kAccumulate>(a + r * a_row, a_row, a_depth, b, ldb, c + r * ldc, ldc,
                                     depth);
  const float* ar = a + r * a_row;
  float* cr = c + r * ldc;
  switch (rows - r) {
    case 5:
      micro_kernel<5, NV, kAccumulate>(ar, a_row, a_depth, b, ldb, cr, ldc, depth);
      break;
    case 4:
      micro_kernel<4, NV, kAccumulate>(ar, a_row, a_depth, b, ldb, cr, ldc, depth);
      break;
    case 3:
      micro_kernel<3, NV, kAccumulate>(ar, a_row, a_depth, b, ldb, cr, ldc, depth);
      break;
    case 2:
      micro_kernel<2, NV, kAccumulate>(ar, a_row, a_depth, b, ldb, cr, ldc, depth);
      break;
    case 1:
      micro_kernel<1, NV, kAccumulate>(ar, a_row, a_depth, b, ldb, cr, ldc, depth);
      break;
    default:
      break;
  }
}

// c (rows x cols, row stride ldc) (+)= a (rows x depth, as micro_kernel) * b (depth x cols);
// cols is a multiple of 8. b is packed in panels of 16 columns (the last of a matrix whose
// columns are an odd multiple of 8 has 8): panel q at b + q * panel_stride, its rows as wide as
// the panel. A row-major b of 2^n columns would put a panel's rows in a few cache sets, and the
// panel then streams from far memory for every 6 rows of a.
template <bool kAccumulate>
void gemm(i64 rows, i64 cols, i64 depth, const float* a, i64 a_row, i64 a_depth, const float* b,
          i64 panel_stride, float* c, i64 ldc) {
  i64 j = 0;
  for (; j + 16 <= cols; j += 16)
    rows_of<2, kAccumulate>(rows, a, a_row, a_depth, b + (j / 16) * panel_stride, 16, c + j, ldc,
                            depth);
  if (j < cols)
    rows_of<1, kAccumulate>(rows, a, a_row, a_depth, b + (j / 16) * panel_stride, 8, c + j, ldc,
                            depth);
}

// Where column k of row r of a matrix with `cols` columns goes when packed as gemm's b with
// panels `panel_stride` apart.
inline i64 packed_at(i64 r, i64 k, i64 cols, i64 panel_stride) {
  const i64 panel = k / 16, width = std::min<i64>(16, cols - panel * 16);
  return panel * panel_stride + r * width + k % 16;
}

// ---- the weights ----

// U[p] (C x K) = (G w[k][c] G^T)[p], for K output and C input channels, packed as gemm's b
// (panels 16 C apart), 8 output channels at a time; the calling team shares the work (a
// worksharing loop, so inside a parallel region).
void transform_weights(const float* w, i64 K, i64 C, float* U) {
  // Output channels outside: the 8 rows of w are then read along, where reading down the
  // columns of w (rows 9 C floats apart, often a multiple of 2 KiB) would miss in every cache.
#pragma omp for schedule(static)
  for (i64 k0 = 0; k0 < K; k0 += kB) {
    for (i64 c = 0; c < C; ++c) {
      alignas(32) float taps[9][kB];
      for (i64 l = 0; l < kB; ++l)
        for (int i = 0; i < 9; ++i) taps[i][l] = w[((k0 + l) * C + c) * 9 + i];
      __m256 g[9];
      for (int i = 0; i < 9; ++i) g[i] = _mm256_load_ps(taps[i]);
      __m256 gg[6][3];  // G g
#pragma GCC unroll 6
      for (int i = 0; i < 6; ++i)
#pragma GCC unroll 3
        for (int j = 0; j < 3; ++j)
          gg[i][j] = _mm256_fmadd_ps(
              kGf(i, 0), g[j],
              _mm256_fmadd_ps(kGf(i, 1), g[3 + j], _mm256_mul_ps(kGf(i, 2), g[6 + j])));
#pragma GCC unroll 6
      for (int i = 0; i < 6; ++i)
#pragma GCC unroll 6
        for (int j = 0; j < 6; ++j)
          _mm256_storeu_ps(U + (i * 6 + j) * C * K + packed_at(c, k0, K, 16 * C),
                           _mm256_fmadd_ps(gg[i][0], kGf(j, 0),
                                           _mm256_fmadd_ps(gg[i][1], kGf(j, 1),
                                                           _mm256_mul_ps(gg[i][2], kGf(j, 2)))));
    }
  }
}

// dw[k][c] = G^T dU[.][c][k] G, 4 output channels at a time in double: the positions' sums
// cancel (dU is far larger than dw), so float here would double the error of the transform;
// a worksharing loop, as above.
void weights_gradient(const float* dU, i64 K, i64 C, float* dw) {
#pragma omp for schedule(static)
  for (i64 c = 0; c < C; ++c) {
    for (i64 k0 = 0; k0 < K; k0 += 4) {
      __m256d gu[3][6];  // G^T dU
#pragma GCC unroll 6
      for (int j = 0; j < 6; ++j) {
        __m256d u[6];
#pragma GCC unroll 6
        for (int i = 0; i < 6; ++i)
          u[i] = _mm256_cvtps_pd(_mm_loadu_ps(dU + ((i * 6 + j) * C + c) * K + k0));
#pragma GCC unroll 3
        for (int a = 0; a < 3; ++a) {
          __m256d s = _mm256_mul_pd(_mm256_set1_pd(kG[0][a]), u[0]);
#pragma GCC unroll 5
          for (int i = 1; i < 6; ++i) s = _mm256_fmadd_pd(_mm256_set1_pd(kG[i][a]), u[i], s);
          gu[a][j] = s;
        }
      }
      alignas(16) float taps[9][4];
#pragma GCC unroll 3
      for (int a = 0; a < 3; ++a)
#pragma GCC unroll 3
        for (int b = 0; b < 3; ++b) {
          __m256d s = _mm256_mul_pd(gu[a][0], _mm256_set1_pd(kG[0][b]));
#pragma GCC unroll 5
          for (int j = 1; j < 6; ++j) s = _mm256_fmadd_pd(gu[a][j], _mm256_set1_pd(kG[j][b]), s);
          _mm_store_ps(taps[a * 3 + b], _mm256_cvtpd_ps(s));
        }
      for (i64 l = 0; l < 4; ++l)
        for (int i = 0; i < 9; ++i) dw[((k0 + l) * C + c) * 9 + i] = taps[i][l];
    }
  }
}

// db[k] = the sum of dy over images and pixels, one channel block per thread at a time.
void bias_gradient(const float* dy, i64 N, i64 KB, i64 pixels, float* db) {
#pragma omp for schedule(static)
  for (i64 kb = 0; kb < KB; ++kb) {
    __m256 sum = _mm256_setzero_ps();
    for (i64 n = 0; n < N; ++n) {
      const float* plane = dy + (n * KB + kb) * pixels * kB;
      for (i64 i = 0; i < pixels; ++i) sum = _mm256_add_ps(sum, _mm256_loadu_ps(plane + i * kB));
    }
    _mm256_storeu_ps(db + kb * kB, sum);
  }
}

}  // namespace

bool conv2d_winograd_supported(const Conv2dDims& d) {
  return cpu_has_avx2_fma() && d.KH == 3 && d.KW == 3 && d.stride_h == 1 && d.stride_w == 1 &&
         d.dilation_h == 1 && d.dilation_w == 1 && d.groups == 1 && d.pad_h >= 0 && d.pad_h <= 2 &&
         d.pad_w >= 0 && d.pad_w <= 2 && d.C % kB == 0 && d.OC % kB == 0 && d.C > 0 && d.OC > 0;
}

void conv2d_winograd_forward(const Conv2dDims& d, const float* x, const float* w, const float* b,
                             float* y, bool relu) {
  const i64 C = d.C, K = d.OC, CB = C / kB, KB = K / kB;
  const Tiling t = tiling(d);
  if (t.tiles == 0) return;
  const i64 v_stride = t.block * C, m_stride = t.block * K;  // between positions
  float* U = buffer(kU, kPos * C * K);
  float* V = buffer(kV, kPos * v_stride);
  float* M = buffer(kM, kPos * m_stride);
  const i64 products = units(K);
#pragma omp parallel num_threads(threads_for(t.tiles * 16 * C * K))
  {
    transform_weights(w, K, C, U);
    for (i64 block = 0; block < t.blocks; ++block) {
      const i64 t0 = block * t.block, rows = std::min(t.block, t.tiles - t0);
#pragma omp for schedule(static)
      for (i64 r = 0; r < rows; ++r) {
        const TilePlace at = place(t, t0 + r);
        for (i64 cb = 0; cb < CB; ++cb)
          input_tile(x + (at.n * CB + cb) * d.H * d.W * kB, d.H, d.W, at.oh0 - d.pad_h,
                     at.ow0 - d.pad_w, V + r * C + cb * kB, v_stride);
      }
#pragma omp for schedule(static)
      for (i64 u = 0; u < products; ++u) {
        const Unit at = unit(u, K);
        gemm<false>(rows, at.width, C, V + at.p * v_stride, C, 1, U + at.p * C * K + at.k0 * C,
                    16 * C, M + at.p * m_stride + at.k0, K);
      }
#pragma omp for schedule(static)
      for (i64 r = 0; r < rows; ++r) {
        const TilePlace at = place(t, t0 + r);
        for (i64 kb = 0; kb < KB; ++kb) {
          const __m256 bias = b != nullptr ? _mm256_loadu_ps(b + kb * kB) : _mm256_setzero_ps();
          output_tile(M + r * K + kb * kB, m_stride, bias, relu,
                      y + (at.n * KB + kb) * d.OH * d.OW * kB, d.OH, d.OW, at.oh0, at.ow0);
        }
      }
    }
  }
}

void conv2d_winograd_backward(const Conv2dDims& d, const float* dy, const float* x, const float* w,
                              float* dx, float* dw, float* db) {
  const i64 C = d.C, K = d.OC, CB = C / kB, KB = K / kB;
  if (dx != nullptr) {
    // dx = the convolution of dy with w flipped in both axes and transposed (OC <-> C), padded
    // by 2 - pad: the forward above with the sizes swapped.
    Conv2dDims t = d;
    t.C = K, t.OC = C, t.H = d.OH, t.W = d.OW, t.OH = d.H, t.OW = d.W;
    t.pad_h = 2 - d.pad_h, t.pad_w = 2 - d.pad_w;
    float* flipped = buffer(kFlipped, C * K * 9);
#pragma omp parallel for schedule(static) if (C * K > 4096)
    for (i64 c = 0; c < C; ++c)
      for (i64 k = 0; k < K; ++k)
        for (int i = 0; i < 9; ++i) flipped[(c * K + k) * 9 + (8 - i)] = w[(k * C + c) * 9 + i];
    conv2d_winograd_forward(t, dy, flipped, nullptr, dx, false);
  }
  const Tiling t = tiling(d);
  const i64 v_stride = t.block * C, m_stride = t.block * K;
  // The forward's buffers, free again: dU in U's, the output gradients' transforms in M's.
  float* dU = buffer(kU, kPos * C * K);
  float* V = buffer(kV, kPos * v_stride);
  float* dM = buffer(kM, kPos * m_stride);
  const i64 products = units(K);
#pragma omp parallel num_threads(threads_for(t.tiles * 16 * C * K))
  {
    if (t.tiles == 0) {  // no pixels: the gradients are zero
#pragma omp for schedule(static)
      for (i64 i = 0; i < kPos * C * K; ++i) dU[i] = 0.0f;
    }
    for (i64 block = 0; block < t.blocks; ++block) {
      const i64 t0 = block * t.block, rows = std::min(t.block, t.tiles - t0);
#pragma omp for schedule(static)
      for (i64 r = 0; r < rows; ++r) {
        const TilePlace at = place(t, t0 + r);
        for (i64 cb = 0; cb < CB; ++cb)
          input_tile(x + (at.n * CB + cb) * d.H * d.W * kB, d.H, d.W, at.oh0 - d.pad_h,
                     at.ow0 - d.pad_w, V + r * C + cb * kB, v_stride);
        for (i64 kb = 0; kb < KB; ++kb)
          gradient_tile(dy + (at.n * KB + kb) * d.OH * d.OW * kB, d.OH, d.OW, at.oh0, at.ow0,
                        dM + packed_at(r, kb * kB, K, 16 * t.block), m_stride);
      }
      // dU[p] (C x K) += V[p]^T (C x rows) dM[p] (rows x K), the first block without the +
#pragma omp for schedule(static)
      for (i64 u = 0; u < products; ++u) {
        const Unit at = unit(u, K);
        const float* a = V + at.p * v_stride;
        const float* bm = dM + at.p * m_stride + at.k0 * t.block;
        float* c = dU + at.p * C * K + at.k0;
        if (block == 0)
          gemm<false>(C, at.width, rows, a, 1, C, bm, 16 * t.block, c, K);
        else
          gemm<true>(C, at.width, rows, a, 1, C, bm, 16 * t.block, c, K);
      }
    }
    weights_gradient(dU, K, C, dw);
    if (db != nullptr) bias_gradient(dy, d.N, KB, d.OH * d.OW, db);
  }
}

}  // namespace epoch::cpu

#pragma GCC pop_options
