// The pixel kernels behind warp_affine_bilinear and transform_sample (epoch/data/augment.h),
// compiled once per instruction-set level (kernels/isa_kernel.h); the public functions call
// these.
#pragma once

#include <cstdint>

#include "epoch/data/augment.h"
#include "kernels/isa_kernel.h"

namespace epoch::data::detail {

extern const kernels::IsaKernel<void(const ImageView& src, const Affine2D& map,
                                     bool fill_constant, std::int64_t channels,
                                     std::int64_t height, std::int64_t width, float* dst)>
    warp_affine_bilinear_kernel;

extern const kernels::IsaKernel<void(const ImageView& src, const Preprocessing& pre,
                                     const AugmentConfig* augment, RandomStream& rng,
                                     float* dst)>
    transform_sample_kernel;

}  // namespace epoch::data::detail
