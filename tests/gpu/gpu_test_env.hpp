// Shared set-up of the GPU tests: one Vulkan context per process, validation layer always on,
// and a fixture that fails any test during which the layer reported an error.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "broadphase/gpu.hpp"
#include "broadphase/gpu/instruments.hpp"
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

/// The stage of `report` named `name`; null when there is none.
inline const gpu::StageReport* find_stage(const std::vector<gpu::StageReport>& report,
                                          const std::string& name) {
    for (const gpu::StageReport& s : report)
        if (s.name == name) return &s;
    return nullptr;
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

/// A context of the test's own, for options the shared one lacks (a capped binding range,
/// splitting off, a sort path, a pipeline cache); validation is turned on, and the tuning the
/// options leave open is taken from the environment as the tool takes it
/// (tool::tuning_from_environment). Null, with a failed expectation naming the error, when it
/// cannot be made.
std::unique_ptr<gpu::Context> own_context(gpu::ContextOptions options);

/// own_context with maxStorageBufferRange capped at `range` and tree splitting on or off.
std::unique_ptr<gpu::Context> capped_context(VkDeviceSize range, bool split_tree_bindings);

/// A GpuTest with a context of its own, made by the fixture's SetUp into `own_`: TearDown
/// checks that this one too reported no validation error, and releases it.
class OwnContextTest : public GpuTest {
protected:
    void TearDown() override {
        if (own_) {
            EXPECT_EQ(own_->validation_errors(), 0u) << "validation errors";
        }
        own_.reset();
        GpuTest::TearDown();
    }
    std::unique_ptr<gpu::Context> own_;
};

}  // namespace broadphase::testing
