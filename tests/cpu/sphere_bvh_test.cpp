// Tests of the sphere BVH with split planes (cpu_reference/sphere_bvh.*; "Sort a sphere BVH
// with split planes", January 10, 2024) that are its own: the front-to-back order (every id
// once, exactly sorted where the split planes separate the boxes), the shape of the tree on
// degenerate scenes, its cost, validate() on corrupted trees, its options' edge cases. Every
// query against brute force, with the article's one-box leaves and with larger ones, is in the
// typed suite (structure_test.cpp, structure_configs.hpp).
#include "sphere_bvh.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "broadphase/scene.hpp"
#include "brute_force.hpp"
#include "oracle_harness.hpp"
#include "tree_test_common.hpp"

namespace broadphase {

// Reaches the tree's internals so that tests can corrupt it.
struct SphereBvhTestAccess {
    static std::vector<SphereBvh::Node>& nodes(SphereBvh& t) { return t.nodes_; }
    static std::vector<Box>& bounds(SphereBvh& t) { return t.bounds_; }
    static std::vector<std::uint32_t>& ids(SphereBvh& t) { return t.ids_; }
    static std::vector<Box>& boxes(SphereBvh& t) { return t.boxes_; }
};

namespace {

using testing::uniform_boxes;

static_assert(sizeof(SphereBvh::Node) == 24, "the documented node layout is 24 bytes");

const SphereBvh::Config kOneBoxLeaves{1, 48};  // one box per leaf, as in the article
const SphereBvh::Config kMedianOnly{8, 0};     // every split at the median

void expect_each_id_once(std::span<const std::uint32_t> order, std::size_t n) {
    ASSERT_EQ(order.size(), n);
    std::vector<std::uint32_t> sorted(order.begin(), order.end());
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
}

// ---- front-to-back order on every standard generator -----------------------------------------

TEST(SphereBvhFrontToBack, Scenario0_EveryIdOnceOnEveryGenerator) {
    for (const std::string_view generator : generator_names()) {
        for (const std::size_t count : {0u, 1u, 2u, 7u, 300u, 3000u}) {
            const std::vector<Box> boxes = testing::scene_boxes(generator, count, 42);
            const testing::Queries eyes = testing::make_queries(boxes, 1235, 3);
            for (const SphereBvh::Config& config :
                 {SphereBvh::Config{}, kOneBoxLeaves, kMedianOnly}) {
                SCOPED_TRACE(std::string(generator) + ":" + std::to_string(count) + " leaf size " +
                             std::to_string(config.max_leaf_size));
                SphereBvh tree(config);
                ASSERT_TRUE(tree.build(boxes).ok());
                for (const Vec3& eye : eyes.points) {
                    std::vector<std::uint32_t> order;
                    tree.front_to_back(eye, order);
                    expect_each_id_once(order, boxes.size());
                }
            }
        }
    }
}

// ---- shape of the tree on degenerate scenes ---------------------------------------------------

TEST(SphereBvhScenes, Scenario1_IdenticalBoxesMakeABalancedTree) {
    SphereBvh tree;
    ASSERT_TRUE(tree.build(testing::identical_boxes()).ok());
    // No centre lies below any midpoint, so every split is a median: a balanced tree.
    EXPECT_EQ(tree.height(), 6u);  // 200 / 2^6 <= 4
}

TEST(SphereBvhScenes, Scenario2_PointLeavesHaveRadiusZero) {
    // Only points: every leaf sphere of a one-box leaf has radius 0.
    std::mt19937 rng(7);
    (void)testing::zero_volume_boxes(rng);
    const std::vector<Box> points = testing::random_points(rng);
    SphereBvh tree(kOneBoxLeaves);
    ASSERT_TRUE(tree.build(points).ok());
    for (const SphereBvh::Node& node : tree.nodes()) {
        if (node.is_leaf()) {
            EXPECT_EQ(node.radius, 0.0f);
        }
    }
}

TEST(SphereBvhScenes, Scenario3_FlatSceneNeverSplitsOnZ) {
    // The longest-axis rule never splits on z, where nothing varies.
    SphereBvh tree;
    testing::expect_flat_scene_never_splits_on_z(
        tree, [](const SphereBvh::Node& node) { return node.axis(); });
}

TEST(SphereBvhScenes, Scenario4_ExponentialSpacingHitsTheDepthGuard) {
    // Centres at 2^i: every midpoint split peels off the last box, so the tree would be as
    // deep as the scene is long without the median fallback below max_midpoint_depth.
    SphereBvh tree({1, 10});
    ASSERT_TRUE(tree.build(testing::exponential_boxes()).ok());
    EXPECT_TRUE(tree.validate().ok());
    EXPECT_LE(tree.height(), 10u + 7u);  // 10 peeled, then ceil(log2(110)) medians
    EXPECT_GE(tree.height(), 10u);
}

// ---- front-to-back order ---------------------------------------------------------------------

// Boxes on a line along x with gaps, in shuffled input order, of equal y and z extents: every
// split is on x, and seen from beyond either end the near-child-first order is exactly the
// order of distance.
std::vector<Box> line_with_gaps(std::size_t count, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> width(0.1f, 1.9f);
    std::vector<Box> boxes;
    for (std::size_t i = 0; i < count; ++i) {
        const float x = 2.0f * float(i);
        boxes.push_back(Box{{x, 0, 0}, {x + width(rng), 1, 1}});
    }
    std::shuffle(boxes.begin(), boxes.end(), rng);
    return boxes;
}

bool sorted_by_distance(std::span<const Box> boxes, const Vec3& eye,
                        std::span<const std::uint32_t> order) {
    for (std::size_t k = 1; k < order.size(); ++k) {
        if (point_box_distance(eye, boxes[order[k - 1]]) >
            point_box_distance(eye, boxes[order[k]])) {
            return false;
        }
    }
    return true;
}

TEST(SphereBvhFrontToBack, Scenario1_LineWithGapsIsExactlySorted) {
    for (std::size_t count : {1u, 2u, 7u, 100u, 1000u}) {
        const std::vector<Box> boxes = line_with_gaps(count, 21);
        const float end = 2.0f * float(count) + 3;
        for (const SphereBvh::Config& config : {SphereBvh::Config{}, kOneBoxLeaves, kMedianOnly}) {
            SphereBvh tree(config);
            ASSERT_TRUE(tree.build(boxes).ok());
            ASSERT_TRUE(tree.validate().ok());
            for (const Vec3& eye : {Vec3{-3, 0.5f, 0.5f}, Vec3{-0.5f, 4, -2}, Vec3{end, 0.5f, 0},
                                    Vec3{end + 50, -7, 9}}) {
                std::vector<std::uint32_t> order;
                tree.front_to_back(eye, order);
                expect_each_id_once(order, count);
                EXPECT_TRUE(sorted_by_distance(boxes, eye, order))
                    << count << " boxes, leaf size " << config.max_leaf_size << ", eye " << eye.x
                    << " " << eye.y << " " << eye.z;
            }
        }
    }
}

TEST(SphereBvhFrontToBack, Scenario2_NearSideOfEverySplitFirst) {
    // Eight clusters at the corners of a cube, far apart: the root and its descendants split
    // them by octant, and from an eye beyond a corner every box of the nearest cluster comes
    // before every box of the farthest one.
    std::mt19937 rng(22);
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<Box> boxes;
    for (int i = 0; i < 800; ++i) {
        const int c = i % 8;
        const Vec3 base{c & 1 ? 100.0f : 0.0f, c & 2 ? 100.0f : 0.0f, c & 4 ? 100.0f : 0.0f};
        const Vec3 p{base.x + 10 * u(rng), base.y + 10 * u(rng), base.z + 10 * u(rng)};
        boxes.push_back(Box{p, {p.x + 0.5f, p.y + 0.5f, p.z + 0.5f}});
    }
    SphereBvh tree;
    ASSERT_TRUE(tree.build(boxes).ok());
    std::vector<std::uint32_t> order;
    tree.front_to_back({-50, -50, -50}, order);
    expect_each_id_once(order, boxes.size());
    // Cluster 0 (nearest the eye) fills the first 100 places, cluster 7 the last 100.
    for (std::size_t k = 0; k < 100; ++k) EXPECT_EQ(order[k] % 8, 0u) << k;
    for (std::size_t k = 700; k < 800; ++k) EXPECT_EQ(order[k] % 8, 7u) << k;
    // Seen from the opposite corner the order of clusters reverses.
    order.clear();
    tree.front_to_back({150, 150, 150}, order);
    for (std::size_t k = 0; k < 100; ++k) EXPECT_EQ(order[k] % 8, 7u) << k;
    for (std::size_t k = 700; k < 800; ++k) EXPECT_EQ(order[k] % 8, 0u) << k;
}

TEST(SphereBvhFrontToBack, Scenario3_RoughlySortedOnAUniformScene) {
    const std::vector<Box> boxes = uniform_boxes(3000, 23);
    SphereBvh tree;
    ASSERT_TRUE(tree.build(boxes).ok());
    const Vec3 eye{-0.5f, 0.3f, 1.7f};
    std::vector<std::uint32_t> order;
    tree.front_to_back(eye, order);
    expect_each_id_once(order, boxes.size());
    // Approximate: the first tenth is much nearer on average than the last tenth.
    auto mean_distance = [&](std::size_t from, std::size_t to) {
        double sum = 0;
        for (std::size_t k = from; k < to; ++k) sum += point_box_distance(eye, boxes[order[k]]);
        return sum / double(to - from);
    };
    EXPECT_LT(mean_distance(0, 300) * 1.5, mean_distance(2700, 3000));
}

TEST(SphereBvhFrontToBack, Scenario4_AppendsAndHandlesEmpty) {
    SphereBvh tree;
    ASSERT_TRUE(tree.build({}).ok());
    std::vector<std::uint32_t> order{42};
    tree.front_to_back({0, 0, 0}, order);
    EXPECT_EQ(order, std::vector<std::uint32_t>{42});
    ASSERT_TRUE(tree.build(std::vector<Box>(3, Box{{0, 0, 0}, {1, 1, 1}})).ok());
    tree.front_to_back({0, 0, 0}, order);
    EXPECT_EQ(order, (std::vector<std::uint32_t>{42, 0, 1, 2}));  // ties by id inside a leaf
}

// ---- shape of the tree -----------------------------------------------------------------------

TEST(SphereBvhShape, Scenario1_ArticleSplitRuleLongestAxisAndMidpoint) {
    // Boxes strung along y: the root splits on y, its sphere centred on the bounds' midpoint.
    SphereBvh tree;
    ASSERT_TRUE(tree.build(testing::strung_along_y_boxes()).ok());
    ASSERT_FALSE(tree.nodes().empty());
    const SphereBvh::Node& root = tree.nodes()[0];
    EXPECT_EQ(root.axis(), 1u);
    EXPECT_EQ(root.center.y, 249.75f);  // (0 + 499.5) / 2
    EXPECT_EQ(root.count, 500u);
    EXPECT_EQ(tree.nodes()[1].count, 250u);  // centres 0.25 .. 249.25 lie below the midpoint

    // The midpoint, not the median: four boxes near 0 and one far away.
    std::vector<Box> lopsided;
    for (float x : {0.0f, 1.0f, 2.0f, 3.0f, 100.0f}) lopsided.push_back(Box{{x, 0, 0}, {x, 1, 1}});
    SphereBvh article(kOneBoxLeaves);
    ASSERT_TRUE(article.build(lopsided).ok());
    EXPECT_EQ(article.nodes()[0].axis(), 0u);
    EXPECT_EQ(article.nodes()[1].count, 4u);
    EXPECT_EQ(article.nodes()[article.nodes()[0].right()].count, 1u);
    EXPECT_TRUE(article.validate().ok());
}

TEST(SphereBvhShape, Scenario2_OneBoxLeavesAndSpheresAreTight) {
    const std::vector<Box> boxes = uniform_boxes(2000, 24);
    SphereBvh tree(kOneBoxLeaves);
    ASSERT_TRUE(tree.build(boxes).ok());
    ASSERT_TRUE(tree.validate().ok());
    EXPECT_EQ(tree.nodes().size(), 2 * boxes.size() - 1);  // a full binary tree
    const float side = boxes[0].max.x - boxes[0].min.x;
    for (const SphereBvh::Node& node : tree.nodes()) {
        if (node.is_leaf()) {
            EXPECT_EQ(node.count, 1u);
            // A cube's sphere: half its diagonal, rounded up by at most a few ulps.
            EXPECT_NEAR(node.radius, 0.5f * side * std::sqrt(3.0f), 1e-6f);
        }
    }
    EXPECT_LE(tree.height(), 40u);
}

TEST(SphereBvhShape, Scenario3_QueriesPruneAndCountWork) {
    const std::vector<Box> boxes = uniform_boxes(20000, 11);
    SphereBvh tree;
    ASSERT_TRUE(tree.build(boxes).ok());
    testing::expect_queries_prune(tree, boxes.size() / 50, 100u * boxes.size());  // not n^2 / 2
    tree.reset_stats();
    std::vector<Neighbor> near;
    ASSERT_TRUE(tree.nearest({0.3f, 0.3f, 0.3f}, 5, near).ok());
    EXPECT_LT(tree.stats().box_tests, boxes.size() / 50);
    tree.reset_stats();
    ASSERT_TRUE(tree.ray_cast(Ray{{-1, 0.41f, 0.43f}, {1, 0.01f, 0}, 10}).has_value());
    EXPECT_LT(tree.stats().box_tests, boxes.size() / 20);
}

TEST(SphereBvhShape, Scenario4_NodeBoundsAreExactMerges) {
    // Each leaf's bounds are the merge of its boxes, each parent's the merge of its children's.
    for (const char* generator : {"uniform", "xline", "degenerate"}) {
        SCOPED_TRACE(generator);
        const std::vector<Box> boxes = generate_scene(generator, 3000)->boxes;
        SphereBvh tree;
        ASSERT_TRUE(tree.build(boxes).ok());
        const auto nodes = tree.nodes();
        const auto bounds = tree.node_bounds();
        ASSERT_EQ(bounds.size(), nodes.size());
        Box all = boxes[0];
        for (const Box& b : boxes) all = merge(all, b);
        EXPECT_EQ(bounds[0], all);
        for (std::size_t k = 0; k < nodes.size(); ++k) {
            const SphereBvh::Node& node = nodes[k];
            if (node.is_leaf()) {
                Box merged = boxes[tree.ids()[node.first()]];
                for (std::uint32_t s = node.first(); s < node.first() + node.count; ++s) {
                    merged = merge(merged, boxes[tree.ids()[s]]);
                }
                EXPECT_EQ(bounds[k], merged) << "leaf " << k;
            } else {
                EXPECT_EQ(bounds[k], merge(bounds[k + 1], bounds[node.right()])) << "node " << k;
            }
        }
    }
}

// Self-pairs work per box: (nodes + leaves visited) / N and box tests / N.
std::pair<double, double> sphere_self_pairs_cost(std::string_view generator, std::size_t n) {
    const std::vector<Box> boxes = generate_scene(generator, n)->boxes;
    SphereBvh tree;
    EXPECT_TRUE(tree.build(boxes).ok());
    (void)testing::counted_self_pairs(tree);
    const QueryStats& st = tree.stats();
    return {double(st.nodes_visited + st.leaves_visited) / double(n),
            double(st.box_tests) / double(n)};
}

TEST(SphereBvhShape, Scenario5_LinesOfWideBoxesCostNoMoreThanUniform) {
    // xline / yline: boxes about 0.015 wide strung along a unit line, 2 / N apart. Every sphere
    // over such a box is 0.015 across, so spheres alone meet hundreds of neighbours (and more
    // the larger N); the node bounds prune them, and the surface area heuristic cuts the line
    // across its length, so the work per box stays at uniform's and does not grow with N.
    for (std::size_t n : {10000u, 40000u}) {
        const auto [uniform_visits, uniform_tests] = sphere_self_pairs_cost("uniform", n);
        for (const char* line : {"xline", "yline"}) {
            SCOPED_TRACE(std::string(line) + ":" + std::to_string(n));
            const auto [visits, tests] = sphere_self_pairs_cost(line, n);
            EXPECT_LE(visits, uniform_visits);
            EXPECT_LE(tests, uniform_tests);
        }
    }
    const double small = sphere_self_pairs_cost("xline", 10000).second;
    const double large = sphere_self_pairs_cost("xline", 40000).second;
    EXPECT_LT(large, 1.25 * small);  // near-linear: 4x the boxes, about the same tests per box
}

// ---- validate() catches corruption -----------------------------------------------------------

class SphereBvhValidate : public testing::TreeCorruption<SphereBvh, SphereBvhTestAccess> {
protected:
    std::vector<SphereBvh::Node>& nodes() { return SphereBvhTestAccess::nodes(tree_); }
};

TEST_F(SphereBvhValidate, Scenario1_DuplicateId) {
    expect_duplicate_id_caught();
}

TEST_F(SphereBvhValidate, Scenario2_IdOutOfRange) {
    expect_id_out_of_range_caught();
}

TEST_F(SphereBvhValidate, Scenario3_LeafSphereTooSmall) {
    for (SphereBvh::Node& node : nodes()) {
        if (node.is_leaf()) {
            node.radius *= 0.999f;  // beyond kRadiusSlack
            break;
        }
    }
    expect_invalid("sphere does not contain box");
}

TEST_F(SphereBvhValidate, Scenario4_WithinTheSlackIsAccepted) {
    for (SphereBvh::Node& node : nodes()) {
        if (node.is_leaf()) {
            node.radius *= 1 - 1e-7f;
            break;
        }
    }
    EXPECT_TRUE(tree_.validate().ok());
}

TEST_F(SphereBvhValidate, Scenario5_ParentDoesNotHoldAChildSphere) {
    // Shrink the root to the tightest sphere over its boxes: it still holds every box, but no
    // longer its children's (looser) spheres.
    SphereBvh::Node& root = nodes()[0];
    double r = 0;
    for (const Box& b : boxes_) {
        double d2 = 0;
        for (int axis = 0; axis < 3; ++axis) {
            const double lo = std::abs(double(root.center[axis]) - b.min[axis]);
            const double hi = std::abs(double(b.max[axis]) - root.center[axis]);
            d2 += std::max(lo, hi) * std::max(lo, hi);
        }
        r = std::max(r, std::sqrt(d2));
    }
    ASSERT_LT(r * 1.0001, root.radius);
    root.radius = static_cast<float>(r * 1.00001);
    expect_invalid("does not contain a child's sphere");
}

TEST_F(SphereBvhValidate, Scenario6_MovedCentre) {
    nodes()[0].center.x += 0.5f;
    expect_invalid("sphere does not contain");
}

TEST_F(SphereBvhValidate, Scenario7_SplitAxisChanged) {
    // Re-labelling the root's split axis breaks the separation of its children on that axis.
    SphereBvh::Node& root = nodes()[0];
    root.link = (root.link & ~3u) | ((root.axis() + 1) % 3);
    expect_invalid("not separated along the split axis");
}

TEST_F(SphereBvhValidate, Scenario8_SwappedBoxesAcrossTheSplit) {
    expect_swap_across_split_caught();
}

TEST_F(SphereBvhValidate, Scenario9_OverfullLeaf) {
    // Graft a tree with leaves of up to 8 onto one configured for leaves of at most 2.
    expect_overfull_graft_caught(
        SphereBvh({8, 48}), SphereBvh({2, 48}),
        [](SphereBvh& from, SphereBvh& to) {
            SphereBvhTestAccess::nodes(to) = SphereBvhTestAccess::nodes(from);
            SphereBvhTestAccess::bounds(to) = SphereBvhTestAccess::bounds(from);
            SphereBvhTestAccess::ids(to) = SphereBvhTestAccess::ids(from);
            SphereBvhTestAccess::boxes(to) = SphereBvhTestAccess::boxes(from);
        },
        "more than max_leaf_size");
}

TEST_F(SphereBvhValidate, Scenario10_BrokenChildLink) {
    SphereBvh::Node& root = nodes()[0];
    root.link = (static_cast<std::uint32_t>(nodes().size()) << 2) | root.axis();
    expect_invalid("bad right child");
}

TEST_F(SphereBvhValidate, Scenario11_CountsDoNotAddUp) {
    nodes()[1].count += 1;
    expect_invalid("children do not partition its boxes");
    nodes()[1].count -= 1;
    ASSERT_TRUE(tree_.validate().ok());
    nodes()[0].count += 1;
    expect_invalid("count does not match");
}

TEST_F(SphereBvhValidate, Scenario12_UnreachableNode) {
    nodes().push_back(SphereBvh::Node{});
    SphereBvhTestAccess::bounds(tree_).push_back(Box{});
    expect_invalid("unreachable");
}

TEST_F(SphereBvhValidate, Scenario13_InternalNodeMarkedAsLeaf) {
    SphereBvh::Node& root = nodes()[0];
    root.link |= SphereBvh::kLeafAxis;  // a leaf of 500 boxes at slot `right`
    EXPECT_FALSE(tree_.validate().ok());
}

TEST_F(SphereBvhValidate, Scenario14_InvalidStoredBox) {
    expect_nan_box_caught();
}

TEST_F(SphereBvhValidate, Scenario15_NodeBoundsMissABox) {
    for (std::size_t k = 0; k < nodes().size(); ++k) {
        if (nodes()[k].is_leaf()) {
            Box& bounds = SphereBvhTestAccess::bounds(tree_)[k];
            bounds.max.x = bounds.min.x;  // the leaf's boxes all have some width
            break;
        }
    }
    expect_invalid("bounds do not contain box");
}

TEST_F(SphereBvhValidate, Scenario16_NodeBoundsMissing) {
    SphereBvhTestAccess::bounds(tree_).pop_back();
    expect_invalid("node bounds and nodes differ in size");
}

// ---- input and interface ---------------------------------------------------------------------

TEST(SphereBvhInput, Scenario1_RejectsBadConfig) {
    for (const SphereBvh::Config& config : {SphereBvh::Config{0, 48}, SphereBvh::Config{4, 129}}) {
        SphereBvh tree(config);
        testing::expect_bad_config_rejected(tree);
    }
}

TEST(SphereBvhInput, Scenario2_StaticAndNamed) {
    SphereBvh tree;
    testing::expect_static_and_named(tree, "sphere_bvh");
    EXPECT_EQ(tree.config().max_leaf_size, 4u);
}

// Closest-hit rays with an unbounded reach (tmax 1e30 or FLT_MAX, as renderers pass) cost about
// what short rays cost, also on scenes with far boxes (level: bodies 1e7 below the play area):
// the rounding margin of the sphere test follows each node's distance, not tmax. The hits are
// brute force's.
TEST(SphereBvhCost, UnboundedRaysVisitFewNodes) {
    for (const char* generator : {"uniform", "level", "degenerate"}) {
        auto scene = generate_scene(generator, 20000);
        ASSERT_TRUE(scene.ok());
        SphereBvh tree;
        ASSERT_TRUE(tree.build(scene->boxes).ok());
        BruteForce brute;
        ASSERT_TRUE(brute.build(scene->boxes).ok());
        std::mt19937 rng(9);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (const float tmax : {1e30f, std::numeric_limits<float>::max()}) {
            tree.reset_stats();
            constexpr int kRays = 200;
            for (int i = 0; i < kRays; ++i) {
                const Ray ray{{u(rng) * 0.5f + 0.5f, u(rng) * 0.5f + 0.5f, u(rng) * 0.5f + 0.5f},
                              {u(rng), u(rng), u(rng)},
                              tmax};
                const auto hit = tree.ray_cast(ray);
                const auto expect = brute.ray_cast(ray);
                ASSERT_EQ(hit.has_value(), expect.has_value()) << generator;
                if (hit) {
                    EXPECT_EQ(hit->id, expect->id);
                    EXPECT_EQ(hit->t, expect->t);
                }
            }
            const auto& st = tree.stats();
            EXPECT_LT(double(st.nodes_visited + st.leaves_visited) / kRays, 400.0)
                << generator << " tmax " << tmax;
        }
    }
}

}  // namespace
}  // namespace broadphase
