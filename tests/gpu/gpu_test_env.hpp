// Shared set-up of the GPU tests: one Vulkan context per process, validation layer always on,
// and a fixture that fails any test during which the layer reported an error.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "broadphase/gpu.hpp"
#include "broadphase/structure.hpp"
#include "lbvh.hpp"

namespace broadphase::testing {

/// The process-wide context (created in main with validation enabled).
gpu::Context& gpu_context();

/// Brute force's pairs of `boxes`, the oracle of the GPU pair tests (a failed expectation and
/// no pairs when it refuses them).
inline std::vector<Pair> brute_pairs(std::span<const Box> boxes) {
    auto r = find_pairs_cpu("brute_force", boxes);
    EXPECT_TRUE(r);
    return r ? r.value() : std::vector<Pair>{};
}

class GpuTest : public ::testing::Test {
protected:
    void SetUp() override { errors_before_ = gpu_context().validation_errors(); }
    void TearDown() override {
        EXPECT_EQ(gpu_context().validation_errors(), errors_before_)
            << "the Vulkan validation layer reported errors during this test (see stderr)";
    }

private:
    std::uint64_t errors_before_ = 0;
};

}  // namespace broadphase::testing
