// Winograd F(4x4, 3x3) convolution on 8-channel blocked activations (see conv2d_winograd.h).
//
// The transforms (B^T d B, A^T M A, A dY A^T) run on AVX2 vectors of the 8 channels of a block,
// so they need no shuffles. Per block of kTileBlock tiles, each of the 36 positions is one matrix
// product: forward M[tile][k] = sum_c V[tile][c] U[c][k]; backward weights dU[c][k] +=
// sum_tile V[tile][c] dM[tile][k]. The products run a 6x16 register-blocked micro-kernel.
// Threads take contiguous runs of tile blocks (a fixed split for a given thread count); backward
// weights sums each thread's dU and then adds the threads' sums in thread order, so the bits do
// not depend on timing.
#include "cpu/conv2d_winograd.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
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

constexpr i64 kB = 8;                 // channels per block: one AVX2 vector
constexpr i64 kPos = 36;              // positions of a transformed 6x6 tile
constexpr i64 kTileBlock = 24;        // tiles transformed and multiplied together
constexpr i64 kSerialWork = 1 << 21;  // multiply-adds below which one thread does it all

// G of F(4x4, 3x3) (points 0, 1, -1, 2, -2 and infinity): U = G g G^T.
constexpr double kG[6][3] = {{1.0 / 4, 0, 0},
                             {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                             {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                             {1.0 / 24, 1.0 / 12, 1.0 / 6},
                             {1.0 / 24, -1.0 / 12, 1.0 / 6},
                             {0, 0, 1}};

// The output's 4x4 tiles, in (n, tile row, tile column) order.
struct Tiling {
  i64 tiles_h = 0, tiles_w = 0, tiles = 0, blocks = 0;
};

Tiling tiling(const Conv2dDims& d) {
  Tiling t;
  t.tiles_h = (d.OH + 3) / 4;
  t.tiles_w = (d.OW + 3) / 4;
  t.tiles = d.N * t.tiles_h * t.tiles_w;
  t.blocks = (t.tiles + kTileBlock - 1) / kTileBlock;
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

// The [first, last) tile blocks of thread `id` of `count`.
std::pair<i64, i64> share(i64 blocks, int id, int count) {
  return {blocks * id / count, blocks * (id + 1) / count};
}

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
// position p goes to dm[p * stride]; `sum` gains the tile's pixels (for the bias gradient).
inline void gradient_tile(const float* plane, i64 rows, i64 cols, i64 i0, i64 j0, float* dm,
                          i64 stride, __m256& sum) {
  __m256 t[6][4];
#pragma GCC unroll 6
  for (int j = 0; j < 4; ++j) {
    __m256 col[4], m[6];
#pragma GCC unroll 6
    for (int i = 0; i < 4; ++i) {
      col[i] = i0 + i < rows && j0 + j < cols
                   ? _mm256_loadu_ps(plane + ((i0 + i) * cols + j0 + j) * kB)
                   : _mm256_setzero_ps();
      sum = _mm256_add_ps(sum, col[i]);
    }
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
// cols is a multiple of 8.
template <bool kAccumulate>
void gemm(i64 rows, i64 cols, i64 depth, const float* a, i64 a_row, i64 a_depth, const float* b,
          i64 ldb, float* c, i64 ldc) {
  i64 j = 0;
  for (; j + 16 <= cols; j += 16)
    rows_of<2, kAccumulate>(rows, a, a_row, a_depth, b + j, ldb, c + j, ldc, depth);
  if (j < cols) rows_of<1, kAccumulate>(rows, a, a_row, a_depth, b + j, ldb, c + j, ldc, depth);
}

// ---- the weights ----

// U[p][c][k] = (G w[k][c] G^T)[p], for K output and C input channels.
void transform_weights(const float* w, i64 K, i64 C, float* U) {
#pragma omp parallel for schedule(static) if (K * C > 4096)
  for (i64 k = 0; k < K; ++k) {
    for (i64 c = 0; c < C; ++c) {
      const float* g = w + (k * C + c) * 9;
      double gg[6][3];  // G g
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 3; ++j)
          gg[i][j] = kG[i][0] * g[j] + kG[i][1] * g[3 + j] + kG[i][2] * g[6 + j];
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j)
          U[((i * 6 + j) * C + c) * K + k] =
              static_cast<float>(gg[i][0] * kG[j][0] + gg[i][1] * kG[j][1] + gg[i][2] * kG[j][2]);
    }
  }
}

// dw[k][c] = G^T dU[.][c][k] G.
void weights_gradient(const float* dU, i64 K, i64 C, float* dw) {
#pragma omp parallel for schedule(static) if (K * C > 4096)
  for (i64 k = 0; k < K; ++k) {
    for (i64 c = 0; c < C; ++c) {
      double gu[3][6];  // G^T dU
      for (int a = 0; a < 3; ++a)
        for (int j = 0; j < 6; ++j) {
          double s = 0;
          for (int i = 0; i < 6; ++i) s += kG[i][a] * dU[((i * 6 + j) * C + c) * K + k];
          gu[a][j] = s;
        }
      float* g = dw + (k * C + c) * 9;
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
          double s = 0;
          for (int j = 0; j < 6; ++j) s += gu[a][j] * kG[j][b];
          g[a * 3 + b] = static_cast<float>(s);
        }
    }
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
  std::vector<float> U(kPos * C * K);
  transform_weights(w, K, C, U.data());
  const i64 v_stride = kTileBlock * C, m_stride = kTileBlock * K;  // between positions
  const i64 per_thread = kPos * (v_stride + m_stride);
  const int threads = threads_for(t.tiles * 16 * C * K);
  std::vector<float> scratch(static_cast<std::size_t>(threads * per_thread));
#pragma omp parallel num_threads(threads)
  {
    const int id = omp_get_thread_num();
    float* V = scratch.data() + id * per_thread;
    float* M = V + kPos * v_stride;
    const auto [first, last] = share(t.blocks, id, omp_get_num_threads());
    for (i64 block = first; block < last; ++block) {
      const i64 t0 = block * kTileBlock, rows = std::min(kTileBlock, t.tiles - t0);
      for (i64 r = 0; r < rows; ++r) {
        const TilePlace at = place(t, t0 + r);
        for (i64 cb = 0; cb < CB; ++cb)
          input_tile(x + (at.n * CB + cb) * d.H * d.W * kB, d.H, d.W, at.oh0 - d.pad_h,
                     at.ow0 - d.pad_w, V + r * C + cb * kB, v_stride);
      }
      for (i64 p = 0; p < kPos; ++p)
        gemm<false>(rows, K, C, V + p * v_stride, C, 1, U.data() + p * C * K, K, M + p * m_stride,
                    K);
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
    std::vector<float> flipped(static_cast<std::size_t>(C * K * 9));
    for (i64 k = 0; k < K; ++k)
      for (i64 c = 0; c < C; ++c)
        for (int i = 0; i < 9; ++i) flipped[(c * K + k) * 9 + (8 - i)] = w[(k * C + c) * 9 + i];
    conv2d_winograd_forward(t, dy, flipped.data(), nullptr, dx, false);
  }
  const Tiling t = tiling(d);
  const i64 v_stride = kTileBlock * C, m_stride = kTileBlock * K;
  const i64 per_thread = kPos * (v_stride + m_stride + C * K) + K;
  const int threads = threads_for(t.tiles * 16 * C * K);
  std::vector<float> scratch(static_cast<std::size_t>(threads * per_thread));
  const auto sums_of = [&](int id) { return scratch.data() + id * per_thread; };  // dU, then db
  int team = 1;  // the threads that ran (the runtime may give fewer than asked)
#pragma omp parallel num_threads(threads)
  {
    const int id = omp_get_thread_num();
    if (id == 0) team = omp_get_num_threads();
    float* dU = sums_of(id);
    float* bias_sum = dU + kPos * C * K;
    float* V = bias_sum + K;
    float* dM = V + kPos * v_stride;
    std::fill(dU, dU + kPos * C * K + K, 0.0f);
    const auto [first, last] = share(t.blocks, id, omp_get_num_threads());
    for (i64 block = first; block < last; ++block) {
      const i64 t0 = block * kTileBlock, rows = std::min(kTileBlock, t.tiles - t0);
      for (i64 r = 0; r < rows; ++r) {
        const TilePlace at = place(t, t0 + r);
        for (i64 cb = 0; cb < CB; ++cb)
          input_tile(x + (at.n * CB + cb) * d.H * d.W * kB, d.H, d.W, at.oh0 - d.pad_h,
                     at.ow0 - d.pad_w, V + r * C + cb * kB, v_stride);
        for (i64 kb = 0; kb < KB; ++kb) {
          __m256 sum = _mm256_loadu_ps(bias_sum + kb * kB);
          gradient_tile(dy + (at.n * KB + kb) * d.OH * d.OW * kB, d.OH, d.OW, at.oh0, at.ow0,
                        dM + r * K + kb * kB, m_stride, sum);
          _mm256_storeu_ps(bias_sum + kb * kB, sum);
        }
      }
      // dU[p] (C x K) += V[p]^T (C x rows) dM[p] (rows x K)
      for (i64 p = 0; p < kPos; ++p)
        gemm<true>(C, K, rows, V + p * v_stride, 1, C, dM + p * m_stride, K, dU + p * C * K, K);
    }
  }
  // The threads' sums, added in thread order; thread 0's buffer takes the total.
  float* total = sums_of(0);
  const i64 summed = kPos * C * K + K;
#pragma omp parallel for schedule(static) if (team > 1 && summed > 4096)
  for (i64 i = 0; i < summed; ++i)
    for (int id = 1; id < team; ++id) total[i] += sums_of(id)[i];
  weights_gradient(total, K, C, dw);
  if (db != nullptr) std::copy(total + kPos * C * K, total + summed, db);
}

}  // namespace epoch::cpu

#pragma GCC pop_options
