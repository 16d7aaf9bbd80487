// Shared checks for the octree and loose octree tests: everything a structure answers compared
// with brute force (pairs, region queries, point picks, ray casts, k nearest), on static scenes
// and along seeded random insert/remove/move sequences with caller-chosen ids.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "brute_force.hpp"

namespace broadphase::octree_test {

inline std::vector<std::uint32_t> sorted_ids(std::vector<std::uint32_t> ids) {
    std::sort(ids.begin(), ids.end());
    return ids;
}

inline Box bounds_of(std::span<const Box> boxes) {
    Box b{{0, 0, 0}, {1, 1, 1}};
    if (!boxes.empty()) b = boxes[0];
    for (const Box& x : boxes) b = merge(b, x);
    return b;
}

// Distance from p to the closed box: double arithmetic rounded to float, the formula every
// structure uses (and brute force would).
inline float oracle_distance(const Vec3& p, const Box& b) {
    double d2 = 0;
    for (int a = 0; a < 3; ++a) {
        const double d =
            std::max({double(b.min[a]) - double(p[a]), double(p[a]) - double(b.max[a]), 0.0});
        d2 += d * d;
    }
    return static_cast<float>(std::sqrt(d2));
}

// The k nearest of (id, box) by (distance, id), the definition of Structure::nearest.
inline std::vector<Neighbor> oracle_nearest(const std::vector<std::uint32_t>& ids,
                                            std::span<const Box> boxes, const Vec3& p,
                                            std::size_t k) {
    std::vector<Neighbor> all;
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        all.push_back(Neighbor{ids[i], oracle_distance(p, boxes[i])});
    }
    std::sort(all.begin(), all.end(), [](const Neighbor& a, const Neighbor& b) {
        return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
    });
    if (all.size() > k) all.resize(k);
    return all;
}

struct Queries {
    std::vector<Box> regions;
    std::vector<Vec3> points;
    std::vector<Ray> rays;
};

// `count` random regions (sizes over three decades), points and rays over the scene bounds
// grown by 10%, a quarter of the rays axis-parallel; then queries built from the boxes: the
// boxes themselves as regions, exact corners as points, edge-grazing rays and rays from inside.
inline Queries make_queries(std::span<const Box> boxes, std::uint32_t seed, int count) {
    Queries q;
    std::mt19937 rng(seed);
    const Box b = bounds_of(boxes);
    Vec3 size;
    for (int a = 0; a < 3; ++a) size[a] = std::max(b.max[a] - b.min[a], 1e-3f);
    auto coord = [&](int a) {
        std::uniform_real_distribution<float> d(b.min[a] - 0.1f * size[a],
                                                b.max[a] + 0.1f * size[a]);
        return d(rng);
    };
    auto point = [&] { return Vec3{coord(0), coord(1), coord(2)}; };
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::uniform_int_distribution<std::size_t> pick(0, boxes.empty() ? 0 : boxes.size() - 1);
    for (int i = 0; i < count; ++i) {
        const Vec3 c = point();
        Box r;
        const float scale = std::pow(10.0f, -3.0f * unit(rng));
        for (int a = 0; a < 3; ++a) {
            const float h = 0.5f * size[a] * scale * unit(rng);
            r.min[a] = c[a] - h;
            r.max[a] = c[a] + h;
        }
        q.regions.push_back(r);
        q.points.push_back(point());
        Ray ray;
        ray.origin = point();
        Vec3 target = point();
        if (!boxes.empty() && i % 2 == 0) {
            const Box& t = boxes[pick(rng)];
            for (int a = 0; a < 3; ++a) target[a] = 0.5f * (t.min[a] + t.max[a]);
        }
        for (int a = 0; a < 3; ++a) ray.dir[a] = target[a] - ray.origin[a];
        if (i % 4 == 1) ray.dir[i % 3] = 0.0f;  // parallel to one slab
        if (i % 4 == 2) {                       // along an axis
            ray.dir = {0.0f, 0.0f, 0.0f};
            ray.dir[i % 3] = (i % 8 < 4) ? 1.0f : -1.0f;
        }
        ray.tmax = i % 3 == 0 ? std::numeric_limits<float>::max() : 3.0f * unit(rng) * size.x;
        q.rays.push_back(ray);
    }
    if (!boxes.empty()) {
        for (int i = 0; i < count / 4; ++i) {
            const Box& t = boxes[pick(rng)];
            q.regions.push_back(t);
            q.regions.push_back(Box{t.max, t.max});
            q.points.push_back(t.min);
            q.points.push_back(t.max);
            q.points.push_back(Vec3{t.min.x, t.max.y, t.min.z});
            q.rays.push_back(Ray{Vec3{t.min.x - size.x, t.min.y, t.min.z}, Vec3{1, 0, 0},
                                 std::numeric_limits<float>::max()});
            q.rays.push_back(Ray{t.min, Vec3{0.3f, -0.2f, 0.1f}, 1.0f});
        }
    }
    return q;
}

// Compares `s` with brute force over `boxes` whose caller ids are `ids` (brute force indexes
// them 0..n-1, so its answers are mapped through `ids`). ids must ascend, so that brute force's
// ties to the smaller index are ties to the smaller id.
inline void expect_matches(const Structure& s, const std::vector<std::uint32_t>& ids,
                           std::span<const Box> boxes, std::uint32_t seed, int query_count,
                           bool check_pairs = true) {
    ASSERT_EQ(ids.size(), boxes.size());
    ASSERT_TRUE(std::is_sorted(ids.begin(), ids.end()));
    BruteForce oracle;
    ASSERT_TRUE(oracle.build(boxes).ok());
    EXPECT_EQ(s.size(), boxes.size());
    s.reset_stats();
    if (check_pairs) {
        std::vector<Pair> want;
        oracle.self_pairs(want);
        for (Pair& p : want) p = Pair{ids[p.i], ids[p.j]};
        std::sort(want.begin(), want.end());
        std::vector<Pair> raw;
        s.self_pairs(raw);
        for (const Pair& p : raw) ASSERT_LT(p.i, p.j);
        std::sort(raw.begin(), raw.end());
        ASSERT_EQ(raw.size(), want.size());
        ASSERT_TRUE(raw == want);
    }
    const auto map_ids = [&ids](std::vector<std::uint32_t> v) {
        for (auto& x : v) x = ids[x];
        return sorted_ids(std::move(v));
    };
    const Queries q = make_queries(boxes, seed, query_count);
    for (const Box& r : q.regions) {
        std::vector<std::uint32_t> want, have;
        oracle.query_box(r, want);
        s.query_box(r, have);
        ASSERT_EQ(sorted_ids(have), map_ids(want));
    }
    for (const Vec3& p : q.points) {
        std::vector<std::uint32_t> want, have;
        oracle.query_point(p, want);
        s.query_point(p, have);
        ASSERT_EQ(sorted_ids(have), map_ids(want));
    }
    for (const Ray& r : q.rays) {
        const auto want = oracle.ray_cast(r);
        const auto have = s.ray_cast(r);
        ASSERT_EQ(have.has_value(), want.has_value());
        if (want) {
            EXPECT_EQ(have->id, ids[want->id]);
            EXPECT_LE(std::abs(have->t - want->t), 1e-5f * std::max(1.0f, std::abs(want->t)));
        }
    }
    for (std::size_t i = 0; i < q.points.size(); i += 2) {
        for (const std::size_t k : {std::size_t{1}, std::size_t{5}}) {
            std::vector<Neighbor> have;
            ASSERT_TRUE(s.nearest(q.points[i], k, have).ok());
            ASSERT_EQ(have, oracle_nearest(ids, boxes, q.points[i], k));
        }
    }
    if (!boxes.empty() && check_pairs) {
        EXPECT_GT(s.stats().box_tests, 0u);
    }
}

// Builds `s` over `boxes`, validates, compares everything with brute force.
inline void check_static(Structure& s, std::span<const Box> boxes, std::uint32_t seed = 7,
                         int query_count = 200) {
    const Status built = s.build(boxes);
    ASSERT_TRUE(built.ok()) << built.error().message;
    const Status valid = s.validate();
    ASSERT_TRUE(valid.ok()) << valid.error().message;
    std::vector<std::uint32_t> ids(boxes.size());
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::uint32_t>(i);
    expect_matches(s, ids, boxes, seed, query_count);
}

// Every standard generator at N = 0, 1, 2, 7, 300, 3000.
inline void check_standard_scenes(Structure& s) {
    for (const std::string_view gen : generator_names()) {
        for (const std::size_t n : {0u, 1u, 2u, 7u, 300u, 3000u}) {
            auto scene = generate_scene(gen, n);
            ASSERT_TRUE(scene.ok()) << scene.error().message;
            SCOPED_TRACE(scene->name);
            check_static(s, scene->boxes);
            if (::testing::Test::HasFatalFailure()) return;
        }
    }
}

// The hand-made degenerate scenes, by name.
inline std::map<std::string, std::vector<Box>> degenerate_scenes() {
    std::map<std::string, std::vector<Box>> scenes;
    scenes["identical"] = std::vector<Box>(200, Box{{0.25f, 0.5f, 0.75f}, {1.0f, 1.5f, 2.0f}});
    scenes["identical_points"] = std::vector<Box>(200, Box{{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}});
    {
        std::vector<Box> boxes;
        std::mt19937 rng(3);
        std::uniform_int_distribution<int> cell(0, 6);
        for (int i = 0; i < 400; ++i) {
            Vec3 p{cell(rng) * 0.125f, cell(rng) * 0.125f, cell(rng) * 0.125f};
            Box b{p, p};
            if (i % 3 == 1) b.max[i % 3] += 0.25f;
            if (i % 3 == 2) b.max.x += 0.25f, b.max.y += 0.125f;
            boxes.push_back(b);
        }
        scenes["zero_volume"] = boxes;
    }
    {
        auto scene = generate_scene("uniform", 800);
        std::vector<Box> boxes = scene.ok() ? scene->boxes : std::vector<Box>{};
        boxes.insert(boxes.begin() + 300, Box{{-100, -100, -100}, {100, 100, 100}});
        boxes.push_back(Box{{-50, -50, -50}, {50, 50, 50}});
        scenes["huge_box"] = boxes;
    }
    for (const float offset : {1e7f, -3e7f}) {
        auto scene = generate_scene("clustered", 1000);
        std::vector<Box> boxes = scene.ok() ? scene->boxes : std::vector<Box>{};
        for (Box& b : boxes) {
            for (int a = 0; a < 3; ++a) {
                b.min[a] = offset + 64.0f * b.min[a];
                b.max[a] = offset + 64.0f * b.max[a];
            }
        }
        scenes["far_" + std::to_string(offset)] = boxes;
    }
    {
        auto scene = generate_scene("uniform", 2000);
        std::vector<Box> boxes = scene.ok() ? scene->boxes : std::vector<Box>{};
        for (Box& b : boxes) b.min.z = b.max.z = 0.0f;
        scenes["flat_2d"] = boxes;
    }
    {
        std::vector<Box> boxes;
        for (int x = 0; x < 6; ++x) {
            for (int y = 0; y < 6; ++y) {
                for (int z = 0; z < 6; ++z) {
                    boxes.push_back(Box{{float(x), float(y), float(z)},
                                        {float(x + 1), float(y + 1), float(z + 1)}});
                }
            }
        }
        scenes["touching_grid"] = boxes;
    }
    return scenes;
}

// A seeded random sequence of insert / remove / move with sparse caller ids, mirrored into an
// id -> box map; validate() after every step, everything compared with brute force every
// `compare_every` steps. Moves sometimes jump far outside the current bounds.
inline void run_dynamic(Structure& s, std::uint32_t seed, int steps, bool start_built,
                        int compare_every = 10) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::map<std::uint32_t, Box> current;
    if (start_built) {
        auto scene = generate_scene("mixed_sizes", 200, seed);
        ASSERT_TRUE(scene.ok());
        ASSERT_TRUE(s.build(scene->boxes).ok());
        for (std::size_t i = 0; i < scene->boxes.size(); ++i) {
            current[static_cast<std::uint32_t>(i)] = scene->boxes[i];
        }
    } else {
        ASSERT_TRUE(s.build({}).ok());
    }
    ASSERT_TRUE(s.is_dynamic());
    const auto random_box = [&]() {
        const int kind = static_cast<int>(rng() % 10);
        const float spread = kind == 0 ? 50.0f : (kind == 1 ? 3.0f : 1.0f);
        const float offset = kind == 0 ? -20.0f : 0.0f;
        Vec3 lo{offset + spread * unit(rng), offset + spread * unit(rng),
                offset + spread * unit(rng)};
        Box b{lo, lo};
        if (kind != 2) {  // kind 2: a point
            const float side = kind == 3 ? 0.5f * unit(rng) : 0.08f * unit(rng);
            for (int a = 0; a < 3; ++a) b.max[a] = b.min[a] + side * (0.5f + unit(rng));
        }
        return b;
    };
    for (int step = 0; step < steps; ++step) {
        const int op = static_cast<int>(rng() % 10);
        if (op < 4 || current.empty()) {
            std::uint32_t id;
            do id = rng() % 5000;
            while (current.count(id));
            const Box b = random_box();
            ASSERT_TRUE(s.insert(id, b).ok()) << "step " << step;
            current[id] = b;
        } else {
            auto it = current.begin();
            std::advance(it, rng() % current.size());
            if (op < 7) {
                ASSERT_TRUE(s.remove(it->first).ok()) << "step " << step;
                current.erase(it);
            } else {
                Box b = it->second;
                if (op == 7) {
                    b = random_box();
                } else {
                    const float dx = 0.05f * (unit(rng) - 0.5f), dy = 0.05f * (unit(rng) - 0.5f);
                    b.min.x += dx, b.max.x += dx, b.min.y += dy, b.max.y += dy;
                }
                ASSERT_TRUE(s.move(it->first, b).ok()) << "step " << step;
                it->second = b;
            }
        }
        const Status valid = s.validate();
        ASSERT_TRUE(valid.ok()) << "step " << step << ": " << valid.error().message;
        ASSERT_EQ(s.size(), current.size());
        if (step % compare_every == compare_every - 1 || step == steps - 1) {
            std::vector<std::uint32_t> ids;
            std::vector<Box> boxes;
            for (const auto& [id, box] : current) ids.push_back(id), boxes.push_back(box);
            SCOPED_TRACE("step " + std::to_string(step));
            expect_matches(s, ids, boxes, seed + static_cast<std::uint32_t>(step), 40);
            if (::testing::Test::HasFatalFailure()) return;
        }
    }
}

// Error paths shared by both structures: bad boxes on build and insert, id misuse.
inline void check_errors(Structure& s) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<Box> boxes(5, Box{{0, 0, 0}, {1, 1, 1}});
    boxes[3].min.y = nan;
    Status st = s.build(boxes);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::invalid_box);
    EXPECT_EQ(st.error().box, std::optional<std::size_t>(3));
    boxes[3] = Box{{0, 2, 0}, {1, 1, 1}};  // min > max
    ASSERT_FALSE(s.build(boxes).ok());
    boxes[3] = Box{{0, 0, 0}, {inf, 1, 1}};
    ASSERT_FALSE(s.build(boxes).ok());
    EXPECT_EQ(s.size(), 0u);
    boxes[3] = Box{{0, 0, 0}, {1, 1, 1}};
    ASSERT_TRUE(s.build(boxes).ok());
    EXPECT_FALSE(s.insert(2, Box{{5, 5, 5}, {6, 6, 6}}).ok());  // id in use
    EXPECT_FALSE(s.insert(9, Box{{5, 5, 5}, {4, 6, 6}}).ok());  // bad box
    EXPECT_FALSE(s.remove(9).ok());
    EXPECT_FALSE(s.move(9, Box{{5, 5, 5}, {6, 6, 6}}).ok());
    EXPECT_FALSE(s.move(1, Box{{nan, 5, 5}, {6, 6, 6}}).ok());
    EXPECT_EQ(s.size(), 5u);
    ASSERT_TRUE(s.validate().ok());
    std::vector<std::uint32_t> hit;
    s.query_point(Vec3{0.5f, 0.5f, 0.5f}, hit);
    EXPECT_EQ(sorted_ids(hit), (std::vector<std::uint32_t>{0, 1, 2, 3, 4}));
}

}  // namespace broadphase::octree_test
