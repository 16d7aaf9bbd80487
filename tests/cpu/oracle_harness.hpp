// The shared oracle harness of the CPU structure tests: seeded query generation (random regions,
// points and rays plus queries made from the boxes themselves: exact boxes, corners, degenerate
// regions, axis- and plane-parallel rays, edge-grazing rays, rays starting on a box), the
// comparison of every query type of a built Structure with the BruteForce oracle (pairs, region
// queries, point picks, closest-hit rays exactly, k nearest; brute force's answers computed once
// per process for each scene and query set), and the driver of seeded random
// insert/remove/move sequences mirrored into a BruteForce with validate() after every step; and
// the hand-made degenerate scenes the per-structure tests share.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
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

/// Ids first .. first + n-1 (by default the ids of a structure built over n boxes).
inline std::vector<std::uint32_t> iota_ids(std::size_t n, std::uint32_t first = 0) {
    std::vector<std::uint32_t> ids(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = first + static_cast<std::uint32_t>(i);
    return ids;
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

/// The boxes of a generated scene (an empty list, and a failure, when the generator fails); the
/// seed defaults to generate_scene's.
inline std::vector<Box> scene_boxes(std::string_view generator, std::size_t count,
                                    std::uint32_t seed = 42) {
    Result<Scene> scene = generate_scene(generator, count, seed);
    EXPECT_TRUE(scene.ok()) << generator;
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

/// 400 long thin boxes along x (3 long, 0.002 thin) with centroids spread along x: each crosses
/// many split planes.
inline std::vector<Box> straddling_boxes(int count = 400) {
    std::vector<Box> boxes;
    for (int i = 0; i < count; ++i) {
        const float x = 0.01f * float(i);
        const float y = 0.003f * float(i % 37);
        boxes.push_back(Box{{x - 1.5f, y, 0}, {x + 1.5f, y + 0.002f, 0.5f}});
    }
    return boxes;
}

/// 500 boxes whose centroids all have x = 0 (Nearest-X's degenerate case).
inline std::vector<Box> aligned_on_x_boxes() {
    std::vector<Box> boxes;
    for (int i = 0; i < 500; ++i) {
        const float y = 0.01f * float(i), z = 0.003f * float(i % 13);
        boxes.push_back(Box{{-0.5f, y, z}, {0.5f, y + 0.015f, z + 0.002f}});
    }
    return boxes;
}

/// 120 flat boxes at x = 2^i: every midpoint split peels off the last box.
inline std::vector<Box> exponential_boxes() {
    std::vector<Box> boxes;
    for (int i = 0; i < 120; ++i) {
        const float x = std::ldexp(1.0f, i);
        boxes.push_back(Box{{x, 0, 0}, {x, 1, 1}});
    }
    return boxes;
}

/// 800 "uniform" boxes (seed 14) moved 1e7 along every axis unscaled: boxes thinner than an
/// ulp there collapse onto points and flat boxes.
inline std::vector<Box> sub_ulp_far_boxes() {
    std::vector<Box> boxes = uniform_boxes(800, 14);
    for (Box& b : boxes) {
        for (int axis = 0; axis < 3; ++axis) b.min[axis] += 1e7f, b.max[axis] += 1e7f;
    }
    return boxes;
}

/// 300 points in the unit cube drawn from `rng`, then a duplicate of point 3.
inline std::vector<Box> random_points(std::mt19937& rng) {
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<Box> points;
    for (int i = 0; i < 300; ++i) {
        const Vec3 p{u(rng), u(rng), u(rng)};
        points.push_back(Box{p, p});
    }
    points.push_back(points[3]);
    return points;
}

/// 400 points on a 21^3 lattice of step 0.05 (many repeated), and 400 boxes on the same
/// lattice flat on one axis (or none: i % 4 == 3), sides up to 0.05; seed 3.
inline std::pair<std::vector<Box>, std::vector<Box>> lattice_points_and_flat_boxes() {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<Box> points, mixed;
    for (int i = 0; i < 400; ++i) {
        Vec3 p{std::round(u(rng) * 20) / 20, std::round(u(rng) * 20) / 20,
               std::round(u(rng) * 20) / 20};
        points.push_back({p, p});
        Box b{p, p};
        const int axis = i % 4;
        for (int a = 0; a < 3; ++a) {
            if (a != axis) b.max[a] = b.min[a] + 0.05f * u(rng);
        }
        mixed.push_back(b);
    }
    return {points, mixed};
}

/// 800 "uniform" boxes (default seed) with [-100, 100]^3 inserted at 300 and [-50, 50]^3 last.
inline std::vector<Box> huge_boxes_inside() {
    std::vector<Box> boxes = scene_boxes("uniform", 800, 42);
    boxes.insert(boxes.begin() + 300, Box{{-100, -100, -100}, {100, 100, 100}});
    boxes.push_back(Box{{-50, -50, -50}, {50, 50, 50}});
    return boxes;
}

/// 2000 "uniform" boxes (default seed) with [-1e6, 1e6]^3 inserted at 1000.
inline std::vector<Box> world_box_among_uniform() {
    std::vector<Box> boxes = scene_boxes("uniform", 2000, 42);
    boxes.insert(boxes.begin() + 1000, Box{{-1e6f, -1e6f, -1e6f}, {1e6f, 1e6f, 1e6f}});
    return boxes;
}

/// 1000 "clustered" boxes (default seed) scaled by 64 and moved to `offset` on every axis (at
/// 1e7 floats are 1 apart: the scale keeps the boxes distinct).
inline std::vector<Box> clustered_far_boxes(float offset) {
    std::vector<Box> boxes = scene_boxes("clustered", 1000, 42);
    for (Box& b : boxes) {
        for (int a = 0; a < 3; ++a) {
            b.min[a] = offset + 64.0f * b.min[a];
            b.max[a] = offset + 64.0f * b.max[a];
        }
    }
    return boxes;
}

/// 1500 "uniform" boxes (default seed) scaled by 1000 and moved to (1e7, -1e7, 1e7); with
/// `with_near`, the unmoved boxes first.
inline std::vector<Box> far_and_near_boxes(bool with_near) {
    const std::vector<Box> near = scene_boxes("uniform", 1500, 42);
    std::vector<Box> far = near;
    for (Box& b : far) {
        for (int a = 0; a < 3; ++a) {
            const float offset = a == 1 ? -1e7f : 1e7f;
            b.min[a] = offset + b.min[a] * 1000.0f;
            b.max[a] = offset + b.max[a] * 1000.0f;
        }
    }
    if (!with_near) return far;
    std::vector<Box> both = near;
    both.insert(both.end(), far.begin(), far.end());
    return both;
}

/// 2000 "uniform" boxes (default seed) flattened onto z = 0.
inline std::vector<Box> flat_default_boxes() {
    std::vector<Box> boxes = scene_boxes("uniform", 2000, 42);
    for (Box& b : boxes) b.min.z = b.max.z = 0.0f;
    return boxes;
}

/// Unit cubes on an exact 6^3 integer grid: every neighbour touches face, edge or corner.
inline std::vector<Box> touching_grid_boxes() {
    std::vector<Box> boxes;
    for (int x = 0; x < 6; ++x) {
        for (int y = 0; y < 6; ++y) {
            for (int z = 0; z < 6; ++z) {
                boxes.push_back(Box{{float(x), float(y), float(z)},
                                    {float(x + 1), float(y + 1), float(z + 1)}});
            }
        }
    }
    return boxes;
}

/// Index of the first of the two crossing boxes of crossing_in_a_middle_cell().
inline constexpr std::uint32_t kCrossingIndex = 100;

/// 100 small boxes far away (they fix a hash grid's cell side at 0.02), then two long boxes
/// that cross only in a middle cell where neither has a corner.
inline std::vector<Box> crossing_in_a_middle_cell() {
    std::vector<Box> boxes;
    for (int i = 0; i < 100; ++i) {
        const float x = 0.01f * float(i);
        boxes.push_back({{x, 5, 5}, {x + 0.01f, 5.01f, 5.01f}});
    }
    boxes.push_back({{0.0f, 0.49f, 0.0f}, {0.2f, 0.5f, 0.01f}});  // 10 cells long on x
    boxes.push_back({{0.1f, 0.4f, 0.0f}, {0.11f, 0.6f, 0.01f}});  // 10 cells long on y
    return boxes;
}

struct NamedBoxes {
    std::string name;
    std::vector<Box> boxes;
};

/// Every hand-made degenerate scene, by name: identical boxes and points, zero-volume boxes,
/// huge boxes over everything, scenes far from the origin, flat scenes, nested and long thin
/// boxes, touching cubes.
inline std::vector<NamedBoxes> degenerate_scenes() {
    std::vector<NamedBoxes> scenes;
    scenes.push_back(
        {"identical_150", std::vector<Box>(150, Box{{0.25f, 0.5f, 0.75f}, {1.0f, 1.5f, 2.0f}})});
    scenes.push_back({"identical_200", identical_boxes()});
    scenes.push_back(
        {"identical_points", std::vector<Box>(200, Box{{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}})});
    scenes.push_back({"lattice_zero_volume", lattice_zero_volume_boxes()});
    scenes.push_back({"zero_volume", zero_volume_boxes()});
    {
        std::mt19937 rng(7);
        (void)zero_volume_boxes(rng);  // the points follow the zero-volume boxes' draws
        scenes.push_back({"points", random_points(rng)});
    }
    auto [lattice_points, lattice_flat] = lattice_points_and_flat_boxes();
    scenes.push_back({"lattice_points", std::move(lattice_points)});
    scenes.push_back({"lattice_points_and_flat_boxes", std::move(lattice_flat)});
    scenes.push_back({"huge_boxes_inside", huge_boxes_inside()});
    scenes.push_back({"huge_box", huge_box_boxes()});
    scenes.push_back({"huge_boxes_first_and_last", huge_boxes_first_and_last()});
    scenes.push_back({"world_box", world_box_among_uniform()});
    scenes.push_back({"far_1e7", clustered_far_boxes(1e7f)});
    scenes.push_back({"far_minus_3e7", clustered_far_boxes(-3e7f)});
    scenes.push_back({"far_from_origin", far_from_origin_boxes()});
    scenes.push_back({"far_scaled", far_scaled_boxes()});
    scenes.push_back({"far", far_and_near_boxes(false)});
    scenes.push_back({"far_and_near", far_and_near_boxes(true)});
    scenes.push_back({"far_sub_ulp", sub_ulp_far_boxes()});
    scenes.push_back({"flat_2d", flat_default_boxes()});
    scenes.push_back({"flat", flat_boxes()});
    scenes.push_back({"flat_random", flat_random_boxes()});
    scenes.push_back({"same_centroid", same_centroid_boxes()});
    scenes.push_back({"nested", nested_boxes()});
    scenes.push_back({"straddling", straddling_boxes()});
    {
        std::vector<Box> boxes = same_centroid_boxes();
        const std::vector<Box> thin = straddling_boxes(300);
        boxes.insert(boxes.end(), thin.begin(), thin.end());
        scenes.push_back({"nested_and_thin", std::move(boxes)});
    }
    scenes.push_back({"aligned_on_x", aligned_on_x_boxes()});
    scenes.push_back({"exponential", exponential_boxes()});
    scenes.push_back({"crossing_in_a_middle_cell", crossing_in_a_middle_cell()});
    scenes.push_back({"touching_grid", touching_grid_boxes()});
    return scenes;
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

/// Options (CompareOptions, or SequenceOptions for its comparisons) seeded `seed` that compare
/// on query_count queries, k nearest (k = 1, 5) at every nearest_stride-th query point; the
/// other options are the defaults.
template <class Options>
Options sampled_options(std::uint32_t seed, int query_count, std::size_t nearest_stride) {
    Options options;
    options.seed = seed;
    options.query_count = query_count;
    options.nearest_stride = nearest_stride;
    options.nearest_all = false;
    return options;
}

/// sampled_options for a comparison.
inline CompareOptions sampled_comparison(std::uint32_t seed, int query_count,
                                         std::size_t nearest_stride) {
    return sampled_options<CompareOptions>(seed, query_count, nearest_stride);
}

// ---- brute force's answers, computed once per process -----------------------------------------
//
// The typed suite compares every configuration of every structure with brute force on the same
// scenes and the same seeded queries, and the dynamic sequences reach the same seeded states in
// every dynamic structure: brute force's answers (O(n^2) pairs, linear queries) would be
// recomputed each time. They are kept here instead, for the life of the test process (one gtest
// shard), keyed by the scene, its ids and boxes (a hash of their bits, then both compared bit for
// bit), and for the queries by what make_queries draws them from (seed, count, inverted regions),
// for k nearest also by the point and k. This is safe: brute force's answer is a function of the
// (id, box) set and the query alone (ties go to the smaller id, never to a slot order), and an
// entry is only ever filled from a brute force that holds exactly that set. The tests run on one
// thread; so does the cache.

namespace detail {

/// Brute force's answers to make_queries(boxes, seed, count, inverted regions).
struct QueryAnswers {
    Queries queries;
    std::vector<std::vector<std::uint32_t>> regions, points;  ///< sorted ids
    std::vector<std::optional<RayHit>> rays;
    std::map<std::pair<std::size_t, std::size_t>, std::vector<Neighbor>> nearest;  ///< (point, k)
};

/// What make_queries draws a query set from.
struct QueryKey {
    std::uint32_t seed = 0;
    int count = 0;
    bool inverted_regions = true;
    friend auto operator<=>(const QueryKey&, const QueryKey&) = default;
};

/// Brute force's answers over the scene that holds boxes[k] under ids[k].
struct OracleEntry {
    std::vector<std::uint32_t> ids;
    std::vector<Box> boxes;
    std::optional<std::vector<Pair>> pairs;  ///< sorted
    std::map<QueryKey, QueryAnswers> answers;
};

static_assert(sizeof(Box) == 6 * sizeof(float), "boxes are compared bit for bit");

/// The cache entry of the scene that holds boxes[k] under ids[k] (made empty when new).
inline OracleEntry& oracle_entry(std::span<const std::uint32_t> ids, std::span<const Box> boxes) {
    static std::unordered_map<std::uint64_t, std::vector<std::unique_ptr<OracleEntry>>> cache;
    std::uint64_t hash = 14695981039346656037ull ^ boxes.size();  // FNV-1a over 32-bit words
    const auto mix = [&hash](std::uint32_t word) { hash = (hash ^ word) * 1099511628211ull; };
    for (const std::uint32_t id : ids) mix(id);
    for (const Box& b : boxes) {
        for (const float f : {b.min.x, b.min.y, b.min.z, b.max.x, b.max.y, b.max.z})
            mix(std::bit_cast<std::uint32_t>(f));
    }
    std::vector<std::unique_ptr<OracleEntry>>& bucket = cache[hash];
    for (const std::unique_ptr<OracleEntry>& e : bucket) {
        if (std::ranges::equal(e->ids, ids) && e->boxes.size() == boxes.size() &&
            (boxes.empty() || std::memcmp(e->boxes.data(), boxes.data(), boxes.size_bytes()) == 0))
            return *e;
    }
    bucket.push_back(std::make_unique<OracleEntry>());
    bucket.back()->ids.assign(ids.begin(), ids.end());
    bucket.back()->boxes.assign(boxes.begin(), boxes.end());
    return *bucket.back();
}

/// Brute force's answers to the queries `o` draws over `boxes`, from `oracle` (which holds
/// boxes[k] under ids[k]) the first time; k nearest are filled by expect_same_answers.
inline QueryAnswers& query_answers(OracleEntry& entry, const Structure& oracle,
                                   const CompareOptions& o) {
    const auto [it, is_new] =
        entry.answers.try_emplace(QueryKey{o.seed, o.query_count, o.inverted_regions});
    QueryAnswers& a = it->second;
    if (!is_new) return a;
    a.queries = make_queries(entry.boxes, o.seed, o.query_count, o.inverted_regions);
    for (const Box& region : a.queries.regions) {
        oracle.query_box(region, a.regions.emplace_back());
        std::sort(a.regions.back().begin(), a.regions.back().end());
    }
    for (const Vec3& p : a.queries.points) {
        oracle.query_point(p, a.points.emplace_back());
        std::sort(a.points.back().begin(), a.points.back().end());
    }
    for (const Ray& ray : a.queries.rays) a.rays.push_back(oracle.ray_cast(ray));
    return a;
}

}  // namespace detail

/// Brute force's sorted pairs over `boxes` (ids = indices); computed once per process for each
/// scene (see above).
inline std::vector<Pair> brute_pairs(std::span<const Box> boxes) {
    detail::OracleEntry& entry = detail::oracle_entry(iota_ids(boxes.size()), boxes);
    if (!entry.pairs) {
        BruteForce oracle;
        const bool built = oracle.build(boxes).ok();
        EXPECT_TRUE(built);
        if (!built) return {};
        entry.pairs = sorted_pairs(oracle);
    }
    return *entry.pairs;
}

/// Compares every answer of `s` with `oracle` (which holds boxes[k] under ids[k]) on
/// make_queries(boxes): sorted pairs (each i < j), regions and points as sets, rays exactly
/// (id and t), k nearest in order. Brute force's answers come from the cache above when this
/// scene and these queries were compared before in this process.
inline void expect_same_answers(const Structure& s, const Structure& oracle,
                                std::span<const std::uint32_t> ids, std::span<const Box> boxes,
                                const CompareOptions& o = {}) {
    ASSERT_EQ(s.size(), oracle.size());
    ASSERT_EQ(oracle.size(), boxes.size());
    ASSERT_EQ(ids.size(), boxes.size());
    detail::OracleEntry& entry = detail::oracle_entry(ids, boxes);
    if (o.pairs) {
        std::vector<Pair> have;
        s.self_pairs(have);
        for (const Pair& p : have) ASSERT_LT(p.i, p.j);
        std::sort(have.begin(), have.end());
        if (!entry.pairs) entry.pairs = sorted_pairs(oracle);
        const std::vector<Pair>& want = *entry.pairs;
        ASSERT_EQ(have.size(), want.size());
        ASSERT_TRUE(have == want);
    }
    detail::QueryAnswers& answers = detail::query_answers(entry, oracle, o);
    const Queries& q = answers.queries;
    for (std::size_t i = 0; i < q.regions.size(); ++i) {
        std::vector<std::uint32_t> have;
        s.query_box(q.regions[i], have);
        ASSERT_EQ(sorted_ids(have), answers.regions[i]) << "region query " << i;
    }
    for (std::size_t i = 0; i < q.points.size(); ++i) {
        std::vector<std::uint32_t> have;
        s.query_point(q.points[i], have);
        ASSERT_EQ(sorted_ids(have), answers.points[i]) << "point pick " << i;
    }
    for (std::size_t i = 0; i < q.rays.size(); ++i) {
        const std::optional<RayHit>& want = answers.rays[i];
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
            auto it = answers.nearest.find({i, k});
            if (it == answers.nearest.end()) {
                std::vector<Neighbor> found;
                ASSERT_TRUE(oracle.nearest(p, k, found).ok());
                it = answers.nearest.emplace(std::pair{i, k}, std::move(found)).first;
            }
            const std::vector<Neighbor>& want = it->second;
            std::vector<Neighbor> have = {Neighbor{12345, -1.0f}};  // replaced, not appended
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
    expect_same_answers(s, oracle, iota_ids(boxes.size()), boxes, o);
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
    std::vector<std::uint32_t> ids;
    std::vector<Box> boxes;
    for (const auto& [id, b] : live) {
        ASSERT_TRUE(oracle.insert(id, b).ok());
        ids.push_back(id);
        boxes.push_back(b);
    }
    expect_same_answers(s, oracle, ids, boxes, o);
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
    expect_matches_live(s, live, sampled_comparison(seed, query_count, nearest_stride));
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
            std::vector<std::uint32_t> ids;
            std::vector<Box> boxes;
            for (const auto& [id, b] : live) ids.push_back(id), boxes.push_back(b);
            CompareOptions c;
            c.seed = o.seed + 1000u + std::uint32_t(step);
            c.query_count = o.query_count;
            c.nearest_stride = o.nearest_stride;
            c.nearest_all = o.nearest_all;
            expect_same_answers(s, oracle, ids, boxes, c);
            if (::testing::Test::HasFailure()) return live;
        }
    }
    return live;
}

/// A dynamic sequence by name: its options, start included.
struct NamedSequence {
    std::string name;
    SequenceOptions options;
    bool first_seed = true;  ///< the first of the profile's seeds
};

/// sampled_options for a sequence of `steps` steps.
inline SequenceOptions sampled_sequence(std::uint32_t seed, int steps, int query_count,
                                        std::size_t nearest_stride) {
    SequenceOptions options = sampled_options<SequenceOptions>(seed, query_count, nearest_stride);
    options.steps = steps;
    return options;
}

/// Small boxes (SequenceContext::small_box) with ids 1 to 3 apart (some near the top of the id
/// range, some reused), `initial` of them built first from a context seeded seed + 7919: the
/// start of the R-tree, dynamic and static AABB tree sequences. Moves shift by 0.5 (30%) or by
/// 0.01; k nearest (k = 1, 5) at every fourth point.
inline SequenceOptions small_box_sequence(std::uint32_t seed, std::size_t initial, int steps) {
    SequenceOptions options = sampled_sequence(seed, steps, 40, 4);
    options.new_box = &SequenceContext::small_box;
    options.start = context_boxes(seed + 7919u, initial, options.new_box);
    options.moved_box = [](SequenceContext& ctx, const Box& b) {
        return ctx.nudged(b, ctx.unit() < 0.3f ? 0.5f : 0.01f);
    };
    options.max_gap = 3;
    return options;
}

/// small_box_sequence that grows for the first third, then shrinks, then mixes (so that an
/// R-tree's CondenseTree collapses levels).
inline SequenceOptions grow_shrink_sequence(std::uint32_t seed, std::size_t initial, int steps) {
    SequenceOptions options = small_box_sequence(seed, initial, steps);
    options.insert_share = [steps](int step) {
        return step < steps / 3 ? 0.7f : (step < 2 * steps / 3 ? 0.1f : 0.35f);
    };
    options.remove_share = 0.5f;
    return options;
}

/// small_box_sequence with 30% inserts, 20% removes, and moves by 0.5 (30%, out of a dynamic
/// AABB tree's fat box) or by 0.001 (inside it). `big_moves`, when given, counts the former.
inline SequenceOptions fat_box_sequence(std::uint32_t seed, std::size_t initial, int steps,
                                        std::uint64_t* big_moves = nullptr) {
    SequenceOptions options = small_box_sequence(seed, initial, steps);
    options.insert_share = [](int) { return 0.3f; };
    options.remove_share = 0.2f / 0.7f;
    options.moved_box = [big_moves](SequenceContext& ctx, const Box& b) {
        const bool big = ctx.unit() < 0.3f;
        if (big_moves) *big_moves += big;
        return ctx.nudged(b, big ? 0.5f : 0.001f);
    };
    options.nearest_stride = 4;
    return options;
}

/// New boxes are points, small and large boxes, a tenth of them far outside the unit cube; a
/// third of the moves jump to a new box, the rest shift in x and y; with `start_built`, 200
/// "mixed_sizes" boxes first; half the other steps remove.
inline SequenceOptions mixed_sizes_sequence(std::uint32_t seed, int steps, bool start_built) {
    SequenceOptions options = sampled_sequence(seed, steps, 40, 2);
    if (start_built) options.start = scene_boxes("mixed_sizes", 200, seed);
    options.remove_share = 0.5f;
    options.new_box = [](SequenceContext& ctx) {
        const int kind = static_cast<int>(ctx.rng() % 10);
        const float spread = kind == 0 ? 50.0f : (kind == 1 ? 3.0f : 1.0f);
        const float offset = kind == 0 ? -20.0f : 0.0f;
        Vec3 lo{offset + spread * ctx.unit(), offset + spread * ctx.unit(),
                offset + spread * ctx.unit()};
        Box b{lo, lo};
        if (kind != 2) {  // kind 2: a point
            const float side = kind == 3 ? 0.5f * ctx.unit() : 0.08f * ctx.unit();
            for (int a = 0; a < 3; ++a) b.max[a] = b.min[a] + side * (0.5f + ctx.unit());
        }
        return b;
    };
    options.moved_box = [new_box = options.new_box](SequenceContext& ctx, Box b) {
        if (ctx.rng() % 3 == 0) return new_box(ctx);
        const float dx = 0.05f * (ctx.unit() - 0.5f), dy = 0.05f * (ctx.unit() - 0.5f);
        b.min.x += dx, b.max.x += dx, b.min.y += dy, b.max.y += dy;
        return b;
    };
    return options;
}

/// xline's first 900 boxes with the line shortened tenfold: a few crowded cells along it (ids
/// stay below a sequence's first new id, 1000).
inline std::vector<Box> short_line(std::uint32_t seed) {
    std::vector<Box> boxes = scene_boxes("xline", 900, seed);
    for (Box& b : boxes) b.min.y *= 0.1f, b.max.y *= 0.1f;
    return boxes;
}

/// Updates inside crowded lists: short_line built, then boxes of the same kind inserted,
/// removed and moved along the line.
inline SequenceOptions line_sequence(std::uint32_t seed) {
    SequenceOptions options = sampled_sequence(seed, 300, 30, 3);
    options.compare_every = 50;
    options.start = short_line(seed);
    options.new_box = [](SequenceContext& ctx) {
        const float x = 0.01f * ctx.unit(), y = 0.1f * ctx.unit();
        const float h = ctx.rng() % 8 == 0 ? 0.02f * ctx.unit() : 0.0003f * ctx.unit();
        return Box{{x, y, 0.0f}, {x + 0.01f * (1.0f + ctx.unit()), y + h, 0.0f}};
    };
    options.moved_box = [](SequenceContext& ctx, Box b) {
        const float dy = 0.002f * (ctx.unit() - 0.5f);
        b.min.y += dy, b.max.y += dy;
        return b;
    };
    return options;
}

/// Points, large boxes, boxes partly outside the unit cube and flat boxes among small ones, 150
/// built first; half the moves shift in x, half jump; misuse checked after every step.
inline SequenceOptions misuse_sequence(std::uint32_t seed) {
    SequenceOptions options = sampled_sequence(seed, 400, 30, 2);
    options.check_misuse = true;
    options.new_box = [](SequenceContext& ctx) {
        Box b;
        const int kind = int(ctx.rng() % 10);
        const float side = kind == 0 ? 0.0f : (kind == 1 ? 0.6f : 0.05f * ctx.unit());
        for (int a = 0; a < 3; ++a) {
            b.min[a] = ctx.unit() * (kind == 2 ? 3.0f : 1.0f) - (kind == 2 ? 1.0f : 0.0f);
            b.max[a] = b.min[a] + side * (kind == 3 && a == 2 ? 0.0f : 1.0f);
        }
        return b;
    };
    options.start = context_boxes(seed + 7919u, 150, options.new_box);
    options.insert_share = [](int) { return 1.0f / 3.0f; };
    options.remove_share = 0.5f;
    options.moved_box = [new_box = options.new_box](SequenceContext& ctx, Box b) {
        if (ctx.rng() % 2) {
            const float dx = 0.02f * (ctx.unit() - 0.5f);
            b.min.x += dx;
            b.max.x += dx;
            return b;
        }
        return new_box(ctx);
    };
    return options;
}

/// The sequences every dynamic structure runs (structure_test.cpp), by name.
inline std::vector<NamedSequence> sequence_profiles() {
    std::vector<NamedSequence> profiles;
    for (const bool built : {true, false}) {
        SequenceOptions options;
        options.seed = 99;
        options.steps = 300;
        if (built) options.start = scene_boxes("clustered", 400, 42);
        options.remove_share = 0.25f / 0.6f;
        profiles.push_back({built ? "clustered built" : "clustered from empty", options});
    }
    profiles.push_back({"grow shrink built", grow_shrink_sequence(11, 200, 450)});
    profiles.push_back({"grow shrink from empty", grow_shrink_sequence(12, 0, 450)});
    profiles.push_back({"fat box built", fat_box_sequence(11, 200, 400)});
    profiles.push_back({"fat box from empty", fat_box_sequence(12, 0, 300)});
    for (const std::uint32_t seed : {1u, 2u, 3u}) {
        profiles.push_back({"mixed sizes built " + std::to_string(seed),
                            mixed_sizes_sequence(seed, 400, true), seed == 1});
    }
    for (const std::uint32_t seed : {4u, 5u}) {
        profiles.push_back({"mixed sizes from empty " + std::to_string(seed),
                            mixed_sizes_sequence(seed, 400, false), seed == 4});
    }
    for (const std::uint32_t seed : {5u, 6u}) {
        profiles.push_back({"line " + std::to_string(seed), line_sequence(seed), seed == 5});
    }
    for (const std::uint32_t seed : {1u, 2u, 3u, 4u}) {
        profiles.push_back({"misuse " + std::to_string(seed), misuse_sequence(seed), seed == 1});
    }
    return profiles;
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
