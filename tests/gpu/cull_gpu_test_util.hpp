// Shared by the GPU cull tests: the culler and device buffers of the test context and the
// standard scenes every cull suite runs on (the eight generators at 5,000 boxes and four tiny or
// degenerate ones).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/scene.hpp"
#include "gpu_test_env.hpp"

namespace broadphase::testing {

inline std::unique_ptr<gpu::Culler> make_culler(const gpu::CullOptions& options = {}) {
    auto culler = gpu::Culler::create(gpu_context(), options);
    EXPECT_TRUE(culler) << (culler ? "" : culler.error().message);
    return culler ? std::move(culler.value()) : nullptr;
}

/// A device buffer of the test context of at least 4 bytes (a failed expectation naming the
/// error, and an empty buffer, when it cannot be made).
inline gpu::Buffer device_buffer(VkDeviceSize size) {
    auto b = gpu_context().create_buffer(std::max<VkDeviceSize>(size, 4), gpu::MemoryKind::device);
    EXPECT_TRUE(b) << (b ? "" : b.error().message);
    return b ? std::move(b.value()) : gpu::Buffer();
}

/// Expects `r` (a Status or a Result) to be a refusal whose message contains `says`.
template <class R>
void expect_refused_with(const R& r, const std::string& says) {
    ASSERT_FALSE(r) << "not refused; expected an error saying " << says;
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
}

struct SceneCase {
    const char* generator;
    std::size_t n;
};

inline std::string case_name(const ::testing::TestParamInfo<SceneCase>& info) {
    return std::string(info.param.generator) + "_" + std::to_string(info.param.n);
}

/// The scenes of the INSTANTIATE_TEST_SUITE_P(StandardScenes, ...) of the cull suites.
inline auto standard_cull_scenes() {
    return ::testing::Values(
        SceneCase{"uniform", 5000}, SceneCase{"clustered", 5000}, SceneCase{"xline", 5000},
        SceneCase{"yline", 5000}, SceneCase{"mixed_sizes", 5000}, SceneCase{"degenerate", 5000},
        SceneCase{"level", 5000}, SceneCase{"multiscale", 5000}, SceneCase{"uniform", 1},
        SceneCase{"uniform", 2}, SceneCase{"clustered", 33}, SceneCase{"degenerate", 100});
}

/// What each scene test of the cull suites opens with: the case's scene, a culler of the test
/// context, and the nodes of the scene's tree built on the GPU (what the CPU twins read).
struct CullScene {
    std::vector<Box> boxes;
    std::unique_ptr<gpu::Culler> culler;
    std::vector<gpu_layout::LbvhNode> nodes;
    std::uint32_t n = 0;
};

/// The CullScene of a case; empty (after a failed expectation naming why) when a step fails.
inline std::optional<CullScene> open_cull_scene(const SceneCase& c) {
    auto scene = generate_scene(c.generator, c.n);
    EXPECT_TRUE(scene) << (scene ? "" : scene.error().message);
    auto culler = make_culler();
    auto lbvh = gpu::Lbvh::create(gpu_context());
    EXPECT_TRUE(lbvh) << (lbvh ? "" : lbvh.error().message);
    if (!scene || !culler || !lbvh) return std::nullopt;
    auto nodes = lbvh.value()->build_nodes(scene->boxes);
    EXPECT_TRUE(nodes) << (nodes ? "" : nodes.error().message);
    if (!nodes) return std::nullopt;
    const auto n = static_cast<std::uint32_t>(scene->boxes.size());
    return CullScene{std::move(scene->boxes), std::move(culler), std::move(nodes.value()), n};
}

}  // namespace broadphase::testing
