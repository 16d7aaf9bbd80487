// The one suite that runs every CPU structure under every configuration of
// structure_configs.hpp (each method of cpu_method_names() at its defaults, and again under the
// options that change its shape) against brute force on every standard generator and on the
// hand-made degenerate sets: pairs as sorted lists, region queries and point picks as sets,
// closest-hit ray casts exactly (id and t; ties to the smallest id), k nearest in order; bad
// boxes, edge cases of the queries, and for dynamic structures misuse and seeded
// insert/remove/move sequences. Then brute force itself on numbered scenarios, the factory,
// sweep and prune's temporal-coherence update(), and the code of a broken invariant.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "brute_force.hpp"
#include "lbvh.hpp"
#include "oracle_harness.hpp"
#include "structure_configs.hpp"
#include "sweep_and_prune.hpp"

namespace broadphase {
namespace {

using testing::brute_pairs;

using testing::StructureConfig;

// Builds `config`'s structure over `boxes` and compares everything with brute force
// (oracle_harness.hpp): pairs, region queries, point picks, rays and k nearest (k = 1, 5 and,
// at the default options, all; sweep and prune may answer nearest with ErrorCode::unsupported,
// having no hierarchy to search); the queries count their work.
void check_against_brute_force(const StructureConfig& config, std::span<const Box> boxes,
                               std::uint32_t seed = 7, int query_count = 60) {
    std::unique_ptr<Structure> s = config.make();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->name(), config.method);
    testing::CompareOptions options;
    options.seed = seed;
    options.query_count = query_count;
    options.nearest_may_be_unsupported = config.method == "sweep_and_prune";
    if (!config.is_default()) {  // k = 1, 5 at every third point: the other options' shapes
        options.nearest_stride = 3;
        options.nearest_all = false;
    }
    testing::build_and_match(*s, boxes, options);
    if (!boxes.empty()) {
        EXPECT_GT(s->stats().box_tests, 0u);
    }
}

class EveryStructure : public ::testing::TestWithParam<StructureConfig> {
protected:
    std::unique_ptr<Structure> make() const {
        std::unique_ptr<Structure> s = GetParam().make();
        EXPECT_TRUE(s);
        return s;
    }
    bool has_nearest() const { return GetParam().method != "sweep_and_prune"; }
};

// The configurations a test applies to, so that none is instantiated only to be skipped.
std::vector<StructureConfig> configs_where(bool (*keep)(const StructureConfig&)) {
    std::vector<StructureConfig> out;
    for (const StructureConfig& c : testing::structure_configs())
        if (keep(c)) out.push_back(c);
    return out;
}

std::string config_label(const ::testing::TestParamInfo<StructureConfig>& test) {
    return test.param.label();
}

// Structures that answer k nearest (sweep and prune has no hierarchy to search).
class NearestStructure : public EveryStructure {};
// Structures that insert, remove and move boxes.
class DynamicStructure : public EveryStructure {};

TEST_P(EveryStructure, StandardScenesMatchBruteForce) {
    for (const std::string_view gen : generator_names()) {
        for (const std::size_t n : {0u, 1u, 2u, 7u, 300u, 500u, 3000u}) {
            if (n == 500 && !GetParam().is_default()) continue;
            auto scene = generate_scene(gen, n);
            ASSERT_TRUE(scene.ok()) << scene.error().message;
            SCOPED_TRACE(scene->name);
            check_against_brute_force(GetParam(), scene->boxes);
            if (HasFatalFailure()) return;
        }
    }
}

TEST_P(EveryStructure, OtherSeedsMatchBruteForce) {
    for (const std::string_view gen : generator_names()) {
        auto scene = generate_scene(gen, 1000, 1234);
        ASSERT_TRUE(scene.ok());
        SCOPED_TRACE(scene->name);
        check_against_brute_force(GetParam(), scene->boxes, 99);
        if (HasFatalFailure()) return;
    }
}

// Identical boxes and points, zero-volume boxes, huge boxes over everything, scenes far from
// the origin, flat scenes, nested and long thin boxes, touching cubes (oracle_harness.hpp).
TEST_P(EveryStructure, DegenerateScenesMatchBruteForce) {
    for (const testing::NamedBoxes& scene : testing::degenerate_scenes()) {
        SCOPED_TRACE(scene.name);
        check_against_brute_force(GetParam(), scene.boxes);
        if (HasFatalFailure()) return;
    }
}

TEST_P(EveryStructure, AllBoxesIdentical) {
    const std::vector<Box> boxes(150, Box{{0.25f, 0.5f, 0.75f}, {1.0f, 1.5f, 2.0f}});
    auto s = make();
    ASSERT_TRUE(s->build(boxes).ok());
    EXPECT_EQ(sorted_pairs(*s).size(), 150u * 149u / 2u);
    // 200 copies: every box is hit at the same t and is at the same distance: ties go to the
    // smallest ids.
    ASSERT_TRUE(s->build(testing::identical_boxes()).ok());
    EXPECT_TRUE(s->validate().ok());
    EXPECT_EQ(sorted_pairs(*s).size(), 200u * 199u / 2u);
    const std::optional<RayHit> hit = s->ray_cast(Ray{{0.5f, 1, -5}, {0, 0, 1}, 100});
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->id, 0u);
    EXPECT_FLOAT_EQ(hit->t, 4.0f);
    if (!has_nearest()) return;
    std::vector<Neighbor> near;
    ASSERT_TRUE(s->nearest({5, 1, 0}, 3, near).ok());
    ASSERT_EQ(near.size(), 3u);
    EXPECT_EQ(near[0].id, 0u);
    EXPECT_EQ(near[1].id, 1u);
    EXPECT_EQ(near[2].id, 2u);
}

TEST_P(EveryStructure, HugeBoxMeetsEveryBox) {
    auto s = make();
    ASSERT_TRUE(s->build(testing::huge_box_boxes()).ok());
    const std::vector<Pair> pairs = sorted_pairs(*s);
    EXPECT_EQ(std::count_if(pairs.begin(), pairs.end(),
                            [](const Pair& p) {
                                return p.i == testing::kHugeBoxIndex ||
                                       p.j == testing::kHugeBoxIndex;
                            }),
              1000);
}

TEST_P(EveryStructure, TouchingGrid) {
    auto pairs = find_pairs_cpu(GetParam().method, testing::touching_grid_boxes());
    ASSERT_TRUE(pairs.ok());
    auto s = make();
    ASSERT_TRUE(s->build(testing::touching_grid_boxes()).ok());
    EXPECT_EQ(sorted_pairs(*s), *pairs);
    // Each cube touches the cubes of the 3x3x3 block around it: ordered neighbour count
    // sum over axes of product of (per-axis neighbour counts) minus self, halved.
    std::size_t neighbours = 0;
    for (int x = 0; x < 6; ++x) {
        for (int y = 0; y < 6; ++y) {
            for (int z = 0; z < 6; ++z) {
                const auto span = [](int v) { return std::size_t((v > 0) + 1 + (v < 5)); };
                neighbours += span(x) * span(y) * span(z) - 1;
            }
        }
    }
    EXPECT_EQ(pairs->size(), neighbours / 2);
}

// The flaw of corner-only bucketing (hash grids) shown in magley's survey "Broad phase
// algorithms and data structures" (docs/references.md): two long boxes cross only in a
// middle cell where neither has a corner; the pair must be found.
TEST_P(EveryStructure, BoxesCrossingInAMiddleCell) {
    auto s = make();
    ASSERT_TRUE(s->build(testing::crossing_in_a_middle_cell()).ok());
    const std::vector<Pair> pairs = sorted_pairs(*s);
    EXPECT_TRUE(std::binary_search(pairs.begin(), pairs.end(),
                                   Pair{testing::kCrossingIndex, testing::kCrossingIndex + 1}));
}

TEST_P(EveryStructure, NegativeAndSignedZeroCoordinates) {
    std::vector<Box> boxes = {
        {{-0.0f, -1.0f, -1.0f}, {0.0f, 0.0f, -0.0f}},
        {{0.0f, -0.0f, 0.0f}, {1.0f, 1.0f, 1.0f}},
        {{-2.0f, -2.0f, -2.0f}, {-1.0f, -1.0f, -1.0f}},
        {{-1.0f, -1.0f, -1.0f}, {-0.0f, -0.0f, -0.0f}},
        {{-3.0f, 0.5f, 0.5f}, {-2.5f, 0.6f, 0.6f}},
    };
    for (int i = 0; i < 60; ++i) {
        const float v = -1.5f + 0.05f * float(i);
        boxes.push_back({{v, -v, v}, {v + 0.1f, -v + 0.1f, v + 0.1f}});
    }
    check_against_brute_force(GetParam(), boxes);
}

TEST_P(EveryStructure, RejectsBadBoxesNamingThem) {
    auto s = make();
    std::vector<Box> boxes(10, Box{{0, 0, 0}, {1, 1, 1}});
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<std::pair<std::size_t, Box>> bad = {
        {3, Box{{0, nan, 0}, {1, 1, 1}}},  {0, Box{{0, 0, 0}, {1, 1, nan}}},
        {9, Box{{-inf, 0, 0}, {1, 1, 1}}}, {4, Box{{0, 0, 0}, {1, inf, 1}}},
        {5, Box{{0, 0, 2}, {1, 1, 1}}},
    };
    for (const auto& [id, box] : bad) {
        SCOPED_TRACE(id);
        ASSERT_TRUE(s->build(boxes).ok());
        std::vector<Box> scene = boxes;
        scene[id] = box;
        const Status st = s->build(scene);
        ASSERT_FALSE(st.ok());
        EXPECT_EQ(st.error().code, ErrorCode::invalid_box);
        ASSERT_TRUE(st.error().box.has_value());
        EXPECT_EQ(*st.error().box, id);
        EXPECT_NE(st.error().message.find(std::to_string(id)), std::string::npos);
        // The old structure is gone, not half-replaced: empty and valid.
        EXPECT_EQ(s->size(), 0u);
        EXPECT_TRUE(s->validate().ok());
        auto found = find_pairs_cpu(GetParam().method, scene);
        ASSERT_FALSE(found.ok());
        EXPECT_EQ(found.error().box, id);
    }
    // A later good build works.
    ASSERT_TRUE(s->build(boxes).ok());
    EXPECT_EQ(sorted_pairs(*s).size(), 45u);
}

TEST_P(EveryStructure, EmptySceneAnswersNothing) {
    auto s = make();
    ASSERT_TRUE(s->build({}).ok());
    EXPECT_TRUE(s->validate().ok());
    EXPECT_TRUE(sorted_pairs(*s).empty());
    std::vector<std::uint32_t> ids;
    s->query_box(Box{{-1e30f, -1e30f, -1e30f}, {1e30f, 1e30f, 1e30f}}, ids);
    s->query_point(Vec3{}, ids);
    EXPECT_TRUE(ids.empty());
    EXPECT_FALSE(s->ray_cast(Ray{{0, 0, 0}, {1, 0, 0}, 1e30f}).has_value());
}

// k nearest replaces its output: empty on an empty structure and for k = 0, every box when k
// exceeds the count, ties to the smaller id, and from a point far outside everything.
TEST_P(NearestStructure, NearestEdgeCases) {
    auto s = make();
    std::vector<Neighbor> out{Neighbor{9, 9}};
    ASSERT_TRUE(s->build({}).ok());
    ASSERT_TRUE(s->nearest({0, 0, 0}, 3, out).ok());
    EXPECT_TRUE(out.empty());
    const std::vector<Box> boxes = testing::uniform_boxes(4, 2);
    ASSERT_TRUE(s->build(boxes).ok());
    out = {Neighbor{9, 9}};
    ASSERT_TRUE(s->nearest({0, 0, 0}, 0, out).ok());
    EXPECT_TRUE(out.empty());
    ASSERT_TRUE(s->nearest({0, 0, 0}, 10, out).ok());  // fewer than k boxes
    EXPECT_EQ(out, testing::brute_nearest(boxes, {0, 0, 0}, 10));
    EXPECT_EQ(out.size(), 4u);

    const std::vector<Box> ties = {
        {{0, 0, 0}, {1, 1, 1}}, {{3, 0, 0}, {4, 1, 1}}, {{0, 0, 0}, {1, 1, 1}}};
    ASSERT_TRUE(s->build(ties).ok());
    ASSERT_TRUE(s->nearest({2, 0.5f, 0.5f}, 10, out).ok());
    EXPECT_EQ(out, (std::vector<Neighbor>{{0, 1}, {1, 1}, {2, 1}}));
    ASSERT_TRUE(s->nearest({1e30f, 0, 0}, 1, out).ok());  // far outside
    EXPECT_EQ(out, (std::vector<Neighbor>{{0, 1e30f}}));  // all three tie in float
    const std::vector<Box> touching = {
        {{0, 0, 0}, {1, 1, 1}}, {{2, 0, 0}, {3, 1, 1}}, {{0, 0, 0}, {1, 1, 1}}};
    ASSERT_TRUE(s->build(touching).ok());
    out = {Neighbor{99, 0}};
    ASSERT_TRUE(s->nearest(Vec3{1.5f, 0.5f, 0.5f}, 10, out).ok());
    EXPECT_EQ(out, (std::vector<Neighbor>{{0, 0.5f}, {1, 0.5f}, {2, 0.5f}}));
}

TEST_P(EveryStructure, RayTiesGoToSmallestId) {
    // Boxes 2, 5 and 7 share the entry plane x = 1; others are behind them or missed.
    std::vector<Box> boxes(10, Box{{5, 5, 5}, {6, 6, 6}});
    boxes[0] = Box{{3, -1, -1}, {4, 1, 1}};
    boxes[2] = Box{{1, -1, -1}, {2, 1, 1}};
    boxes[5] = Box{{1, -0.5f, -0.5f}, {1.5f, 0.5f, 0.5f}};
    boxes[7] = Box{{1, 0, 0}, {1, 0, 0}};
    boxes[9] = Box{{1.5f, -1, -1}, {2.5f, 1, 1}};
    auto s = make();
    ASSERT_TRUE(s->build(boxes).ok());
    const auto hit = s->ray_cast(Ray{{0, 0, 0}, {1, 0, 0}, 100.0f});
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->id, 2u);
    EXPECT_EQ(hit->t, 1.0f);
    // Shorter than the gap: no hit.
    EXPECT_FALSE(s->ray_cast(Ray{{0, 0, 0}, {1, 0, 0}, 0.999f}).has_value());
    // Reversed from the far side: box 0 first (its max face x = 4 at t = 6).
    const auto back = s->ray_cast(Ray{{10, 0, 0}, {-1, 0, 0}, 100.0f});
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->id, 0u);
    EXPECT_EQ(back->t, 6.0f);
}

// Rays of zero direction, zero length, negative reach, unbounded reach, and a tiny direction
// with a huge reach answer as brute force does.
TEST_P(EveryStructure, OddRays) {
    const std::vector<Box> boxes = testing::uniform_boxes(500, 15);
    auto s = make();
    BruteForce brute;
    ASSERT_TRUE(s->build(boxes).ok());
    ASSERT_TRUE(brute.build(boxes).ok());
    const float inf = std::numeric_limits<float>::infinity();
    const Vec3 inside = boxes[17].min;
    const std::vector<Ray> rays = {
        Ray{inside, {0, 0, 0}, 1},                          // zero direction: a point test
        Ray{{2, 2, 2}, {0, 0, 0}, 1},                       // zero direction, outside everything
        Ray{inside, {1, 0, 0}, 0},                          // zero length
        Ray{inside, {1, 1, 0}, -1},                         // negative tmax: never hits
        Ray{{-1, 0.5f, 0.5f}, {1, 0, 0}, inf},              // unbounded
        Ray{{-1, 0.5f, 0.5f}, {1e-20f, 1e-21f, 0}, 1e25f},  // tiny direction, huge tmax
    };
    for (std::size_t q = 0; q < rays.size(); ++q) {
        const std::optional<RayHit> got = s->ray_cast(rays[q]);
        const std::optional<RayHit> want = brute.ray_cast(rays[q]);
        ASSERT_EQ(got.has_value(), want.has_value()) << "ray " << q;
        if (want) {
            EXPECT_EQ(got->id, want->id) << "ray " << q;
            EXPECT_EQ(got->t, want->t) << "ray " << q;
        }
    }
}

TEST_P(EveryStructure, RebuildReplacesBoxes) {
    auto s = make();
    auto a = generate_scene("uniform", 700);
    auto b = generate_scene("clustered", 300);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE(s->build(a->boxes).ok());
    ASSERT_TRUE(s->build(b->boxes).ok());
    EXPECT_TRUE(s->validate().ok());
    EXPECT_EQ(s->size(), 300u);
    EXPECT_EQ(sorted_pairs(*s), brute_pairs(b->boxes));
}

// Static structures refuse insert, remove and move; dynamic ones refuse misuse (a present id
// inserted, an absent one removed or moved, a bad box inserted or moved to) and stay intact.
TEST_P(EveryStructure, UpdatesOnlyWhereDynamicAndNeverMisused) {
    auto s = make();
    if (!s->is_dynamic()) {
        EXPECT_EQ(s->insert(0, Box{}).error().code, ErrorCode::unsupported);
        EXPECT_EQ(s->remove(0).error().code, ErrorCode::unsupported);
        EXPECT_EQ(s->move(0, Box{}).error().code, ErrorCode::unsupported);
        return;
    }
    ASSERT_FALSE(
        s->build(std::vector<Box>{Box{{0, 0, 0}, {1, 1, 1}}, Box{{2, 0, 0}, {1, 1, 1}}}).ok());
    EXPECT_EQ(s->size(), 0u);
    ASSERT_TRUE(s->insert(5, Box{{0, 0, 0}, {1, 1, 1}}).ok());
    EXPECT_FALSE(s->insert(5, Box{{0, 0, 0}, {1, 1, 1}}).ok());
    EXPECT_FALSE(s->insert(6, Box{{1, 0, 0}, {0, 1, 1}}).ok());
    EXPECT_FALSE(s->remove(6).ok());
    EXPECT_FALSE(s->move(6, Box{{0, 0, 0}, {1, 1, 1}}).ok());
    EXPECT_FALSE(s->move(5, Box{{0, 0, 0}, {1, -1, 1}}).ok());
    EXPECT_EQ(s->size(), 1u);
    EXPECT_TRUE(s->validate().ok());
    ASSERT_TRUE(s->remove(5).ok());
    EXPECT_EQ(s->size(), 0u);
    EXPECT_TRUE(s->validate().ok());
    EXPECT_FALSE(s->ray_cast(Ray{{0, 0, 0}, {1, 0, 0}, 1}).has_value());
    std::vector<Neighbor> near{Neighbor{1, 1.0f}};
    EXPECT_TRUE(s->nearest({0, 0, 0}, 3, near).ok());
    EXPECT_TRUE(near.empty());

    // Built over five boxes: the same misuse, then the five boxes are all still there.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<Box> boxes(5, Box{{0, 0, 0}, {1, 1, 1}});
    ASSERT_TRUE(s->build(boxes).ok());
    EXPECT_FALSE(s->insert(2, Box{{5, 5, 5}, {6, 6, 6}}).ok());  // id in use
    EXPECT_FALSE(s->insert(9, Box{{5, 5, 5}, {4, 6, 6}}).ok());  // bad box
    EXPECT_FALSE(s->remove(9).ok());
    EXPECT_FALSE(s->move(9, Box{{5, 5, 5}, {6, 6, 6}}).ok());
    EXPECT_FALSE(s->move(1, Box{{nan, 5, 5}, {6, 6, 6}}).ok());
    EXPECT_EQ(s->size(), 5u);
    ASSERT_TRUE(s->validate().ok());
    std::vector<std::uint32_t> hit;
    s->query_point(Vec3{0.5f, 0.5f, 0.5f}, hit);
    EXPECT_EQ(testing::sorted_ids(hit), (std::vector<std::uint32_t>{0, 1, 2, 3, 4}));
}

// Collision filters (Box2D's category, mask and group) decide in every self_pairs, as in brute
// force: on clustered and degenerate scenes with mixed filters, the pairs are brute force's
// filtered pairs, exactly (filters set after the build, and kept by a rebuild); dynamic
// structures also after inserts under new ids with filters set before the insert.
TEST_P(EveryStructure, FilteredSelfPairsMatchBruteForce) {
    const Filter kinds[] = {{},           {2, ~2u, 0},         {4, 1, 0}, {1, 0xFFFFFFFFu, 3},
                            {2, ~2u, -5}, {2, 0xFFFFFFFFu, 3}, {8, 8, -5}};
    const auto filter_of = [&](std::uint32_t id) { return kinds[(id * 7 + id / 3) % 7]; };
    std::vector<testing::NamedBoxes> scenes = {testing::degenerate_scenes()[0]};
    for (const char* gen : {"clustered", "uniform", "degenerate"}) {
        auto scene = generate_scene(gen, 1500, 5);
        ASSERT_TRUE(scene.ok()) << scene.error().message;
        scenes.push_back({scene->name, scene->boxes});
    }
    for (const testing::NamedBoxes& scene : scenes) {
        SCOPED_TRACE(scene.name);
        const auto n = static_cast<std::uint32_t>(scene.boxes.size());
        std::vector<Pair> expected;
        for (const Pair& p : brute_pairs(scene.boxes))
            if (should_collide(filter_of(p.i), filter_of(p.j))) expected.push_back(p);
        ASSERT_LT(expected.size(), brute_pairs(scene.boxes).size()) << "the filters cut nothing";
        auto s = make();
        ASSERT_TRUE(s->build(scene.boxes).ok());
        for (std::uint32_t id = 0; id < n; ++id) s->set_filter(id, filter_of(id));
        EXPECT_EQ(sorted_pairs(*s), expected);
        ASSERT_TRUE(s->build(scene.boxes).ok());
        EXPECT_EQ(sorted_pairs(*s), expected) << "after a rebuild";
        if (!s->is_dynamic()) continue;
        // Copies under ids n, n+1, ...: every filtered pair among them and with the originals.
        std::vector<Box> both = scene.boxes;
        for (std::uint32_t id = 0; id < std::min(n, 200u); ++id) {
            s->set_filter(n + id, filter_of(n + id));
            ASSERT_TRUE(s->insert(n + id, scene.boxes[id]).ok());
            both.push_back(scene.boxes[id]);
        }
        expected.clear();
        for (const Pair& p : brute_pairs(both))
            if (should_collide(filter_of(p.i), filter_of(p.j))) expected.push_back(p);
        EXPECT_EQ(sorted_pairs(*s), expected) << "after inserts";
        s->clear_filters();
        EXPECT_EQ(sorted_pairs(*s), brute_pairs(both)) << "after clear_filters";
    }
}

// Dynamic structures: seeded random sequences of insert / remove / move with caller-chosen
// sparse ids, mirrored into the (dynamic) brute force; validate() after every step, and pairs,
// queries, rays and nearest compared every few steps (oracle_harness.hpp): every profile of
// testing::sequence_profiles() at the default options, the first seed of each under the other
// options; after each, every box is removed and the structure refilled.
TEST_P(DynamicStructure, DynamicSequencesMatchBruteForce) {
    auto s = make();
    ASSERT_TRUE(s->is_dynamic());
    for (const testing::NamedSequence& sequence : testing::sequence_profiles()) {
        // The other options run the first seed of each profile.
        if (!sequence.first_seed && !GetParam().is_default()) continue;
        SCOPED_TRACE(sequence.name);
        std::map<std::uint32_t, Box> live = testing::run_dynamic_sequence(*s, sequence.options);
        if (HasFailure()) return;
        // Empty it completely, then refill.
        while (!live.empty()) {
            const std::uint32_t id = live.begin()->first;
            ASSERT_TRUE(s->remove(id).ok());
            live.erase(id);
            ASSERT_TRUE(s->validate().ok());
        }
        EXPECT_EQ(s->size(), 0u);
        EXPECT_TRUE(sorted_pairs(*s).empty());
        EXPECT_FALSE(s->ray_cast(Ray{{0, 0, 0}, {1, 1, 1}, 10}).has_value());
        ASSERT_TRUE(s->insert(7, {{0, 0, 0}, {1, 1, 1}}).ok());
        ASSERT_TRUE(s->insert(9, {{1, 1, 1}, {2, 2, 2}}).ok());
        EXPECT_EQ(sorted_pairs(*s), (std::vector<Pair>{{7, 9}}));
    }
}

// Dynamic structures: boxes inserted one by one into an empty build under sparse ids, and
// boxes inserted far outside what was built (a rebuild may follow), answer as brute force.
TEST_P(DynamicStructure, InsertsIntoEmptyAndFarOutside) {
    auto s = make();
    ASSERT_TRUE(s->is_dynamic());
    ASSERT_TRUE(s->build({}).ok());
    auto clustered = generate_scene("clustered", 500);
    ASSERT_TRUE(clustered.ok());
    std::vector<std::uint32_t> ids;
    for (std::uint32_t i = 0; i < clustered->boxes.size(); ++i) {
        ASSERT_TRUE(s->insert(1000 + 3 * i, clustered->boxes[i]).ok());
        ids.push_back(1000 + 3 * i);
    }
    testing::expect_matches_ids(*s, clustered->boxes, ids, 5, 200, 2);
    if (HasFatalFailure()) return;

    auto scene = generate_scene("uniform", 100);
    ASSERT_TRUE(scene.ok());
    ASSERT_TRUE(s->build(scene->boxes).ok());
    std::map<std::uint32_t, Box> current;
    for (std::uint32_t i = 0; i < 100; ++i) current[i] = scene->boxes[i];
    const Box far{{10, 10, 10}, {11, 11, 11}};
    ASSERT_TRUE(s->insert(1000, far).ok());
    current[1000] = far;
    ASSERT_TRUE(s->validate().ok());
    for (std::uint32_t i = 0; i < 60; ++i) {
        const Box b{{10.0f + 0.1f * float(i), 10, 10}, {10.5f + 0.1f * float(i), 11, 11}};
        ASSERT_TRUE(s->insert(2000 + i, b).ok());
        current[2000 + i] = b;
        ASSERT_TRUE(s->validate().ok());
    }
    testing::CompareOptions options;
    options.seed = 3;
    options.query_count = 100;
    options.nearest_stride = 2;
    options.nearest_all = false;
    testing::expect_matches_live(*s, current, options);
}

INSTANTIATE_TEST_SUITE_P(Cpu, EveryStructure, ::testing::ValuesIn(testing::structure_configs()),
                         config_label);
INSTANTIATE_TEST_SUITE_P(Cpu, NearestStructure,
                         ::testing::ValuesIn(configs_where([](const StructureConfig& c) {
                             return c.method != "sweep_and_prune";
                         })),
                         config_label);
INSTANTIATE_TEST_SUITE_P(Cpu, DynamicStructure,
                         ::testing::ValuesIn(configs_where([](const StructureConfig& c) {
                             return c.make()->is_dynamic();
                         })),
                         config_label);

// Brute force is the oracle: numbered scenarios with answers worked out by hand.
TEST(BruteForce, Scenario1_TouchingCountsSeparatedDoesNot) {
    const std::vector<Box> boxes = {
        {{0, 0, 0}, {1, 1, 1}},
        {{1, 0, 0}, {2, 1, 1}},                    // shares a face with 0
        {{2, 1, 1}, {3, 2, 2}},                    // shares a corner with 1
        {{3.0001f, 0, 0}, {4, 1, 1}},              // just apart from 2
        {{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}},  // a point inside 0
    };
    const std::vector<Pair> expected = {{0, 1}, {0, 4}, {1, 2}};
    EXPECT_EQ(brute_pairs(boxes), expected);
}

TEST(BruteForce, Scenario2_QueriesOnBoundaries) {
    BruteForce bf;
    ASSERT_TRUE(bf.build(std::vector<Box>{{{0, 0, 0}, {1, 1, 1}}, {{2, 2, 2}, {3, 3, 3}}}).ok());
    std::vector<std::uint32_t> ids;
    bf.query_point(Vec3{1, 1, 1}, ids);  // a corner of box 0
    EXPECT_EQ(ids, std::vector<std::uint32_t>{0});
    ids.clear();
    bf.query_box(Box{{1, 1, 1}, {2, 2, 2}}, ids);  // touches both
    EXPECT_EQ(ids, (std::vector<std::uint32_t>{0, 1}));
    ids.clear();
    bf.query_point(Vec3{1.5f, 1.5f, 1.5f}, ids);
    EXPECT_TRUE(ids.empty());
}

TEST(BruteForce, Scenario3_RayHitsFromTheLeftAndFromInside) {
    BruteForce bf;
    ASSERT_TRUE(
        bf.build(std::vector<Box>{{{2, -1, -1}, {3, 1, 1}}, {{5, -1, -1}, {6, 1, 1}}}).ok());
    auto hit = bf.ray_cast(Ray{{0, 0, 0}, {2, 0, 0}, 10.0f});  // t in units of dir
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->id, 0u);
    EXPECT_EQ(hit->t, 1.0f);
    hit = bf.ray_cast(Ray{{5.5f, 0, 0}, {-1, 0, 0}, 10.0f});  // starts inside box 1
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->id, 1u);
    EXPECT_EQ(hit->t, 0.0f);
    EXPECT_FALSE(bf.ray_cast(Ray{{0, 2, 0}, {1, 0, 0}, 10.0f}).has_value());
}

TEST(Factory, KnowsTheMethodsAndRejectsOthers) {
    const std::vector<std::string_view> names = cpu_method_names();
    ASSERT_GE(names.size(), 3u);
    EXPECT_EQ(names[0], "brute_force");
    EXPECT_NE(std::find(names.begin(), names.end(), "sweep_and_prune"), names.end());
    EXPECT_NE(std::find(names.begin(), names.end(), "lbvh"), names.end());
    for (const std::string_view n : names) {
        auto s = make_structure(n);
        ASSERT_TRUE(s.ok());
        EXPECT_EQ((*s)->name(), n);
    }
    auto bad = make_structure("octopus_tree");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(bad.error().message.find("octopus_tree"), std::string::npos);
    for (const std::string_view n : names) {
        EXPECT_NE(bad.error().message.find(n), std::string::npos) << n;
    }
    auto pairs = find_pairs_cpu("", std::vector<Box>{});
    ASSERT_FALSE(pairs.ok());
    EXPECT_EQ(pairs.error().code, ErrorCode::invalid_argument);
}

TEST(SweepAndPrune, SweepsAlongTheAxisOfLargestVariance) {
    for (const int axis : {0, 1, 2}) {
        std::vector<Box> boxes;
        for (int i = 0; i < 100; ++i) {
            Box b{{0.01f * float(i % 3), 0.02f * float(i % 5), 0.01f * float(i % 2)}, {}};
            b.min[axis] = float(i);
            b.max = Vec3{b.min.x + 0.5f, b.min.y + 0.5f, b.min.z + 0.5f};
            boxes.push_back(b);
        }
        SweepAndPrune sap;
        ASSERT_TRUE(sap.build(boxes).ok());
        EXPECT_EQ(sap.axis(), axis);
    }
    auto xline = generate_scene("xline", 1000);
    ASSERT_TRUE(xline.ok());
    SweepAndPrune sap;
    ASSERT_TRUE(sap.build(xline->boxes).ok());
    EXPECT_EQ(sap.axis(), 1);  // xline: a thin vertical band, long in y
}

TEST(SweepAndPrune, UpdateFollowsMovingBoxes) {
    for (const char* gen : {"uniform", "clustered", "degenerate", "yline"}) {
        auto scene = generate_scene(gen, 2000);
        ASSERT_TRUE(scene.ok());
        SCOPED_TRACE(gen);
        std::vector<Box> boxes = scene->boxes;
        SweepAndPrune sap;
        ASSERT_TRUE(sap.build(boxes).ok());
        const int axis = sap.axis();
        std::mt19937 rng(11);
        std::normal_distribution<float> step(0.0f, 0.004f);
        std::vector<Vec3> velocity(boxes.size());
        for (Vec3& v : velocity) v = {step(rng), step(rng), step(rng)};
        std::size_t total_shifts = 0;
        for (int frame = 0; frame < 12; ++frame) {
            for (std::size_t i = 0; i < boxes.size(); ++i) {
                for (int a = 0; a < 3; ++a) {
                    boxes[i].min[a] += velocity[i][a];
                    boxes[i].max[a] += velocity[i][a];
                }
            }
            ASSERT_TRUE(sap.update(boxes).ok());
            EXPECT_EQ(sap.axis(), axis);
            EXPECT_FALSE(sap.last_update_fell_back());
            total_shifts += sap.last_update_shifts();
            const Status valid = sap.validate();
            ASSERT_TRUE(valid.ok()) << valid.error().message;
            ASSERT_EQ(sorted_pairs(sap), brute_pairs(boxes)) << "frame " << frame;
        }
        EXPECT_GT(total_shifts, 0u);  // the order did change
        // The same positions built from scratch give the same order.
        SweepAndPrune fresh;
        ASSERT_TRUE(fresh.build(boxes).ok());
        if (fresh.axis() == sap.axis()) {
            EXPECT_TRUE(std::equal(fresh.order().begin(), fresh.order().end(), sap.order().begin(),
                                   sap.order().end()));
        }
    }
}

TEST(SweepAndPrune, UpdateWithoutMotionShiftsNothing) {
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene.ok());
    SweepAndPrune sap;
    ASSERT_TRUE(sap.build(scene->boxes).ok());
    ASSERT_TRUE(sap.update(scene->boxes).ok());
    EXPECT_EQ(sap.last_update_shifts(), 0u);
    EXPECT_FALSE(sap.last_update_fell_back());
}

TEST(SweepAndPrune, UpdateAfterShuffleFallsBackToFullSort) {
    auto a = generate_scene("uniform", 3000, 1);
    auto b = generate_scene("uniform", 3000, 2);
    ASSERT_TRUE(a.ok() && b.ok());
    SweepAndPrune sap;
    ASSERT_TRUE(sap.build(a->boxes).ok());
    ASSERT_TRUE(sap.update(b->boxes).ok());
    EXPECT_TRUE(sap.last_update_fell_back());
    ASSERT_TRUE(sap.validate().ok());
    EXPECT_EQ(sorted_pairs(sap), brute_pairs(b->boxes));
}

TEST(SweepAndPrune, UpdateRejectsBadInputAndKeepsState) {
    auto scene = generate_scene("clustered", 500);
    ASSERT_TRUE(scene.ok());
    SweepAndPrune sap;
    ASSERT_TRUE(sap.build(scene->boxes).ok());
    const std::vector<Pair> before = sorted_pairs(sap);

    std::vector<Box> shorter(scene->boxes.begin(), scene->boxes.end() - 1);
    Status st = sap.update(shorter);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::invalid_argument);

    std::vector<Box> moved = scene->boxes;
    for (Box& b : moved) b.min.x += 0.5f, b.max.x += 0.5f;
    moved[123].max.y = std::numeric_limits<float>::quiet_NaN();
    st = sap.update(moved);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().box, 123u);

    EXPECT_TRUE(sap.validate().ok());
    EXPECT_EQ(sap.size(), 500u);
    EXPECT_EQ(sorted_pairs(sap), before);
}

// Running out of memory while a structure builds or lists its pairs comes back as an
// out_of_memory error naming the method, the box count and what was found, never as an
// exception (find_pairs_cpu, build_structure, find_sorted_pairs).
class ExhaustedStructure : public Structure {
public:
    std::string_view name() const override { return "exhausted"; }
    Status build(std::span<const Box> boxes) override {
        if (fail_build) throw std::bad_alloc();
        return brute_.build(boxes);
    }
    void self_pairs(std::vector<Pair>& out) const override {
        brute_.self_pairs(out);  // what was found before memory ran out
        throw std::length_error("vector::_M_realloc_insert");
    }
    void query_box(const Box& region, std::vector<std::uint32_t>& out) const override {
        brute_.query_box(region, out);
    }
    void query_point(const Vec3& p, std::vector<std::uint32_t>& out) const override {
        brute_.query_point(p, out);
    }
    std::optional<RayHit> ray_cast(const Ray& ray) const override { return brute_.ray_cast(ray); }
    Status validate() const override { return brute_.validate(); }
    std::size_t size() const override { return brute_.size(); }
    bool fail_build = false;

private:
    BruteForce brute_;
};

TEST(OutOfMemory, BuildIsAnErrorNamingTheMethodAndSize) {
    ExhaustedStructure s;
    s.fail_build = true;
    const std::vector<Box> boxes(1000, Box{{0, 0, 0}, {1, 1, 1}});
    const Status built = build_structure(s, boxes);
    ASSERT_FALSE(built);
    EXPECT_EQ(built.error().code, ErrorCode::out_of_memory);
    EXPECT_EQ(built.error().message,
              "out of memory building exhausted over 1000 boxes (24000 bytes of input)");
}

TEST(OutOfMemory, PairsAreAnErrorCountingThoseFound) {
    ExhaustedStructure s;
    const std::vector<Box> boxes(4, Box{{0, 0, 0}, {1, 1, 1}});  // 6 pairs
    ASSERT_TRUE(build_structure(s, boxes));
    const auto pairs = find_sorted_pairs(s);
    ASSERT_FALSE(pairs);
    EXPECT_EQ(pairs.error().code, ErrorCode::out_of_memory);
    EXPECT_EQ(pairs.error().message,
              "out of memory finding the pairs of exhausted over 4 boxes (6 pairs, 48 bytes, "
              "found so far)");
}

TEST(OutOfMemory, FindPairsCpuSucceedsWhenMemorySuffices) {
    const std::vector<Box> boxes(4, Box{{0, 0, 0}, {1, 1, 1}});
    const auto pairs = find_pairs_cpu("kd_tree", boxes);
    ASSERT_TRUE(pairs) << pairs.error().message;
    EXPECT_EQ(pairs->size(), 6u);
    BruteForce brute;
    ASSERT_TRUE(build_structure(brute, boxes));
    const auto sorted = find_sorted_pairs(brute);
    ASSERT_TRUE(sorted);
    EXPECT_EQ(sorted.value(), pairs.value());
}

// validate() reports a broken invariant as ErrorCode::invariant_violated (a library bug), not
// as invalid_argument (bad input); a stored box that is not valid stays invalid_box.
// SlotsProbe's validate() is validate_slots over the slots it is given.
class SlotsProbe final : public Structure {
public:
    SlotsProbe(std::vector<Box> boxes, std::vector<std::uint32_t> ids)
        : boxes_(std::move(boxes)), ids_(std::move(ids)) {}
    std::string_view name() const override { return "probe"; }
    Status build(std::span<const Box>) override { return unsupported("build"); }
    void self_pairs(std::vector<Pair>&) const override {}
    void query_box(const Box&, std::vector<std::uint32_t>&) const override {}
    void query_point(const Vec3&, std::vector<std::uint32_t>&) const override {}
    std::optional<RayHit> ray_cast(const Ray&) const override { return std::nullopt; }
    Status validate() const override { return validate_slots(boxes_, ids_); }
    std::size_t size() const override { return boxes_.size(); }
    Error bad_argument(const std::string& what, std::size_t box) const {
        return invalid(what, box);
    }
    Error bad_invariant(const std::string& what, std::size_t box) const {
        return broken(what, box);
    }

private:
    std::vector<Box> boxes_;
    std::vector<std::uint32_t> ids_;
};

TEST(Validate, BrokenInvariantsAreInvariantViolated) {
    const Box unit{{0, 0, 0}, {1, 1, 1}};
    EXPECT_TRUE(SlotsProbe({unit, unit, unit}, {2, 0, 1}).validate().ok());

    const Status twice = SlotsProbe({unit, unit, unit}, {0, 2, 0}).validate();
    ASSERT_FALSE(twice.ok());
    EXPECT_EQ(twice.error().code, ErrorCode::invariant_violated);
    EXPECT_EQ(twice.error().message, "probe: id 0 stored twice");
    EXPECT_EQ(twice.error().box, 0u);
    const Status out_of_range = SlotsProbe({unit, unit}, {0, 5}).validate();
    ASSERT_FALSE(out_of_range.ok());
    EXPECT_EQ(out_of_range.error().code, ErrorCode::invariant_violated);
    EXPECT_EQ(out_of_range.error().message, "probe: id 5 out of range");
    const Status sizes = SlotsProbe({unit, unit}, {0}).validate();
    ASSERT_FALSE(sizes.ok());
    EXPECT_EQ(sizes.error().code, ErrorCode::invariant_violated);

    Box nan = unit;
    nan.max.y = std::numeric_limits<float>::quiet_NaN();
    const Status bad_box = SlotsProbe({unit, nan}, {0, 1}).validate();
    ASSERT_FALSE(bad_box.ok());
    EXPECT_EQ(bad_box.error().code, ErrorCode::invalid_box);

    // broken() words its error as invalid() does; only the code differs.
    const SlotsProbe probe({}, {});
    const Error argument = probe.bad_argument("what", 3);
    const Error invariant = probe.bad_invariant("what", 3);
    EXPECT_EQ(argument.code, ErrorCode::invalid_argument);
    EXPECT_EQ(invariant.code, ErrorCode::invariant_violated);
    EXPECT_EQ(invariant.message, "probe: what");
    EXPECT_EQ(invariant.message, argument.message);
    EXPECT_EQ(invariant.box, argument.box);
}

TEST(Validate, BrokenLbvhIsInvariantViolated) {
    auto scene = generate_scene("uniform", 100, 5);
    ASSERT_TRUE(scene.ok());
    std::vector<lbvh::LbvhNode> nodes = lbvh::build_tree(scene->boxes, lbvh::CodeKind::morton30);
    ASSERT_TRUE(lbvh::validate_tree(nodes, scene->boxes).ok());
    nodes[0].link.z = 3;  // the root with a parent
    const Status st = lbvh::validate_tree(nodes, scene->boxes);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::invariant_violated);
    EXPECT_EQ(st.error().message, "lbvh node 0: root has a parent");
}

}  // namespace
}  // namespace broadphase
