// Tests of the k-d tree (cpu_reference/kd_tree.*; J. L. Bentley, "Multidimensional binary
// search trees used for associative searching", CACM 1975) that are its own: the shape of the
// tree on degenerate scenes (median property, leaf capacity, height, alternating axes),
// validate() on corrupted trees, its options' edge cases. Every query against brute force, under
// both axis rules and several leaf capacities, is in the typed suite (structure_test.cpp,
// structure_configs.hpp).
#include "kd_tree.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "broadphase/scene.hpp"
#include "brute_force.hpp"
#include "oracle_harness.hpp"
#include "tree_test_common.hpp"

namespace broadphase {

// Reaches the tree's internals so that tests can corrupt it.
struct KdTreeTestAccess {
    static std::vector<KdTree::Node>& nodes(KdTree& t) { return t.nodes_; }
    static std::vector<std::uint32_t>& ids(KdTree& t) { return t.ids_; }
    static std::vector<Box>& boxes(KdTree& t) { return t.boxes_; }
};

namespace {

using testing::uniform_boxes;

using AxisRule = KdTree::AxisRule;

// ---- shape of the tree on degenerate scenes ---------------------------------------------------

TEST(KdTreeScenes, Scenario1_IdenticalBoxesMakeOneLeaf) {
    // All centroids equal: one leaf, over capacity, which validate() accepts.
    KdTree tree;
    ASSERT_TRUE(tree.build(testing::identical_boxes()).ok());
    EXPECT_EQ(tree.nodes().size(), 1u);
    EXPECT_TRUE(tree.validate().ok());
}

TEST(KdTreeScenes, Scenario2_FlatSceneNeverSplitsOnZ) {
    // Widest never splits on z, where nothing varies.
    KdTree tree;
    testing::expect_flat_scene_never_splits_on_z(
        tree, [](const KdTree::Node& node) { return node.axis; });
}

// ---- shape of the tree -----------------------------------------------------------------------

TEST(KdTreeShape, Scenario1_MedianSplitsGiveLogarithmicHeightAndFullLeaves) {
    const std::vector<Box> boxes = uniform_boxes(10000, 8);
    for (std::uint32_t capacity : {1u, 4u, 8u, 16u}) {
        KdTree tree({AxisRule::widest, capacity, 64});
        ASSERT_TRUE(tree.build(boxes).ok());
        ASSERT_TRUE(tree.validate().ok());
        // Halving down to <= capacity: height = ceil(log2(n / capacity)).
        const auto expected = static_cast<std::uint32_t>(
            std::ceil(std::log2(double(boxes.size()) / double(capacity))));
        EXPECT_EQ(tree.height(), expected) << "capacity " << capacity;
        for (const KdTree::Node& node : tree.nodes()) {
            if (node.is_leaf()) {
                EXPECT_LE(node.end - node.begin, capacity);
                EXPECT_GE(node.end - node.begin, (capacity + 1) / 2);  // median: balanced
            }
        }
    }
}

TEST(KdTreeShape, Scenario2_AlternateRuleCyclesXYZ) {
    const std::vector<Box> boxes = uniform_boxes(3000, 9);
    KdTree tree({AxisRule::alternate, 8, 64});
    ASSERT_TRUE(tree.build(boxes).ok());
    for (const KdTree::Node& node : tree.nodes()) {
        if (!node.is_leaf()) {
            EXPECT_EQ(node.axis, node.depth % 3);
        }
    }
}

TEST(KdTreeShape, Scenario3_WidestRuleFollowsTheLongAxis) {
    // Boxes strung along y (like the yline scene): the root must split on y.
    KdTree tree;
    ASSERT_TRUE(tree.build(testing::strung_along_y_boxes()).ok());
    ASSERT_FALSE(tree.nodes().empty());
    EXPECT_EQ(tree.nodes()[0].axis, 1);
    EXPECT_EQ(tree.nodes()[0].split, 250.25f);  // centroid of box 250, the median
}

TEST(KdTreeShape, Scenario4_MaxDepthStopsSplitting) {
    const std::vector<Box> boxes = uniform_boxes(1000, 10);
    KdTree tree({AxisRule::widest, 8, 2});
    ASSERT_TRUE(tree.build(boxes).ok());
    EXPECT_TRUE(tree.validate().ok());
    EXPECT_EQ(tree.height(), 2u);
    EXPECT_EQ(tree.nodes().size(), 7u);
}

TEST(KdTreeShape, Scenario5_QueriesPruneAndCountWork) {
    const std::vector<Box> boxes = uniform_boxes(20000, 11);
    KdTree tree;
    ASSERT_TRUE(tree.build(boxes).ok());
    testing::expect_queries_prune(tree, boxes.size() / 50, 100u * boxes.size());  // not n^2 / 2
}

// ---- validate() catches corruption -----------------------------------------------------------

class KdTreeValidate : public testing::TreeCorruption<KdTree, KdTreeTestAccess> {
protected:
    std::uint32_t first_internal() {
        const auto& nodes = KdTreeTestAccess::nodes(tree_);
        for (std::uint32_t i = 0; i < nodes.size(); ++i) {
            if (!nodes[i].is_leaf()) return i;
        }
        return 0;
    }
};

TEST_F(KdTreeValidate, Scenario1_DuplicateId) {
    expect_duplicate_id_caught();
}

TEST_F(KdTreeValidate, Scenario2_IdOutOfRange) {
    expect_id_out_of_range_caught();
}

TEST_F(KdTreeValidate, Scenario3_LeafBoundsTooSmall) {
    auto& nodes = KdTreeTestAccess::nodes(tree_);
    for (KdTree::Node& node : nodes) {
        if (node.is_leaf()) {
            node.bounds.max.x = node.bounds.min.x;
            break;
        }
    }
    expect_invalid("do not contain");
}

TEST_F(KdTreeValidate, Scenario4_ParentBoundsTooSmall) {
    KdTreeTestAccess::nodes(tree_)[0].bounds.min.y += 0.1f;
    expect_invalid("do not contain a child");
}

TEST_F(KdTreeValidate, Scenario5_MedianPropertyBroken) {
    // Move the root's split so that the left half is no longer all <= split.
    KdTree::Node& root = KdTreeTestAccess::nodes(tree_)[0];
    root.split = -1;
    expect_invalid("on the left has its centroid above the split");
    root.split = 2;
    expect_invalid("on the right has its centroid below the split");
}

TEST_F(KdTreeValidate, Scenario6_SwappedBoxesAcrossTheSplit) {
    expect_swap_across_split_caught();
}

TEST_F(KdTreeValidate, Scenario7_OverfullLeaf) {
    // Build with capacity 8 but validate as if capacity were smaller: swap in the config by
    // building a capacity-2 tree and grafting the first tree's nodes onto it.
    expect_overfull_graft_caught(
        KdTree({AxisRule::widest, 8, 64}), KdTree({AxisRule::widest, 2, 64}),
        [](KdTree& from, KdTree& to) {
            KdTreeTestAccess::nodes(to) = KdTreeTestAccess::nodes(from);
            KdTreeTestAccess::ids(to) = KdTreeTestAccess::ids(from);
            KdTreeTestAccess::boxes(to) = KdTreeTestAccess::boxes(from);
        },
        "more than the capacity");
}

TEST_F(KdTreeValidate, Scenario8_BrokenChildLink) {
    auto& nodes = KdTreeTestAccess::nodes(tree_);
    nodes[first_internal()].right = static_cast<std::uint32_t>(nodes.size());
    expect_invalid("bad right child");
}

TEST_F(KdTreeValidate, Scenario9_ChildRangesDoNotPartition) {
    auto& nodes = KdTreeTestAccess::nodes(tree_);
    nodes[nodes[0].right].begin += 1;
    expect_invalid("partition");
}

TEST_F(KdTreeValidate, Scenario10_UnreachableNode) {
    KdTreeTestAccess::nodes(tree_).push_back(KdTree::Node{});
    expect_invalid("unreachable");
}

TEST_F(KdTreeValidate, Scenario11_InvalidStoredBox) {
    expect_nan_box_caught();
}

// ---- input and interface ---------------------------------------------------------------------

TEST(KdTreeInput, Scenario1_RejectsZeroLeafCapacity) {
    KdTree tree({AxisRule::widest, 0, 64});
    testing::expect_bad_config_rejected(tree);
}

TEST(KdTreeInput, Scenario2_StaticAndNamed) {
    KdTree tree;
    testing::expect_static_and_named(tree, "kd_tree");
    EXPECT_EQ(tree.config().axis_rule, AxisRule::widest);
    EXPECT_EQ(tree.config().leaf_capacity, 8u);
}

}  // namespace
}  // namespace broadphase
