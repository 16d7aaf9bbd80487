// DynamicAabbTree against brute force: every standard generator at several sizes and under
// several configurations (default, margin 0, absolute margin, one-by-one build, no rotations),
// hand-made degenerate scenes, random insert/remove/move sequences mirrored into a brute force
// rebuilt from the current id -> box map, and the tree-quality scenarios of seed 000's comments
// (sorted insertions stay balanced with rotations; self-pairs prune above the leaves), and the
// relative margin's rules (a median that outliers cannot move, a per-axis cap).
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

    // Relative margin: 10% of the lower median of the boxes' mean extents (2 and 4 here).
    DynamicAabbTree relative;
    std::vector<Box> boxes = {Box{{0, 0, 0}, {2, 2, 2}}, Box{{5, 5, 5}, {9, 9, 9}}};
    ASSERT_TRUE(relative.build(boxes).ok());
    EXPECT_FLOAT_EQ(relative.margin(), 0.2f);
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

// Scenario 14: one world-sized box does not inflate the relative margin (a median, not a mean),
// and no box is grown by more than the margin fraction of its own extent.
TEST(DynamicAabbTree, Scenario14_RelativeMarginIgnoresOutliers) {
    std::vector<Box> boxes;  // 99 unit boxes 3 apart along x, then the outliers
    for (int i = 0; i < 99; ++i) {
        const float x = 3.0f * float(i);
        boxes.push_back(Box{{x, 0, 0}, {x + 1, 1, 1}});
    }
    boxes.push_back(Box{{-1e6f, -1e6f, -1e6f}, {1e6f, 1e6f, 1e6f}});  // 99: the world
    boxes.push_back(Box{{1.5f, 5, 5}, {1.51f, 5.01f, 5.01f}});        // 100: a speck
    boxes.push_back(Box{{2, 2, 2}, {2, 2, 2}});                       // 101: a point
    DynamicAabbTree tree;
    ASSERT_TRUE(tree.build(boxes).ok());
    EXPECT_FLOAT_EQ(tree.margin(), 0.1f);  // a mean would give about 2e6 / 102 * 0.1

    // Unit fat boxes are 1.2 wide and 1.8 apart: the only leaf tests are the world's 101.
    tree.reset_stats();
    std::vector<Pair> pairs;
    tree.self_pairs(pairs);
    EXPECT_EQ(pairs.size(), 101u);
    EXPECT_EQ(tree.stats().box_tests, 101u);

    // The speck is grown by 0.001, not 0.1: a point 0.05 beyond it reaches only the world box.
    tree.reset_stats();
    std::vector<std::uint32_t> hits;
    tree.query_point(Vec3{1.56f, 5.005f, 5.005f}, hits);
    EXPECT_EQ(hits, std::vector<std::uint32_t>{99});
    EXPECT_EQ(tree.stats().box_tests, 1u);

    // The point has margin 0, so any move re-inserts it.
    boxes[101] = Box{{2.001f, 2, 2}, {2.001f, 2, 2}};
    ASSERT_TRUE(tree.move(101, boxes[101]).ok());
    EXPECT_EQ(tree.reinsert_count(), 1u);
    ASSERT_TRUE(tree.validate().ok());
    testing::expect_matches_ids(tree, boxes, testing::iota_ids(boxes.size()), 5, 50,
                                kNearestStride);

    // Filled by insert() alone with the world box first: the margin is re-estimated from the
    // boxes that follow (at 2, 4, 8, ... boxes).
    DynamicAabbTree inserted;
    ASSERT_TRUE(inserted.insert(0, boxes[99]).ok());
    EXPECT_FLOAT_EQ(inserted.margin(), 2e5f);
    for (std::uint32_t i = 0; i < 99; ++i) ASSERT_TRUE(inserted.insert(i + 1, boxes[i]).ok());
    EXPECT_FLOAT_EQ(inserted.margin(), 0.1f);
    ASSERT_TRUE(inserted.validate().ok());
    inserted.reset_stats();
    pairs.clear();
    inserted.self_pairs(pairs);
    EXPECT_EQ(pairs.size(), 99u);
    EXPECT_EQ(inserted.stats().box_tests, 99u);
}

// Scenario 15: a relative margin is capped per axis by the box's own extent there, so thin boxes
// are not grown across their thin axis: on xline and yline (boxes a thousand times wider than
// tall, packed along the thin axis) at N = 50,000 leaf tests stay below 2 per box and pair,
// where one margin on every axis (10% of the mean extent) made them about 16.
TEST(DynamicAabbTree, Scenario15_ThinBoxesStayThin) {
    DynamicAabbTree plank;
    ASSERT_TRUE(plank.build(std::vector<Box>{Box{{0, 0, 0}, {1, 0.001f, 0}}}).ok());
    std::vector<std::uint32_t> hits;
    plank.reset_stats();
    plank.query_point(Vec3{0.5f, 0.0012f, 0}, hits);  // 0.0002 above: outside the fat box
    EXPECT_EQ(plank.stats().box_tests, 0u);
    plank.query_point(Vec3{1.02f, 0.0005f, 0}, hits);  // 0.02 beyond its end: inside it
    EXPECT_EQ(plank.stats().box_tests, 1u);
    EXPECT_TRUE(hits.empty());

    constexpr std::size_t kCount = 50000;
    for (const char* generator : {"xline", "yline"}) {
        SCOPED_TRACE(generator);
        auto scene = generate_scene(generator, kCount);
        ASSERT_TRUE(scene.ok());
        for (const Config& config : {Config{}, configs()[3].second}) {
            DynamicAabbTree tree(config);
            ASSERT_TRUE(tree.build(scene->boxes).ok());
            tree.reset_stats();
            std::vector<Pair> pairs;
            tree.self_pairs(pairs);
            EXPECT_LT(tree.stats().box_tests, 2 * (kCount + pairs.size()));
            EXPECT_LT(tree.stats().nodes_visited, 40 * kCount);
        }
    }
}

}  // namespace
}  // namespace broadphase
