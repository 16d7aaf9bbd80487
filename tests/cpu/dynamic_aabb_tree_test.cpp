// Tests of the dynamic AABB tree (cpu_reference/dynamic_aabb_tree.*; M.-L. Chou, "Game
// Physics: Broadphase - Dynamic AABB Tree", with the insertion cost of E. Catto's Box2D
// b2DynamicTree and the sibling search, rotations and moves of Box2D v3) that are its own: moves
// re-insert only when a box escapes its fat box, and then near its old place, sorted insertions
// stay balanced with rotations (and query alike when too tall for a short stack), the bulk
// build's height, self-pairs prune above the leaves (what the article's comments ask for), the
// relative margin's rules (a median that outliers cannot move, a per-axis cap), and the id table
// beside the hash map for huge ids. Every query against brute force under several
// configurations (default, margin 0, absolute margin, one-by-one build, no rotations), bad
// input and the random insert/remove/move sequences are in the typed suite (structure_test.cpp,
// structure_configs.hpp); the tree's cost under 200 frames of motion, and refit_all, are in
// tree_quality_test.cpp.
#include "dynamic_aabb_tree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "broadphase/scene.hpp"
#include "brute_force.hpp"
#include "oracle_harness.hpp"
#include "tree_test_common.hpp"

namespace broadphase {
namespace {

using Config = DynamicAabbTree::Config;

// k nearest (k = 1, 5) at every fourth query point (oracle_harness.hpp).
constexpr std::size_t kNearestStride = 4;

Config one_by_one() {
    Config c;
    c.bulk_build = false;
    return c;
}

std::vector<std::pair<std::string, Config>> configs() {
    Config absolute;
    absolute.margin = 0.01f;
    absolute.margin_is_relative = false;
    Config tight;
    tight.margin = 0;
    Config incremental_no_rotations = one_by_one();
    incremental_no_rotations.rotations = false;
    return {{"default", Config{}},
            {"absolute margin 0.01", absolute},
            {"margin 0", tight},
            {"one by one", one_by_one()},
            {"one by one, no rotations", incremental_no_rotations}};
}

// Scenario 8: under random insert / remove / move steps (oracle_harness.hpp) where 30% of the
// moves shift by 0.5 (out of the fat box) and the rest by 0.001 (inside it), re-insertions
// happen, but no more than the big moves and the steps.
TEST(DynamicAabbTree, Scenario08_RandomMovesReinsertOnEscape) {
    for (const auto& [name, config] : configs()) {
        for (const auto& [seed, initial, steps] :
             {std::tuple{11u, std::size_t{200}, 400}, std::tuple{12u, std::size_t{0}, 300}}) {
            SCOPED_TRACE(name + " seed " + std::to_string(seed));
            std::uint64_t big_moves = 0;
            DynamicAabbTree tree(config);
            testing::run_dynamic_sequence(
                tree, testing::fat_box_sequence(seed, initial, steps, &big_moves));
            if (HasFailure()) return;
            EXPECT_LE(tree.reinsert_count(), big_moves + std::uint64_t(steps));
            EXPECT_GT(tree.reinsert_count(), 0u);
        }
    }
}

// Scenario 9: 1000 boxes inserted in sorted order along a line (the worst case of the
// article's comments) stay balanced with rotations (they are 11 high; 10 with height-only
// rotations); without them the tree degenerates. 1000 copies of one box, where no rotation
// changes any area, are kept balanced by the rotations' height tie-break (14 high).
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
    // Too tall for query_box's stack on the call stack (64): the shared descent answers.
    EXPECT_GT(unbalanced.height(), 64);
    testing::expect_matches_ids(unbalanced, boxes, testing::iota_ids(kCount), 4, 50,
                                kNearestStride);
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

// Scenario 11: self-pairs prune above the leaves (the bug the article's comments point out): on a
// uniform scene the leaf-pair tests are a small multiple of n, not n^2 / 2.
TEST(DynamicAabbTree, Scenario11_SelfPairsPruneAtInternalLevels) {
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene.ok());
    for (const Config& config : {Config{}, one_by_one()}) {
        DynamicAabbTree tree(config);
        ASSERT_TRUE(tree.build(scene->boxes).ok());
        const std::vector<Pair> pairs = testing::counted_self_pairs(tree);
        EXPECT_GT(tree.stats().box_tests, pairs.size() - 1);
        EXPECT_LT(tree.stats().box_tests, 20u * 3000u);
        EXPECT_LT(tree.stats().nodes_visited, 40u * 3000u);
        // A region query touches a few leaves only.
        const std::vector<std::uint32_t> hits = testing::counted_query_box(tree, scene->boxes[17]);
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

// Scenario 13: a box that leaves its fat box (margin 0: any move) but stays inside its parent's
// box keeps its place, and the parent shrinks around it; one that leaves the parent's box too is
// re-inserted below the lowest ancestor that holds it, beside its new neighbour.
TEST(DynamicAabbTree, Scenario13_MovesStayNearTheirAncestors) {
    Config tight;
    tight.margin = 0;
    DynamicAabbTree tree(tight);
    // a (0) and b (1) under one parent, c (2) far along x: root(parent(a, b), c).
    std::vector<Box> boxes = {Box{{0, 0, 0}, {1, 1, 1}}, Box{{10, 0, 0}, {11, 1, 1}},
                              Box{{100, 0, 0}, {101, 1, 1}}};
    for (std::uint32_t id = 0; id < 3; ++id) ASSERT_TRUE(tree.insert(id, boxes[id]).ok());
    EXPECT_EQ(tree.height(), 2);

    boxes[0] = Box{{5, 0, 0}, {6, 1, 1}};  // inside the parent's box [0, 11]
    ASSERT_TRUE(tree.move(0, boxes[0]).ok());
    EXPECT_EQ(tree.reinsert_count(), 1u);
    ASSERT_TRUE(tree.validate().ok());
    EXPECT_EQ(tree.height(), 2);
    // The root shrank to [5, 101]: a point at a's old place meets no node.
    EXPECT_TRUE(testing::counted_query_point(tree, Vec3{0.5f, 0.5f, 0.5f}).empty());
    EXPECT_EQ(tree.stats().nodes_visited, 0u);

    boxes[0] = Box{{99, 0, 0}, {100, 1, 1}};  // out of the parent's box, in the root's: beside c
    ASSERT_TRUE(tree.move(0, boxes[0]).ok());
    EXPECT_EQ(tree.reinsert_count(), 2u);
    ASSERT_TRUE(tree.validate().ok());
    EXPECT_EQ(tree.height(), 2);
    EXPECT_EQ(testing::counted_self_pairs(tree), (std::vector<Pair>{{0, 2}}));
    // b, now the root's child, is not entered by a query at c.
    std::vector<std::uint32_t> hits = testing::counted_query_box(tree, boxes[2]);
    std::sort(hits.begin(), hits.end());
    EXPECT_EQ(hits, (std::vector<std::uint32_t>{0, 2}));
    EXPECT_EQ(tree.stats().leaves_visited, 2u);
    testing::expect_matches_ids(tree, boxes, testing::iota_ids(3), 13, 20, kNearestStride);
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
    EXPECT_EQ(testing::counted_self_pairs(tree).size(), 101u);
    EXPECT_EQ(tree.stats().box_tests, 101u);

    // The speck is grown by 0.001, not 0.1: a point 0.05 beyond it reaches only the world box.
    EXPECT_EQ(testing::counted_query_point(tree, Vec3{1.56f, 5.005f, 5.005f}),
              std::vector<std::uint32_t>{99});
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
    EXPECT_EQ(testing::counted_self_pairs(inserted).size(), 99u);
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
        for (const Config& config : {Config{}, one_by_one()}) {
            DynamicAabbTree tree(config);
            ASSERT_TRUE(tree.build(scene->boxes).ok());
            const std::size_t pairs = testing::counted_self_pairs(tree).size();
            EXPECT_LT(tree.stats().box_tests, 2 * (kCount + pairs));
            EXPECT_LT(tree.stats().nodes_visited, 40 * kCount);
        }
    }
}

// Scenario 16: ids below about twice the box count index a table, others (4e9, or 5000 in a
// tree of 100) a hash map, and an id moves from the map into the table once the table grows
// over it: the tree validates and answers as brute force does at every stage, and move and
// remove find every id wherever it is kept.
TEST(DynamicAabbTree, Scenario16_HugeIdsBesideDenseOnes) {
    const std::vector<Box> scene = testing::scene_boxes("uniform", 3300, 16);
    std::vector<Box> boxes(scene.begin(), scene.begin() + 100);
    std::vector<std::uint32_t> ids = testing::iota_ids(100);
    DynamicAabbTree tree;
    ASSERT_TRUE(tree.build(boxes).ok());
    const auto add = [&](std::uint32_t id, const Box& box) {
        ASSERT_TRUE(tree.insert(id, box).ok()) << id;
        ids.push_back(id);
        boxes.push_back(box);
    };
    add(4000000000u, scene[100]);
    add(std::numeric_limits<std::uint32_t>::max(), scene[101]);
    add(5000, scene[102]);
    EXPECT_FALSE(tree.insert(5000, scene[103]).ok());  // present, though hashed
    testing::expect_matches_ids(tree, boxes, ids, 16, 30, kNearestStride);

    for (std::uint32_t id = 100; id < 3300; ++id) add(id, scene[id]);  // the table: 6400 ids
    testing::expect_matches_ids(tree, boxes, ids, 17, 30, kNearestStride);

    const Box far{{5, 5, 5}, {5.1f, 5.1f, 5.1f}};
    for (const std::uint32_t id : {5000u, 4000000000u, 17u}) {
        ASSERT_TRUE(tree.move(id, far).ok()) << id;
        boxes[std::size_t(std::find(ids.begin(), ids.end(), id) - ids.begin())] = far;
    }
    testing::expect_matches_ids(tree, boxes, ids, 18, 30, kNearestStride);
    for (const std::uint32_t id : {5000u, std::numeric_limits<std::uint32_t>::max(), 17u}) {
        ASSERT_TRUE(tree.remove(id).ok()) << id;
        EXPECT_FALSE(tree.move(id, far).ok()) << id;
        const std::size_t k = std::size_t(std::find(ids.begin(), ids.end(), id) - ids.begin());
        ids.erase(ids.begin() + std::ptrdiff_t(k));
        boxes.erase(boxes.begin() + std::ptrdiff_t(k));
    }
    EXPECT_EQ(tree.size(), ids.size());
    testing::expect_matches_ids(tree, boxes, ids, 19, 30, kNearestStride);
}

// Scenario 17: once as many leaves were re-inserted as the tree holds, its nodes are laid out
// again in depth-first order; the tree validates and answers as brute force does after each of
// several such layouts, with a hashed id among the table's, and keeps moving, removing and
// inserting afterwards.
TEST(DynamicAabbTree, Scenario17_LayoutAfterManyReinsertionsKeepsTheTree) {
    std::vector<Box> boxes = testing::scene_boxes("clustered", 2500, 21);
    std::vector<std::uint32_t> ids = testing::iota_ids(boxes.size());
    ids.back() = 4000000000u;  // hashed
    DynamicAabbTree tree;
    for (std::size_t k = 0; k < boxes.size(); ++k) ASSERT_TRUE(tree.insert(ids[k], boxes[k]).ok());
    std::mt19937 rng(21);
    std::uniform_real_distribution<float> shift(-3, 3);
    for (int round = 0; round < 4; ++round) {
        for (std::size_t k = 0; k < boxes.size(); ++k) {
            const Vec3 d{shift(rng), shift(rng), shift(rng)};
            Box& b = boxes[k];
            b = {{b.min.x + d.x, b.min.y + d.y, b.min.z + d.z},
                 {b.max.x + d.x, b.max.y + d.y, b.max.z + d.z}};
            ASSERT_TRUE(tree.move(ids[k], b).ok()) << ids[k];
        }
        testing::expect_matches_ids(tree, boxes, ids, 30 + std::uint32_t(round), 30,
                                    kNearestStride);
    }
    // Far moves re-insert nearly every leaf each round: several layouts took place.
    EXPECT_GE(tree.reinsert_count(), 3 * boxes.size());
    ASSERT_TRUE(tree.remove(ids[7]).ok());
    ASSERT_TRUE(tree.remove(4000000000u).ok());
    ids.erase(ids.begin() + 7);
    boxes.erase(boxes.begin() + 7);
    ids.pop_back();
    boxes.pop_back();
    ASSERT_TRUE(tree.insert(7, {{0, 0, 0}, {1, 1, 1}}).ok());
    ids.push_back(7);
    boxes.push_back({{0, 0, 0}, {1, 1, 1}});
    testing::expect_matches_ids(tree, boxes, ids, 40, 30, kNearestStride);
}

// Scenario 18: query_boxes (many regions in interleaved walks) answers each region as
// query_box does, with the same counts, on every configuration (margin 0 reads ids from the
// nodes), after moves that re-inserted leaves, for more regions than walks run at once and for
// regions that meet nothing.
TEST(DynamicAabbTree, Scenario18_QueryBoxesEqualsQueryBoxPerRegion) {
    const Scene scene = generate_scene("clustered", 2000).value();
    std::mt19937 rng(18);
    std::uniform_real_distribution<float> shift(-0.5f, 0.5f);
    for (const auto& [name, config] : configs()) {
        SCOPED_TRACE(name);
        DynamicAabbTree tree(config);
        std::vector<Box> boxes = scene.boxes;
        ASSERT_TRUE(tree.build(boxes).ok());
        for (std::uint32_t id = 0; id < boxes.size(); id += 3) {
            Box& b = boxes[id];
            const Vec3 d{shift(rng), shift(rng), shift(rng)};
            b = {{b.min.x + d.x, b.min.y + d.y, b.min.z + d.z},
                 {b.max.x + d.x, b.max.y + d.y, b.max.z + d.z}};
            ASSERT_TRUE(tree.move(id, b).ok());
        }
        std::vector<Box> regions;
        for (std::uint32_t id = 0; id < boxes.size(); id += 7) regions.push_back(boxes[id]);
        regions.push_back({{1e6f, 1e6f, 1e6f}, {1e6f + 1, 1e6f + 1, 1e6f + 1}});  // nothing there
        tree.reset_stats();
        std::vector<std::vector<std::uint32_t>> expected;
        for (const Box& r : regions) {
            std::vector<std::uint32_t> ids;
            tree.query_box(r, ids);
            std::sort(ids.begin(), ids.end());
            expected.push_back(ids);
        }
        const QueryStats one_by_one = tree.stats();
        tree.reset_stats();
        std::vector<std::uint32_t> out;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
        tree.query_boxes(regions, out, ranges);
        ASSERT_EQ(ranges.size(), regions.size());
        for (std::size_t r = 0; r < regions.size(); ++r) {
            std::vector<std::uint32_t> got(out.begin() + ranges[r].first,
                                           out.begin() + ranges[r].first + ranges[r].second);
            std::sort(got.begin(), got.end());
            EXPECT_EQ(got, expected[r]) << "region " << r;
        }
        EXPECT_TRUE(expected.back().empty());
        EXPECT_EQ(tree.stats().nodes_visited, one_by_one.nodes_visited);
        EXPECT_EQ(tree.stats().leaves_visited, one_by_one.leaves_visited);
        EXPECT_EQ(tree.stats().box_tests, one_by_one.box_tests);
    }
}

// Scenario 19: build_apart's tree is a valid tree of every box, and its pairs are self_pairs'
// without those of two flagged boxes: a level's touching slabs flagged (as a world's static
// bodies are), a third of a clustered scene at random, none and all. Where most pairs are the
// flagged boxes' own, the walk tests a fraction of the leaf pairs self_pairs tests.
TEST(DynamicAabbTree, Scenario19_BuildApartSkipsTheFlaggedPairs) {
    const Scene level = generate_scene("level", 3000).value();
    const Scene clustered = generate_scene("clustered", 2000).value();
    std::mt19937 rng(19);
    std::vector<std::uint8_t> slabs(level.boxes.size()), third(clustered.boxes.size());
    for (std::size_t i = 0; i < slabs.size(); ++i) slabs[i] = i % 10 != 0;
    for (std::uint8_t& f : third) f = rng() % 3 == 0;
    const std::vector<std::uint8_t> none(clustered.boxes.size(), 0), all(none.size(), 1);
    struct Case {
        std::string name;
        const Scene* scene;
        const std::vector<std::uint8_t>* apart;
    };
    for (const Case& c :
         {Case{"level, slabs", &level, &slabs}, Case{"clustered, a third", &clustered, &third},
          Case{"clustered, none", &clustered, &none}, Case{"clustered, all", &clustered, &all}}) {
        const std::vector<Box>& boxes = c.scene->boxes;
        const std::vector<std::uint8_t>& apart = *c.apart;
        std::vector<Pair> expected;
        for (const Pair& p : testing::brute_pairs(boxes))
            if (!(apart[p.i] && apart[p.j])) expected.push_back(p);
        for (const auto& [name, config] : configs()) {
            SCOPED_TRACE(c.name + ", " + name);
            DynamicAabbTree tree(config);
            std::vector<Pair> pairs{{7, 8}};  // appended to, not replaced
            ASSERT_TRUE(tree.build_apart(boxes, apart, pairs).ok());
            ASSERT_TRUE(tree.validate().ok()) << tree.validate().error().message;
            EXPECT_EQ(tree.size(), boxes.size());
            ASSERT_FALSE(pairs.empty());
            EXPECT_EQ(pairs.front(), (Pair{7, 8}));
            pairs.erase(pairs.begin());
            std::sort(pairs.begin(), pairs.end());
            EXPECT_EQ(pairs, expected);
            // The tree answers as any: its self pairs are all of them.
            EXPECT_EQ(find_sorted_pairs(tree).value(), testing::brute_pairs(boxes));
        }
    }
    // The walk's cost on the level against a whole self_pairs over the same boxes.
    DynamicAabbTree apart_tree, whole;
    std::vector<Pair> pairs;
    ASSERT_TRUE(apart_tree.build_apart(level.boxes, slabs, pairs).ok());
    const std::uint64_t apart_tests = apart_tree.stats().box_tests;
    ASSERT_TRUE(whole.build(level.boxes).ok());
    testing::counted_self_pairs(whole);
    EXPECT_LT(apart_tests * 3, whole.stats().box_tests);
    // One flag per box, or an error that leaves the tree empty.
    DynamicAabbTree tree;
    const std::vector<std::uint8_t> short_flags(level.boxes.size() - 1, 0);
    EXPECT_EQ(tree.build_apart(level.boxes, short_flags, pairs).error().code,
              ErrorCode::invalid_argument);
    EXPECT_EQ(tree.size(), 0u);
}

}  // namespace
}  // namespace broadphase
