// Checks on flag values with short messages that name the limit ("must be at least 1"), where
// CLI11's own range checks print the type's whole range and let NaN through.
#pragma once

#include <CLI/CLI.hpp>

namespace epoch::cli {

/// A finite number > 0.
CLI::Validator positive();
/// A finite number >= 0.
CLI::Validator non_negative();
/// A finite number in [lo, hi].
CLI::Validator in_range(double lo, double hi);
/// A thread count: 0 (every core) to ops::kMaxThreads.
CLI::Validator thread_count();
/// An unsigned 64-bit integer written in decimal: no sign, no overflow.
CLI::Validator unsigned_64();

}  // namespace epoch::cli
