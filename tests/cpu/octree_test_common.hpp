// Shared checks for the octree and loose octree tests, on top of oracle_harness.hpp: static
// scenes and seeded random insert/remove/move sequences with this pair's box mix, the hand-made
// degenerate scenes, and the error paths.
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
using testing::sorted_ids;

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

// Every standard generator at N = 0, 1, 2, 7, 300, 3000.
inline void check_standard_scenes(Structure& s) {
    for (const std::string_view gen : generator_names()) {
        for (const std::size_t n : {0u, 1u, 2u, 7u, 300u, 3000u}) {
            auto scene = generate_scene(gen, n);
            ASSERT_TRUE(scene.ok()) << scene.error().message;
            SCOPED_TRACE(scene->name);
            check_static(s, scene->boxes);
            if (::testing::Test::HasFatalFailure()) return;
        }
    }
}

// The hand-made degenerate scenes, by name.
inline std::map<std::string, std::vector<Box>> degenerate_scenes() {
    std::map<std::string, std::vector<Box>> scenes;
    scenes["identical"] = std::vector<Box>(200, Box{{0.25f, 0.5f, 0.75f}, {1.0f, 1.5f, 2.0f}});
    scenes["identical_points"] = std::vector<Box>(200, Box{{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}});
    {
        std::vector<Box> boxes;
        std::mt19937 rng(3);
        std::uniform_int_distribution<int> cell(0, 6);
        for (int i = 0; i < 400; ++i) {
            Vec3 p{static_cast<float>(cell(rng)) * 0.125f, static_cast<float>(cell(rng)) * 0.125f,
                   static_cast<float>(cell(rng)) * 0.125f};
            Box b{p, p};
            if (i % 3 == 1) b.max[i % 3] += 0.25f;
            if (i % 3 == 2) b.max.x += 0.25f, b.max.y += 0.125f;
            boxes.push_back(b);
        }
        scenes["zero_volume"] = boxes;
    }
    {
        auto scene = generate_scene("uniform", 800);
        std::vector<Box> boxes = scene.ok() ? scene->boxes : std::vector<Box>{};
        boxes.insert(boxes.begin() + 300, Box{{-100, -100, -100}, {100, 100, 100}});
        boxes.push_back(Box{{-50, -50, -50}, {50, 50, 50}});
        scenes["huge_box"] = boxes;
    }
    for (const float offset : {1e7f, -3e7f}) {
        auto scene = generate_scene("clustered", 1000);
        std::vector<Box> boxes = scene.ok() ? scene->boxes : std::vector<Box>{};
        for (Box& b : boxes) {
            for (int a = 0; a < 3; ++a) {
                b.min[a] = offset + 64.0f * b.min[a];
                b.max[a] = offset + 64.0f * b.max[a];
            }
        }
        scenes["far_" + std::to_string(offset)] = boxes;
    }
    {
        auto scene = generate_scene("uniform", 2000);
        std::vector<Box> boxes = scene.ok() ? scene->boxes : std::vector<Box>{};
        for (Box& b : boxes) b.min.z = b.max.z = 0.0f;
        scenes["flat_2d"] = boxes;
    }
    {
        std::vector<Box> boxes;
        for (int x = 0; x < 6; ++x) {
            for (int y = 0; y < 6; ++y) {
                for (int z = 0; z < 6; ++z) {
                    boxes.push_back(Box{{float(x), float(y), float(z)},
                                        {float(x + 1), float(y + 1), float(z + 1)}});
                }
            }
        }
        scenes["touching_grid"] = boxes;
    }
    return scenes;
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

// xline's first 900 boxes with the line shortened tenfold: a few crowded cells along it (ids
// stay below the sequence's first new id, 1000).
inline std::vector<Box> short_line(std::uint32_t seed) {
    std::vector<Box> boxes = generate_scene("xline", 900, seed)->boxes;
    for (Box& b : boxes) b.min.y *= 0.1f, b.max.y *= 0.1f;
    return boxes;
}

// Dynamic updates inside crowded, indexed lists: short_line built, then boxes of the same kind
// inserted, removed and moved along the line; everything compared with brute force.
inline void run_dynamic_on_line(Structure& s, std::uint32_t seed) {
    testing::SequenceOptions options;
    options.seed = seed;
    options.steps = 300;
    options.compare_every = 50;
    options.query_count = 30;
    options.nearest_stride = 3;
    options.nearest_all = false;
    options.start = short_line(seed);
    options.new_box = [](testing::SequenceContext& ctx) {
        const float x = 0.01f * ctx.unit(), y = 0.1f * ctx.unit();
        const float h = ctx.rng() % 8 == 0 ? 0.02f * ctx.unit() : 0.0003f * ctx.unit();
        return Box{{x, y, 0.0f}, {x + 0.01f * (1.0f + ctx.unit()), y + h, 0.0f}};
    };
    options.moved_box = [](testing::SequenceContext& ctx, Box b) {
        const float dy = 0.002f * (ctx.unit() - 0.5f);
        b.min.y += dy, b.max.y += dy;
        return b;
    };
    testing::run_dynamic_sequence(s, options);
}

// A seeded random sequence of insert / remove / move with sparse caller ids (oracle_harness.hpp),
// everything compared with brute force every `compare_every` steps. New boxes are points, small
// and large boxes, a tenth of them far outside the unit cube; a third of the moves jump to a new
// box, the rest shift in x and y.
inline void run_dynamic(Structure& s, std::uint32_t seed, int steps, bool start_built,
                        int compare_every = 10) {
    testing::SequenceOptions options;
    options.seed = seed;
    options.steps = steps;
    options.compare_every = compare_every;
    options.query_count = 40;
    options.nearest_stride = 2;
    options.nearest_all = false;
    if (start_built) {
        auto scene = generate_scene("mixed_sizes", 200, seed);
        ASSERT_TRUE(scene.ok());
        options.start = scene->boxes;
    }
    options.remove_share = 0.5f;
    options.new_box = [](testing::SequenceContext& ctx) {
        const int kind = static_cast<int>(ctx.rng() % 10);
        const float spread = kind == 0 ? 50.0f : (kind == 1 ? 3.0f : 1.0f);
        const float offset = kind == 0 ? -20.0f : 0.0f;
        Vec3 lo{offset + spread * ctx.unit(), offset + spread * ctx.unit(),
                offset + spread * ctx.unit()};
        Box b{lo, lo};
        if (kind != 2) {  // kind 2: a point
            const float side = kind == 3 ? 0.5f * ctx.unit() : 0.08f * ctx.unit();
            for (int a = 0; a < 3; ++a) b.max[a] = b.min[a] + side * (0.5f + ctx.unit());
        }
        return b;
    };
    options.moved_box = [new_box = options.new_box](testing::SequenceContext& ctx, Box b) {
        if (ctx.rng() % 3 == 0) return new_box(ctx);
        const float dx = 0.05f * (ctx.unit() - 0.5f), dy = 0.05f * (ctx.unit() - 0.5f);
        b.min.x += dx, b.max.x += dx, b.min.y += dy, b.max.y += dy;
        return b;
    };
    testing::run_dynamic_sequence(s, options);
}

// Error paths shared by both structures: bad boxes on build and insert, id misuse.
inline void check_errors(Structure& s) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<Box> boxes(5, Box{{0, 0, 0}, {1, 1, 1}});
    boxes[3].min.y = nan;
    Status st = s.build(boxes);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::invalid_box);
    EXPECT_EQ(st.error().box, std::optional<std::size_t>(3));
    boxes[3] = Box{{0, 2, 0}, {1, 1, 1}};  // min > max
    ASSERT_FALSE(s.build(boxes).ok());
    boxes[3] = Box{{0, 0, 0}, {inf, 1, 1}};
    ASSERT_FALSE(s.build(boxes).ok());
    EXPECT_EQ(s.size(), 0u);
    boxes[3] = Box{{0, 0, 0}, {1, 1, 1}};
    ASSERT_TRUE(s.build(boxes).ok());
    EXPECT_FALSE(s.insert(2, Box{{5, 5, 5}, {6, 6, 6}}).ok());  // id in use
    EXPECT_FALSE(s.insert(9, Box{{5, 5, 5}, {4, 6, 6}}).ok());  // bad box
    EXPECT_FALSE(s.remove(9).ok());
    EXPECT_FALSE(s.move(9, Box{{5, 5, 5}, {6, 6, 6}}).ok());
    EXPECT_FALSE(s.move(1, Box{{nan, 5, 5}, {6, 6, 6}}).ok());
    EXPECT_EQ(s.size(), 5u);
    ASSERT_TRUE(s.validate().ok());
    std::vector<std::uint32_t> hit;
    s.query_point(Vec3{0.5f, 0.5f, 0.5f}, hit);
    EXPECT_EQ(sorted_ids(hit), (std::vector<std::uint32_t>{0, 1, 2, 3, 4}));
}

}  // namespace broadphase::octree_test
