// Tests of the k-d tree (cpu_reference/kd_tree.*): every query against brute force on every
// standard generator and on hand-made degenerate scenes, with both axis rules and several leaf
// capacities; the shape of the tree (median property, leaf capacity, height, alternating axes);
// validate() on corrupted trees; rejection of bad input.
#include "kd_tree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
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
struct KdTreeTestAccess {
    static std::vector<KdTree::Node>& nodes(KdTree& t) { return t.nodes_; }
    static std::vector<std::uint32_t>& ids(KdTree& t) { return t.ids_; }
    static std::vector<Box>& boxes(KdTree& t) { return t.boxes_; }
};

namespace {

using testing::brute_nearest;
using testing::uniform_boxes;

using AxisRule = KdTree::AxisRule;

// Builds a KdTree with `config` over `boxes` and compares it with brute force
// (oracle_harness.hpp): 200 random queries of each kind and those made from the boxes.
void expect_matches_brute_force(std::span<const Box> boxes, const KdTree::Config& config,
                                const std::string& label) {
    SCOPED_TRACE(label);
    KdTree tree(config);
    testing::CompareOptions options;
    options.seed = 1234;
    options.query_count = 200;
    options.nearest_stride = 3;
    options.nearest_all = false;
    testing::build_and_match(tree, boxes, options);
}

// ---- every generator, every size, both axis rules --------------------------------------------

class KdTreeGenerators
    : public ::testing::TestWithParam<std::tuple<std::string_view, std::size_t>> {};

TEST_P(KdTreeGenerators, MatchesBruteForce) {
    const auto [generator, count] = GetParam();
    Result<Scene> scene = generate_scene(generator, count);
    ASSERT_TRUE(scene.ok()) << scene.error().message;
    ASSERT_EQ(scene->boxes.size(), count);
    const std::string label = std::string(generator) + ":" + std::to_string(count);
    expect_matches_brute_force(scene->boxes, {}, label + " widest");
    expect_matches_brute_force(scene->boxes, {AxisRule::alternate, 8, 64}, label + " alternate");
    expect_matches_brute_force(scene->boxes, {AxisRule::widest, 1, 64}, label + " capacity 1");
    expect_matches_brute_force(scene->boxes, {AxisRule::alternate, 3, 4}, label + " max depth 4");
}

INSTANTIATE_TEST_SUITE_P(AllScenes, KdTreeGenerators,
                         ::testing::Combine(::testing::ValuesIn(generator_names()),
                                            ::testing::Values(std::size_t{0}, std::size_t{1},
                                                              std::size_t{2}, std::size_t{7},
                                                              std::size_t{300}, std::size_t{3000})),
                         [](const auto& test) {
                             return std::string(std::get<0>(test.param)) + "_" +
                                    std::to_string(std::get<1>(test.param));
                         });

// ---- hand-made degenerate scenes --------------------------------------------------------------

void expect_all_configs_match(std::span<const Box> boxes, const std::string& label) {
    expect_matches_brute_force(boxes, {}, label + " widest");
    expect_matches_brute_force(boxes, {AxisRule::alternate, 8, 64}, label + " alternate");
    expect_matches_brute_force(boxes, {AxisRule::widest, 2, 64}, label + " capacity 2");
}

TEST(KdTreeScenes, Scenario1_TwoHundredIdenticalBoxes) {
    const std::vector<Box> boxes = testing::identical_boxes();
    expect_all_configs_match(boxes, "identical");
    // All centroids equal: one leaf, over capacity, which validate() accepts.
    KdTree tree;
    ASSERT_TRUE(tree.build(boxes).ok());
    EXPECT_EQ(tree.nodes().size(), 1u);
    EXPECT_TRUE(tree.validate().ok());
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

TEST(KdTreeScenes, Scenario2_ZeroVolumeBoxes) {
    const std::vector<Box> boxes = testing::zero_volume_boxes();
    expect_all_configs_match(boxes, "zero volume");
}

TEST(KdTreeScenes, Scenario3_OneHugeBoxOverEverything) {
    const std::vector<Box> boxes = testing::huge_box_boxes();
    expect_all_configs_match(boxes, "huge box");
    KdTree tree;
    ASSERT_TRUE(tree.build(boxes).ok());
    const std::vector<Pair> pairs = sorted_pairs(tree);
    EXPECT_EQ(std::count_if(pairs.begin(), pairs.end(),
                            [](const Pair& p) {
                                return p.i == testing::kHugeBoxIndex ||
                                       p.j == testing::kHugeBoxIndex;
                            }),
              1000);
}

TEST(KdTreeScenes, Scenario4_FarFromTheOrigin) {
    const std::vector<Box> boxes = testing::far_from_origin_boxes();
    expect_all_configs_match(boxes, "far");
}

TEST(KdTreeScenes, Scenario5_FlatTwoDimensionalScene) {
    const std::vector<Box> boxes = testing::flat_boxes();
    expect_all_configs_match(boxes, "2D");
    // Widest never splits on z, where nothing varies.
    KdTree tree;
    ASSERT_TRUE(tree.build(boxes).ok());
    for (const KdTree::Node& node : tree.nodes()) {
        if (!node.is_leaf()) {
            EXPECT_NE(node.axis, 2);
        }
    }
}

TEST(KdTreeScenes, Scenario6_SameCentroidDifferentSizes) {
    const std::vector<Box> boxes = testing::nested_boxes();
    expect_all_configs_match(boxes, "nested");
}

TEST(KdTreeScenes, Scenario7_BoxesStraddlingEverySplit) {
    // Long thin boxes along x, with centroids spread along x: each crosses many split planes.
    std::vector<Box> boxes;
    for (int i = 0; i < 400; ++i) {
        const float x = 0.01f * float(i);
        const float y = 0.003f * float(i % 37);
        boxes.push_back(Box{{x - 1.5f, y, 0}, {x + 1.5f, y + 0.002f, 0.5f}});
    }
    expect_all_configs_match(boxes, "straddling");
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
    // Boxes strung along y (like seed 004's YLine): the root must split on y.
    std::vector<Box> boxes;
    for (int i = 0; i < 500; ++i) {
        const float y = float(i);
        boxes.push_back(Box{{0, y, 0}, {0.5f, y + 0.5f, 0.5f}});
    }
    KdTree tree;
    ASSERT_TRUE(tree.build(boxes).ok());
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
    tree.reset_stats();
    std::vector<std::uint32_t> out;
    tree.query_box(Box{{0.5f, 0.5f, 0.5f}, {0.52f, 0.52f, 0.52f}}, out);
    EXPECT_GT(tree.stats().nodes_visited, 0u);
    EXPECT_GT(tree.stats().leaves_visited, 0u);
    EXPECT_GT(tree.stats().box_tests, 0u);
    EXPECT_LT(tree.stats().box_tests, boxes.size() / 50);
    tree.reset_stats();
    std::vector<Pair> pairs;
    tree.self_pairs(pairs);
    EXPECT_LT(tree.stats().box_tests, 100u * boxes.size());  // far from n^2 / 2
    EXPECT_GT(tree.stats().box_tests, pairs.size());
}

// ---- validate() catches corruption -----------------------------------------------------------

class KdTreeValidate : public ::testing::Test {
protected:
    void SetUp() override {
        boxes_ = uniform_boxes(500, 12);
        ASSERT_TRUE(tree_.build(boxes_).ok());
        ASSERT_TRUE(tree_.validate().ok());
    }
    void expect_invalid(const std::string& fragment) {
        const Status s = tree_.validate();
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message.find(fragment), std::string::npos) << s.error().message;
    }
    std::uint32_t first_internal() {
        const auto& nodes = KdTreeTestAccess::nodes(tree_);
        for (std::uint32_t i = 0; i < nodes.size(); ++i) {
            if (!nodes[i].is_leaf()) return i;
        }
        return 0;
    }
    std::vector<Box> boxes_;
    KdTree tree_;
};

TEST_F(KdTreeValidate, Scenario1_DuplicateId) {
    KdTreeTestAccess::ids(tree_)[3] = KdTreeTestAccess::ids(tree_)[4];
    expect_invalid("stored twice");
}

TEST_F(KdTreeValidate, Scenario2_IdOutOfRange) {
    KdTreeTestAccess::ids(tree_)[0] = 500;
    expect_invalid("out of range");
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
    auto& boxes = KdTreeTestAccess::boxes(tree_);
    auto& ids = KdTreeTestAccess::ids(tree_);
    std::swap(boxes.front(), boxes.back());
    std::swap(ids.front(), ids.back());
    EXPECT_FALSE(tree_.validate().ok());
}

TEST_F(KdTreeValidate, Scenario7_OverfullLeaf) {
    KdTree tree({AxisRule::widest, 8, 64});
    ASSERT_TRUE(tree.build(boxes_).ok());
    // Rebuild with capacity 8 but validate as if capacity were smaller: swap in the config by
    // building a capacity-2 tree and grafting this tree's nodes onto it.
    KdTree strict({AxisRule::widest, 2, 64});
    ASSERT_TRUE(strict.build(boxes_).ok());
    KdTreeTestAccess::nodes(strict) = KdTreeTestAccess::nodes(tree);
    KdTreeTestAccess::ids(strict) = KdTreeTestAccess::ids(tree);
    KdTreeTestAccess::boxes(strict) = KdTreeTestAccess::boxes(tree);
    const Status s = strict.validate();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("more than the capacity"), std::string::npos);
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
    KdTreeTestAccess::boxes(tree_)[7].min.z = std::numeric_limits<float>::quiet_NaN();
    EXPECT_FALSE(tree_.validate().ok());
}

// ---- input and interface ---------------------------------------------------------------------

TEST(KdTreeInput, Scenario1_RejectsBadBoxesNamingThem) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const Box good{{0, 0, 0}, {1, 1, 1}};
    const std::vector<Box> bad_ones = {Box{{nan, 0, 0}, {1, 1, 1}}, Box{{0, 0, 0}, {1, inf, 1}},
                                       Box{{0, 0, 2}, {1, 1, 1}}};
    for (const Box& bad : bad_ones) {
        KdTree tree;
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

TEST(KdTreeInput, Scenario2_RejectsZeroLeafCapacity) {
    KdTree tree({AxisRule::widest, 0, 64});
    const Status s = tree.build(uniform_boxes(10, 1));
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
}

TEST(KdTreeInput, Scenario3_StaticAndNamed) {
    KdTree tree;
    EXPECT_EQ(tree.name(), "kd_tree");
    EXPECT_FALSE(tree.is_dynamic());
    EXPECT_EQ(tree.insert(0, Box{}).error().code, ErrorCode::unsupported);
    EXPECT_EQ(tree.remove(0).error().code, ErrorCode::unsupported);
    EXPECT_EQ(tree.move(0, Box{}).error().code, ErrorCode::unsupported);
    EXPECT_EQ(tree.config().axis_rule, AxisRule::widest);
    EXPECT_EQ(tree.config().leaf_capacity, 8u);
}

TEST(KdTreeInput, Scenario4_NearestEdgeCases) {
    KdTree tree;
    std::vector<Neighbor> out;
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

}  // namespace
}  // namespace broadphase
