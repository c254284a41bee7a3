// Backend parity on CUDA (gpu label): every entry of the parity table (testing/parity_cases.cpp)
// on CUDA against the CPU reference kernels; skipped, saying why, without a device.
#include "testing/parity.h"

namespace epoch::testing::parity {
namespace {

TEST_P(BackendParity, MatchesReference) { check(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cuda, BackendParity, ::testing::ValuesIn(params_for(DeviceType::cuda)),
                         param_name);

}  // namespace
}  // namespace epoch::testing::parity
