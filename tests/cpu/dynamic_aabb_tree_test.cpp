// DynamicAabbTree against brute force: every standard generator at several sizes and under
// several configurations (default, margin 0, absolute margin, one-by-one build, no rotations),
// hand-made degenerate scenes, random insert/remove/move sequences mirrored into a brute force
// rebuilt from the current id -> box map, and the tree-quality scenarios of seed 000's comments
// (sorted insertions stay balanced with rotations; self-pairs prune above the leaves).
#include "dynamic_aabb_tree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "broadphase/scene.hpp"
#include "brute_force.hpp"
#include "oracle_harness.hpp"

namespace broadphase {
namespace {

using Config = DynamicAabbTree::Config;

using testing::sorted_ids;

// k nearest (k = 1, 5) at every fourth query point (oracle_harness.hpp).
constexpr std::size_t kNearestStride = 4;

void build_and_check(const Config& config, std::span<const Box> boxes, std::uint32_t seed = 7,
                     int query_count = 200) {
    DynamicAabbTree tree(config);
    testing::build_and_match_ids(tree, boxes, seed, query_count, kNearestStride);
}

std::vector<std::pair<std::string, Config>> configs() {
    Config absolute;
    absolute.margin = 0.01f;
    absolute.margin_is_relative = false;
    Config tight;
    tight.margin = 0;
    Config incremental;
    incremental.bulk_build = false;
    Config incremental_no_rotations = incremental;
    incremental_no_rotations.rotations = false;
    return {{"default", Config{}},
            {"absolute margin 0.01", absolute},
            {"margin 0", tight},
            {"one by one", incremental},
            {"one by one, no rotations", incremental_no_rotations}};
}

class DynamicAabbTreeConfigs : public ::testing::TestWithParam<std::size_t> {
protected:
    Config config() const { return configs()[GetParam()].second; }
};

INSTANTIATE_TEST_SUITE_P(All, DynamicAabbTreeConfigs,
                         ::testing::Range<std::size_t>(0, configs().size()));

// Scenario 1: every standard generator, N = 0, 1, 2, 7, 300, 3000.
TEST_P(DynamicAabbTreeConfigs, Scenario01_StandardScenesMatchBruteForce) {
    for (const std::string_view gen : generator_names()) {
        for (const std::size_t n : {0u, 1u, 2u, 7u, 300u, 3000u}) {
            auto scene = generate_scene(gen, n);
            ASSERT_TRUE(scene.ok()) << scene.error().message;
            SCOPED_TRACE(scene->name + " / " + configs()[GetParam()].first);
            build_and_check(config(), scene->boxes);
        }
    }
}

// Scenario 2: 200 copies of one box: every pair overlaps.
TEST_P(DynamicAabbTreeConfigs, Scenario02_AllBoxesIdentical) {
    const std::vector<Box> boxes =
        testing::identical_boxes(Box{{0.25f, 0.5f, 0.75f}, {1.0f, 1.5f, 2.0f}});
    build_and_check(config(), boxes);
    DynamicAabbTree tree(config());
    ASSERT_TRUE(tree.build(boxes).ok());
    std::vector<Pair> pairs;
    tree.self_pairs(pairs);
    EXPECT_EQ(pairs.size(), 200u * 199u / 2u);
}

// Scenario 3: points, segments and flat boxes on a coarse lattice (many coincide).
TEST_P(DynamicAabbTreeConfigs, Scenario03_ZeroVolumeBoxes) {
    build_and_check(config(), testing::lattice_zero_volume_boxes());
}

// Scenario 4: one huge box over a uniform scene, first and last.
TEST_P(DynamicAabbTreeConfigs, Scenario04_HugeBoxOverEverything) {
    build_and_check(config(), testing::huge_boxes_first_and_last());
}

// Scenario 5: a uniform scene moved 1e7 away from the origin (float spacing there is 1).
TEST_P(DynamicAabbTreeConfigs, Scenario05_FarFromOrigin) {
    build_and_check(config(), testing::far_scaled_boxes());
}

// Scenario 6: a 2D scene (z extent 0 everywhere), where every volume is 0.
TEST_P(DynamicAabbTreeConfigs, Scenario06_FlatScene) {
    build_and_check(config(), testing::flat_random_boxes());
}

// Scenario 7: other seeds of every generator.
TEST_P(DynamicAabbTreeConfigs, Scenario07_OtherSeeds) {
    for (const std::string_view gen : generator_names()) {
        auto scene = generate_scene(gen, 1000, 1234);
        ASSERT_TRUE(scene.ok());
        SCOPED_TRACE(scene->name);
        build_and_check(config(), scene->boxes, 99, 100);
    }
}

// Random insert / remove / move steps (seeded, oracle_harness.hpp) with sparse ids, some near
// the top of the id range: validate() after every step, everything compared with brute force
// every 10 steps. Moves shift by 0.5 (30%, out of the fat box) or 0.001 (inside it).
void random_steps(const Config& config, std::uint32_t seed, std::size_t initial, int steps) {
    testing::SequenceOptions options;
    options.seed = seed;
    options.steps = steps;
    options.new_box = &testing::SequenceContext::small_box;
    options.start = testing::context_boxes(seed + 7919u, initial, options.new_box);
    options.insert_share = [](int) { return 0.3f; };
    options.remove_share = 0.2f / 0.7f;
    std::uint64_t big_moves = 0;
    options.moved_box = [&big_moves](testing::SequenceContext& ctx, const Box& b) {
        const bool big = ctx.unit() < 0.3f;
        big_moves += big;
        return ctx.nudged(b, big ? 0.5f : 0.001f);
    };
    options.query_count = 40;
    options.nearest_stride = 4;
    options.nearest_all = false;
    options.max_gap = 3;
    DynamicAabbTree tree(config);
    testing::run_dynamic_sequence(tree, options);
    if (::testing::Test::HasFailure()) return;
    EXPECT_LE(tree.reinsert_count(), big_moves + steps);
    EXPECT_GT(tree.reinsert_count(), 0u);
}

// Scenario 8: a few hundred random dynamic steps from a built tree and from an empty one.
TEST_P(DynamicAabbTreeConfigs, Scenario08_RandomInsertRemoveMove) {
    random_steps(config(), 11, 200, 400);
    random_steps(config(), 12, 0, 300);
}

// Scenario 9: 1000 boxes inserted in sorted order along a line (the worst case of seed 000's
// comments) stay balanced with rotations; without them the tree degenerates.
TEST(DynamicAabbTree, Scenario09_SortedInsertionsStayBalanced) {
    constexpr std::uint32_t kCount = 1000;
    const int bound = 4 * static_cast<int>(std::ceil(std::log2(double(kCount))));
    Config no_rotations;
    no_rotations.rotations = false;
    DynamicAabbTree balanced, unbalanced(no_rotations);
    std::vector<Box> boxes;
    for (std::uint32_t i = 0; i < kCount; ++i) {
        const float x = float(i);
        const Box b{{x, 0, 0}, {x + 0.5f, 0.5f, 0.5f}};
        boxes.push_back(b);
        ASSERT_TRUE(balanced.insert(i, b).ok());
        ASSERT_TRUE(unbalanced.insert(i, b).ok());
    }
    ASSERT_TRUE(balanced.validate().ok());
    ASSERT_TRUE(unbalanced.validate().ok());
    EXPECT_LE(balanced.height(), bound);
    EXPECT_GT(unbalanced.height(), bound);  // the rotations are what keep it low
    // Removing every other box keeps it balanced too.
    for (std::uint32_t i = 0; i < kCount; i += 2) ASSERT_TRUE(balanced.remove(i).ok());
    ASSERT_TRUE(balanced.validate().ok());
    EXPECT_LE(balanced.height(), bound);

    // Identical boxes inserted one by one: cost ties everywhere.
    DynamicAabbTree copies;
    for (std::uint32_t i = 0; i < kCount; ++i) {
        ASSERT_TRUE(copies.insert(i, Box{{1, 1, 1}, {2, 2, 2}}).ok());
    }
    ASSERT_TRUE(copies.validate().ok());
    EXPECT_LE(copies.height(), bound);

    // And the balanced tree still answers exactly.
    std::vector<Box> left;
    std::vector<std::uint32_t> ids;
    for (std::uint32_t i = 1; i < kCount; i += 2) left.push_back(boxes[i]), ids.push_back(i);
    testing::expect_matches_ids(balanced, left, ids, 3, 50, kNearestStride);
}

// Scenario 10: the bulk build is balanced (height ceil(log2 n)).
TEST(DynamicAabbTree, Scenario10_BulkBuildHeight) {
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene.ok());
    DynamicAabbTree tree;
    ASSERT_TRUE(tree.build(scene->boxes).ok());
    EXPECT_EQ(tree.height(), 12);  // ceil(log2 3000)
    DynamicAabbTree empty;
    EXPECT_EQ(empty.height(), 0);
    EXPECT_EQ(empty.size(), 0u);
    EXPECT_TRUE(empty.validate().ok());
}

// Scenario 11: self-pairs prune above the leaves (the bug seed 000's comments point out): on a
// uniform scene the leaf-pair tests are a small multiple of n, not n^2 / 2.
TEST(DynamicAabbTree, Scenario11_SelfPairsPruneAtInternalLevels) {
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene.ok());
    for (const Config& config : {Config{}, configs()[3].second}) {
        DynamicAabbTree tree(config);
        ASSERT_TRUE(tree.build(scene->boxes).ok());
        tree.reset_stats();
        std::vector<Pair> pairs;
        tree.self_pairs(pairs);
        EXPECT_GT(tree.stats().box_tests, pairs.size() - 1);
        EXPECT_LT(tree.stats().box_tests, 20u * 3000u);
        EXPECT_LT(tree.stats().nodes_visited, 40u * 3000u);
        // A region query touches a few leaves only.
        tree.reset_stats();
        std::vector<std::uint32_t> hits;
        tree.query_box(scene->boxes[17], hits);
        EXPECT_LT(tree.stats().box_tests, 100u);
        EXPECT_FALSE(hits.empty());
    }
}

// Scenario 12: move() inside the fat box is free, outside re-inserts and is counted.
TEST(DynamicAabbTree, Scenario12_MoveReinsertsOnlyOnEscape) {
    Config config;
    config.margin = 0.5f;
    config.margin_is_relative = false;
    DynamicAabbTree tree(config);
    EXPECT_EQ(tree.margin(), 0.0f);
    ASSERT_TRUE(tree.insert(7, Box{{0, 0, 0}, {1, 1, 1}}).ok());
    ASSERT_TRUE(tree.insert(9, Box{{3, 0, 0}, {4, 1, 1}}).ok());
    EXPECT_EQ(tree.margin(), 0.5f);
    ASSERT_TRUE(tree.move(7, Box{{0.4f, -0.5f, 0}, {1.4f, 0.5f, 1}}).ok());  // inside fat box
    EXPECT_EQ(tree.reinsert_count(), 0u);
    ASSERT_TRUE(tree.validate().ok());
    std::vector<Pair> pairs;
    tree.self_pairs(pairs);
    EXPECT_TRUE(pairs.empty());  // fat boxes touch, tight ones do not
    ASSERT_TRUE(tree.move(7, Box{{2.5f, 0, 0}, {3.0f, 1, 1}}).ok());  // escapes: touches 9
    EXPECT_EQ(tree.reinsert_count(), 1u);
    ASSERT_TRUE(tree.validate().ok());
    pairs.clear();
    tree.self_pairs(pairs);
    ASSERT_EQ(pairs.size(), 1u);
    EXPECT_EQ(pairs[0], (Pair{7, 9}));
    std::vector<std::uint32_t> hits;
    tree.query_point(Vec3{1.2f, 0.2f, 0.5f}, hits);  // in 7's old place, in its fat box
    EXPECT_TRUE(hits.empty());

    // Relative margin: 10% of the mean extent of the built boxes.
    DynamicAabbTree relative;
    const std::vector<Box> boxes = {Box{{0, 0, 0}, {2, 2, 2}}, Box{{5, 5, 5}, {9, 9, 9}}};
    ASSERT_TRUE(relative.build(boxes).ok());
    EXPECT_FLOAT_EQ(relative.margin(), 0.3f);
}

// Scenario 13: bad input is rejected, naming the box; bad ids are rejected; the tree is intact.
TEST(DynamicAabbTree, Scenario13_RejectsBadInput) {
    DynamicAabbTree tree;
    std::vector<Box> boxes = {Box{{0, 0, 0}, {1, 1, 1}}, Box{{2, 0, 0}, {1, 1, 1}}};
    Status s = tree.build(boxes);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::invalid_box);
    EXPECT_EQ(s.error().box, std::optional<std::size_t>(1));
    EXPECT_EQ(tree.size(), 0u);
    boxes[1].min.x = std::numeric_limits<float>::quiet_NaN();
    EXPECT_FALSE(tree.build(boxes).ok());
    boxes[1] = Box{{0, 0, 0}, {std::numeric_limits<float>::infinity(), 1, 1}};
    EXPECT_FALSE(tree.build(boxes).ok());

    ASSERT_TRUE(tree.insert(5, Box{{0, 0, 0}, {1, 1, 1}}).ok());
    EXPECT_FALSE(tree.insert(5, Box{{0, 0, 0}, {1, 1, 1}}).ok());
    EXPECT_FALSE(tree.insert(6, Box{{1, 0, 0}, {0, 1, 1}}).ok());
    EXPECT_FALSE(tree.remove(6).ok());
    EXPECT_FALSE(tree.move(6, Box{{0, 0, 0}, {1, 1, 1}}).ok());
    EXPECT_FALSE(tree.move(5, Box{{0, 0, 0}, {1, -1, 1}}).ok());
    EXPECT_EQ(tree.size(), 1u);
    EXPECT_TRUE(tree.validate().ok());
    ASSERT_TRUE(tree.remove(5).ok());
    EXPECT_EQ(tree.size(), 0u);
    EXPECT_TRUE(tree.validate().ok());
    EXPECT_FALSE(tree.ray_cast(Ray{{0, 0, 0}, {1, 0, 0}, 1}).has_value());
    std::vector<Neighbor> near;
    EXPECT_TRUE(tree.nearest({0, 0, 0}, 3, near).ok());
    EXPECT_TRUE(near.empty());
}

}  // namespace
}  // namespace broadphase
