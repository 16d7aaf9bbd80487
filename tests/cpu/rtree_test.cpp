// Tests of the R-trees (cpu_reference/rtree.*: rtree_linear, rtree_quadratic, rstar_tree;
// A. Guttman, "R-trees: a dynamic index structure for spatial searching", SIGMOD 1984, and
// N. Beckmann, H.-P. Kriegel, R. Schneider, B. Seeger, "The R*-tree: an efficient and robust
// access method for points and rectangles", SIGMOD 1990) that are their own: the loosest fill
// under random steps, height O(log n) after degenerate insertion orders, forced reinsertion only
// in R*, self-pairs pruned above the leaves, R*'s ChooseSubtree, bad configurations. Every
// query against brute force under every split policy (default fill 4..16 and a small 2..5 fill
// that splits often), and the random insert/remove/move sequences, are in the typed suite
// (structure_test.cpp, structure_configs.hpp).
#include "rtree.hpp"

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
#include "tree_test_common.hpp"

namespace broadphase {
namespace {

using Policy = RTree::SplitPolicy;

using testing::sorted_ids;

// k nearest (k = 1, 5) at every fourth query point (oracle_harness.hpp).
constexpr std::size_t kRTreeNearestStride = 4;

RTree::Config make_config(Policy policy, std::uint32_t min_entries = 4,
                          std::uint32_t max_entries = 16) {
    RTree::Config c;
    c.split = policy;
    c.min_entries = min_entries;
    c.max_entries = max_entries;
    return c;
}

// A 2D scene (z extent 0 everywhere), where every volume is 0: the tree must still be a good one
// (content falls back on area), so point queries stay local.
TEST(RTree, Scenario06_FlatSceneQueriesStayLocal) {
    for (const Policy policy : {Policy::linear, Policy::quadratic, Policy::rstar}) {
        for (const auto& [m, big_m] : {std::pair{4u, 16u}, {2u, 5u}}) {
            SCOPED_TRACE("policy " + std::to_string(int(policy)) + " fill " + std::to_string(m));
            std::mt19937 rng(5);
            const std::vector<Box> boxes = testing::flat_random_boxes(rng);
            std::uniform_real_distribution<float> u(0.0f, 1.0f);
            RTree tree(make_config(policy, m, big_m));
            ASSERT_TRUE(tree.build(boxes).ok());
            tree.reset_stats();
            std::vector<std::uint32_t> hits;
            for (int i = 0; i < 100; ++i) tree.query_point(Vec3{u(rng), u(rng), 0.0f}, hits);
            EXPECT_LT(tree.stats().box_tests, 100u * 300u);  // brute force: 100 * 1500
        }
    }
}

// Random insert / remove / move steps (oracle_harness.hpp): grow, shrink, then mix.
void random_steps(const RTree::Config& config, std::uint32_t seed, std::size_t initial, int steps) {
    RTree tree(config);
    testing::run_dynamic_sequence(tree, testing::grow_shrink_sequence(seed, initial, steps));
}

// Scenario 9: min_entries 1 (the loosest fill Guttman allows) under random steps: CondenseTree
// can then make the tree lower than an orphaned subtree, whose boxes go back one by one.
TEST(RTree, Scenario09_MinimumFillOne) {
    for (const Policy policy : {Policy::linear, Policy::quadratic, Policy::rstar}) {
        random_steps(make_config(policy, 1, 3), 21, 60, 300);
        random_steps(make_config(policy, 1, 2), 22, 30, 200);
        if (::testing::Test::HasFatalFailure()) return;
    }
}

// The bound on the height that the fill invariant implies: a root with >= 2 entries over
// nodes with >= m entries each holds n >= 2 m^(h-1) boxes.
int max_height(std::size_t n, std::uint32_t m) {
    return 1 + static_cast<int>(std::floor(std::log(double(n) / 2) / std::log(double(m)) + 1e-9));
}

// Scenario 10: degenerate insertion orders (sorted along a line, reversed, identical boxes,
// nested growing boxes, a diagonal staircase) keep the height O(log n) under every policy, as
// do removals of every other box.
TEST(RTree, Scenario10_HeightAfterDegenerateInsertionOrders) {
    constexpr std::uint32_t kCount = 2000;
    std::vector<std::pair<std::string, std::vector<Box>>> orders;
    std::vector<Box> sorted, reversed, copies, nested, staircase;
    for (std::uint32_t i = 0; i < kCount; ++i) {
        const float x = float(i);
        sorted.push_back(Box{{x, 0, 0}, {x + 0.5f, 0.5f, 0.5f}});
        copies.push_back(Box{{1, 1, 1}, {2, 2, 2}});
        nested.push_back(Box{{-x, -x, -x}, {x, x, x}});
        staircase.push_back(Box{{x, x, x}, {x + 2, x + 2, x + 2}});
    }
    reversed.assign(sorted.rbegin(), sorted.rend());
    orders = {{"sorted", sorted},
              {"reversed", reversed},
              {"identical", copies},
              {"nested", nested},
              {"staircase", staircase}};
    for (const Policy policy : {Policy::linear, Policy::quadratic, Policy::rstar}) {
        for (const auto& [label, boxes] : orders) {
            SCOPED_TRACE(label + " / policy " + std::to_string(int(policy)));
            RTree tree(make_config(policy));
            for (std::uint32_t i = 0; i < kCount; ++i) ASSERT_TRUE(tree.insert(i, boxes[i]).ok());
            ASSERT_TRUE(tree.validate().ok()) << tree.validate().error().message;
            const int bound = max_height(kCount, 4);
            EXPECT_LE(tree.height(), bound);
            EXPECT_GE(tree.height(), 3);  // 2000 boxes do not fit in 16 * 16
            // Every node but the root holds >= 4 entries, so there are at most ~n/3 nodes.
            EXPECT_LE(tree.node_count(), kCount / 3);
            for (std::uint32_t i = 0; i < kCount; i += 2) ASSERT_TRUE(tree.remove(i).ok());
            ASSERT_TRUE(tree.validate().ok()) << tree.validate().error().message;
            EXPECT_LE(tree.height(), max_height(kCount / 2, 4));
            std::vector<Box> left;
            std::vector<std::uint32_t> ids;
            for (std::uint32_t i = 1; i < kCount; i += 2) {
                left.push_back(boxes[i]);
                ids.push_back(i);
            }
            testing::expect_matches_ids(tree, left, ids, 3, 30, kRTreeNearestStride);
            if (HasFatalFailure()) return;
        }
    }
}

// Scenario 11: the names, and forced reinsertion only where it belongs: R* reinserts on the
// first overflow of a level, Guttman's policies never do, and R* with fraction 0 neither.
TEST(RTree, Scenario11_NamesAndForcedReinsertion) {
    EXPECT_EQ(RTree(make_config(Policy::linear)).name(), "rtree_linear");
    EXPECT_EQ(RTree(make_config(Policy::quadratic)).name(), "rtree_quadratic");
    EXPECT_EQ(RTree(make_config(Policy::rstar)).name(), "rstar_tree");
    EXPECT_EQ(RTree().name(), "rtree_quadratic");

    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene.ok());
    RTree linear(make_config(Policy::linear)), quadratic(make_config(Policy::quadratic));
    RTree rstar(make_config(Policy::rstar));
    RTree::Config no_reinsert = make_config(Policy::rstar);
    no_reinsert.reinsert_fraction = 0;
    RTree rstar_plain(no_reinsert);
    for (RTree* tree : {&linear, &quadratic, &rstar, &rstar_plain}) {
        ASSERT_TRUE(tree->build(scene->boxes).ok());
        ASSERT_TRUE(tree->validate().ok());
        EXPECT_GT(tree->split_count(), 3000u / 16u);
    }
    EXPECT_EQ(linear.forced_reinsert_count(), 0u);
    EXPECT_EQ(quadratic.forced_reinsert_count(), 0u);
    EXPECT_EQ(rstar_plain.forced_reinsert_count(), 0u);
    EXPECT_GT(rstar.forced_reinsert_count(), 100u);
    // At most one forced reinsertion per level per insertion, and only below the root.
    EXPECT_LE(rstar.forced_reinsert_count(), 3000u * std::uint64_t(rstar.height() - 1));
}

// Scenario 12: self-pairs and queries prune above the leaves: on a uniform scene the box tests
// are a small multiple of n, not n^2 / 2, and R*'s tree needs no more work than linear's.
TEST(RTree, Scenario12_QueriesPrune) {
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene.ok());
    std::uint64_t tests[3] = {};
    int k = 0;
    for (const Policy policy : {Policy::linear, Policy::quadratic, Policy::rstar}) {
        RTree tree(make_config(policy));
        ASSERT_TRUE(tree.build(scene->boxes).ok());
        const std::vector<Pair> pairs = testing::counted_self_pairs(tree);
        EXPECT_GE(tree.stats().box_tests, pairs.size());
        EXPECT_LT(tree.stats().box_tests, 60u * 3000u);
        EXPECT_GT(tree.stats().leaves_visited, 0u);
        EXPECT_GT(tree.stats().nodes_visited, 0u);
        tests[k++] = tree.stats().box_tests;
        const std::vector<std::uint32_t> hits = testing::counted_query_box(tree, scene->boxes[17]);
        EXPECT_LT(tree.stats().box_tests, 400u);
        EXPECT_FALSE(hits.empty());
        tree.reset_stats();
        std::vector<Neighbor> near;
        ASSERT_TRUE(tree.nearest(Vec3{0.5f, 0.5f, 0.5f}, 5, near).ok());
        EXPECT_LT(tree.stats().box_tests, 400u);
    }
    EXPECT_LE(tests[2], tests[0]);
}

// Scenario 13: bad configurations are rejected, naming the setting; a tree emptied by removal
// has height 0. (Bad boxes and ids: the typed suite.)
TEST(RTree, Scenario13_RejectsBadConfigurations) {
    RTree tree(make_config(Policy::rstar));
    const std::vector<Box> boxes = {Box{{0, 0, 0}, {1, 1, 1}}};
    ASSERT_TRUE(tree.insert(5, Box{{0, 0, 0}, {1, 1, 1}}).ok());
    ASSERT_TRUE(tree.remove(5).ok());
    EXPECT_EQ(tree.height(), 0);
    EXPECT_TRUE(tree.validate().ok());

    for (const auto& [m, big_m] : {std::pair{0u, 16u}, {9u, 16u}, {1u, 1u}, {3u, 5u}}) {
        RTree bad(make_config(Policy::quadratic, m, big_m));
        const Status b = bad.build(std::vector<Box>{Box{{0, 0, 0}, {1, 1, 1}}});
        ASSERT_FALSE(b.ok());
        EXPECT_EQ(b.error().code, ErrorCode::invalid_argument);
        EXPECT_NE(b.error().message.find("min_entries"), std::string::npos);
        EXPECT_FALSE(bad.insert(0, Box{{0, 0, 0}, {1, 1, 1}}).ok());
        EXPECT_EQ(bad.size(), 0u);
    }
    RTree::Config bad_fraction = make_config(Policy::rstar);
    bad_fraction.reinsert_fraction = 1.5f;
    EXPECT_FALSE(RTree(bad_fraction).build(boxes).ok());
}

// Scenario 14: a single box and a tiny tree, checked by hand.
TEST(RTree, Scenario14_HandMade) {
    RTree tree(make_config(Policy::linear, 2, 4));
    ASSERT_TRUE(tree.insert(3, Box{{0, 0, 0}, {1, 1, 1}}).ok());
    EXPECT_EQ(tree.height(), 1);
    ASSERT_TRUE(tree.insert(8, Box{{1, 1, 1}, {2, 2, 2}}).ok());  // touches 3 at a corner
    ASSERT_TRUE(tree.insert(9, Box{{5, 0, 0}, {6, 1, 1}}).ok());
    std::vector<Pair> pairs;
    tree.self_pairs(pairs);
    ASSERT_EQ(pairs.size(), 1u);
    EXPECT_EQ(pairs[0], (Pair{3, 8}));
    const auto hit = tree.ray_cast(Ray{{-1, 0.5f, 0.5f}, {1, 0, 0}, 100});
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->id, 3u);
    EXPECT_FLOAT_EQ(hit->t, 1.0f);
    ASSERT_TRUE(tree.insert(1, Box{{5, 0, 0}, {6, 1, 1}}).ok());
    ASSERT_TRUE(tree.insert(2, Box{{9, 9, 9}, {9, 9, 9}}).ok());  // fifth entry: a split
    EXPECT_EQ(tree.height(), 2);
    ASSERT_TRUE(tree.validate().ok());
    const auto tie = tree.ray_cast(Ray{{10, 0.5f, 0.5f}, {-1, 0, 0}, 100});
    ASSERT_TRUE(tie.has_value());
    EXPECT_EQ(tie->id, 1u);  // 1 and 9 are identical: the smaller id
    EXPECT_FLOAT_EQ(tie->t, 4.0f);
    std::vector<Neighbor> near;
    ASSERT_TRUE(tree.nearest(Vec3{9, 9, 10}, 2, near).ok());
    ASSERT_EQ(near.size(), 2u);
    EXPECT_EQ(near[0], (Neighbor{2, 1.0f}));
    EXPECT_EQ(near[1].id, 1u);  // 1 and 9 tie at sqrt(3^2 + 8^2 + 9^2): the smaller id
    ASSERT_TRUE(tree.move(2, Box{{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}}).ok());
    ASSERT_TRUE(tree.validate().ok());
    std::vector<std::uint32_t> inside;
    tree.query_point(Vec3{0.5f, 0.5f, 0.5f}, inside);
    EXPECT_EQ(sorted_ids(inside), (std::vector<std::uint32_t>{2, 3}));
    for (const std::uint32_t id : {1u, 2u, 3u, 8u}) ASSERT_TRUE(tree.remove(id).ok());
    ASSERT_TRUE(tree.validate().ok());
    EXPECT_EQ(tree.height(), 1);
    EXPECT_EQ(tree.size(), 1u);
}

// Scenario 15: Beckmann's ChooseSubtree differs from Guttman's ChooseLeaf. Two leaves: A, small
// at x in [0, 2], and B, tall at x in [10, 13]. Box X at x in [5, 10.5] enlarges A least, but A
// would then overlap B; enlarging B creates no overlap. R* puts X in B, Guttman in A, which a
// point query at (7, 50, 50), inside B grown by X and outside A grown by X, tells apart.
TEST(RTree, Scenario15_RStarChoosesSubtreeByOverlap) {
    const std::vector<Box> boxes = {
        Box{{0, 0, 0}, {1, 10, 10}},     Box{{1, 0, 0}, {2, 10, 10}},
        Box{{10, 0, 0}, {11, 100, 100}}, Box{{11, 0, 0}, {12, 100, 100}},
        Box{{12, 0, 0}, {13, 100, 100}}, Box{{5, 0, 0}, {10.5f, 1, 1}}};
    for (const Policy policy : {Policy::linear, Policy::quadratic, Policy::rstar}) {
        SCOPED_TRACE("policy " + std::to_string(int(policy)));
        RTree tree(make_config(policy, 2, 4));
        ASSERT_TRUE(tree.build(boxes).ok());
        ASSERT_TRUE(tree.validate().ok());
        ASSERT_EQ(tree.height(), 2);
        EXPECT_TRUE(testing::counted_query_point(tree, Vec3{7, 50, 50}).empty());
        EXPECT_EQ(tree.stats().leaves_visited, policy == Policy::rstar ? 1u : 0u);
    }
}

}  // namespace
}  // namespace broadphase
