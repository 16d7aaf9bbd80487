// Issue 9: no scene makes a structure quadratic. Every CPU structure (brute force aside) runs
// self-pairs and queries (box, point, unbounded ray, 8 nearest) on scenes shaped like real
// ones and on `uniform` of the same size, and the test asserts cost, not time (QueryStats,
// include/broadphase/structure.hpp):
//   self-pairs: visits = (nodes_visited + leaves_visited) / N, tests = box_tests / (N + pairs)
//   queries:    (nodes_visited + leaves_visited + box_tests) per query
// stay within kFactor of the same structure's figures on uniform (plus a small allowance for
// structures that visit next to nothing on uniform). The scenes: the standard `level`,
// `multiscale`, `degenerate`, `xline` and `yline`, and one variant per difficulty alone: a few
// far outliers (1e7 away), world-sized boxes, clusters far apart, duplicates, long thin boxes.
// N = 4096 is large enough that a structure collapsing the play area into one cell or list
// (what all of them did to the octrees before) costs hundreds of times uniform's tests per box.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "oracle_harness.hpp"

namespace broadphase {
namespace {

using testing::query_cost;
using testing::QueryCost;

constexpr std::size_t kBoxes = 4096;
/// Allowed cost per box against uniform's.
constexpr double kFactor = 8.0;
/// Absolute allowance per box (a structure that visits 0.1 nodes per box on uniform may visit
/// 1 elsewhere).
constexpr double kSlack = 2.0;

std::vector<Box> uniform_scene(std::size_t n = kBoxes) {
    return generate_scene("uniform", n)->boxes;
}

// Scenario A: 8 boxes moved 1e7 away, one along each signed axis and two along diagonals.
std::vector<Box> far_outliers() {
    std::vector<Box> boxes = uniform_scene();
    const float far[8][3] = {{1e7f, 0, 0}, {-1e7f, 0, 0}, {0, 1e7f, 0},       {0, -1e7f, 0},
                             {0, 0, 1e7f}, {0, 0, -1e7f}, {1e7f, 1e7f, 1e7f}, {-1e7f, 0, 1e7f}};
    for (std::size_t k = 0; k < 8; ++k) {
        Box& b = boxes[k * kBoxes / 8 + 3];
        for (int a = 0; a < 3; ++a) {
            b.min[a] += far[k][a];
            b.max[a] += far[k][a];
        }
    }
    return boxes;
}

// Scenario B: world-sized boxes: a ground slab 2e6 wide under the play area and a wall as tall
// and deep beside it, among uniform cubes.
std::vector<Box> world_boxes() {
    std::vector<Box> boxes = uniform_scene();
    boxes[kBoxes / 3] = Box{{-1e6f, -0.5f, -1e6f}, {1e6f, 0.001f, 1e6f}};
    boxes[2 * kBoxes / 3] = Box{{0.999f, -1e6f, -1e6f}, {1.5f, 1e6f, 1e6f}};
    return boxes;
}

// Scenario C: 4 clusters, each a uniform scene of N/4 cubes in a unit cube, 3e4 apart
// (cluster size to spread 1 : 3e4).
std::vector<Box> far_clusters() {
    std::vector<Box> boxes;
    const std::vector<Box> cluster = uniform_scene(kBoxes / 4);
    const float offsets[4][3] = {{0, 0, 0}, {3e4f, 0, 0}, {0, 3e4f, 3e4f}, {3e4f, 3e4f, 0}};
    for (const auto& offset : offsets) {
        for (Box b : cluster) {
            for (int a = 0; a < 3; ++a) {
                b.min[a] += offset[a];
                b.max[a] += offset[a];
            }
            boxes.push_back(b);
        }
    }
    return boxes;
}

// Scenario D: every box twice (N/2 uniform cubes, each followed by its copy).
std::vector<Box> duplicates() {
    std::vector<Box> boxes;
    for (const Box& b : uniform_scene(kBoxes / 2)) {
        boxes.push_back(b);
        boxes.push_back(b);
    }
    return boxes;
}

// Scenario E: long thin boxes (girders): box i is kAspect times longer on axis i % 3 than on
// the others, with the volume of a uniform cube of side s; min corners uniform in [0,1)^3.
std::vector<Box> long_thin() {
    constexpr double kAspect = 8.0;
    const double s = 0.8 * std::pow(double(kBoxes), -1.0 / 3.0);
    const float length = float(s * std::cbrt(kAspect * kAspect));
    const float width = float(double(length) / kAspect);
    std::mt19937 engine(11);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::vector<Box> boxes(kBoxes);
    for (std::size_t i = 0; i < kBoxes; ++i) {
        Box& b = boxes[i];
        for (int a = 0; a < 3; ++a) {
            b.min[a] = unit(engine);
            b.max[a] = b.min[a] + (a == int(i % 3) ? length : width);
        }
    }
    return boxes;
}

struct Cost {
    double visits = 0;  ///< (nodes + leaves) per box
    double tests = 0;   ///< box tests per (box + pair)
    std::size_t pairs = 0;
};

Cost self_pairs_cost(const std::string& method, const std::vector<Box>& boxes) {
    auto made = make_structure(method);
    EXPECT_TRUE(made.ok());
    if (!made.ok()) return {};
    Structure& s = **made;
    const Status built = s.build(boxes);
    EXPECT_TRUE(built) << built.error().message;
    s.reset_stats();
    std::vector<Pair> pairs;
    s.self_pairs(pairs);
    const QueryStats& st = s.stats();
    const double n = double(boxes.size());
    return {double(st.nodes_visited + st.leaves_visited) / n,
            double(st.box_tests) / (n + double(pairs.size())), pairs.size()};
}

struct Scenario {
    std::string name;
    std::vector<Box> boxes;
};

const std::vector<Scenario>& scenarios() {
    static const std::vector<Scenario> all = [] {
        std::vector<Scenario> v;
        for (const char* gen : {"level", "multiscale", "degenerate", "xline", "yline"}) {
            v.push_back({gen, generate_scene(gen, kBoxes)->boxes});
        }
        v.push_back({"far_outliers", far_outliers()});
        v.push_back({"world_boxes", world_boxes()});
        v.push_back({"far_clusters", far_clusters()});
        v.push_back({"duplicates", duplicates()});
        v.push_back({"long_thin", long_thin()});
        return v;
    }();
    return all;
}

class CostOnEveryScene : public ::testing::TestWithParam<std::string_view> {};

// Test 1: self-pairs cost per box on every adversarial scenario stays within kFactor of
// uniform's, and the pairs are brute force's count.
TEST_P(CostOnEveryScene, SelfPairsCostStaysNearUniform) {
    const std::string method(GetParam());
    const Cost base = self_pairs_cost(method, uniform_scene());
    for (const Scenario& scenario : scenarios()) {
        SCOPED_TRACE(scenario.name);
        const Cost cost = self_pairs_cost(method, scenario.boxes);
        EXPECT_EQ(cost.pairs, testing::brute_pairs(scenario.boxes).size());
        std::printf(
            "  %-18s %-13s pairs/box %5.2f  visits/box %8.2f (uniform %6.2f)  "
            "tests/(box+pair) %8.2f (uniform %6.2f)\n",
            method.c_str(), scenario.name.c_str(), double(cost.pairs) / double(kBoxes), cost.visits,
            base.visits, cost.tests, base.tests);

        EXPECT_LE(cost.visits, kFactor * base.visits + kSlack)
            << method << " on " << scenario.name << ": nodes + leaves per box";
        EXPECT_LE(cost.tests, kFactor * base.tests + kSlack)
            << method << " on " << scenario.name << ": box tests per box and pair";
    }
}

// Query costs per query (testing::query_cost: box, point, unbounded ray, 8 nearest).
QueryCost method_query_cost(const std::string& method, const std::vector<Box>& boxes) {
    auto made = make_structure(method);
    EXPECT_TRUE(made.ok());
    if (!made.ok()) return {};
    return query_cost(**made, boxes);
}

class QueryCostOnEveryScene : public ::testing::TestWithParam<std::string_view> {};

// Test 3: box, point, ray and k-nearest queries cost per query within kFactor of the same
// structure's on uniform (plus kQuerySlack for structures near zero there), on every scenario.
TEST_P(QueryCostOnEveryScene, QueriesCostStaysNearUniform) {
    constexpr double kQuerySlack = 8.0;
    const std::string method(GetParam());
    const QueryCost base = method_query_cost(method, uniform_scene());
    for (const Scenario& scenario : scenarios()) {
        SCOPED_TRACE(scenario.name);
        const QueryCost cost = method_query_cost(method, scenario.boxes);
        std::printf(
            "  %-18s %-13s box %8.1f (%7.1f)  point %8.1f (%7.1f)  ray %8.1f (%7.1f)  "
            "nearest %8.1f (%7.1f)\n",
            method.c_str(), scenario.name.c_str(), cost.box, base.box, cost.point, base.point,
            cost.ray, base.ray, cost.nearest, base.nearest);

        EXPECT_LE(cost.box, kFactor * base.box + kQuerySlack) << method << ": box queries";
        EXPECT_LE(cost.point, kFactor * base.point + kQuerySlack) << method << ": point picks";
        EXPECT_LE(cost.ray, kFactor * base.ray + kQuerySlack) << method << ": ray casts";
        EXPECT_LE(cost.nearest, kFactor * base.nearest + kQuerySlack) << method << ": k nearest";
    }
}

std::vector<std::string_view> structures() {
    std::vector<std::string_view> names;
    for (std::string_view m : cpu_method_names()) {
        if (m != "brute_force") names.push_back(m);
    }
    return names;
}

INSTANTIATE_TEST_SUITE_P(Robustness, CostOnEveryScene, ::testing::ValuesIn(structures()),
                         [](const auto& test) { return std::string(test.param); });
INSTANTIATE_TEST_SUITE_P(Robustness, QueryCostOnEveryScene, ::testing::ValuesIn(structures()),
                         [](const auto& test) { return std::string(test.param); });

// Test 2: the scenarios are what they claim: valid, N boxes, and (but for the duplicates) a
// few pairs per box, so a quadratic structure cannot hide behind a quadratic output.
TEST(Robustness, ScenariosAreValidWithFewPairsPerBox) {
    for (const Scenario& scenario : scenarios()) {
        SCOPED_TRACE(scenario.name);
        EXPECT_TRUE(validate_boxes(scenario.boxes));
        EXPECT_EQ(scenario.boxes.size(), kBoxes);
        const std::size_t pairs = testing::brute_pairs(scenario.boxes).size();
        EXPECT_LT(double(pairs), 12.0 * double(kBoxes));
        EXPECT_GT(pairs, kBoxes / 2);
    }
}

}  // namespace
}  // namespace broadphase
