// Shared checks for the octree and loose octree tests, on top of oracle_harness.hpp and
// tree_test_common.hpp: a static comparison with brute force that also wants the queries to
// count their work, boxes near the float range, boxes inserted outside the root, the crowded
// lists of the short line, query and self-pairs cost on the line scenes and the scenes with far
// boxes, and the tree-size bound on the hand-made degenerate scenes. (Every query against brute
// force on the standard and degenerate scenes, the dynamic sequences and the error paths are in
// the typed suite, structure_test.cpp.)
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "brute_force.hpp"
#include "oracle_harness.hpp"
#include "tree_test_common.hpp"

namespace broadphase::octree_test {

using testing::query_cost;
using testing::QueryCost;

// Builds `s` over `boxes`, validates, compares everything with brute force (k nearest at every
// second point); the queries count their work.
inline void check_static(Structure& s, std::span<const Box> boxes, std::uint32_t seed = 7,
                         int query_count = 200) {
    const Status built = s.build(boxes);
    ASSERT_TRUE(built.ok()) << built.error().message;
    s.reset_stats();
    testing::CompareOptions options = testing::sampled_comparison(seed, query_count, 2);
    // The regular octree answers inverted regions (min.x > max.x) unlike brute force.
    options.inverted_regions = s.name() != "octree";
    testing::expect_matches_brute_force(s, boxes, options);
    if (!boxes.empty()) {
        EXPECT_GT(s.stats().box_tests, 0u);
    }
}

// Builds `Tree` (with `config`) over every hand-made degenerate scene (oracle_harness.hpp):
// valid, and not blown up: a few nodes per box at most.
template <class Tree>
void check_degenerate_scenes_stay_small(const typename Tree::Config& config) {
    for (const testing::NamedBoxes& scene : testing::degenerate_scenes()) {
        SCOPED_TRACE(scene.name);
        Tree tree(config);
        ASSERT_TRUE(tree.build(scene.boxes).ok());
        const Status valid = tree.validate();
        ASSERT_TRUE(valid.ok()) << valid.error().message;
        EXPECT_LE(tree.nodes().size(), 64 + 40 * scene.boxes.size());
    }
}

// A box inserted outside the root of `Tree` (built over 100 "uniform" boxes) goes to the
// outside list; 60 more far boxes, inserted one by one and validated, trigger a rebuild around
// all of them: fewer than 56 stay outside, and the new root, root(tree), covers the scene and
// the far boxes inserted so far.
template <class Tree, class Root>
void check_outside_then_rebuild(Root root) {
    auto scene = generate_scene("uniform", 100);
    ASSERT_TRUE(scene.ok());
    Tree tree;
    ASSERT_TRUE(tree.build(scene->boxes).ok());
    ASSERT_TRUE(tree.insert(1000, Box{{10, 10, 10}, {11, 11, 11}}).ok());
    EXPECT_EQ(tree.outside().size(), 1u);
    ASSERT_TRUE(tree.validate().ok());
    for (std::uint32_t i = 0; i < 60; ++i) {
        const Box b{{10.0f + 0.1f * float(i), 10, 10}, {10.5f + 0.1f * float(i), 11, 11}};
        ASSERT_TRUE(tree.insert(2000 + i, b).ok());
        ASSERT_TRUE(tree.validate().ok());
    }
    EXPECT_LT(tree.outside().size(), 16u + 40u);
    const Box r = root(tree);
    EXPECT_LE(r.min.x, scene->boxes[0].min.x);
    EXPECT_GE(r.max.x, 11.0f);
}

// The short line of the typed suite's "line" sequences (testing::short_line) crowds some node of
// `Tree` enough to index its list.
template <class Tree>
void check_short_line_indexes_crowded_lists() {
    Tree tree;
    ASSERT_TRUE(tree.build(testing::short_line(5)).ok());
    EXPECT_TRUE(std::any_of(tree.nodes().begin(), tree.nodes().end(),
                            [](const typename Tree::Node& n) { return n.index.active(); }));
}

// Issue 14: boxes near the float range (one from -3e38 to 1e31, one from -FLT_MAX to FLT_MAX,
// both among ordinary boxes) build at once and match brute force in pairs and region queries
// (rays at these magnitudes overflow the slab test); `check(tree)` adds each structure's own
// bound on what it built.
template <class Tree, class Check>
void check_huge_finite_boxes(Check check) {
    constexpr float kMax = std::numeric_limits<float>::max();
    const Box wide{{-3e38f, -3e38f, -3e38f}, {1e31f, 1e31f, 1e31f}};
    for (const std::vector<Box>& boxes :
         {std::vector<Box>{wide}, std::vector<Box>{Box{{-kMax, -kMax, -kMax}, {kMax, kMax, kMax}}},
          std::vector<Box>{wide, Box{{0, 0, 0}, {1, 1, 1}}, Box{{kMax, 0, 0}, {kMax, 0, 0}}}}) {
        Tree tree;
        ASSERT_TRUE(tree.build(boxes).ok());
        ASSERT_TRUE(tree.validate().ok());
        EXPECT_EQ(sorted_pairs(tree), testing::brute_pairs(boxes));
        for (const Box& region : boxes) {
            std::vector<std::uint32_t> have;
            tree.query_box(region, have);
            std::size_t want = 0;
            for (const Box& b : boxes) want += overlaps(region, b);
            EXPECT_EQ(have.size(), want);
        }
        check(tree);
    }
}

// Issue 9: on the line scenes (boxes strung along one axis, crowding the few cells around the
// line) every kind of query costs at most `factor` times what it costs on uniform at the same
// size, and the answers stay exact.
template <class Make>
void check_line_queries(Make make, double factor) {
    constexpr std::size_t kCount = 20000;
    auto uniform = make();
    const QueryCost base = query_cost(*uniform, generate_scene("uniform", kCount)->boxes);
    for (const char* gen : {"xline", "yline"}) {
        SCOPED_TRACE(gen);
        const std::vector<Box> boxes = generate_scene(gen, kCount)->boxes;
        auto s = make();
        const QueryCost line = query_cost(*s, boxes);
        EXPECT_LE(line.box, factor * base.box);
        EXPECT_LE(line.point, factor * base.point);
        EXPECT_LE(line.ray, factor * base.ray);
        EXPECT_LE(line.nearest, factor * base.nearest);
        check_static(*s, boxes, 11, 100);
    }
}

// Self-pairs cost on a large scene (issue 9's cost tests, sizes where a quadratic list or a
// build pass per level breaks the bound): (nodes + leaves visited) per box and box tests per box
// and pair; the pairs must be sweep and prune's (itself checked against brute force).
struct SelfPairsCost {
    double visits = 0;
    double tests = 0;
};

inline SelfPairsCost large_self_pairs_cost(Structure& s, std::span<const Box> boxes) {
    SelfPairsCost cost;
    const Status built = s.build(boxes);
    EXPECT_TRUE(built.ok()) << built.error().message;
    if (!built.ok()) return cost;
    std::vector<Pair> pairs = testing::counted_self_pairs(s);
    const QueryStats& st = s.stats();
    const double n = double(boxes.size());
    cost.visits = double(st.nodes_visited + st.leaves_visited) / n;
    cost.tests = double(st.box_tests) / (n + double(pairs.size()));
    std::sort(pairs.begin(), pairs.end());
    auto reference = make_structure("sweep_and_prune");
    EXPECT_TRUE(reference.ok());
    if (reference.ok()) {
        EXPECT_TRUE((*reference)->build(boxes).ok());
        EXPECT_TRUE(pairs == sorted_pairs(**reference));
    }
    return cost;
}

// The size of the scenes of check_large_self_pairs_near_uniform.
inline constexpr std::size_t kLargeCount = 200000;

// Self-pairs on kLargeCount boxes of each of `generators` cost at most `factor` times what they
// cost on uniform (large_self_pairs_cost: visits per box, tests per box and pair, the pairs sweep
// and prune's). One `Tree` is rebuilt for each scene, uniform first; check(generator, tree)
// follows each build, uniform's included, with each structure's own bounds.
template <class Tree, class Check>
void check_large_self_pairs_near_uniform(std::initializer_list<const char*> generators,
                                         double factor, Check check) {
    Tree tree;
    const SelfPairsCost base =
        large_self_pairs_cost(tree, generate_scene("uniform", kLargeCount)->boxes);
    check("uniform", tree);
    for (const char* gen : generators) {
        SCOPED_TRACE(gen);
        const SelfPairsCost cost =
            large_self_pairs_cost(tree, generate_scene(gen, kLargeCount)->boxes);
        check(gen, tree);
        EXPECT_LE(cost.visits, factor * base.visits);
        EXPECT_LE(cost.tests, factor * base.tests);
    }
}

}  // namespace broadphase::octree_test
