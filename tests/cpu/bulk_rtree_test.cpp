// Tests of the bulk-loaded R-trees (cpu_reference/bulk_rtree.*) that are their own: Nearest-X
// (Roussopoulos and Leifker, "Direct spatial search on pictorial databases using packed
// R-trees", SIGMOD 1985), STR (Leutenegger, Lopez and Edgington, "STR: A Simple and Efficient
// Algorithm for R-Tree Packing", ICDE 1997) and Hilbert (Kamel and Faloutsos, "On Packing
// R-trees", CIKM 1993): the packed shape (full nodes, one depth, level sizes) on degenerate
// scenes, the axes chosen by centroid spread, validate() on corrupted trees, the options' edge
// cases. Every query against brute force, at the default capacity and a small odd one, is in
// the typed suite (structure_test.cpp, structure_configs.hpp).
#include "bulk_rtree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "broadphase/scene.hpp"
#include "brute_force.hpp"
#include "oracle_harness.hpp"
#include "tree_test_common.hpp"

namespace broadphase {

// Reaches the tree's internals so that tests can corrupt it.
struct BulkRTreeTestAccess {
    static std::vector<BulkRTree::Node>& nodes(BulkRTree& t) { return t.nodes_; }
    static std::vector<std::uint32_t>& levels(BulkRTree& t) { return t.levels_; }
    static std::vector<std::uint32_t>& ids(BulkRTree& t) { return t.ids_; }
    static std::vector<Box>& boxes(BulkRTree& t) { return t.boxes_; }
};

namespace {

using testing::uniform_boxes;

using BulkLoad = BulkRTree::BulkLoad;
constexpr BulkLoad kMethods[] = {BulkLoad::nearest_x, BulkLoad::str, BulkLoad::hilbert};

std::string method_name(BulkLoad m) {
    return std::string(BulkRTree({m, 16}).name());
}

// ---- shape of the tree on degenerate scenes ---------------------------------------------------

TEST(BulkRTreeScenes, Scenario1_IdenticalBoxesPackFullLeaves) {
    for (BulkLoad m : kMethods) {
        BulkRTree tree({m, 16});
        ASSERT_TRUE(tree.build(testing::identical_boxes()).ok());
        EXPECT_TRUE(tree.validate().ok());
        EXPECT_EQ(tree.nodes().size(), 13u + 1u);  // 13 leaves (12 full) and the root
    }
}

TEST(BulkRTreeScenes, Scenario2_FlatSceneTilesTwoAxes) {
    // z has no spread, so STR and Hilbert work in 2D: the paper's sqrt slicing.
    for (BulkLoad m : {BulkLoad::str, BulkLoad::hilbert}) {
        BulkRTree tree({m, 16});
        ASSERT_TRUE(tree.build(testing::flat_boxes()).ok());
        EXPECT_EQ(tree.sort_axes()[2], 2);
        EXPECT_EQ(tree.tiled_axes(), 2u);
    }
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
    // Boxes strung along y (like the xline scene: x nearly constant): the sort axis must be y, and
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
    // The xline scene: the band is narrower than the boxes are wide, so x is not tiled and
    // both methods reduce to a sort along y, with leaves as short along y as Nearest-X's.
    Result<Scene> xline = generate_scene("xline", 20000);
    ASSERT_TRUE(xline.ok());
    BulkRTree nearest_x({BulkLoad::nearest_x, 16});
    ASSERT_TRUE(nearest_x.build(xline->boxes).ok());
    (void)testing::counted_self_pairs(nearest_x);
    for (BulkLoad m : {BulkLoad::str, BulkLoad::hilbert}) {
        BulkRTree tree({m, 16});
        ASSERT_TRUE(tree.build(xline->boxes).ok());
        ASSERT_TRUE(tree.validate().ok());
        EXPECT_EQ(tree.tiled_axes(), 1u) << method_name(m);
        EXPECT_EQ(tree.sort_axes()[0], 1) << method_name(m);
        (void)testing::counted_self_pairs(tree);
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
        // Self-pairs far from brute force's n^2 / 2; Nearest-X's long strips cost far more than
        // tiles.
        const std::uint64_t limit =
            m == BulkLoad::nearest_x ? boxes.size() * boxes.size() / 20 : 100u * boxes.size();
        testing::expect_queries_prune(tree, boxes.size() / 20, limit, method_name(m));
    }
}

// ---- validate() catches corruption -----------------------------------------------------------

class BulkRTreeValidate : public testing::TreeCorruption<BulkRTree, BulkRTreeTestAccess,
                                                         ::testing::TestWithParam<BulkLoad>> {
protected:
    BulkRTree make_tree() const override { return BulkRTree({GetParam(), 4}); }
};

TEST_P(BulkRTreeValidate, Scenario1_DuplicateId) {
    expect_duplicate_id_caught();
}

TEST_P(BulkRTreeValidate, Scenario2_IdOutOfRange) {
    expect_id_out_of_range_caught();
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
    expect_nan_box_caught();
}

INSTANTIATE_TEST_SUITE_P(AllMethods, BulkRTreeValidate, ::testing::ValuesIn(kMethods),
                         [](const auto& test) { return method_name(test.param); });

// ---- input and interface ---------------------------------------------------------------------

TEST(BulkRTreeInput, Scenario1_RejectsCapacityBelowTwo) {
    for (std::uint32_t b : {0u, 1u}) {
        BulkRTree tree({BulkLoad::hilbert, b});
        testing::expect_bad_config_rejected(tree);
    }
}

TEST(BulkRTreeInput, Scenario2_StaticAndNamed) {
    EXPECT_EQ(BulkRTree({BulkLoad::nearest_x, 16}).name(), "rtree_nearest_x");
    EXPECT_EQ(BulkRTree({BulkLoad::str, 16}).name(), "rtree_str");
    EXPECT_EQ(BulkRTree({BulkLoad::hilbert, 16}).name(), "rtree_hilbert");
    BulkRTree tree;
    EXPECT_EQ(tree.config().node_capacity, 16u);
    EXPECT_FALSE(tree.is_dynamic());
}

}  // namespace
}  // namespace broadphase
