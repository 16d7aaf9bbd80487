// Shared checks for the octree and loose octree tests, on top of oracle_harness.hpp: a static
// comparison with brute force that also wants the queries to count their work, boxes near the
// float range, query and self-pairs cost on the line scenes, and the tree-size bound on the
// hand-made degenerate scenes. (Every query against brute force on the standard and degenerate
// scenes, the dynamic sequences and the error paths are in the typed suite, structure_test.cpp.)
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "brute_force.hpp"
#include "oracle_harness.hpp"

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
    testing::CompareOptions options;
    options.seed = seed;
    options.query_count = query_count;
    options.nearest_stride = 2;
    options.nearest_all = false;
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
    s.reset_stats();
    std::vector<Pair> pairs;
    s.self_pairs(pairs);
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

}  // namespace broadphase::octree_test
