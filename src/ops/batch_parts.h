// A gradient summed over the batch, computed over the fixed partition of the batch
// (cpu/fixed_parts.h): each part on one thread into partial sums of its own, then the partials
// added in part order, or in --perturb order's shuffled one. CpuKernels::strict runs the
// convolution's weight gradient so (the same bits at every thread count), and --perturb order
// the convolution's and the dense layers'.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "cpu/fixed_parts.h"

namespace epoch::ops {

/// One summed output: n floats at data (data null or n 0: none).
struct PartSum {
  float* data = nullptr;
  std::int64_t n = 0;
};

/// Runs run(part, a, b) for every part of the fixed partition of a batch of N, where a and b
/// are the part's partials of outputs `first` and `second`, and leaves in first and second
/// the partials' sums (in part order, or in order_key's shuffled order). Part 0 writes
/// straight into first and second. The partials of the other parts live in a buffer of the
/// calling thread's, kept for its next call.
template <typename Run>
void sum_over_parts(std::int64_t N, PartSum first, PartSum second,
                    std::optional<std::uint64_t> order_key, const Run& run) {
  const std::vector<cpu::Part> parts = cpu::fixed_parts(N);
  const std::size_t P = parts.size();
  if (second.data == nullptr) second.n = 0;
  const std::size_t per_part = static_cast<std::size_t>(first.n + second.n);
  thread_local std::vector<float> scratch;
  if (scratch.size() < per_part * (P - 1)) scratch.resize(per_part * (P - 1));
  std::vector<const float*> firsts(P, first.data), seconds(P, second.data);
  std::vector<float*> first_out(P, first.data), second_out(P, second.data);
  for (std::size_t i = 1; i < P; ++i) {
    first_out[i] = scratch.data() + (i - 1) * per_part;
    second_out[i] = second.data != nullptr ? first_out[i] + first.n : nullptr;
    firsts[i] = first_out[i];
    seconds[i] = second_out[i];
  }
  cpu::for_each_part(P, [&](std::size_t i) { run(parts[i], first_out[i], second_out[i]); });
  if (P == 1) return;
  const std::vector<std::size_t> order =
      order_key ? cpu::shuffled_order(P, *order_key) : std::vector<std::size_t>();
  cpu::sum_parts(firsts, order, first.data, first.n);
  if (second.data != nullptr) cpu::sum_parts(seconds, order, second.data, second.n);
}

}  // namespace epoch::ops
