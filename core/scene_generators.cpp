// The standard seeded scenes: uniform cubes, Gaussian clusters, the XLine and YLine benchmark
// scenes of magley's survey "Broad phase algorithms and data structures", the 96% small / 4%
// large scene of the article "Loose Octrees for Frustum Culling, Part 1" (both in
// docs/references.md), a degenerate scene, and two scenes shaped like real ones (issue 9):
// `level`, a physics level (uniform boxes, a few fallen about 1e7 below, a ground slab 2e6
// wide, a trigger volume over the play area), and `multiscale`, dense clusters of three sizes
// (0.1, 1, 10) about 1e4 apart. Every generator scales its box sizes with the count so
// that a scene averages a few overlapping pairs per box at any N.
//
// Every draw comes from one std::mt19937(seed) in a fixed order, so a scene depends only on
// (count, seed) and the standard library's distributions (libstdc++ here; the standard
// leaves uniform_real_distribution and normal_distribution implementation-defined).
#include "scene_generators.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <random>

namespace broadphase::detail {
namespace {

/// The average number of overlapping pairs per box the scaled generators aim at.
constexpr double kPairsPerBox = 2.0;

/// Uniform floats in [0, 1) from one seeded engine.
class Draw {
public:
    explicit Draw(std::uint32_t seed) : engine_(seed) {}
    float operator()() { return unit_(engine_); }
    /// A point in [0,1)^3, drawn x, then y, then z.
    Vec3 point() {
        Vec3 p;
        p.x = (*this)();
        p.y = (*this)();
        p.z = (*this)();
        return p;
    }
    float normal(float sigma) { return std::normal_distribution<float>(0.0f, sigma)(engine_); }

private:
    std::mt19937 engine_;
    std::uniform_real_distribution<float> unit_{0.0f, 1.0f};
};

Box cube(const Vec3& lo, float side) {
    return {lo, {lo.x + side, lo.y + side, lo.z + side}};
}

// N cubes of side 0.8 * N^(-1/3) with min corners uniform in [0,1)^3, drawn x, y, z. The
// side is computed in double and rounded once to float. Two cubes of side s overlap with
// probability about (2s)^3, so a box has about 0.5 * N * 8 * 0.512 / N = 2.05 pairs.
std::vector<Box> uniform(std::size_t count, std::uint32_t seed) {
    std::vector<Box> boxes;
    if (count == 0) return boxes;
    boxes.reserve(count);
    const float side = static_cast<float>(0.8 * std::pow(static_cast<double>(count), -1.0 / 3.0));
    Draw draw(seed);
    for (std::size_t i = 0; i < count; ++i) boxes.push_back(cube(draw.point(), side));
    return boxes;
}

// Box i belongs to cluster i % C, C = min(N, 8); the cluster centres are uniform in
// [0.2, 0.8)^3 and a box's min corner is its centre plus a normal offset (sigma 0.05) per
// axis. Extents are s * [0.5, 1.5) per axis. For n = N / C boxes per cluster, two boxes in a
// cluster overlap with probability s^3 / (pi^1.5 sigma^3), so s is chosen as
// sigma * (2 * kPairsPerBox * pi^1.5 / n)^(1/3); overlapping clusters add a little more.
std::vector<Box> clustered(std::size_t count, std::uint32_t seed) {
    constexpr std::size_t kClusterCount = 8;
    constexpr double kSigma = 0.05;
    std::vector<Box> boxes;
    if (count == 0) return boxes;
    boxes.reserve(count);
    const std::size_t clusters = std::min(count, kClusterCount);
    const double per_cluster = static_cast<double>(count) / static_cast<double>(clusters);
    const float side = static_cast<float>(
        kSigma * std::cbrt(2.0 * kPairsPerBox * std::pow(std::numbers::pi, 1.5) / per_cluster));

    Draw draw(seed);
    std::vector<Vec3> centres(clusters);
    for (Vec3& c : centres) {
        c.x = 0.2f + 0.6f * draw();
        c.y = 0.2f + 0.6f * draw();
        c.z = 0.2f + 0.6f * draw();
    }
    for (std::size_t i = 0; i < count; ++i) {
        const Vec3& c = centres[i % clusters];
        Box b;
        for (int axis = 0; axis < 3; ++axis) {
            b.min[axis] = c[axis] + draw.normal(static_cast<float>(kSigma));
        }
        for (int axis = 0; axis < 3; ++axis) {
            b.max[axis] = b.min[axis] + side * (0.5f + draw());
        }
        boxes.push_back(b);
    }
    return boxes;
}

// The survey's XLine: flat boxes (z = 0) in a thin vertical band. min.x is uniform in
// [0, 0.01) and every box is [0.01, 0.02) wide, so every two boxes overlap on x and x has
// almost no variance; min.y is uniform in [0, 1) and heights are h * [0.5, 1.5). Two boxes
// then overlap with probability about 2h, so h = kPairsPerBox / N gives kPairsPerBox pairs
// per box. Draws per box: min.x, min.y, width, height.
std::vector<Box> xline(std::size_t count, std::uint32_t seed) {
    constexpr float kBand = 0.01f;
    std::vector<Box> boxes;
    if (count == 0) return boxes;
    boxes.reserve(count);
    const float height = static_cast<float>(kPairsPerBox / static_cast<double>(count));
    Draw draw(seed);
    for (std::size_t i = 0; i < count; ++i) {
        const float x = kBand * draw();
        const float y = draw();
        const float w = kBand * (1.0f + draw());
        const float h = height * (0.5f + draw());
        boxes.push_back({{x, y, 0.0f}, {x + w, y + h, 0.0f}});
    }
    return boxes;
}

// The survey's YLine: XLine mirrored across x = y (the same draws, x and y swapped).
std::vector<Box> yline(std::size_t count, std::uint32_t seed) {
    std::vector<Box> boxes = xline(count, seed);
    for (Box& b : boxes) {
        std::swap(b.min.x, b.min.y);
        std::swap(b.max.x, b.max.y);
    }
    return boxes;
}

// The loose octree article's scene: every 25th box (i % 25 == 0, so 4%) is large, with
// diagonal in [3u, 15u), the others small with diagonal in [u, 3u), u = 0.5 * N^(-1/3). (The
// article has u = 0.01 at N = 5000, i.e. 0.17 * N^(-1/3), which gives only 0.1 pairs per box;
// 0.5 gives about 2.) Centres are uniform in [0,1)^3; the extents are a random direction with
// components in [0.5, 1.5), scaled to the diagonal. Draws per box: centre x, y, z, diagonal,
// direction x, y, z.
std::vector<Box> mixed_sizes(std::size_t count, std::uint32_t seed) {
    constexpr std::size_t kLargeEvery = 25;
    std::vector<Box> boxes;
    if (count == 0) return boxes;
    boxes.reserve(count);
    const float unit = static_cast<float>(0.5 * std::pow(static_cast<double>(count), -1.0 / 3.0));
    Draw draw(seed);
    for (std::size_t i = 0; i < count; ++i) {
        const Vec3 centre = draw.point();
        const bool large = i % kLargeEvery == 0;
        const float diagonal = unit * (large ? 3.0f + 12.0f * draw() : 1.0f + 2.0f * draw());
        Vec3 dir;
        dir.x = 0.5f + draw();
        dir.y = 0.5f + draw();
        dir.z = 0.5f + draw();
        const float scale = diagonal / std::sqrt(dir.x * dir.x + dir.y * dir.y + dir.z * dir.z);
        Box b;
        for (int axis = 0; axis < 3; ++axis) {
            const float extent = dir[axis] * scale;
            b.min[axis] = centre[axis] - 0.5f * extent;
            b.max[axis] = b.min[axis] + extent;
        }
        boxes.push_back(b);
    }
    return boxes;
}

// Degenerate cases. One huge box, placed at index N / 2, covers the bounds of all the others
// (and [0,1]^3) grown by 1, so it overlaps all N - 1. The other N - 1 boxes cycle through six
// kinds by index k = 0, 1, ... (their order before the huge box is inserted):
//   k % 6 == 0  a cube of side 0.8 * M^(-1/3) (M = number of near boxes), min in [0,1)^3
//   k % 6 == 1  an exact duplicate of the cube before it
//   k % 6 == 2  a point (min == max) in [0,1)^3
//   k % 6 == 3  a flat cube: zero extent on axis (k / 6) % 3
//   k % 6 == 4  the cube at k - 4 moved along x to touch it face to face (min.x == its max.x)
//   k % 6 == 5  far away: a cube of side 0.5 near (1e6, -1e6, 1e6), where floats are 1/16
//               apart, spread over 0.625 * F^(1/3) per axis (F = number of far boxes) so the
//               far group is as dense as the uniform scene
std::vector<Box> degenerate(std::size_t count, std::uint32_t seed) {
    constexpr std::size_t kKinds = 6;
    constexpr float kFarSide = 0.5f;
    constexpr std::array<double, 3> kFarOffset = {1e6, -1e6, 1e6};
    std::vector<Box> boxes;
    if (count == 0) return boxes;
    boxes.reserve(count);

    const std::size_t others = count - 1;
    const std::size_t far_count = others / kKinds;
    const std::size_t near_count = others - far_count;
    const float side =
        near_count == 0
            ? 0.0f
            : static_cast<float>(0.8 * std::pow(static_cast<double>(near_count), -1.0 / 3.0));
    const double far_spread = kFarSide / 0.8 * std::cbrt(static_cast<double>(far_count));

    Draw draw(seed);
    Box last_cube;
    for (std::size_t k = 0; k < others; ++k) {
        Box b;
        switch (k % kKinds) {
            case 0:
                b = last_cube = cube(draw.point(), side);
                break;
            case 1:
                b = last_cube;
                break;
            case 2:
                b.min = b.max = draw.point();
                break;
            case 3: {
                b = cube(draw.point(), side);
                const int axis = static_cast<int>((k / kKinds) % 3);
                b.max[axis] = b.min[axis];
                break;
            }
            case 4:
                b = last_cube;
                b.min.x = last_cube.max.x;
                b.max.x = b.min.x + side;
                break;
            default:
                for (int axis = 0; axis < 3; ++axis) {
                    const double lo = kFarOffset[static_cast<std::size_t>(axis)] +
                                      far_spread * static_cast<double>(draw());
                    b.min[axis] = static_cast<float>(lo);
                    b.max[axis] = b.min[axis] + kFarSide;
                }
                break;
        }
        boxes.push_back(b);
    }

    Box huge{{0.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 1.0f}};
    for (const Box& b : boxes) huge = merge(huge, b);
    for (int axis = 0; axis < 3; ++axis) {
        huge.min[axis] -= 1.0f;
        huge.max[axis] += 1.0f;
    }
    boxes.insert(boxes.begin() + static_cast<std::ptrdiff_t>(count / 2), huge);
    return boxes;
}

// A physics level: the uniform scene (the same draws) with some boxes replaced.
//   - F = max(1, floor(sqrt(N) / 32)) fallen boxes (9 at N = 100,000), at indices
//     k * N / F + N / (4F): the cube keeps its x and z and falls to
//     min.y = -1e7 - 1e6 * (its drawn y); floats there are 1 apart, so its height rounds to 0.
//   - a ground slab at index N / 2, from (-1e6, -0.5, -1e6) to (1e6, 0.001, 1e6): as wide as
//     the world, it touches the cubes whose min.y <= 0.001 (about 0.1% of them).
//   - a trigger volume at index N / 2 + 1 (if N >= 3), from (0, 0.5, 0) to (1, 2, 1): over
//     the upper half of the play area, it overlaps about N / 2 cubes.
// At small N the indices may coincide; they are applied in the order listed, the later wins.
// About 2.6 pairs per box.
std::vector<Box> level(std::size_t count, std::uint32_t seed) {
    std::vector<Box> boxes = uniform(count, seed);
    if (count == 0) return boxes;
    const std::size_t fallen = std::max<std::size_t>(
        1, static_cast<std::size_t>(std::sqrt(static_cast<double>(count)) / 32.0));
    for (std::size_t k = 0; k < fallen && k < count; ++k) {
        Box& b = boxes[k * count / fallen + count / (4 * fallen)];
        const float height = b.max.y - b.min.y;
        b.min.y = static_cast<float>(-1e7 - 1e6 * static_cast<double>(b.min.y));
        b.max.y = b.min.y + height;
    }
    boxes[count / 2] = Box{{-1e6f, -0.5f, -1e6f}, {1e6f, 0.001f, 1e6f}};
    if (count >= 3) boxes[count / 2 + 1] = Box{{0.0f, 0.5f, 0.0f}, {1.0f, 2.0f, 1.0f}};
    return boxes;
}

// Dense clusters far apart. C = min(N, 8) clusters; box i belongs to cluster c = i % C, which
// holds n_c boxes. Cluster c is a cube of side L_c = 0.1, 1 or 10 (c % 3) whose min corner is
// uniform in [0, 1e4)^3 (C draws of x, y, z first), so the spread is 1e3 to 1e5 times the
// cluster size. Its boxes are cubes of side 0.8 * L_c * n_c^(-1/3) with min corner
// corner_c + L_c * p, p uniform in [0,1)^3 (drawn x, y, z per box in index order), each
// corner computed in double and rounded once to float: about 2 pairs per box, as uniform.
std::vector<Box> multiscale(std::size_t count, std::uint32_t seed) {
    constexpr std::size_t kClusterCount = 8;
    constexpr double kSpread = 1e4;
    constexpr std::array<double, 3> kClusterSides = {0.1, 1.0, 10.0};
    std::vector<Box> boxes;
    if (count == 0) return boxes;
    boxes.reserve(count);
    const std::size_t clusters = std::min(count, kClusterCount);

    Draw draw(seed);
    std::vector<std::array<double, 3>> corners(clusters);
    for (auto& c : corners) {
        for (double& v : c) v = kSpread * static_cast<double>(draw());
    }
    std::vector<double> box_sides(clusters);
    for (std::size_t c = 0; c < clusters; ++c) {
        const std::size_t members = count / clusters + (c < count % clusters ? 1 : 0);
        box_sides[c] = 0.8 * kClusterSides[c % kClusterSides.size()] *
                       std::pow(static_cast<double>(members), -1.0 / 3.0);
    }
    for (std::size_t i = 0; i < count; ++i) {
        const std::size_t c = i % clusters;
        const double side = kClusterSides[c % kClusterSides.size()];
        const Vec3 p = draw.point();
        Box b;
        for (int axis = 0; axis < 3; ++axis) {
            const double lo =
                corners[c][static_cast<std::size_t>(axis)] + side * static_cast<double>(p[axis]);
            b.min[axis] = static_cast<float>(lo);
            b.max[axis] = static_cast<float>(lo + box_sides[c]);
        }
        boxes.push_back(b);
    }
    return boxes;
}

constexpr std::array<Generator, 8> kGenerators = {{
    {"uniform", uniform},
    {"clustered", clustered},
    {"xline", xline},
    {"yline", yline},
    {"mixed_sizes", mixed_sizes},
    {"degenerate", degenerate},
    {"level", level},
    {"multiscale", multiscale},
}};

}  // namespace

std::span<const Generator> generators() {
    return kGenerators;
}

}  // namespace broadphase::detail
