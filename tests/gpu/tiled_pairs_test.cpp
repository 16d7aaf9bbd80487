// gpu::find_pairs_tiled on the process's device (lavapipe in CI): scenes cut into several tiles
// by a small budget, each against brute force, exactly.
#include "broadphase/gpu/tiled_pairs.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <optional>

#include "broadphase/scene.hpp"
#include "gpu_test_env.hpp"

namespace broadphase::testing {
namespace {

class TiledPairsTest : public GpuTest {
protected:
    void SetUp() override {
        GpuTest::SetUp();
        auto made = gpu::Lbvh::create(gpu_context());
        ASSERT_TRUE(made) << made.error().message;
        lbvh_ = std::move(made.value());
    }
    // The budget of a build over `n` boxes, divided by `parts`.
    VkDeviceSize budget(std::size_t n, std::uint64_t parts) const {
        const auto r = lbvh_->requirements(static_cast<std::uint32_t>(n));
        return (r.boxes + r.nodes + r.scratch) / parts;
    }
    std::unique_ptr<gpu::Lbvh> lbvh_;
};

// Test 1: standard scenes under a budget of a quarter of their build: several tiles, the pairs
// of brute force, and every tile under the budget.
TEST_F(TiledPairsTest, StandardScenesUnderASmallBudget) {
    struct Case {
        const char* name;
        std::uint64_t parts;
    };
    for (const Case& c : {Case{"uniform", 4}, Case{"clustered", 4}, Case{"mixed_sizes", 4},
                          Case{"degenerate", 4}}) {
        const auto boxes = generate_scene(c.name, 4000).value().boxes;
        const gpu::TiledPairsOptions options{budget(boxes.size(), c.parts)};
        gpu::TiledPairsReport report;
        auto pairs = gpu::find_pairs_tiled(*lbvh_, boxes, options, &report);
        ASSERT_TRUE(pairs) << c.name << ": " << pairs.error().message;
        EXPECT_GE(report.tiles, c.parts) << c.name;
        EXPECT_LE(report.largest, options.budget) << c.name;
        EXPECT_GT(report.ghosts, 0u) << c.name;
        EXPECT_TRUE(*pairs == brute_pairs(boxes)) << c.name;
    }
}

// Test 2: a world-sized box overlaps every tile: it travels to the other tiles, not the scene
// to its tile, so a budget of an eighth still fits.
TEST_F(TiledPairsTest, WorldSizedBox) {
    auto boxes = generate_scene("uniform", 4000).value().boxes;
    boxes.insert(boxes.begin(), Box{{-1, -1, -1}, {2, 2, 2}});
    gpu::TiledPairsReport report;
    auto pairs = gpu::find_pairs_tiled(*lbvh_, boxes, {budget(boxes.size(), 8)}, &report);
    ASSERT_TRUE(pairs) << pairs.error().message;
    EXPECT_GE(report.tiles, 8u);
    EXPECT_TRUE(*pairs == brute_pairs(boxes));
}

// Test 3: no budget, or one the scene fits in: one tile, Lbvh::find_pairs' answer.
TEST_F(TiledPairsTest, OneTileWhenItFits) {
    const auto boxes = generate_scene("uniform", 3000).value().boxes;
    for (VkDeviceSize b : {VkDeviceSize(0), budget(boxes.size(), 1)}) {
        gpu::TiledPairsReport report;
        auto pairs = gpu::find_pairs_tiled(*lbvh_, boxes, {b}, &report);
        ASSERT_TRUE(pairs);
        EXPECT_EQ(report.tiles, 1u);
        EXPECT_EQ(report.ghosts, 0u);
        EXPECT_TRUE(*pairs == brute_pairs(boxes));
    }
}

// Test 4: hostile input: a budget smaller than one box, a NaN, and a budget that a tile of
// duplicates cannot meet (every box overlaps every other: each tile's ghosts are the rest).
TEST_F(TiledPairsTest, RefusesWhatCannotFit) {
    const auto boxes = generate_scene("uniform", 1000).value().boxes;
    auto tiny = gpu::find_pairs_tiled(*lbvh_, boxes, {16});
    ASSERT_FALSE(tiny);
    EXPECT_EQ(tiny.error().code, ErrorCode::limit_exceeded);
    auto bad = boxes;
    bad[7].max.y = std::numeric_limits<float>::quiet_NaN();
    auto nan = gpu::find_pairs_tiled(*lbvh_, bad, {budget(bad.size(), 4)});
    ASSERT_FALSE(nan);
    EXPECT_EQ(nan.error().box, std::optional<std::size_t>(7));
    const std::vector<Box> same(500, Box{{0, 0, 0}, {1, 1, 1}});
    auto crowded = gpu::find_pairs_tiled(*lbvh_, same, {budget(same.size(), 4)});
    ASSERT_FALSE(crowded);
    EXPECT_EQ(crowded.error().code, ErrorCode::limit_exceeded);
    EXPECT_NE(crowded.error().message.find("over the budget"), std::string::npos);
}

}  // namespace
}  // namespace broadphase::testing
