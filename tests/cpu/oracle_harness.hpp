// The shared oracle harness of the CPU structure tests: seeded query generation (random regions,
// points and rays plus queries made from the boxes themselves: exact boxes, corners, degenerate
// regions, axis- and plane-parallel rays, edge-grazing rays, rays starting on a box), the
// comparison of every query type of a built Structure with the BruteForce oracle (pairs, region
// queries, point picks, closest-hit rays exactly, k nearest), and the driver of seeded random
// insert/remove/move sequences mirrored into a BruteForce with validate() after every step; and
// the hand-made degenerate scenes the per-structure tests share.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "brute_force.hpp"

namespace broadphase::testing {

inline std::vector<std::uint32_t> sorted_ids(std::vector<std::uint32_t> ids) {
    std::sort(ids.begin(), ids.end());
    return ids;
}

/// Ids 0 .. n-1 (the ids of a structure built over n boxes).
inline std::vector<std::uint32_t> iota_ids(std::size_t n) {
    std::vector<std::uint32_t> ids(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = static_cast<std::uint32_t>(i);
    return ids;
}

/// Brute force's sorted pairs over `boxes`.
inline std::vector<Pair> brute_pairs(std::span<const Box> boxes) {
    BruteForce oracle;
    EXPECT_TRUE(oracle.build(boxes).ok());
    return sorted_pairs(oracle);
}

/// Brute force's k nearest to p over `boxes` (ids = indices).
inline std::vector<Neighbor> brute_nearest(std::span<const Box> boxes, const Vec3& p,
                                           std::size_t k) {
    BruteForce oracle;
    EXPECT_TRUE(oracle.build(boxes).ok());
    std::vector<Neighbor> out;
    EXPECT_TRUE(oracle.nearest(p, k, out).ok());
    return out;
}

/// The boxes of a generated scene (an empty list, and a failure, when the generator fails).
inline std::vector<Box> scene_boxes(std::string_view generator, std::size_t count,
                                    std::uint32_t seed) {
    Result<Scene> scene = generate_scene(generator, count, seed);
    EXPECT_TRUE(scene.ok());
    return scene.ok() ? scene->boxes : std::vector<Box>{};
}

/// A "uniform" scene's boxes.
inline std::vector<Box> uniform_boxes(std::size_t count, std::uint32_t seed) {
    return scene_boxes("uniform", count, seed);
}

// ---- hand-made degenerate scenes -------------------------------------------------------------

/// 200 copies of `b`: all centroids equal, every pair overlaps, every ray hit is a tie.
inline std::vector<Box> identical_boxes(const Box& b = Box{{0.25f, 0.5f, -1}, {0.75f, 1.5f, 2}}) {
    return std::vector<Box>(200, b);
}

/// 600 points, flat boxes and segments in the unit cube drawn from `rng`, then a duplicate point
/// (of box 10).
inline std::vector<Box> zero_volume_boxes(std::mt19937& rng) {
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<Box> boxes;
    for (int i = 0; i < 600; ++i) {
        const Vec3 p{u(rng), u(rng), u(rng)};
        Box b{p, p};
        if (i % 3 == 1) b.max[i % 3] += 0.05f, b.max[(i + 1) % 3] += 0.05f;  // flat box
        if (i % 3 == 2) b.max[i % 3] += 0.1f;                                // segment
        boxes.push_back(b);
    }
    boxes.push_back(boxes[10]);  // a duplicate point
    return boxes;
}

/// zero_volume_boxes drawn with seed 7.
inline std::vector<Box> zero_volume_boxes() {
    std::mt19937 rng(7);
    return zero_volume_boxes(rng);
}

/// Index of the huge box in huge_box_boxes().
inline constexpr std::size_t kHugeBoxIndex = 500;

/// 1000 "uniform" boxes (seed 3) with [-100, 100]^3, over all of them, at kHugeBoxIndex.
inline std::vector<Box> huge_box_boxes() {
    std::vector<Box> boxes = uniform_boxes(1000, 3);
    boxes.insert(boxes.begin() + static_cast<std::ptrdiff_t>(kHugeBoxIndex),
                 Box{{-100, -100, -100}, {100, 100, 100}});
    return boxes;
}

/// 1500 "uniform" boxes (seed 4) scaled by 1000, so that they are wider than a float ulp at 1e7
/// (which is 1), and moved to (1e7, -1e7, 1e7 or 0).
inline std::vector<Box> far_from_origin_boxes() {
    std::vector<Box> boxes = uniform_boxes(1500, 4);
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        const Vec3 offset{1e7f, -1e7f, i % 2 ? 1e7f : 0.0f};
        for (int axis = 0; axis < 3; ++axis) {
            boxes[i].min[axis] = boxes[i].min[axis] * 1000 + offset[axis];
            boxes[i].max[axis] = boxes[i].max[axis] * 1000 + offset[axis];
        }
    }
    return boxes;
}

/// 2000 "uniform" boxes (seed 5) flattened onto z = 0.
inline std::vector<Box> flat_boxes() {
    std::vector<Box> boxes = uniform_boxes(2000, 5);
    for (Box& b : boxes) b.min.z = b.max.z = 0;
    return boxes;
}

/// 50 cubes centred on the origin, half sides 0, 0.01, .., 0.49.
inline std::vector<Box> same_centroid_boxes() {
    std::vector<Box> boxes;
    for (int i = 0; i < 50; ++i) {
        const float h = 0.01f * float(i);
        boxes.push_back(Box{{-h, -h, -h}, {h, h, h}});
    }
    return boxes;
}

/// same_centroid_boxes, then 100 "uniform" boxes (seed 6).
inline std::vector<Box> nested_boxes() {
    std::vector<Box> boxes = same_centroid_boxes();
    const std::vector<Box> more = uniform_boxes(100, 6);
    boxes.insert(boxes.end(), more.begin(), more.end());
    return boxes;
}

/// 400 points, segments and flat boxes on a coarse 7^3 lattice of step 0.125 (many coincide).
inline std::vector<Box> lattice_zero_volume_boxes() {
    std::vector<Box> boxes;
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> cell(0, 6);
    for (int i = 0; i < 400; ++i) {
        const Vec3 p{static_cast<float>(cell(rng)) * 0.125f, static_cast<float>(cell(rng)) * 0.125f,
                     static_cast<float>(cell(rng)) * 0.125f};
        Box b{p, p};
        if (i % 3 == 1) b.max[i % 3] += 0.25f;
        if (i % 3 == 2) b.max.x += 0.25f, b.max.y += 0.125f;
        boxes.push_back(b);
    }
    return boxes;
}

/// 800 "uniform" boxes (seed 42) between [-100, 100]^3 first and [-1e6, 1e6]^3 last.
inline std::vector<Box> huge_boxes_first_and_last() {
    std::vector<Box> boxes = uniform_boxes(800, 42);
    boxes.insert(boxes.begin(), Box{{-100, -100, -100}, {100, 100, 100}});
    boxes.push_back(Box{{-1e6f, -1e6f, -1e6f}, {1e6f, 1e6f, 1e6f}});
    return boxes;
}

/// 1000 "uniform" boxes (seed 42) scaled by 1000 and moved 1e7 away along every axis.
inline std::vector<Box> far_scaled_boxes() {
    std::vector<Box> boxes;
    for (const Box& b : uniform_boxes(1000, 42)) {
        Box s;
        for (int a = 0; a < 3; ++a) {
            s.min[a] = 1e7f + 1000.0f * b.min[a];
            s.max[a] = 1e7f + 1000.0f * b.max[a];
        }
        boxes.push_back(s);
    }
    return boxes;
}

/// 1500 boxes in the unit square drawn from `rng`, sides up to 0.03, all with z extent 0.
inline std::vector<Box> flat_random_boxes(std::mt19937& rng) {
    std::vector<Box> boxes;
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int i = 0; i < 1500; ++i) {
        const float x = u(rng), y = u(rng);
        boxes.push_back(Box{{x, y, 0.0f}, {x + 0.03f * u(rng), y + 0.03f * u(rng), 0.0f}});
    }
    return boxes;
}

/// flat_random_boxes drawn with seed 5.
inline std::vector<Box> flat_random_boxes() {
    std::mt19937 rng(5);
    return flat_random_boxes(rng);
}

struct Queries {
    std::vector<Box> regions;
    std::vector<Vec3> points;
    std::vector<Ray> rays;
};

/// `count` random regions (sizes over three decades), points and rays over the boxes' bounds
/// grown by 10% (the unit cube when there are none); then, for count / 4 random boxes, queries
/// made from the box: itself as a region, a corner as a degenerate region, exact corners as
/// points, an edge-grazing ray, a ray starting on the box, a ray from a corner.
inline Queries make_queries(std::span<const Box> boxes, std::uint32_t seed, int count,
                            bool inverted_regions = true) {
    Queries q;
    std::mt19937 rng(seed);
    Box b = boxes.empty() ? Box{{0, 0, 0}, {1, 1, 1}} : boxes[0];
    for (const Box& x : boxes) b = merge(b, x);
    Vec3 size;
    for (int a = 0; a < 3; ++a) size[a] = b.max[a] - b.min[a];
    const float diagonal = std::sqrt(size.x * size.x + size.y * size.y + size.z * size.z);
    auto coord = [&](int a) {
        const float pad = 0.1f * size[a] + 1e-3f * std::abs(b.max[a]);
        return std::uniform_real_distribution<float>(b.min[a] - pad, b.max[a] + pad)(rng);
    };
    auto point = [&] { return Vec3{coord(0), coord(1), coord(2)}; };
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::uniform_int_distribution<std::size_t> pick(0, boxes.empty() ? 0 : boxes.size() - 1);
    auto corner = [&](const Box& t) {
        const auto bits = static_cast<unsigned>(rng());
        return Vec3{bits & 1 ? t.max.x : t.min.x, bits & 2 ? t.max.y : t.min.y,
                    bits & 4 ? t.max.z : t.min.z};
    };

    for (int i = 0; i < count; ++i) {
        const Vec3 c = point();
        const float scale = std::pow(10.0f, -3.0f * unit(rng));
        Box r;
        for (int a = 0; a < 3; ++a) {
            const float h = 0.5f * size[a] * scale * unit(rng);
            r.min[a] = c[a] - h;
            r.max[a] = c[a] + h;
        }
        if (i % 7 == 3) r.max.z = r.min.z;                                  // flat
        if (inverted_regions && i % 50 == 49) std::swap(r.min.x, r.max.x);  // inverted in x
        q.regions.push_back(r);
        Vec3 p = point();
        if (!boxes.empty() && i % 4 == 0) p = boxes[pick(rng)].min;
        if (!boxes.empty() && i % 4 == 2) p = corner(boxes[pick(rng)]);
        q.points.push_back(p);

        Ray ray;
        ray.origin = point();
        if (!boxes.empty() && i % 7 == 3) ray.origin = corner(boxes[pick(rng)]);
        Vec3 target = point();
        if (!boxes.empty() && i % 2 == 0) {
            const Box& t = boxes[pick(rng)];
            for (int a = 0; a < 3; ++a) target[a] = 0.5f * (t.min[a] + t.max[a]);
        }
        for (int a = 0; a < 3; ++a) ray.dir[a] = target[a] - ray.origin[a];
        if (i % 5 == 1) ray.dir[i % 3] = 0.0f;  // parallel to a coordinate plane
        if (i % 5 == 2) ray.dir = {0.0f, 0.0f, 0.0f}, ray.dir[i % 3] = (i % 2 ? 1.0f : -1.0f);
        if (i % 3 == 0) {
            ray.tmax =
                i % 2 ? std::numeric_limits<float>::max() : std::numeric_limits<float>::infinity();
        } else if (i % 3 == 1) {
            ray.tmax = 2.0f * unit(rng);
        } else {
            ray.tmax = 0.3f * unit(rng) * (diagonal + 1.0f);  // in units of the scene
        }
        q.rays.push_back(ray);
    }
    if (!boxes.empty()) {
        for (int i = 0; i < count / 4; ++i) {
            const Box& t = boxes[pick(rng)];
            q.regions.push_back(t);                  // touches its neighbours exactly
            q.regions.push_back(Box{t.max, t.max});  // a corner as a degenerate region
            const Vec3 k = corner(t);
            q.regions.push_back(Box{k, k});
            q.points.push_back(t.min);  // exact corners
            q.points.push_back(t.max);
            q.rays.push_back(Ray{Vec3{t.min.x - 1.0f, t.min.y, t.min.z}, Vec3{1, 0, 0}, 10.0f});
            q.rays.push_back(Ray{t.min, Vec3{0.3f, -0.2f, 0.1f}, 1.0f});  // starts on t: t = 0
            q.rays.push_back(Ray{k, Vec3{unit(rng) - 0.5f, unit(rng) - 0.5f, unit(rng) - 0.5f},
                                 4.0f * (diagonal + 1.0f)});
        }
    }
    return q;
}

/// What expect_same_answers checks beyond pairs, regions, points and rays.
struct CompareOptions {
    std::uint32_t seed = 7;  ///< of make_queries
    int query_count = 60;    ///< of make_queries
    bool pairs = true;       ///< compare self_pairs
    /// k nearest (k = 1, 5 and, with nearest_all, every box) at every nearest_stride-th point.
    std::size_t nearest_stride = 1;
    bool nearest_all = true;
    bool nearest_may_be_unsupported = false;  ///< ErrorCode::unsupported then passes
    bool inverted_regions = true;             ///< regions with min.x > max.x among the queries
};

/// Compares every answer of `s` with `oracle` (which holds the same ids and boxes) on
/// make_queries(boxes): sorted pairs (each i < j), regions and points as sets, rays exactly
/// (id and t), k nearest in order. `boxes` only seeds the queries.
inline void expect_same_answers(const Structure& s, const Structure& oracle,
                                std::span<const Box> boxes, const CompareOptions& o = {}) {
    ASSERT_EQ(s.size(), oracle.size());
    if (o.pairs) {
        std::vector<Pair> raw;
        s.self_pairs(raw);
        for (const Pair& p : raw) ASSERT_LT(p.i, p.j);
        const std::vector<Pair> want = sorted_pairs(oracle);
        const std::vector<Pair> have = sorted_pairs(s);
        ASSERT_EQ(have.size(), want.size());
        ASSERT_TRUE(have == want);
    }
    const Queries q = make_queries(boxes, o.seed, o.query_count, o.inverted_regions);
    for (std::size_t i = 0; i < q.regions.size(); ++i) {
        std::vector<std::uint32_t> want, have;
        oracle.query_box(q.regions[i], want);
        s.query_box(q.regions[i], have);
        ASSERT_EQ(sorted_ids(have), sorted_ids(want)) << "region query " << i;
    }
    for (std::size_t i = 0; i < q.points.size(); ++i) {
        std::vector<std::uint32_t> want, have;
        oracle.query_point(q.points[i], want);
        s.query_point(q.points[i], have);
        ASSERT_EQ(sorted_ids(have), sorted_ids(want)) << "point pick " << i;
    }
    for (std::size_t i = 0; i < q.rays.size(); ++i) {
        const auto want = oracle.ray_cast(q.rays[i]);
        const auto have = s.ray_cast(q.rays[i]);
        ASSERT_EQ(have.has_value(), want.has_value()) << "ray " << i;
        if (want) {
            EXPECT_EQ(have->id, want->id) << "ray " << i;
            EXPECT_EQ(have->t, want->t) << "ray " << i;
        }
    }
    std::vector<std::size_t> ks = {1, 5};
    if (o.nearest_all) ks.push_back(oracle.size() + 1);
    for (std::size_t i = 0; i < q.points.size(); i += o.nearest_stride) {
        const Vec3& p = q.points[i];
        for (const std::size_t k : ks) {
            std::vector<Neighbor> want, have = {Neighbor{12345, -1.0f}};  // replaced, not appended
            ASSERT_TRUE(oracle.nearest(p, k, want).ok());
            const Status status = s.nearest(p, k, have);
            if (!status.ok()) {
                ASSERT_TRUE(o.nearest_may_be_unsupported)
                    << s.name() << ": " << status.error().message;
                ASSERT_EQ(status.error().code, ErrorCode::unsupported);
                return;
            }
            ASSERT_EQ(have, want) << s.name() << " nearest k=" << k << " at (" << p.x << ", " << p.y
                                  << ", " << p.z << ")";
        }
    }
}

/// `s`, already built over `boxes`, validates and answers everything as brute force does.
inline void expect_matches_brute_force(const Structure& s, std::span<const Box> boxes,
                                       const CompareOptions& o = {}) {
    const Status valid = s.validate();
    ASSERT_TRUE(valid.ok()) << valid.error().message;
    ASSERT_EQ(s.size(), boxes.size());
    BruteForce oracle;
    ASSERT_TRUE(oracle.build(boxes).ok());
    expect_same_answers(s, oracle, boxes, o);
}

/// Builds `s` over `boxes`, then expect_matches_brute_force.
inline void build_and_match(Structure& s, std::span<const Box> boxes,
                            const CompareOptions& o = {}) {
    const Status built = s.build(boxes);
    ASSERT_TRUE(built.ok()) << built.error().message;
    expect_matches_brute_force(s, boxes, o);
}

/// `s` holds exactly the boxes of `live` under their ids (any ids): validates and answers
/// everything as a brute force holding the same does.
inline void expect_matches_live(const Structure& s, const std::map<std::uint32_t, Box>& live,
                                const CompareOptions& o = {}) {
    const Status valid = s.validate();
    ASSERT_TRUE(valid.ok()) << valid.error().message;
    BruteForce oracle;
    ASSERT_TRUE(oracle.build({}).ok());
    std::vector<Box> boxes;
    for (const auto& [id, b] : live) {
        ASSERT_TRUE(oracle.insert(id, b).ok());
        boxes.push_back(b);
    }
    expect_same_answers(s, oracle, boxes, o);
}

/// `s` holds boxes[k] under ids[k] (distinct): validates and answers everything as brute force
/// does on query_count queries seeded `seed`, k nearest (k = 1, 5) at every nearest_stride-th
/// query point.
inline void expect_matches_ids(const Structure& s, std::span<const Box> boxes,
                               std::span<const std::uint32_t> ids, std::uint32_t seed,
                               int query_count, std::size_t nearest_stride) {
    ASSERT_EQ(ids.size(), boxes.size());
    std::map<std::uint32_t, Box> live;
    for (std::size_t k = 0; k < ids.size(); ++k) live[ids[k]] = boxes[k];
    ASSERT_EQ(live.size(), ids.size());
    CompareOptions options;
    options.seed = seed;
    options.query_count = query_count;
    options.nearest_stride = nearest_stride;
    options.nearest_all = false;
    expect_matches_live(s, live, options);
}

/// Builds `s` over `boxes` (ids 0 .. n-1), validates it, then expect_matches_ids.
inline void build_and_match_ids(Structure& s, std::span<const Box> boxes, std::uint32_t seed,
                                int query_count, std::size_t nearest_stride) {
    const Status built = s.build(boxes);
    ASSERT_TRUE(built.ok()) << built.error().message;
    const Status valid = s.validate();
    ASSERT_TRUE(valid.ok()) << valid.error().message;
    expect_matches_ids(s, boxes, iota_ids(boxes.size()), seed, query_count, nearest_stride);
}

/// Random state handed to the hooks of a dynamic sequence.
struct SequenceContext {
    explicit SequenceContext(std::uint32_t seed) : rng(seed) {}
    std::mt19937 rng;
    std::uint32_t next_id = 1000;
    std::uint32_t max_gap = 100000;  ///< ids advance by 1 .. max_gap: sparse
    float high_id_share = 0.1f;      ///< of new ids placed near the top of the id range
    float reuse_share = 0.1f;        ///< of new ids that reuse a removed one
    std::vector<std::uint32_t> removed;
    float unit() { return std::uniform_real_distribution<float>(0.0f, 1.0f)(rng); }
    /// A fresh unused id.
    std::uint32_t new_id() {
        if (!removed.empty() && unit() < reuse_share) {
            const std::size_t k = rng() % removed.size();
            const std::uint32_t id = removed[k];
            removed[k] = removed.back();
            removed.pop_back();
            return id;
        }
        const std::uint32_t id = unit() < high_id_share ? 4000000000u + next_id : next_id;
        next_id += 1 + static_cast<std::uint32_t>(rng() % max_gap);
        return id;
    }
    /// A box in the unit cube of side 0.01 .. 0.09; every fifth flat in z.
    Box unit_cube_box() {
        const Vec3 lo{unit(), unit(), unit()};
        const float side = 0.01f + 0.08f * unit();
        return Box{lo, {lo.x + side, lo.y + side * unit(), lo.z + (unit() < 0.2f ? 0.0f : side)}};
    }
    /// A box in the unit cube of side 0.02 .. 0.12 (mostly small); every fifth flat in z.
    Box small_box() {
        const Vec3 p{unit(), unit(), unit()};
        const float s = 0.02f + 0.1f * unit() * unit();
        return Box{p, {p.x + s, p.y + s, p.z + (unit() < 0.2f ? 0.0f : s)}};
    }
    /// `b` shifted by up to `step` along each axis.
    Box nudged(Box b, float step) {
        for (int a = 0; a < 3; ++a) {
            const float d = step * (2 * unit() - 1);
            b.min[a] += d;
            b.max[a] += d;
        }
        return b;
    }
};

/// `count` boxes of `make` drawn from a context of their own seeded `seed`: a sequence's start.
inline std::vector<Box> context_boxes(std::uint32_t seed, std::size_t count,
                                      const std::function<Box(SequenceContext&)>& make) {
    SequenceContext ctx(seed);
    std::vector<Box> boxes;
    for (std::size_t i = 0; i < count; ++i) boxes.push_back(make(ctx));
    return boxes;
}

/// A seeded random insert / remove / move sequence with caller-chosen sparse ids.
struct SequenceOptions {
    std::uint32_t seed = 99;
    int steps = 300;
    std::vector<Box> start;  ///< built first, ids 0 .. start.size()-1
    /// Full comparison after steps with step % compare_every == compare_every - 1 and the last.
    int compare_every = 10;
    int query_count = 20;
    std::uint32_t max_gap = 100000;  ///< see SequenceContext
    float high_id_share = 0.1f;
    float reuse_share = 0.1f;
    /// After each insert, remove and move, also check that misuse fails: inserting a present
    /// id, removing or moving an absent one, moving to a NaN box.
    bool check_misuse = false;
    std::size_t nearest_stride = 1;
    bool nearest_all = true;
    /// Share of inserts at a step (always inserts when nothing is live).
    std::function<float(int step)> insert_share = [](int) { return 0.4f; };
    float remove_share = 0.4f;  ///< of the steps that do not insert
    /// A new box; default SequenceContext::unit_cube_box.
    std::function<Box(SequenceContext&)> new_box;
    /// Where a move takes box `b`: by default a quarter of moves go to a new box, the rest are
    /// nudged by 0.5 (a third of them) or by 0.01.
    std::function<Box(SequenceContext&, const Box& b)> moved_box;
    /// Optional extra operation, at extra_share of the steps: it changes `s` and returns the
    /// (id, box) pairs it inserted, which are mirrored.
    float extra_share = 0.0f;
    std::function<std::vector<std::pair<std::uint32_t, Box>>(Structure& s, SequenceContext&)> extra;
};

/// Runs the sequence on `s`, mirrored into a BruteForce: validate() and size() after every step,
/// everything compared (queries over the live boxes) every compare_every steps. Returns the live
/// id -> box map at the end.
inline std::map<std::uint32_t, Box> run_dynamic_sequence(Structure& s, const SequenceOptions& o) {
    std::map<std::uint32_t, Box> live;
    SequenceContext ctx(o.seed);
    ctx.max_gap = o.max_gap;
    ctx.high_id_share = o.high_id_share;
    ctx.reuse_share = o.reuse_share;
    const auto new_box = [&] { return o.new_box ? o.new_box(ctx) : ctx.unit_cube_box(); };
    const auto moved_box = [&](const Box& b) {
        if (o.moved_box) return o.moved_box(ctx, b);
        if (ctx.unit() < 0.25f) return new_box();
        return ctx.nudged(b, ctx.unit() < 0.3f ? 0.5f : 0.01f);
    };
    BruteForce oracle;
    EXPECT_TRUE(s.is_dynamic()) << s.name();
    Status built = s.build(o.start);
    EXPECT_TRUE(built.ok()) << built.error().message;
    if (!built.ok()) return live;
    EXPECT_TRUE(oracle.build(o.start).ok());
    for (std::size_t i = 0; i < o.start.size(); ++i) live[std::uint32_t(i)] = o.start[i];

    for (int step = 0; step < o.steps; ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        const float op = ctx.unit();
        const float rest = o.extra ? (op - o.extra_share) / (1 - o.extra_share) : op;
        const float insert = o.insert_share(step);
        if (o.extra && op < o.extra_share) {
            for (const auto& [id, b] : o.extra(s, ctx)) {
                EXPECT_TRUE(oracle.insert(id, b).ok());
                live[id] = b;
            }
            if (::testing::Test::HasFatalFailure()) return live;
        } else if (live.empty() || rest < insert) {
            const std::uint32_t id = ctx.new_id();
            const Box b = new_box();
            const Status st = s.insert(id, b);
            EXPECT_TRUE(st.ok()) << "insert " << id << ": " << st.error().message;
            if (!st.ok()) return live;
            EXPECT_TRUE(oracle.insert(id, b).ok());
            live[id] = b;
            if (o.check_misuse) {
                EXPECT_FALSE(s.insert(id, b).ok()) << "id " << id << " in use";
            }
        } else {
            auto it = live.begin();
            std::advance(it,
                         std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(ctx.rng));
            if (rest < insert + o.remove_share * (1 - insert)) {
                const Status st = s.remove(it->first);
                EXPECT_TRUE(st.ok()) << "remove " << it->first;
                if (!st.ok()) return live;
                EXPECT_TRUE(oracle.remove(it->first).ok());
                ctx.removed.push_back(it->first);
                if (o.check_misuse) {
                    EXPECT_FALSE(s.remove(it->first).ok()) << "removed twice " << it->first;
                    EXPECT_FALSE(s.move(it->first, new_box()).ok()) << "moved " << it->first;
                }
                live.erase(it);
            } else {
                const Box b = moved_box(it->second);
                const Status st = s.move(it->first, b);
                EXPECT_TRUE(st.ok()) << "move " << it->first;
                if (!st.ok()) return live;
                EXPECT_TRUE(oracle.move(it->first, b).ok());
                it->second = b;
                if (o.check_misuse) {
                    Box bad = b;
                    bad.min.z = std::numeric_limits<float>::quiet_NaN();
                    EXPECT_FALSE(s.move(it->first, bad).ok()) << "moved to NaN " << it->first;
                }
            }
        }
        const Status valid = s.validate();
        EXPECT_TRUE(valid.ok()) << valid.error().message;
        EXPECT_EQ(s.size(), live.size());
        if (!valid.ok() || s.size() != live.size()) return live;
        if (step % o.compare_every == o.compare_every - 1 || step == o.steps - 1) {
            std::vector<Box> boxes;
            for (const auto& [id, b] : live) boxes.push_back(b);
            CompareOptions c;
            c.seed = o.seed + 1000u + std::uint32_t(step);
            c.query_count = o.query_count;
            c.nearest_stride = o.nearest_stride;
            c.nearest_all = o.nearest_all;
            expect_same_answers(s, oracle, boxes, c);
            if (::testing::Test::HasFailure()) return live;
        }
    }
    return live;
}

// Work per query (nodes and leaves visited plus box tests, from QueryStats), averaged over
// `count` queries of each kind taken from the scene itself: its boxes as regions, their centres
// as points, rays from the centres in random directions with an unbounded reach (tmax 1e30) and
// the 8 nearest of the centres. Builds `s` over `boxes` first. `nearest_ok`: every k-nearest
// call succeeded (structures without k-nearest report unsupported).
struct QueryCost {
    double box = 0, point = 0, ray = 0, nearest = 0;
    bool nearest_ok = true;
};

inline QueryCost query_cost(Structure& s, std::span<const Box> boxes, int count = 500) {
    QueryCost cost;
    const bool built = s.build(boxes).ok();
    EXPECT_TRUE(built);
    if (!built || boxes.empty()) return cost;
    std::mt19937 rng(3);
    std::uniform_int_distribution<std::size_t> pick(0, boxes.size() - 1);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    const auto centre = [](const Box& b) {  // halves first: no overflow near the float limits
        return Vec3{0.5f * b.min.x + 0.5f * b.max.x, 0.5f * b.min.y + 0.5f * b.max.y,
                    0.5f * b.min.z + 0.5f * b.max.z};
    };
    const auto work = [&s, count] {
        const QueryStats& st = s.stats();
        return double(st.nodes_visited + st.leaves_visited + st.box_tests) / count;
    };
    std::vector<std::uint32_t> ids;
    std::vector<Neighbor> near;
    s.reset_stats();
    for (int i = 0; i < count; ++i) {
        ids.clear();
        s.query_box(boxes[pick(rng)], ids);
    }
    cost.box = work();
    s.reset_stats();
    for (int i = 0; i < count; ++i) {
        ids.clear();
        s.query_point(centre(boxes[pick(rng)]), ids);
    }
    cost.point = work();
    s.reset_stats();
    for (int i = 0; i < count; ++i) {
        const Vec3 o = centre(boxes[pick(rng)]);
        (void)s.ray_cast(Ray{o, Vec3{unit(rng), unit(rng), unit(rng)}, 1e30f});
    }
    cost.ray = work();
    s.reset_stats();
    for (int i = 0; i < count; ++i) {
        if (!s.nearest(centre(boxes[pick(rng)]), 8, near).ok()) cost.nearest_ok = false;
    }
    cost.nearest = work();
    return cost;
}

}  // namespace broadphase::testing
