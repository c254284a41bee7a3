// Backend parity on the CPU: every entry of the parity table (testing/parity_cases.cpp) on
// every CPU backend (the oneDNN fast path) against the reference kernels; one test each.
#include "testing/parity.h"

namespace epoch::testing::parity {
namespace {

TEST_P(BackendParity, MatchesReference) { check(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cpu, BackendParity, ::testing::ValuesIn(params_for(DeviceType::cpu)),
                         param_name);

}  // namespace
}  // namespace epoch::testing::parity
