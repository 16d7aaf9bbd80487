// Shared set-up of the GPU tests: one Vulkan context per process, validation layer always on,
// and a fixture that fails any test during which the layer reported an error.
#pragma once

#include <gtest/gtest.h>

#include "broadphase/gpu.hpp"
#include "lbvh.hpp"

namespace broadphase::testing {

/// The process-wide context (created in main with validation enabled).
gpu::Context& gpu_context();

/// The CPU twin's code kind for a GPU code kind.
inline lbvh::CodeKind cpu_kind(gpu::CodeKind code) {
    switch (code) {
        case gpu::CodeKind::morton63:
            return lbvh::CodeKind::morton63;
        case gpu::CodeKind::hilbert30:
            return lbvh::CodeKind::hilbert30;
        default:
            return lbvh::CodeKind::morton30;
    }
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
