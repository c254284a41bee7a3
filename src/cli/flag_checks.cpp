// Flag value checks (flag_checks.h). Each validator sees the value as typed, before CLI11
// converts it, and returns an empty string when it is acceptable.
#include "cli/flag_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "epoch/ops/backend.h"

namespace epoch::cli {
namespace {

/// The number in `text`, or NaN when it is not one number. Lists ("1,2") are checked item by
/// item by CLI11 after splitting, so one item arrives here.
double parse_number(const std::string& text) {
  if (text.empty()) return std::nan("");
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE) return std::nan("");
  return v;
}

std::string shown(double v) {
  char buffer[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {  // whole numbers in full: 1000000000
    std::snprintf(buffer, sizeof buffer, "%.0f", v);
  } else {
    std::snprintf(buffer, sizeof buffer, "%g", v);
  }
  return buffer;
}

CLI::Validator number_check(std::string description, double lo, double hi, bool open_low) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const double v = parse_number(text);
        if (!std::isfinite(v)) return "'" + text + "' is not a finite number";
        if (open_low ? !(v > lo) : !(v >= lo)) return "must be " + description + ", got " + text;
        if (!(v <= hi)) return "must be " + description + ", got " + text;
        return {};
      },
      description);
}

}  // namespace

CLI::Validator positive() { return number_check("above 0", 0.0, HUGE_VAL, true); }

CLI::Validator non_negative() { return number_check("at least 0", 0.0, HUGE_VAL, false); }

CLI::Validator in_range(double lo, double hi) {
  return number_check("from " + shown(lo) + " to " + shown(hi), lo, hi, false);
}

CLI::Validator thread_count() {
  return number_check("from 0 (every core) to " + std::to_string(ops::kMaxThreads), 0.0,
                      static_cast<double>(ops::kMaxThreads), false);
}

CLI::Validator unsigned_64() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
          return "'" + text + "' is not a whole number from 0 to 18446744073709551615";
        errno = 0;
        (void)std::strtoull(text.c_str(), nullptr, 10);
        if (errno == ERANGE) return text + " is above 18446744073709551615 (2^64 - 1)";
        return {};
      },
      "0 to 2^64-1");
}

}  // namespace epoch::cli
