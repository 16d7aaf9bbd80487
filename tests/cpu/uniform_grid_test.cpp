// Tests of the uniform hash grid (cpu_reference/uniform_grid.*; M. Teschner et al., "Optimized
// Spatial Hashing for Collision Detection of Deformable Objects", VMV 2003, with a hierarchy of
// levels after B. Mirtich's hierarchical spatial hashing) that are its own: the levels used by
// mixed sizes, a huge box and crossing boxes, bad configurations, local queries, emptying the
// cells, the level hierarchy, and the cost per query. Every query against brute force on the
// standard and degenerate scenes under several grid configurations, bad boxes, nearest edge
// cases and the random insert/remove/move sequences are in the typed suite
// (structure_test.cpp, structure_configs.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "broadphase/scene.hpp"
#include "brute_force.hpp"
#include "oracle_harness.hpp"
#include "tree_test_common.hpp"
#include "uniform_grid.hpp"

namespace broadphase {
namespace {

// ---- references ---------------------------------------------------------------------------

// Compares `grid` with brute force over `boxes` whose ids are `ids` (input indices when empty),
// on `queries` random queries of each kind and those made from the boxes (oracle_harness.hpp).
void expect_matches_brute_force(const UniformGrid& grid, std::span<const Box> boxes,
                                std::vector<std::uint32_t> ids, std::uint32_t seed,
                                const std::string& label, int queries = 200) {
    SCOPED_TRACE(label);
    if (ids.empty()) ids = testing::iota_ids(boxes.size());
    ASSERT_EQ(ids.size(), boxes.size());
    std::map<std::uint32_t, Box> live;
    for (std::size_t k = 0; k < ids.size(); ++k) live[ids[k]] = boxes[k];
    testing::expect_matches_live(grid, live, testing::sampled_comparison(seed, queries, 2));
}

void build_and_compare(UniformGrid& grid, std::span<const Box> boxes, const std::string& label) {
    ASSERT_TRUE(grid.build(boxes).ok()) << label;
    const Status v = grid.validate();
    ASSERT_TRUE(v.ok()) << label << ": " << v.error().message;
    expect_matches_brute_force(grid, boxes, {}, 7, label);
}

// Scenario 2: the finest level and the coarser ones are both used (the typed suite would pass
// trivially if everything landed in one level).
TEST(UniformGrid, Scenario2_MixedSizesUseSeveralLevels) {
    auto scene = generate_scene("mixed_sizes", 3000);
    ASSERT_TRUE(scene.ok());
    UniformGrid::Config c;
    c.max_cells_per_box = 8;
    UniformGrid grid(c);
    ASSERT_TRUE(grid.build(scene->boxes).ok());
    EXPECT_GT(grid.coarse_count(), 0u);
    EXPECT_LT(grid.coarse_count(), scene->boxes.size());
    EXPECT_GT(grid.cell_count(), 0u);
    expect_matches_brute_force(grid, scene->boxes, {}, 11, "mixed_sizes:3000 cap 8");
}

// ---- hand-made degenerate scenes ------------------------------------------------------------

// Scenario 5: one huge box over everything goes to a coarser level of its own.
TEST(UniformGrid, Scenario5_OneHugeBox) {
    UniformGrid grid;
    ASSERT_TRUE(grid.build(testing::world_box_among_uniform()).ok());
    EXPECT_EQ(grid.coarse_count(), 1u);
    EXPECT_EQ(grid.levels(), 2u);
}

// Scenario 8: the flaw of corner-only bucketing (the typed suite checks that the pair is found):
// the small boxes fix the cell side at 0.02, so the two long boxes span 10 cells each and meet
// only in a middle cell, in the finest level.
TEST(UniformGrid, Scenario8_MissedMiddleCell) {
    UniformGrid grid;
    ASSERT_TRUE(grid.build(testing::crossing_in_a_middle_cell()).ok());
    EXPECT_NEAR(grid.cell_size()[0], 0.02, 1e-6);
    EXPECT_EQ(grid.coarse_count(), 0u);
}

// Scenario 9: a bad configuration is rejected.
TEST(UniformGrid, Scenario9_RejectsZeroCellScale) {
    UniformGrid::Config bad;
    bad.cell_scale = 0;
    UniformGrid bad_grid(bad);
    EXPECT_FALSE(bad_grid.build(std::vector<Box>{{{0, 0, 0}, {1, 1, 1}}}).ok());
}

// Scenario 10: queries are local: a short ray, a point pick and a nearest query on a uniform
// scene test far fewer boxes than a linear scan would.
TEST(UniformGrid, Scenario10_QueriesAreLocal) {
    auto scene = generate_scene("uniform", 20000);
    ASSERT_TRUE(scene.ok());
    UniformGrid grid;
    ASSERT_TRUE(grid.build(scene->boxes).ok());
    grid.reset_stats();
    Ray ray{{0.5f, 0.5f, -0.1f}, {0.01f, 0.02f, 1.0f}, 2.0f};
    BruteForce bf;
    ASSERT_TRUE(bf.build(scene->boxes).ok());
    const auto got = grid.ray_cast(ray);
    const auto want = bf.ray_cast(ray);
    ASSERT_TRUE(got && want);
    EXPECT_EQ(got->id, want->id);
    EXPECT_GT(grid.stats().nodes_visited, 0u);
    EXPECT_LT(grid.stats().box_tests, 2000u);
    grid.reset_stats();
    std::vector<Neighbor> near;
    ASSERT_TRUE(grid.nearest({0.5f, 0.5f, 0.5f}, 5, near).ok());
    EXPECT_EQ(near, testing::brute_nearest(scene->boxes, {0.5f, 0.5f, 0.5f}, 5));
    EXPECT_LT(grid.stats().box_tests, 2000u);
    (void)testing::counted_query_point(grid, {0.5f, 0.5f, 0.5f});
    EXPECT_LT(grid.stats().box_tests, 200u);
    EXPECT_EQ(grid.stats().nodes_visited, 1u);
}

// ---- dynamic ---------------------------------------------------------------------------------

// Scenario 12: a random sequence of the typed suite (oracle_harness.hpp), then every box removed:
// no cell is left behind; then refilled.
TEST(UniformGrid, Scenario12_EmptiedGridHasNoCells) {
    UniformGrid grid;
    std::map<std::uint32_t, Box> live =
        testing::run_dynamic_sequence(grid, testing::misuse_sequence(1));
    if (HasFailure()) return;
    while (!live.empty()) {
        ASSERT_TRUE(grid.remove(live.begin()->first).ok());
        live.erase(live.begin());
    }
    ASSERT_TRUE(grid.validate().ok());
    EXPECT_EQ(grid.cell_count(), 0u);
    EXPECT_EQ(grid.size(), 0u);
}

}  // namespace
}  // namespace broadphase

namespace broadphase {
namespace {

// Scenario 14: the level hierarchy. The degenerate scene needs coarser levels (a far group of
// larger cubes, one huge box); with max_cells_per_box = 0 nothing fits any level and every
// box ends in the deepest level's linear list.
TEST(UniformGrid, Scenario14_Levels) {
    auto scene = generate_scene("degenerate", 3000);
    ASSERT_TRUE(scene.ok());
    UniformGrid grid;
    ASSERT_TRUE(grid.build(scene->boxes).ok());
    EXPECT_GE(grid.levels(), 2u);
    EXPECT_GT(grid.coarse_count(), 0u);
    ASSERT_TRUE(grid.coarse());
    EXPECT_GE(grid.coarse()->cell_size()[0], UniformGrid::kLevelGrowth * grid.cell_size()[0]);

    UniformGrid::Config none_fit;
    none_fit.max_cells_per_box = 0;
    UniformGrid deepest(none_fit);
    auto small = generate_scene("clustered", 300);
    ASSERT_TRUE(small.ok());
    build_and_compare(deepest, small->boxes, "max_cells_per_box 0");
    EXPECT_EQ(deepest.levels(), UniformGrid::kMaxDepth + 1);
    EXPECT_EQ(deepest.cell_count(), 0u);
    ASSERT_TRUE(deepest.insert(5000, {{0, 0, 0}, {0, 0, 0}}).ok());
    ASSERT_TRUE(deepest.validate().ok());
    ASSERT_TRUE(deepest.move(5000, {{0.5f, 0.5f, 0.5f}, {0.6f, 0.6f, 0.6f}}).ok());
    ASSERT_TRUE(deepest.remove(5000).ok());
    ASSERT_TRUE(deepest.validate().ok());
    EXPECT_EQ(deepest.size(), 300u);
}

}  // namespace
}  // namespace broadphase

namespace broadphase {
namespace {

// Box tests of one self_pairs call, per box.
double pair_tests_per_box(const UniformGrid& grid) {
    (void)testing::counted_self_pairs(grid);
    return double(grid.stats().box_tests) / double(std::max<std::size_t>(1, grid.size()));
}

// Scenario 15: the multiscale scene (clusters whose box sizes differ 10x and 100x) gets one
// level per size class: the tiny boxes no longer share a few median-sized cells, so the pair
// work per box stays near the uniform scene's (a single median-sized level costs about 9
// times uniform's at N = 8000 and grows with N), and everything still matches brute force.
TEST(UniformGrid, Scenario15_MultiscaleGetsALevelPerSizeClass) {
    auto uniform = generate_scene("uniform", 8000);
    auto multiscale = generate_scene("multiscale", 8000);
    ASSERT_TRUE(uniform.ok() && multiscale.ok());
    UniformGrid reference;
    ASSERT_TRUE(reference.build(uniform->boxes).ok());
    UniformGrid grid;
    build_and_compare(grid, multiscale->boxes, "multiscale:8000");
    EXPECT_EQ(grid.levels(), 3u);
    EXPECT_EQ(grid.size() - grid.coarse_count(), 3000u);  // the three clusters of side 0.1
    ASSERT_TRUE(grid.coarse());
    EXPECT_EQ(grid.coarse()->size() - grid.coarse()->coarse_count(), 3000u);  // side 1
    EXPECT_LT(pair_tests_per_box(grid), 2 * pair_tests_per_box(reference));
}

// Scenario 16: a size class gets its own cells only when it would crowd the median-sized
// ones. Test 1: 300 scattered boxes 5x smaller than a uniform scene's stay in its one level.
// Test 2: 3000 such boxes packed into one corner (as dense as the uniform boxes, relative to
// their size: hundreds per uniform-sized cell) get a finer level of their own, and the
// uniform boxes do not follow them there (they would span up to 64 fine cells each).
// Test 3: boxes inserted or moved later go to the level of their size class.
TEST(UniformGrid, Scenario16_OnlyCrowdingClassesGetFinerCells) {
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene.ok());
    const float side = scene->boxes[0].max.x - scene->boxes[0].min.x;
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    const auto small_box = [&](float spread) {
        const Vec3 p{spread * u(rng), spread * u(rng), spread * u(rng)};
        const float s = side / 5;
        return Box{p, {p.x + s, p.y + s, p.z + s}};
    };
    UniformGrid uniform_only;
    ASSERT_TRUE(uniform_only.build(scene->boxes).ok());

    std::vector<Box> scattered = scene->boxes;
    for (int i = 0; i < 300; ++i) scattered.push_back(small_box(1.0f));
    UniformGrid grid;
    build_and_compare(grid, scattered, "scattered small boxes");
    EXPECT_EQ(grid.levels(), 1u);
    EXPECT_EQ(grid.cell_size(), uniform_only.cell_size());

    std::vector<Box> packed = scene->boxes;
    for (int i = 0; i < 3000; ++i) packed.push_back(small_box(0.2f));  // uniform's density
    build_and_compare(grid, packed, "packed small boxes");
    EXPECT_EQ(grid.levels(), 2u);
    EXPECT_EQ(grid.size() - grid.coarse_count(), 3000u);
    EXPECT_LT(grid.cell_size()[0], uniform_only.cell_size()[0] / UniformGrid::kLevelGrowth);
    EXPECT_LT(pair_tests_per_box(grid), 2 * pair_tests_per_box(uniform_only));

    // A uniform-sized box inserted into the finer level's region joins the coarser level; a
    // small one joins the finer level; moving them swaps their levels.
    const auto next = static_cast<std::uint32_t>(packed.size());
    const Box big{{0.05f, 0.05f, 0.05f}, {0.05f + side, 0.05f + side, 0.05f + side}};
    const Box small = small_box(0.2f);
    ASSERT_TRUE(grid.insert(next, big).ok());
    ASSERT_TRUE(grid.insert(next + 1, small).ok());
    ASSERT_TRUE(grid.validate().ok());
    EXPECT_EQ(grid.size() - grid.coarse_count(), 3001u);
    ASSERT_TRUE(grid.move(next, small).ok());
    ASSERT_TRUE(grid.move(next + 1, big).ok());
    const Status v = grid.validate();
    ASSERT_TRUE(v.ok()) << v.error().message;
    EXPECT_EQ(grid.size() - grid.coarse_count(), 3001u);
    packed.push_back(small);
    packed.push_back(big);
    expect_matches_brute_force(grid, packed, {}, 13, "after insert and move");
}

// Scenario 17: no scene makes a query far dearer than on a uniform scene (issue 9). Per query
// cost = nodes + leaves visited + box tests, averaged over 300 queries of each kind made from
// the scene's boxes (their own box, their centroid, a ray from the centroid in a random
// direction, its 8 nearest). Multiscale spreads dense clusters of three sizes over 1e4 (the
// fine levels span 1e6 cells, mostly empty); degenerate puts a group 1e6 away, where a ray's
// rounding margin spans many fine cells. Each kind must stay within 8x of uniform's.
testing::QueryCost grid_query_cost(std::span<const Box> boxes) {
    UniformGrid grid;
    const testing::QueryCost c = testing::query_cost(grid, boxes, 300);
    EXPECT_TRUE(c.nearest_ok);
    return c;
}

TEST(UniformGrid, Scenario17_QueryCostWithinAFactorOfUniform) {
    constexpr std::size_t kCount = 20000;
    constexpr double kCostFactor = 8;
    auto uniform = generate_scene("uniform", kCount);
    ASSERT_TRUE(uniform.ok());
    const testing::QueryCost base = grid_query_cost(uniform->boxes);
    for (const char* name : {"multiscale", "degenerate", "clustered", "level", "mixed_sizes"}) {
        SCOPED_TRACE(name);
        auto scene = generate_scene(name, kCount);
        ASSERT_TRUE(scene.ok());
        const testing::QueryCost c = grid_query_cost(scene->boxes);
        EXPECT_LT(c.box, kCostFactor * base.box);
        EXPECT_LT(c.point, kCostFactor * base.point);
        EXPECT_LT(c.ray, kCostFactor * base.ray);
        EXPECT_LT(c.nearest, kCostFactor * base.nearest);
    }
}

}  // namespace
}  // namespace broadphase
