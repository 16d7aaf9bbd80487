// DynamicAabbTree against brute force: every standard generator at several sizes and under
// several configurations (default, margin 0, absolute margin, one-by-one build, no rotations),
// hand-made degenerate scenes, random insert/remove/move sequences mirrored into a brute force
// rebuilt from the current id -> box map, and the tree-quality scenarios of seed 000's comments
// (sorted insertions stay balanced with rotations; self-pairs prune above the leaves).
#include "dynamic_aabb_tree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "broadphase/scene.hpp"
#include "brute_force.hpp"

namespace broadphase {
namespace {

using Config = DynamicAabbTree::Config;

std::vector<std::uint32_t> sorted_ids(std::vector<std::uint32_t> ids) {
    std::sort(ids.begin(), ids.end());
    return ids;
}

// The definition of nearest: distance to the closed box, nearest first, ties to smaller id.
std::vector<Neighbor> reference_nearest(std::span<const Box> boxes,
                                        std::span<const std::uint32_t> ids, const Vec3& p,
                                        std::size_t k) {
    std::vector<Neighbor> all;
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        double sum = 0;
        for (int a = 0; a < 3; ++a) {
            const double d =
                std::max({double(boxes[i].min[a]) - p[a], 0.0, double(p[a]) - boxes[i].max[a]});
            sum += d * d;
        }
        all.push_back(Neighbor{ids[i], static_cast<float>(std::sqrt(sum))});
    }
    std::sort(all.begin(), all.end(), [](const Neighbor& a, const Neighbor& b) {
        return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
    });
    all.resize(std::min(k, all.size()));
    return all;
}

struct Queries {
    std::vector<Box> regions;
    std::vector<Vec3> points;
    std::vector<Ray> rays;
};

// `count` random regions, points and rays over the scene bounds (grown 10%), some rays
// axis-parallel, plus queries made from the boxes: the boxes themselves, their corners as
// points and degenerate regions, rays grazing an edge and rays starting on a box.
Queries make_queries(std::span<const Box> boxes, std::uint32_t seed, int count) {
    Queries q;
    std::mt19937 rng(seed);
    Box b{{0, 0, 0}, {1, 1, 1}};
    for (const Box& x : boxes) b = merge(b, x);
    auto coord = [&](int a) {
        const float pad = 0.1f * (b.max[a] - b.min[a]);
        return std::uniform_real_distribution<float>(b.min[a] - pad, b.max[a] + pad)(rng);
    };
    auto point = [&] { return Vec3{coord(0), coord(1), coord(2)}; };
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::uniform_int_distribution<std::size_t> pick(0, boxes.empty() ? 0 : boxes.size() - 1);
    for (int i = 0; i < count; ++i) {
        const Vec3 c = point();
        const float scale = std::pow(10.0f, -3.0f * unit(rng));
        Box r;
        for (int a = 0; a < 3; ++a) {
            const float h = 0.5f * (b.max[a] - b.min[a]) * scale * unit(rng);
            r.min[a] = c[a] - h;
            r.max[a] = c[a] + h;
        }
        q.regions.push_back(r);
        q.points.push_back(i % 4 == 0 && !boxes.empty() ? boxes[pick(rng)].min : point());
        Ray ray;
        ray.origin = point();
        Vec3 target = point();
        if (!boxes.empty() && i % 2 == 0) {
            const Box& t = boxes[pick(rng)];
            for (int a = 0; a < 3; ++a) target[a] = 0.5f * (t.min[a] + t.max[a]);
        }
        for (int a = 0; a < 3; ++a) ray.dir[a] = target[a] - ray.origin[a];
        if (i % 5 == 1) ray.dir[i % 3] = 0.0f;
        if (i % 5 == 2) ray.dir = {0.0f, 0.0f, 0.0f}, ray.dir[i % 3] = (i % 2 ? 1.0f : -1.0f);
        ray.tmax = i % 3 == 0 ? std::numeric_limits<float>::max() : 2.0f * unit(rng);
        q.rays.push_back(ray);
    }
    if (!boxes.empty()) {
        for (int i = 0; i < count / 4; ++i) {
            const Box& t = boxes[pick(rng)];
            q.regions.push_back(t);
            q.regions.push_back(Box{t.max, t.max});
            q.points.push_back(t.max);
            q.rays.push_back(Ray{Vec3{t.min.x - 1.0f, t.min.y, t.min.z}, Vec3{1, 0, 0}, 10.0f});
            q.rays.push_back(Ray{t.min, Vec3{0.3f, -0.2f, 0.1f}, 1.0f});
        }
    }
    return q;
}

// Compares every query of `tree` with brute force over `boxes`, whose ids are `ids[k]`
// (ascending, so brute force's smallest-index tie rule is the smallest-id rule).
void expect_same_as_brute_force(const DynamicAabbTree& tree, std::span<const Box> boxes,
                                std::span<const std::uint32_t> ids, std::uint32_t seed,
                                int query_count) {
    BruteForce oracle;
    ASSERT_TRUE(oracle.build(boxes).ok());
    ASSERT_EQ(tree.size(), boxes.size());

    std::vector<Pair> want;
    {
        std::vector<Pair> raw;
        oracle.self_pairs(raw);
        for (const Pair& p : raw) {
            want.push_back(Pair{std::min(ids[p.i], ids[p.j]), std::max(ids[p.i], ids[p.j])});
        }
        std::sort(want.begin(), want.end());
    }
    std::vector<Pair> have;
    tree.self_pairs(have);
    for (const Pair& p : have) ASSERT_LT(p.i, p.j);
    std::sort(have.begin(), have.end());
    ASSERT_EQ(have.size(), want.size());
    ASSERT_TRUE(have == want);

    const auto map_ids = [&](std::vector<std::uint32_t> v) {
        for (std::uint32_t& x : v) x = ids[x];
        return sorted_ids(std::move(v));
    };
    const Queries q = make_queries(boxes, seed, query_count);
    for (const Box& r : q.regions) {
        std::vector<std::uint32_t> w, h;
        oracle.query_box(r, w);
        tree.query_box(r, h);
        ASSERT_EQ(sorted_ids(h), map_ids(w));
    }
    for (const Vec3& p : q.points) {
        std::vector<std::uint32_t> w, h;
        oracle.query_point(p, w);
        tree.query_point(p, h);
        ASSERT_EQ(sorted_ids(h), map_ids(w));
    }
    for (const Ray& r : q.rays) {
        const auto w = oracle.ray_cast(r);
        const auto h = tree.ray_cast(r);
        ASSERT_EQ(h.has_value(), w.has_value());
        if (w) {
            EXPECT_EQ(h->id, ids[w->id]);
            EXPECT_NEAR(h->t, w->t, 1e-5 * std::max(1.0f, std::abs(w->t)));
        }
    }
    for (std::size_t i = 0; i < q.points.size(); i += 4) {
        for (const std::size_t k : {1u, 5u}) {
            std::vector<Neighbor> h;
            ASSERT_TRUE(tree.nearest(q.points[i], k, h).ok());
            ASSERT_EQ(h, reference_nearest(boxes, ids, q.points[i], k));
        }
    }
}

void build_and_check(const Config& config, std::span<const Box> boxes, std::uint32_t seed = 7,
                     int query_count = 200) {
    DynamicAabbTree tree(config);
    const Status built = tree.build(boxes);
    ASSERT_TRUE(built.ok()) << built.error().message;
    const Status valid = tree.validate();
    ASSERT_TRUE(valid.ok()) << valid.error().message;
    std::vector<std::uint32_t> ids(boxes.size());
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::uint32_t>(i);
    expect_same_as_brute_force(tree, boxes, ids, seed, query_count);
}

std::vector<std::pair<std::string, Config>> configs() {
    Config absolute;
    absolute.margin = 0.01f;
    absolute.margin_is_relative = false;
    Config tight;
    tight.margin = 0;
    Config incremental;
    incremental.bulk_build = false;
    Config incremental_no_rotations = incremental;
    incremental_no_rotations.rotations = false;
    return {{"default", Config{}},
            {"absolute margin 0.01", absolute},
            {"margin 0", tight},
            {"one by one", incremental},
            {"one by one, no rotations", incremental_no_rotations}};
}

class DynamicAabbTreeConfigs : public ::testing::TestWithParam<std::size_t> {
protected:
    Config config() const { return configs()[GetParam()].second; }
};

INSTANTIATE_TEST_SUITE_P(All, DynamicAabbTreeConfigs,
                         ::testing::Range<std::size_t>(0, configs().size()));

// Scenario 1: every standard generator, N = 0, 1, 2, 7, 300, 3000.
TEST_P(DynamicAabbTreeConfigs, Scenario01_StandardScenesMatchBruteForce) {
    for (const std::string_view gen : generator_names()) {
        for (const std::size_t n : {0u, 1u, 2u, 7u, 300u, 3000u}) {
            auto scene = generate_scene(gen, n);
            ASSERT_TRUE(scene.ok()) << scene.error().message;
            SCOPED_TRACE(scene->name + " / " + configs()[GetParam()].first);
            build_and_check(config(), scene->boxes);
        }
    }
}

// Scenario 2: 200 copies of one box: every pair overlaps.
TEST_P(DynamicAabbTreeConfigs, Scenario02_AllBoxesIdentical) {
    const std::vector<Box> boxes(200, Box{{0.25f, 0.5f, 0.75f}, {1.0f, 1.5f, 2.0f}});
    build_and_check(config(), boxes);
    DynamicAabbTree tree(config());
    ASSERT_TRUE(tree.build(boxes).ok());
    std::vector<Pair> pairs;
    tree.self_pairs(pairs);
    EXPECT_EQ(pairs.size(), 200u * 199u / 2u);
}

// Scenario 3: points, segments and flat boxes on a coarse lattice (many coincide).
TEST_P(DynamicAabbTreeConfigs, Scenario03_ZeroVolumeBoxes) {
    std::vector<Box> boxes;
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> cell(0, 6);
    for (int i = 0; i < 400; ++i) {
        const Vec3 p{cell(rng) * 0.125f, cell(rng) * 0.125f, cell(rng) * 0.125f};
        Box b{p, p};
        if (i % 3 == 1) b.max[i % 3] += 0.25f;
        if (i % 3 == 2) b.max.x += 0.25f, b.max.y += 0.125f;
        boxes.push_back(b);
    }
    build_and_check(config(), boxes);
}

// Scenario 4: one huge box over a uniform scene, first and last.
TEST_P(DynamicAabbTreeConfigs, Scenario04_HugeBoxOverEverything) {
    auto scene = generate_scene("uniform", 800);
    ASSERT_TRUE(scene.ok());
    std::vector<Box> boxes = scene->boxes;
    boxes.insert(boxes.begin(), Box{{-100, -100, -100}, {100, 100, 100}});
    boxes.push_back(Box{{-1e6f, -1e6f, -1e6f}, {1e6f, 1e6f, 1e6f}});
    build_and_check(config(), boxes);
}

// Scenario 5: a uniform scene moved 1e7 away from the origin (float spacing there is 1).
TEST_P(DynamicAabbTreeConfigs, Scenario05_FarFromOrigin) {
    auto scene = generate_scene("uniform", 1000);
    ASSERT_TRUE(scene.ok());
    std::vector<Box> boxes;
    for (const Box& b : scene->boxes) {
        Box s;
        for (int a = 0; a < 3; ++a) {
            s.min[a] = 1e7f + 1000.0f * b.min[a];
            s.max[a] = 1e7f + 1000.0f * b.max[a];
        }
        boxes.push_back(s);
    }
    build_and_check(config(), boxes);
}

// Scenario 6: a 2D scene (z extent 0 everywhere), where every volume is 0.
TEST_P(DynamicAabbTreeConfigs, Scenario06_FlatScene) {
    std::vector<Box> boxes;
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int i = 0; i < 1500; ++i) {
        const float x = u(rng), y = u(rng);
        boxes.push_back(Box{{x, y, 0.0f}, {x + 0.03f * u(rng), y + 0.03f * u(rng), 0.0f}});
    }
    build_and_check(config(), boxes);
}

// Scenario 7: other seeds of every generator.
TEST_P(DynamicAabbTreeConfigs, Scenario07_OtherSeeds) {
    for (const std::string_view gen : generator_names()) {
        auto scene = generate_scene(gen, 1000, 1234);
        ASSERT_TRUE(scene.ok());
        SCOPED_TRACE(scene->name);
        build_and_check(config(), scene->boxes, 99, 100);
    }
}

// Random insert / remove / move steps (seeded), each mirrored into an id -> box map; the tree
// is validated after every step and compared with brute force over the map every few steps.
void random_steps(const Config& config, std::uint32_t seed, std::size_t initial, int steps) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    const auto random_box = [&] {
        const Vec3 p{unit(rng), unit(rng), unit(rng)};
        const float s = 0.02f + 0.1f * unit(rng) * unit(rng);
        Box b{p, {p.x + s, p.y + s, p.z + (unit(rng) < 0.2f ? 0.0f : s)}};
        return b;
    };
    DynamicAabbTree tree(config);
    std::map<std::uint32_t, Box> boxes;
    {
        std::vector<Box> start;
        for (std::size_t i = 0; i < initial; ++i) start.push_back(random_box());
        ASSERT_TRUE(tree.build(start).ok());
        for (std::size_t i = 0; i < initial; ++i) boxes[static_cast<std::uint32_t>(i)] = start[i];
    }
    std::uint32_t next_id = 1000;
    std::uint64_t big_moves = 0;
    for (int step = 0; step < steps; ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        const float action = unit(rng);
        if (boxes.empty() || action < 0.3f) {
            // Fresh ids, some sparse and near the top of the id range.
            const std::uint32_t id = unit(rng) < 0.1f ? 4000000000u + next_id : next_id;
            next_id += 1 + static_cast<std::uint32_t>(3 * unit(rng));
            const Box b = random_box();
            const Status s = tree.insert(id, b);
            ASSERT_TRUE(s.ok()) << s.error().message;
            boxes[id] = b;
        } else {
            auto it = boxes.begin();
            std::advance(it, std::uniform_int_distribution<std::size_t>(0, boxes.size() - 1)(rng));
            if (action < 0.5f) {
                ASSERT_TRUE(tree.remove(it->first).ok());
                boxes.erase(it);
            } else {
                Box b = it->second;
                const bool big = unit(rng) < 0.3f;
                const float step_size = big ? 0.5f : 0.001f;
                for (int a = 0; a < 3; ++a) {
                    const float d = step_size * (2 * unit(rng) - 1);
                    b.min[a] += d;
                    b.max[a] += d;
                }
                big_moves += big;
                ASSERT_TRUE(tree.move(it->first, b).ok());
                it->second = b;
            }
        }
        const Status valid = tree.validate();
        ASSERT_TRUE(valid.ok()) << valid.error().message;
        ASSERT_EQ(tree.size(), boxes.size());
        if (step % 10 == 0 || step == steps - 1) {
            std::vector<Box> list;
            std::vector<std::uint32_t> ids;
            for (const auto& [id, b] : boxes) ids.push_back(id), list.push_back(b);
            expect_same_as_brute_force(tree, list, ids, seed + static_cast<std::uint32_t>(step),
                                       40);
            if (::testing::Test::HasFatalFailure()) return;
        }
    }
    EXPECT_LE(tree.reinsert_count(), big_moves + steps);
    EXPECT_GT(tree.reinsert_count(), 0u);
}

// Scenario 8: a few hundred random dynamic steps from a built tree and from an empty one.
TEST_P(DynamicAabbTreeConfigs, Scenario08_RandomInsertRemoveMove) {
    random_steps(config(), 11, 200, 400);
    random_steps(config(), 12, 0, 300);
}

// Scenario 9: 1000 boxes inserted in sorted order along a line (the worst case of seed 000's
// comments) stay balanced with rotations; without them the tree degenerates.
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
    expect_same_as_brute_force(balanced, left, ids, 3, 50);
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

// Scenario 11: self-pairs prune above the leaves (the bug seed 000's comments point out): on a
// uniform scene the leaf-pair tests are a small multiple of n, not n^2 / 2.
TEST(DynamicAabbTree, Scenario11_SelfPairsPruneAtInternalLevels) {
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene.ok());
    for (const Config& config : {Config{}, configs()[3].second}) {
        DynamicAabbTree tree(config);
        ASSERT_TRUE(tree.build(scene->boxes).ok());
        tree.reset_stats();
        std::vector<Pair> pairs;
        tree.self_pairs(pairs);
        EXPECT_GT(tree.stats().box_tests, pairs.size() - 1);
        EXPECT_LT(tree.stats().box_tests, 20u * 3000u);
        EXPECT_LT(tree.stats().nodes_visited, 40u * 3000u);
        // A region query touches a few leaves only.
        tree.reset_stats();
        std::vector<std::uint32_t> hits;
        tree.query_box(scene->boxes[17], hits);
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

    // Relative margin: 10% of the mean extent of the built boxes.
    DynamicAabbTree relative;
    const std::vector<Box> boxes = {Box{{0, 0, 0}, {2, 2, 2}}, Box{{5, 5, 5}, {9, 9, 9}}};
    ASSERT_TRUE(relative.build(boxes).ok());
    EXPECT_FLOAT_EQ(relative.margin(), 0.3f);
}

// Scenario 13: bad input is rejected, naming the box; bad ids are rejected; the tree is intact.
TEST(DynamicAabbTree, Scenario13_RejectsBadInput) {
    DynamicAabbTree tree;
    std::vector<Box> boxes = {Box{{0, 0, 0}, {1, 1, 1}}, Box{{2, 0, 0}, {1, 1, 1}}};
    Status s = tree.build(boxes);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::invalid_box);
    EXPECT_EQ(s.error().box, std::optional<std::size_t>(1));
    EXPECT_EQ(tree.size(), 0u);
    boxes[1].min.x = std::numeric_limits<float>::quiet_NaN();
    EXPECT_FALSE(tree.build(boxes).ok());
    boxes[1] = Box{{0, 0, 0}, {std::numeric_limits<float>::infinity(), 1, 1}};
    EXPECT_FALSE(tree.build(boxes).ok());

    ASSERT_TRUE(tree.insert(5, Box{{0, 0, 0}, {1, 1, 1}}).ok());
    EXPECT_FALSE(tree.insert(5, Box{{0, 0, 0}, {1, 1, 1}}).ok());
    EXPECT_FALSE(tree.insert(6, Box{{1, 0, 0}, {0, 1, 1}}).ok());
    EXPECT_FALSE(tree.remove(6).ok());
    EXPECT_FALSE(tree.move(6, Box{{0, 0, 0}, {1, 1, 1}}).ok());
    EXPECT_FALSE(tree.move(5, Box{{0, 0, 0}, {1, -1, 1}}).ok());
    EXPECT_EQ(tree.size(), 1u);
    EXPECT_TRUE(tree.validate().ok());
    ASSERT_TRUE(tree.remove(5).ok());
    EXPECT_EQ(tree.size(), 0u);
    EXPECT_TRUE(tree.validate().ok());
    EXPECT_FALSE(tree.ray_cast(Ray{{0, 0, 0}, {1, 0, 0}, 1}).has_value());
    std::vector<Neighbor> near;
    EXPECT_TRUE(tree.nearest({0, 0, 0}, 3, near).ok());
    EXPECT_TRUE(near.empty());
}

}  // namespace
}  // namespace broadphase
