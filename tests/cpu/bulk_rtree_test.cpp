// Tests of the bulk-loaded R-trees (cpu_reference/bulk_rtree.*): Nearest-X, STR and Hilbert,
// every query against brute force on every standard generator and on hand-made degenerate
// scenes, at the default capacity and a small odd one; the packed shape (full nodes, one depth,
// level sizes); the axes chosen by centroid spread; validate() on corrupted trees; bad input.
#include "bulk_rtree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "broadphase/scene.hpp"
#include "brute_force.hpp"
#include "oracle_harness.hpp"

namespace broadphase {

// Reaches the tree's internals so that tests can corrupt it.
struct BulkRTreeTestAccess {
    static std::vector<BulkRTree::Node>& nodes(BulkRTree& t) { return t.nodes_; }
    static std::vector<std::uint32_t>& levels(BulkRTree& t) { return t.levels_; }
    static std::vector<std::uint32_t>& ids(BulkRTree& t) { return t.ids_; }
    static std::vector<Box>& boxes(BulkRTree& t) { return t.boxes_; }
};

namespace {

using testing::brute_nearest;
using testing::uniform_boxes;

using BulkLoad = BulkRTree::BulkLoad;
constexpr BulkLoad kMethods[] = {BulkLoad::nearest_x, BulkLoad::str, BulkLoad::hilbert};

std::string method_name(BulkLoad m) {
    return std::string(BulkRTree({m, 16}).name());
}

// Every method at the default capacity and at a small odd one (deep trees, partial nodes),
// compared with brute force (oracle_harness.hpp): 200 random queries of each kind and those
// made from the boxes.
void expect_all_methods_match(std::span<const Box> boxes, const std::string& label) {
    testing::CompareOptions options;
    options.seed = 1234;
    options.query_count = 200;
    options.nearest_stride = 3;
    options.nearest_all = false;
    for (BulkLoad m : kMethods) {
        for (std::uint32_t capacity : {16u, 3u}) {
            SCOPED_TRACE(label + " " + method_name(m) + " capacity " + std::to_string(capacity));
            BulkRTree tree({m, capacity});
            testing::build_and_match(tree, boxes, options);
            if (::testing::Test::HasFatalFailure()) return;
        }
    }
}

// ---- every generator, every size, every method ------------------------------------------------

class BulkRTreeGenerators
    : public ::testing::TestWithParam<std::tuple<std::string_view, std::size_t>> {};

TEST_P(BulkRTreeGenerators, MatchesBruteForce) {
    const auto [generator, count] = GetParam();
    Result<Scene> scene = generate_scene(generator, count);
    ASSERT_TRUE(scene.ok()) << scene.error().message;
    ASSERT_EQ(scene->boxes.size(), count);
    expect_all_methods_match(scene->boxes, std::string(generator) + ":" + std::to_string(count));
}

INSTANTIATE_TEST_SUITE_P(AllScenes, BulkRTreeGenerators,
                         ::testing::Combine(::testing::ValuesIn(generator_names()),
                                            ::testing::Values(std::size_t{0}, std::size_t{1},
                                                              std::size_t{2}, std::size_t{7},
                                                              std::size_t{300}, std::size_t{3000})),
                         [](const auto& test) {
                             return std::string(std::get<0>(test.param)) + "_" +
                                    std::to_string(std::get<1>(test.param));
                         });

// ---- hand-made degenerate scenes --------------------------------------------------------------

TEST(BulkRTreeScenes, Scenario1_TwoHundredIdenticalBoxes) {
    const std::vector<Box> boxes = testing::identical_boxes();
    expect_all_methods_match(boxes, "identical");
    for (BulkLoad m : kMethods) {
        BulkRTree tree({m, 16});
        ASSERT_TRUE(tree.build(boxes).ok());
        EXPECT_TRUE(tree.validate().ok());
        EXPECT_EQ(tree.nodes().size(), 13u + 1u);  // 13 leaves (12 full) and the root
        EXPECT_EQ(sorted_pairs(tree).size(), 200u * 199u / 2u);
        // Ties: every box is hit at the same t, the smallest id wins.
        const std::optional<RayHit> hit = tree.ray_cast(Ray{{0.5f, 1, -5}, {0, 0, 1}, 100});
        ASSERT_TRUE(hit.has_value());
        EXPECT_EQ(hit->id, 0u);
        EXPECT_FLOAT_EQ(hit->t, 4.0f);
        std::vector<Neighbor> near;
        ASSERT_TRUE(tree.nearest({5, 1, 0}, 3, near).ok());
        ASSERT_EQ(near.size(), 3u);
        EXPECT_EQ(near[0].id, 0u);
        EXPECT_EQ(near[1].id, 1u);
        EXPECT_EQ(near[2].id, 2u);
    }
}

TEST(BulkRTreeScenes, Scenario2_ZeroVolumeBoxes) {
    const std::vector<Box> boxes = testing::zero_volume_boxes();
    expect_all_methods_match(boxes, "zero volume");
}

TEST(BulkRTreeScenes, Scenario3_OneHugeBoxOverEverything) {
    const std::vector<Box> boxes = testing::huge_box_boxes();
    expect_all_methods_match(boxes, "huge box");
    for (BulkLoad m : kMethods) {
        BulkRTree tree({m, 16});
        ASSERT_TRUE(tree.build(boxes).ok());
        const std::vector<Pair> pairs = sorted_pairs(tree);
        EXPECT_EQ(std::count_if(pairs.begin(), pairs.end(),
                                [](const Pair& p) {
                                    return p.i == testing::kHugeBoxIndex ||
                                           p.j == testing::kHugeBoxIndex;
                                }),
                  1000);
    }
}

TEST(BulkRTreeScenes, Scenario4_FarFromTheOrigin) {
    const std::vector<Box> boxes = testing::far_from_origin_boxes();
    expect_all_methods_match(boxes, "far");
}

TEST(BulkRTreeScenes, Scenario5_FlatTwoDimensionalScene) {
    const std::vector<Box> boxes = testing::flat_boxes();
    expect_all_methods_match(boxes, "2D");
    // z has no spread, so STR and Hilbert work in 2D: the paper's sqrt slicing.
    for (BulkLoad m : {BulkLoad::str, BulkLoad::hilbert}) {
        BulkRTree tree({m, 16});
        ASSERT_TRUE(tree.build(boxes).ok());
        EXPECT_EQ(tree.sort_axes()[2], 2);
        EXPECT_EQ(tree.tiled_axes(), 2u);
    }
}

TEST(BulkRTreeScenes, Scenario6_SameCentroidDifferentSizes) {
    const std::vector<Box> boxes = testing::nested_boxes();
    expect_all_methods_match(boxes, "nested");
}

TEST(BulkRTreeScenes, Scenario7_CentroidsAlignedOnX) {
    // Seed 004's degenerate case for Nearest-X: every centroid has the same x.
    std::vector<Box> boxes;
    for (int i = 0; i < 500; ++i) {
        const float y = 0.01f * float(i), z = 0.003f * float(i % 13);
        boxes.push_back(Box{{-0.5f, y, z}, {0.5f, y + 0.015f, z + 0.002f}});
    }
    expect_all_methods_match(boxes, "aligned on x");
}

// ---- shape of the tree -----------------------------------------------------------------------

TEST(BulkRTreeShape, Scenario1_PackedLevelsAreFullAndEquallyDeep) {
    const std::vector<Box> boxes = uniform_boxes(10000, 8);
    for (BulkLoad m : kMethods) {
        for (std::uint32_t b : {2u, 3u, 16u, 50u}) {
            BulkRTree tree({m, b});
            ASSERT_TRUE(tree.build(boxes).ok());
            ASSERT_TRUE(tree.validate().ok());
            // Level sizes: n, ceil(n / b), ceil(ceil(n / b) / b), ... down to 1.
            std::vector<std::uint32_t> expected{0};
            std::size_t count = boxes.size();
            do {
                count = (count + b - 1) / b;
                expected.push_back(expected.back() + static_cast<std::uint32_t>(count));
            } while (count > 1);
            const auto levels = tree.level_offsets();
            EXPECT_EQ(std::vector<std::uint32_t>(levels.begin(), levels.end()), expected)
                << method_name(m) << " capacity " << b;
            EXPECT_EQ(tree.height(), expected.size() - 1);
            EXPECT_EQ(tree.nodes().back().first, expected[expected.size() - 3]);  // root's kids
        }
    }
}

TEST(BulkRTreeShape, Scenario2_NearestXSortsAlongTheAxisOfLargestSpread) {
    // Boxes strung along y (seed 004's XLine: x nearly constant): the sort axis must be y, and
    // leaves must then be short along y rather than spanning the whole line.
    std::vector<Box> boxes;
    for (int i = 0; i < 640; ++i) {
        const float y = float((i * 37) % 640);
        const float x = 0.001f * float(i % 5);
        boxes.push_back(Box{{x, y, 0}, {x + 0.5f, y + 0.5f, 0.5f}});
    }
    BulkRTree tree({BulkLoad::nearest_x, 16});
    ASSERT_TRUE(tree.build(boxes).ok());
    ASSERT_TRUE(tree.validate().ok());
    EXPECT_EQ(tree.sort_axes()[0], 1);
    for (std::uint32_t leaf = 0; leaf < tree.level_offsets()[1]; ++leaf) {
        const Box& b = tree.nodes()[leaf].bounds;
        EXPECT_FLOAT_EQ(b.max.y - b.min.y, 15.5f) << "leaf " << leaf;  // 16 consecutive ys
    }
    // The generator's xline scene: x has almost no spread, so x is not the sort axis.
    Result<Scene> xline = generate_scene("xline", 2000);
    ASSERT_TRUE(xline.ok());
    ASSERT_TRUE(tree.build(xline->boxes).ok());
    EXPECT_NE(tree.sort_axes()[0], 0);
}

TEST(BulkRTreeShape, Scenario3_StrTilesLeavesIntoAGrid) {
    // 4096 points on a 16^3 lattice, 8 per leaf: P = 512 pages, S = 8, so slabs of 512 points
    // (two planes along the first axis), slices of 64 (two rows along the second) and runs of 8
    // (two values along the third): every leaf is a 2 x 2 x 2 block, never a long strip.
    std::vector<Box> boxes;
    for (int x = 0; x < 16; ++x) {
        for (int y = 0; y < 16; ++y) {
            for (int z = 0; z < 16; ++z) {
                const Vec3 p{float(x), float(y) * 1.01f, float(z) * 1.02f};
                boxes.push_back(Box{p, p});
            }
        }
    }
    BulkRTree tree({BulkLoad::str, 8});
    ASSERT_TRUE(tree.build(boxes).ok());
    ASSERT_TRUE(tree.validate().ok());
    // Spread z > y > x (the scales 1.02 > 1.01 > 1).
    EXPECT_EQ(tree.sort_axes()[0], 2);
    EXPECT_EQ(tree.sort_axes()[1], 1);
    EXPECT_EQ(tree.sort_axes()[2], 0);
    for (std::uint32_t leaf = 0; leaf < tree.level_offsets()[1]; ++leaf) {
        const Box& b = tree.nodes()[leaf].bounds;
        EXPECT_NEAR(b.max.z - b.min.z, 1.02f, 1e-5f) << "leaf " << leaf;
        EXPECT_NEAR(b.max.y - b.min.y, 1.01f, 1e-5f) << "leaf " << leaf;
        EXPECT_NEAR(b.max.x - b.min.x, 1.0f, 1e-5f) << "leaf " << leaf;
    }
}

TEST(BulkRTreeShape, Scenario6_StrAndHilbertSkipAxesEveryBoxSpans) {
    // Seed 004's XLine: the band is narrower than the boxes are wide, so x is not tiled and
    // both methods reduce to a sort along y, with leaves as short along y as Nearest-X's.
    Result<Scene> xline = generate_scene("xline", 20000);
    ASSERT_TRUE(xline.ok());
    BulkRTree nearest_x({BulkLoad::nearest_x, 16});
    ASSERT_TRUE(nearest_x.build(xline->boxes).ok());
    nearest_x.reset_stats();
    std::vector<Pair> pairs;
    nearest_x.self_pairs(pairs);
    for (BulkLoad m : {BulkLoad::str, BulkLoad::hilbert}) {
        BulkRTree tree({m, 16});
        ASSERT_TRUE(tree.build(xline->boxes).ok());
        ASSERT_TRUE(tree.validate().ok());
        EXPECT_EQ(tree.tiled_axes(), 1u) << method_name(m);
        EXPECT_EQ(tree.sort_axes()[0], 1) << method_name(m);
        pairs.clear();
        tree.self_pairs(pairs);
        EXPECT_LT(tree.stats().box_tests, 2 * nearest_x.stats().box_tests) << method_name(m);
    }
}

TEST(BulkRTreeShape, Scenario7_HilbertIndexIsAHilbertCurve) {
    // The first 8^3 indices fill the cube [0, 8)^3, each step moving to a face neighbour.
    std::vector<std::array<std::uint32_t, 3>> cell(512, {~0u, ~0u, ~0u});
    for (std::uint32_t x = 0; x < 8; ++x) {
        for (std::uint32_t y = 0; y < 8; ++y) {
            for (std::uint32_t z = 0; z < 8; ++z) {
                const std::uint32_t q[3] = {x, y, z};
                const std::uint64_t h = BulkRTree::hilbert_index(q);
                ASSERT_LT(h, 512u) << x << " " << y << " " << z;
                ASSERT_EQ(cell[h][0], ~0u) << "index " << h << " twice";
                cell[h] = {x, y, z};
            }
        }
    }
    for (std::size_t h = 1; h < cell.size(); ++h) {
        int steps = 0;
        for (int a = 0; a < 3; ++a) {
            steps += std::abs(int(cell[h][a]) - int(cell[h - 1][a]));
        }
        EXPECT_EQ(steps, 1) << "index " << h;
    }
    const std::uint32_t top[3] = {(1u << 21) - 1, (1u << 21) - 1, (1u << 21) - 1};
    EXPECT_LT(BulkRTree::hilbert_index(top), std::uint64_t{1} << 63);
}

TEST(BulkRTreeShape, Scenario4_HilbertLeavesAreCompact) {
    // On a uniform scene, Hilbert and STR leaves are far smaller than Nearest-X's strips.
    const std::vector<Box> boxes = uniform_boxes(20000, 9);
    auto mean_leaf_margin = [&](BulkLoad m) {
        BulkRTree tree({m, 16});
        EXPECT_TRUE(tree.build(boxes).ok());
        double sum = 0;
        for (std::uint32_t leaf = 0; leaf < tree.level_offsets()[1]; ++leaf) {
            const Box& b = tree.nodes()[leaf].bounds;
            sum += (b.max.x - b.min.x) + (b.max.y - b.min.y) + (b.max.z - b.min.z);
        }
        return sum / tree.level_offsets()[1];
    };
    const double nearest_x = mean_leaf_margin(BulkLoad::nearest_x);
    EXPECT_LT(mean_leaf_margin(BulkLoad::hilbert), 0.5 * nearest_x);
    EXPECT_LT(mean_leaf_margin(BulkLoad::str), 0.5 * nearest_x);
}

TEST(BulkRTreeShape, Scenario5_QueriesPruneAndCountWork) {
    const std::vector<Box> boxes = uniform_boxes(20000, 11);
    for (BulkLoad m : kMethods) {
        BulkRTree tree({m, 16});
        ASSERT_TRUE(tree.build(boxes).ok());
        tree.reset_stats();
        std::vector<std::uint32_t> out;
        tree.query_box(Box{{0.5f, 0.5f, 0.5f}, {0.52f, 0.52f, 0.52f}}, out);
        EXPECT_GT(tree.stats().nodes_visited, 0u);
        EXPECT_GT(tree.stats().leaves_visited, 0u);
        EXPECT_GT(tree.stats().box_tests, 0u);
        EXPECT_LT(tree.stats().box_tests, boxes.size() / 20) << method_name(m);
        tree.reset_stats();
        std::vector<Pair> pairs;
        tree.self_pairs(pairs);
        // Far from brute force's n^2 / 2; Nearest-X's long strips cost far more than tiles.
        const std::uint64_t limit =
            m == BulkLoad::nearest_x ? boxes.size() * boxes.size() / 20 : 100u * boxes.size();
        EXPECT_LT(tree.stats().box_tests, limit) << method_name(m);
        EXPECT_GT(tree.stats().box_tests, pairs.size());
    }
}

// ---- validate() catches corruption -----------------------------------------------------------

class BulkRTreeValidate : public ::testing::TestWithParam<BulkLoad> {
protected:
    void SetUp() override {
        boxes_ = uniform_boxes(500, 12);
        tree_ = BulkRTree({GetParam(), 4});
        ASSERT_TRUE(tree_.build(boxes_).ok());
        ASSERT_TRUE(tree_.validate().ok());
    }
    void expect_invalid(const std::string& fragment) {
        const Status s = tree_.validate();
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message.find(fragment), std::string::npos) << s.error().message;
    }
    std::vector<Box> boxes_;
    BulkRTree tree_;
};

TEST_P(BulkRTreeValidate, Scenario1_DuplicateId) {
    BulkRTreeTestAccess::ids(tree_)[3] = BulkRTreeTestAccess::ids(tree_)[4];
    expect_invalid("stored twice");
}

TEST_P(BulkRTreeValidate, Scenario2_IdOutOfRange) {
    BulkRTreeTestAccess::ids(tree_)[0] = 500;
    expect_invalid("out of range");
}

TEST_P(BulkRTreeValidate, Scenario3_LeafBoundsNotTheUnion) {
    BulkRTreeTestAccess::nodes(tree_)[5].bounds.max.x += 0.5f;  // too large is wrong too
    expect_invalid("not the union");
}

TEST_P(BulkRTreeValidate, Scenario4_RootBoundsNotTheUnion) {
    BulkRTreeTestAccess::nodes(tree_).back().bounds.min.y += 0.1f;
    expect_invalid("not the union");
}

TEST_P(BulkRTreeValidate, Scenario5_NodeNotFull) {
    // Move one child from leaf 0 to leaf 1: leaf 0 is no longer full.
    auto& nodes = BulkRTreeTestAccess::nodes(tree_);
    nodes[0].count -= 1;
    nodes[1].first -= 1;
    nodes[1].count += 1;
    expect_invalid("less than full");
}

TEST_P(BulkRTreeValidate, Scenario6_ChildrenSkipped) {
    // Node 2 now shares a child with node 3 (or, for STR, with whichever leaf owns it).
    BulkRTreeTestAccess::nodes(tree_)[2].first += 1;
    expect_invalid("child");
}

TEST_P(BulkRTreeValidate, Scenario7_LevelsBroken) {
    auto& levels = BulkRTreeTestAccess::levels(tree_);
    levels[1] -= 1;  // the last leaf counted as an internal node
    EXPECT_FALSE(tree_.validate().ok());
    levels[1] += 1;
    levels.pop_back();  // no root level
    expect_invalid("partition");
}

TEST_P(BulkRTreeValidate, Scenario8_TwoRoots) {
    // Drop the root: the level below has more than one node.
    auto& nodes = BulkRTreeTestAccess::nodes(tree_);
    auto& levels = BulkRTreeTestAccess::levels(tree_);
    nodes.pop_back();
    levels.pop_back();
    expect_invalid("more than one node");
}

TEST_P(BulkRTreeValidate, Scenario9_LeafOrderBroken) {
    // Swap two boxes (with their ids) in different leaves: bounds are recomputed so only the
    // method's leaf order can notice.
    auto& boxes = BulkRTreeTestAccess::boxes(tree_);
    auto& ids = BulkRTreeTestAccess::ids(tree_);
    std::swap(boxes[1], boxes[boxes.size() - 2]);
    std::swap(ids[1], ids[ids.size() - 2]);
    auto& nodes = BulkRTreeTestAccess::nodes(tree_);
    const auto levels = tree_.level_offsets();
    for (std::size_t level = 0; level + 1 < levels.size(); ++level) {
        for (std::uint32_t i = levels[level]; i < levels[level + 1]; ++i) {
            BulkRTree::Node& node = nodes[i];
            node.bounds = level == 0 ? boxes[node.first] : nodes[node.first].bounds;
            for (std::uint32_t c = node.first + 1; c < node.first + node.count; ++c) {
                node.bounds = merge(node.bounds, level == 0 ? boxes[c] : nodes[c].bounds);
            }
        }
    }
    expect_invalid("order");
}

TEST_P(BulkRTreeValidate, Scenario10_InvalidStoredBox) {
    BulkRTreeTestAccess::boxes(tree_)[7].min.z = std::numeric_limits<float>::quiet_NaN();
    EXPECT_FALSE(tree_.validate().ok());
}

INSTANTIATE_TEST_SUITE_P(AllMethods, BulkRTreeValidate, ::testing::ValuesIn(kMethods),
                         [](const auto& test) { return method_name(test.param); });

// ---- input and interface ---------------------------------------------------------------------

TEST(BulkRTreeInput, Scenario1_RejectsBadBoxesNamingThem) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const Box good{{0, 0, 0}, {1, 1, 1}};
    const std::vector<Box> bad_ones = {Box{{nan, 0, 0}, {1, 1, 1}}, Box{{0, 0, 0}, {1, inf, 1}},
                                       Box{{0, 0, 2}, {1, 1, 1}}};
    for (BulkLoad m : kMethods) {
        for (const Box& bad : bad_ones) {
            BulkRTree tree({m, 16});
            ASSERT_TRUE(tree.build(std::vector<Box>(5, good)).ok());
            std::vector<Box> boxes(5, good);
            boxes[3] = bad;
            const Status s = tree.build(boxes);
            ASSERT_FALSE(s.ok());
            EXPECT_EQ(s.error().code, ErrorCode::invalid_box);
            EXPECT_EQ(s.error().box, std::optional<std::size_t>(3));
            EXPECT_EQ(tree.size(), 0u);  // the old tree is gone, not half-replaced
            EXPECT_TRUE(tree.validate().ok());
        }
    }
}

TEST(BulkRTreeInput, Scenario2_RejectsCapacityBelowTwo) {
    for (std::uint32_t b : {0u, 1u}) {
        BulkRTree tree({BulkLoad::hilbert, b});
        const Status s = tree.build(uniform_boxes(10, 1));
        ASSERT_FALSE(s.ok());
        EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
    }
}

TEST(BulkRTreeInput, Scenario3_StaticAndNamed) {
    EXPECT_EQ(BulkRTree({BulkLoad::nearest_x, 16}).name(), "rtree_nearest_x");
    EXPECT_EQ(BulkRTree({BulkLoad::str, 16}).name(), "rtree_str");
    EXPECT_EQ(BulkRTree({BulkLoad::hilbert, 16}).name(), "rtree_hilbert");
    BulkRTree tree;
    EXPECT_EQ(tree.config().node_capacity, 16u);
    EXPECT_FALSE(tree.is_dynamic());
    EXPECT_EQ(tree.insert(0, Box{}).error().code, ErrorCode::unsupported);
    EXPECT_EQ(tree.remove(0).error().code, ErrorCode::unsupported);
    EXPECT_EQ(tree.move(0, Box{}).error().code, ErrorCode::unsupported);
}

TEST(BulkRTreeInput, Scenario4_NearestEdgeCases) {
    for (BulkLoad m : kMethods) {
        BulkRTree tree({m, 16});
        std::vector<Neighbor> out{Neighbor{9, 9}};
        ASSERT_TRUE(tree.build({}).ok());
        ASSERT_TRUE(tree.nearest({0, 0, 0}, 3, out).ok());
        EXPECT_TRUE(out.empty());
        const std::vector<Box> boxes = uniform_boxes(4, 2);
        ASSERT_TRUE(tree.build(boxes).ok());
        ASSERT_TRUE(tree.nearest({0, 0, 0}, 0, out).ok());
        EXPECT_TRUE(out.empty());
        ASSERT_TRUE(tree.nearest({0, 0, 0}, 10, out).ok());  // fewer than k boxes
        EXPECT_EQ(out, brute_nearest(boxes, {0, 0, 0}, 10));
        EXPECT_EQ(out.size(), 4u);
    }
}

}  // namespace
}  // namespace broadphase
