// Internal to the data layer: the generators of `epoch data synth`, one file each
// (synth_catdog.cpp, synth_cifar10.cpp, synth_imagenet.cpp), dispatched by synth.cpp. Each
// paints class `label` onto a canvas, drawing everything from `rng`.
#pragma once

#include <cstdint>

#include "data/synth_draw.h"
#include "epoch/tensor/random.h"

namespace epoch::data::synth {

/// A cat (label 0) or dog (label 1) face on an indoor or generic scene.
void draw_catdog(draw::Canvas& cv, RandomStream& rng, std::int64_t label);

/// A cat or dog face of random size (size_lo-size_hi of the frame), position (possibly
/// cropped), rotation (+-20 degrees), mirroring and colours; also CIFAR-10's cat and dog.
void draw_pet(draw::Canvas& cv, RandomStream& rng, bool dog, float size_lo, float size_hi);

/// CIFAR-10 class `label` (0-9): its motif on a scene typical of the class (usually).
void draw_cifar(draw::Canvas& cv, RandomStream& rng, std::int64_t label);

/// Imagenet-style class `label` (0-999): shape, colour family, pattern and count from its
/// decimal digits, over a textured background with clutter.
void draw_imagenet(draw::Canvas& cv, RandomStream& rng, std::int64_t label);

}  // namespace epoch::data::synth
