// Included LAST by a kernel source file that CMake compiles once per instruction-set level
// (epoch_isa_tiers in src/CMakeLists.txt defines EPOCH_ISA_LEVEL 1 and 2 for the extra
// compilations; the plain one is level 0). From here to the end of the file every function is
// compiled for that level (`#pragma GCC target`, which OpenMP's outlined regions inherit) and
// the kernels go in its namespace, EPOCH_ISA_NS. Headers included before stay baseline, so the
// inline functions and templates that several compilations share are the same everywhere and
// an AVX-512 copy can never stand in for the baseline one.
//
// EPOCH_ISA_HAS_AVX2: the level may use AVX2 and FMA intrinsics (levels 1 and 2). Under clang,
// which has no `#pragma GCC target`, every level takes the features the build's -march gives.
#pragma once

#ifndef EPOCH_ISA_LEVEL
#define EPOCH_ISA_LEVEL 0
#endif

#if EPOCH_ISA_LEVEL == 0
#define EPOCH_ISA_NS isa_x86_64
#elif EPOCH_ISA_LEVEL == 1
#define EPOCH_ISA_NS isa_x86_64_v3
#elif EPOCH_ISA_LEVEL == 2
#define EPOCH_ISA_NS isa_x86_64_v4
#else
#error "EPOCH_ISA_LEVEL must be 0, 1 or 2"
#endif

#if defined(__clang__)
#if EPOCH_ISA_LEVEL >= 1 && defined(__AVX2__) && defined(__FMA__)
#define EPOCH_ISA_HAS_AVX2 1
#else
#define EPOCH_ISA_HAS_AVX2 0
#endif
#else
#if EPOCH_ISA_LEVEL == 1
#pragma GCC target("sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,fma,bmi,bmi2,lzcnt,movbe,f16c")
#elif EPOCH_ISA_LEVEL == 2
#pragma GCC target("sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,fma,bmi,bmi2,lzcnt,movbe,f16c")
#pragma GCC target("avx512f,avx512bw,avx512cd,avx512dq,avx512vl")
#endif
#define EPOCH_ISA_HAS_AVX2 (EPOCH_ISA_LEVEL >= 1)
#endif
