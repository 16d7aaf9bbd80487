// The one suite that runs every CPU structure (cpu_method_names()) against brute force on
// every standard generator and on hand-made degenerate sets: pairs as sorted lists, region
// queries and point picks as sets, closest-hit ray casts exactly (id and t; ties to the
// smallest id). Then brute force itself on numbered scenarios, the factory, and sweep and
// prune's temporal-coherence update().
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "brute_force.hpp"
#include "oracle_harness.hpp"
#include "sweep_and_prune.hpp"

namespace broadphase {
namespace {

using testing::brute_pairs;

// Builds `method` over `boxes` and compares everything with brute force (oracle_harness.hpp):
// pairs, region queries, point picks, rays and k nearest (k = 1, 5, all; sweep and prune may
// answer nearest with ErrorCode::unsupported, having no hierarchy to search).
void check_against_brute_force(const std::string& method, std::span<const Box> boxes,
                               std::uint32_t seed = 7, int query_count = 60) {
    auto made = make_structure(method);
    ASSERT_TRUE(made.ok()) << made.error().message;
    Structure& s = **made;
    EXPECT_EQ(s.name(), method);
    testing::CompareOptions options;
    options.seed = seed;
    options.query_count = query_count;
    options.nearest_may_be_unsupported = method == "sweep_and_prune";
    testing::build_and_match(s, boxes, options);
}

class EveryStructure : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryStructure, StandardScenesMatchBruteForce) {
    for (const std::string_view gen : generator_names()) {
        for (const std::size_t n : {0u, 1u, 2u, 7u, 500u, 3000u}) {
            auto scene = generate_scene(gen, n);
            ASSERT_TRUE(scene.ok()) << scene.error().message;
            SCOPED_TRACE(scene->name);
            check_against_brute_force(GetParam(), scene->boxes);
        }
    }
}

TEST_P(EveryStructure, OtherSeedsMatchBruteForce) {
    for (const std::string_view gen : generator_names()) {
        auto scene = generate_scene(gen, 1000, 1234);
        ASSERT_TRUE(scene.ok());
        SCOPED_TRACE(scene->name);
        check_against_brute_force(GetParam(), scene->boxes, 99);
    }
}

TEST_P(EveryStructure, AllBoxesIdentical) {
    const std::vector<Box> boxes(150, Box{{0.25f, 0.5f, 0.75f}, {1.0f, 1.5f, 2.0f}});
    check_against_brute_force(GetParam(), boxes);
    auto pairs = find_pairs_cpu(GetParam(), boxes);
    ASSERT_TRUE(pairs.ok());
    EXPECT_EQ(pairs->size(), 150u * 149u / 2u);
}

TEST_P(EveryStructure, ZeroVolumeBoxes) {
    // Points on a coarse lattice (many coincide), flat boxes and segments.
    std::vector<Box> boxes;
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> cell(0, 6);
    for (int i = 0; i < 400; ++i) {
        Vec3 p{static_cast<float>(cell(rng)) * 0.125f, static_cast<float>(cell(rng)) * 0.125f,
               static_cast<float>(cell(rng)) * 0.125f};
        Box b{p, p};
        if (i % 3 == 1) b.max[i % 3] += 0.25f;                // a segment
        if (i % 3 == 2) b.max.x += 0.25f, b.max.y += 0.125f;  // flat in z
        boxes.push_back(b);
    }
    check_against_brute_force(GetParam(), boxes);
}

TEST_P(EveryStructure, HugeBoxOverEverything) {
    auto scene = generate_scene("uniform", 800);
    ASSERT_TRUE(scene.ok());
    std::vector<Box> boxes = scene->boxes;
    boxes.insert(boxes.begin() + 300, Box{{-100, -100, -100}, {100, 100, 100}});
    boxes.push_back(Box{{-50, -50, -50}, {50, 50, 50}});
    check_against_brute_force(GetParam(), boxes);
}

TEST_P(EveryStructure, FarFromOrigin) {
    for (const float offset : {1e7f, -3e7f}) {
        auto scene = generate_scene("clustered", 1000);
        ASSERT_TRUE(scene.ok());
        std::vector<Box> boxes = scene->boxes;
        // At 1e7 floats are 1 apart: scale the scene up so boxes stay distinct.
        for (Box& b : boxes) {
            for (int a = 0; a < 3; ++a) {
                b.min[a] = offset + 64.0f * b.min[a];
                b.max[a] = offset + 64.0f * b.max[a];
            }
        }
        SCOPED_TRACE(offset);
        check_against_brute_force(GetParam(), boxes);
    }
}

TEST_P(EveryStructure, TwoDimensionalScene) {
    auto scene = generate_scene("uniform", 2000);
    ASSERT_TRUE(scene.ok());
    std::vector<Box> boxes = scene->boxes;
    for (Box& b : boxes) b.min.z = b.max.z = 0.0f;
    check_against_brute_force(GetParam(), boxes);
}

TEST_P(EveryStructure, TouchingGrid) {
    // Unit cubes on an exact integer grid: every neighbour touches face, edge or corner.
    std::vector<Box> boxes;
    for (int x = 0; x < 6; ++x) {
        for (int y = 0; y < 6; ++y) {
            for (int z = 0; z < 6; ++z) {
                boxes.push_back(Box{{float(x), float(y), float(z)},
                                    {float(x + 1), float(y + 1), float(z + 1)}});
            }
        }
    }
    check_against_brute_force(GetParam(), boxes);
    auto pairs = find_pairs_cpu(GetParam(), boxes);
    ASSERT_TRUE(pairs.ok());
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
    auto made = make_structure(GetParam());
    ASSERT_TRUE(made.ok());
    Structure& s = **made;
    std::vector<Box> boxes(10, Box{{0, 0, 0}, {1, 1, 1}});
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<std::pair<std::size_t, Box>> bad = {
        {3, Box{{0, nan, 0}, {1, 1, 1}}},
        {0, Box{{0, 0, 0}, {1, 1, nan}}},
        {9, Box{{-inf, 0, 0}, {1, 1, 1}}},
        {5, Box{{0, 0, 2}, {1, 1, 1}}},
    };
    for (const auto& [id, box] : bad) {
        std::vector<Box> scene = boxes;
        scene[id] = box;
        const Status st = s.build(scene);
        ASSERT_FALSE(st.ok());
        EXPECT_EQ(st.error().code, ErrorCode::invalid_box);
        ASSERT_TRUE(st.error().box.has_value());
        EXPECT_EQ(*st.error().box, id);
        EXPECT_NE(st.error().message.find(std::to_string(id)), std::string::npos);
        auto found = find_pairs_cpu(GetParam(), scene);
        ASSERT_FALSE(found.ok());
        EXPECT_EQ(found.error().box, id);
    }
    // A failed build leaves an empty, valid structure; a later good build works.
    EXPECT_EQ(s.size(), 0u);
    EXPECT_TRUE(s.validate().ok());
    ASSERT_TRUE(s.build(boxes).ok());
    EXPECT_EQ(sorted_pairs(s).size(), 45u);
}

TEST_P(EveryStructure, EmptySceneAnswersNothing) {
    auto made = make_structure(GetParam());
    ASSERT_TRUE(made.ok());
    Structure& s = **made;
    ASSERT_TRUE(s.build({}).ok());
    EXPECT_TRUE(s.validate().ok());
    EXPECT_TRUE(sorted_pairs(s).empty());
    std::vector<std::uint32_t> ids;
    s.query_box(Box{{-1e30f, -1e30f, -1e30f}, {1e30f, 1e30f, 1e30f}}, ids);
    s.query_point(Vec3{}, ids);
    EXPECT_TRUE(ids.empty());
    EXPECT_FALSE(s.ray_cast(Ray{{0, 0, 0}, {1, 0, 0}, 1e30f}).has_value());
}

TEST_P(EveryStructure, RayTiesGoToSmallestId) {
    // Boxes 2, 5 and 7 share the entry plane x = 1; others are behind them or missed.
    std::vector<Box> boxes(10, Box{{5, 5, 5}, {6, 6, 6}});
    boxes[0] = Box{{3, -1, -1}, {4, 1, 1}};
    boxes[2] = Box{{1, -1, -1}, {2, 1, 1}};
    boxes[5] = Box{{1, -0.5f, -0.5f}, {1.5f, 0.5f, 0.5f}};
    boxes[7] = Box{{1, 0, 0}, {1, 0, 0}};
    boxes[9] = Box{{1.5f, -1, -1}, {2.5f, 1, 1}};
    auto made = make_structure(GetParam());
    ASSERT_TRUE(made.ok());
    ASSERT_TRUE((*made)->build(boxes).ok());
    const auto hit = (*made)->ray_cast(Ray{{0, 0, 0}, {1, 0, 0}, 100.0f});
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->id, 2u);
    EXPECT_EQ(hit->t, 1.0f);
    // Shorter than the gap: no hit.
    EXPECT_FALSE((*made)->ray_cast(Ray{{0, 0, 0}, {1, 0, 0}, 0.999f}).has_value());
    // Reversed from the far side: box 0 first (its max face x = 4 at t = 6).
    const auto back = (*made)->ray_cast(Ray{{10, 0, 0}, {-1, 0, 0}, 100.0f});
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->id, 0u);
    EXPECT_EQ(back->t, 6.0f);
}

TEST_P(EveryStructure, RebuildReplacesBoxes) {
    auto made = make_structure(GetParam());
    ASSERT_TRUE(made.ok());
    Structure& s = **made;
    auto a = generate_scene("uniform", 700);
    auto b = generate_scene("clustered", 300);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE(s.build(a->boxes).ok());
    ASSERT_TRUE(s.build(b->boxes).ok());
    EXPECT_TRUE(s.validate().ok());
    EXPECT_EQ(s.size(), 300u);
    EXPECT_EQ(sorted_pairs(s), brute_pairs(b->boxes));
}

// Dynamic structures: a seeded random sequence of insert / remove / move with caller-chosen
// sparse ids, mirrored into the (dynamic) brute force; validate() after every step, and pairs,
// queries, rays and nearest compared every 10 steps (oracle_harness.hpp).
TEST_P(EveryStructure, DynamicSequencesMatchBruteForce) {
    auto made = make_structure(GetParam());
    ASSERT_TRUE(made.ok());
    Structure& s = **made;
    if (!s.is_dynamic()) {
        EXPECT_EQ(s.insert(0, Box{}).error().code, ErrorCode::unsupported);
        return;
    }
    auto scene = generate_scene("clustered", 400);
    ASSERT_TRUE(scene.ok());
    for (const bool built : {true, false}) {
        SCOPED_TRACE(built ? "built" : "empty");
        testing::SequenceOptions options;
        options.seed = 99;
        options.steps = 300;
        if (built) options.start = scene->boxes;
        options.remove_share = 0.25f / 0.6f;
        testing::run_dynamic_sequence(s, options);
        if (HasFailure()) return;
    }
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
    return info.param;
}

std::vector<std::string> method_list() {
    std::vector<std::string> names;
    for (const std::string_view m : cpu_method_names()) names.emplace_back(m);
    return names;
}

INSTANTIATE_TEST_SUITE_P(Cpu, EveryStructure, ::testing::ValuesIn(method_list()), param_name);

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

}  // namespace
}  // namespace broadphase
