// Tests of the uniform hash grid against brute force: every standard generator at several
// sizes and grid configurations (self pairs, region queries, point picks, ray casts, k
// nearest), hand-made degenerate scenes (identical boxes, zero-volume boxes, one huge box, far
// offsets, a 2D scene, seed 004's missed middle cell), and random insert/remove/move sequences
// mirrored into a brute force rebuilt from the live id -> box map, validated after every step.
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
    testing::CompareOptions options;
    options.seed = seed;
    options.query_count = queries;
    options.nearest_stride = 2;
    options.nearest_all = false;
    testing::expect_matches_live(grid, live, options);
}

void build_and_compare(UniformGrid& grid, std::span<const Box> boxes, const std::string& label) {
    ASSERT_TRUE(grid.build(boxes).ok()) << label;
    const Status v = grid.validate();
    ASSERT_TRUE(v.ok()) << label << ": " << v.error().message;
    expect_matches_brute_force(grid, boxes, {}, 7, label);
}

// ---- every standard generator -------------------------------------------------------------

struct NamedConfig {
    const char* name;
    UniformGrid::Config config;
};

std::vector<NamedConfig> configs() {
    UniformGrid::Config fine;
    fine.cell_scale = 0.3;  // many cells per box
    UniformGrid::Config one_cell;
    one_cell.max_cells_per_box = 1;  // boxes crossing a cell face go coarser: many levels
    UniformGrid::Config coarse;
    coarse.cell_scale = 40;  // many boxes per cell
    return {{"default", {}}, {"fine", fine}, {"one_cell", one_cell}, {"coarse", coarse}};
}

// Scenario 1: every generator at N = 0, 1, 2, 7, 300, 3000, under several configurations.
TEST(UniformGrid, Scenario1_EveryGeneratorMatchesBruteForce) {
    for (const NamedConfig& nc : configs()) {
        for (const std::string_view gen : generator_names()) {
            for (const std::size_t n : {0, 1, 2, 7, 300, 3000}) {
                if (n == 3000 && std::string(nc.name) != "default" &&
                    std::string(nc.name) != "one_cell") {
                    continue;  // the slow configurations at 3000 add nothing but time
                }
                auto scene = generate_scene(gen, n);
                ASSERT_TRUE(scene.ok());
                UniformGrid grid(nc.config);
                build_and_compare(
                    grid, scene->boxes,
                    std::string(nc.name) + " " + std::string(gen) + ":" + std::to_string(n));
            }
        }
    }
}

// Scenario 2: the finest level and the coarser ones are both used (the test above would pass
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

// Scenario 3: 200 identical boxes: every pair, once.
TEST(UniformGrid, Scenario3_AllIdentical) {
    std::vector<Box> boxes(200, Box{{0.25f, 0.5f, 0.75f}, {0.5f, 0.75f, 1.0f}});
    UniformGrid grid;
    build_and_compare(grid, boxes, "identical");
    EXPECT_EQ(sorted_pairs(grid).size(), 200u * 199u / 2);
}

// Scenario 4: zero-volume boxes: points (some repeated) and flat boxes on each axis.
TEST(UniformGrid, Scenario4_ZeroVolume) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<Box> points, mixed;
    for (int i = 0; i < 400; ++i) {
        Vec3 p{std::round(u(rng) * 20) / 20, std::round(u(rng) * 20) / 20,
               std::round(u(rng) * 20) / 20};
        points.push_back({p, p});
        Box b{p, p};
        const int axis = i % 4;
        for (int a = 0; a < 3; ++a) {
            if (a != axis) b.max[a] = b.min[a] + 0.05f * u(rng);
        }
        mixed.push_back(b);
    }
    UniformGrid grid;
    build_and_compare(grid, points, "points");
    build_and_compare(grid, mixed, "points and flat boxes");
}

// Scenario 5: one huge box over everything: it goes to the large list and meets every box.
TEST(UniformGrid, Scenario5_OneHugeBox) {
    auto scene = generate_scene("uniform", 2000);
    ASSERT_TRUE(scene.ok());
    std::vector<Box> boxes = scene->boxes;
    boxes.insert(boxes.begin() + 1000, Box{{-1e6f, -1e6f, -1e6f}, {1e6f, 1e6f, 1e6f}});
    UniformGrid grid;
    build_and_compare(grid, boxes, "huge box");
    EXPECT_EQ(grid.coarse_count(), 1u);
    EXPECT_EQ(grid.levels(), 2u);
}

// Scenario 6: coordinates far from the origin (1e7 offsets), with and without a near group.
TEST(UniformGrid, Scenario6_FarFromOrigin) {
    auto scene = generate_scene("uniform", 1500);
    ASSERT_TRUE(scene.ok());
    std::vector<Box> far = scene->boxes, both = scene->boxes;
    for (Box& b : far) {
        for (int a = 0; a < 3; ++a) {
            const float offset = a == 1 ? -1e7f : 1e7f;
            b.min[a] = offset + b.min[a] * 1000.0f;
            b.max[a] = offset + b.max[a] * 1000.0f;
        }
    }
    both.insert(both.end(), far.begin(), far.end());
    UniformGrid grid;
    build_and_compare(grid, far, "far");
    build_and_compare(grid, both, "near and far");
}

// Scenario 7: a 2D scene (zero z extent everywhere).
TEST(UniformGrid, Scenario7_FlatScene) {
    auto scene = generate_scene("uniform", 2000);
    ASSERT_TRUE(scene.ok());
    std::vector<Box> boxes = scene->boxes;
    for (Box& b : boxes) b.min.z = b.max.z = 0.0f;
    UniformGrid grid;
    build_and_compare(grid, boxes, "2D");
}

// Scenario 8: seed 004's flaw. Two long boxes cross only in a middle cell where neither has a
// corner; corner-only bucketing misses the pair, entering every overlapped cell finds it.
TEST(UniformGrid, Scenario8_MissedMiddleCell) {
    std::vector<Box> boxes;
    for (int i = 0; i < 100; ++i) {  // small boxes fix the cell side at 0.02 (2 x 0.01)
        const float x = 0.01f * float(i);
        boxes.push_back({{x, 5, 5}, {x + 0.01f, 5.01f, 5.01f}});
    }
    const auto horizontal = std::uint32_t(boxes.size());
    boxes.push_back({{0.0f, 0.49f, 0.0f}, {0.2f, 0.5f, 0.01f}});  // 10 cells long on x
    boxes.push_back({{0.1f, 0.4f, 0.0f}, {0.11f, 0.6f, 0.01f}});  // 10 cells long on y
    UniformGrid grid;
    ASSERT_TRUE(grid.build(boxes).ok());
    EXPECT_NEAR(grid.cell_size()[0], 0.02, 1e-6);
    EXPECT_EQ(grid.coarse_count(), 0u);
    const std::vector<Pair> pairs = sorted_pairs(grid);
    EXPECT_TRUE(std::binary_search(pairs.begin(), pairs.end(), Pair{horizontal, horizontal + 1}));
    build_and_compare(grid, boxes, "crossing boxes");
}

// Scenario 9: bad input is rejected, naming the box; the grid is left empty.
TEST(UniformGrid, Scenario9_RejectsInvalidBoxes) {
    UniformGrid grid;
    std::vector<Box> boxes = {{{0, 0, 0}, {1, 1, 1}}, {{0, 0, 0}, {1, 1, 1}}};
    ASSERT_TRUE(grid.build(boxes).ok());
    boxes[1].max.y = std::numeric_limits<float>::quiet_NaN();
    Status s = grid.build(boxes);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::invalid_box);
    EXPECT_EQ(s.error().box, std::optional<std::size_t>(1));
    EXPECT_EQ(grid.size(), 0u);
    EXPECT_TRUE(grid.validate().ok());
    boxes[1] = {{2, 0, 0}, {1, 1, 1}};  // min > max
    EXPECT_FALSE(grid.build(boxes).ok());
    boxes[1] = {{0, 0, 0}, {std::numeric_limits<float>::infinity(), 1, 1}};
    EXPECT_FALSE(grid.build(boxes).ok());
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
    grid.reset_stats();
    std::vector<std::uint32_t> ids;
    grid.query_point({0.5f, 0.5f, 0.5f}, ids);
    EXPECT_LT(grid.stats().box_tests, 200u);
    EXPECT_EQ(grid.stats().nodes_visited, 1u);
}

// Scenario 11: nearest on an empty grid, with k = 0, with k above the count, with ties, and
// from a point far outside the grid.
TEST(UniformGrid, Scenario11_NearestEdgeCases) {
    UniformGrid grid;
    std::vector<Neighbor> out;
    ASSERT_TRUE(grid.build({}).ok());
    ASSERT_TRUE(grid.nearest({0, 0, 0}, 3, out).ok());
    EXPECT_TRUE(out.empty());
    std::vector<Box> boxes = {
        {{0, 0, 0}, {1, 1, 1}}, {{3, 0, 0}, {4, 1, 1}}, {{0, 0, 0}, {1, 1, 1}}};
    ASSERT_TRUE(grid.build(boxes).ok());
    ASSERT_TRUE(grid.nearest({2, 0.5f, 0.5f}, 0, out).ok());
    EXPECT_TRUE(out.empty());
    ASSERT_TRUE(grid.nearest({2, 0.5f, 0.5f}, 10, out).ok());  // k larger than the count
    EXPECT_EQ(out, (std::vector<Neighbor>{{0, 1}, {1, 1}, {2, 1}}));
    // The output is replaced, not appended to.
    ASSERT_TRUE(grid.nearest({1e30f, 0, 0}, 1, out).ok());  // far outside the grid
    EXPECT_EQ(out, (std::vector<Neighbor>{{0, 1e30f}}));    // all three tie in float
}

// ---- dynamic ---------------------------------------------------------------------------------

// Scenario 12: random insert / remove / move sequences, mirrored into a brute force rebuilt
// from the live id -> box map. validate() after every step; everything compared every few.
TEST(UniformGrid, Scenario12_RandomDynamicSequences) {
    for (const std::uint32_t seed : {1u, 2u, 3u, 4u}) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        UniformGrid::Config config;
        if (seed == 4) config.max_cells_per_box = 1;  // boxes hop between many levels
        testing::SequenceOptions options;
        options.seed = seed;
        options.steps = 400;
        options.query_count = 30;
        options.nearest_stride = 2;
        options.nearest_all = false;
        options.check_misuse = true;
        options.new_box = [](testing::SequenceContext& ctx) {
            Box b;
            const int kind = int(ctx.rng() % 10);
            const float side = kind == 0 ? 0.0f : (kind == 1 ? 0.6f : 0.05f * ctx.unit());
            for (int a = 0; a < 3; ++a) {
                b.min[a] = ctx.unit() * (kind == 2 ? 3.0f : 1.0f) - (kind == 2 ? 1.0f : 0.0f);
                b.max[a] = b.min[a] + side * (kind == 3 && a == 2 ? 0.0f : 1.0f);
            }
            return b;
        };
        testing::SequenceContext start_rng(seed + 7919u);
        for (int i = 0; i < 150; ++i) options.start.push_back(options.new_box(start_rng));
        options.insert_share = [](int) { return 1.0f / 3.0f; };
        options.remove_share = 0.5f;
        options.moved_box = [new_box = options.new_box](testing::SequenceContext& ctx, Box b) {
            if (ctx.rng() % 2) {
                const float dx = 0.02f * (ctx.unit() - 0.5f);
                b.min.x += dx;
                b.max.x += dx;
                return b;
            }
            return new_box(ctx);
        };
        UniformGrid grid(config);
        std::map<std::uint32_t, Box> live = testing::run_dynamic_sequence(grid, options);
        if (HasFailure()) return;
        // Empty it completely, then refill.
        while (!live.empty()) {
            const std::uint32_t id = live.begin()->first;
            ASSERT_TRUE(grid.remove(id).ok());
            live.erase(id);
            ASSERT_TRUE(grid.validate().ok());
        }
        EXPECT_EQ(grid.cell_count(), 0u);
        EXPECT_EQ(grid.size(), 0u);
        ASSERT_TRUE(grid.insert(7, {{0, 0, 0}, {1, 1, 1}}).ok());
        ASSERT_TRUE(grid.insert(9, {{1, 1, 1}, {2, 2, 2}}).ok());
        EXPECT_EQ(sorted_pairs(grid), (std::vector<Pair>{{7, 9}}));
    }
}

// Scenario 13: a dynamic grid built empty picks the fallback cell side and still works.
TEST(UniformGrid, Scenario13_InsertIntoEmptyBuild) {
    UniformGrid grid;
    ASSERT_TRUE(grid.build({}).ok());
    auto scene = generate_scene("clustered", 500);
    ASSERT_TRUE(scene.ok());
    std::vector<std::uint32_t> ids;
    for (std::uint32_t i = 0; i < scene->boxes.size(); ++i) {
        ASSERT_TRUE(grid.insert(1000 + 3 * i, scene->boxes[i]).ok());
        ids.push_back(1000 + 3 * i);
    }
    ASSERT_TRUE(grid.validate().ok());
    expect_matches_brute_force(grid, scene->boxes, ids, 5, "inserted into empty");
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
    grid.reset_stats();
    std::vector<Pair> pairs;
    grid.self_pairs(pairs);
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
    constexpr double kFactor = 8;
    auto uniform = generate_scene("uniform", kCount);
    ASSERT_TRUE(uniform.ok());
    const testing::QueryCost base = grid_query_cost(uniform->boxes);
    for (const char* name : {"multiscale", "degenerate", "clustered", "level", "mixed_sizes"}) {
        SCOPED_TRACE(name);
        auto scene = generate_scene(name, kCount);
        ASSERT_TRUE(scene.ok());
        const testing::QueryCost c = grid_query_cost(scene->boxes);
        EXPECT_LT(c.box, kFactor * base.box);
        EXPECT_LT(c.point, kFactor * base.point);
        EXPECT_LT(c.ray, kFactor * base.ray);
        EXPECT_LT(c.nearest, kFactor * base.nearest);
    }
}

}  // namespace
}  // namespace broadphase
