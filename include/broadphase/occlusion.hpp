// Hierarchical-Z occlusion: the CPU reference of the depth pyramid ("Hi-Z" buffer) and of the
// conservative box-versus-pyramid test that two-phase GPU occlusion culling runs (phase 1 draws
// what was visible last frame, the pyramid is built from that depth, phase 2 tests the rest
// against it), after Ulrich Haar and Sebastian Aaltonen, "GPU-Driven Rendering Pipelines",
// SIGGRAPH 2015 Advances in Real-Time Rendering. A GPU kernel is compared with this exactly.
//
// Conventions (Vulkan): a depth image is W x H floats, row-major, row 0 the top row of the image;
// depth 0 is near, 1 is far, the depth test is LESS. Every depth must be finite and in [0, 1].
//
// The pyramid. Level 0 is the image. Level k + 1 has ceil(w / 2) x ceil(h / 2) texels; texel
// (x, y) of level k + 1 is the MAX of the level-k texels (2x, 2y), (2x + 1, 2y), (2x, 2y + 1),
// (2x + 1, 2y + 1) that exist (at an odd edge the block is clamped: 2x1, 1x2 or 1x1). So level-k
// texel i has parent i / 2, every texel has exactly one parent, and a texel of level k is exactly
// the max of the level-0 texels (x0, y0) with x0 >> k == x and y0 >> k == y: conservative, it is
// >= every depth it covers. Levels go down to 1x1 (a 1x1 image has one level).
// Layout (the floats a GPU reads): all levels packed one after another, level 0 first, each
// row-major; level k starts at float offset sum_{j<k} w_j h_j (DepthLevel::offset), so the
// whole pyramid is texels().size() * 4 bytes.
//
// The occlusion rule, exactly (occluded(); all arithmetic in float, no fused multiply-add, in
// this order; a GLSL port needs `precise` to stop contraction):
//  1. For corner i = 0..7 of the box, p = (i & 1 ? max.x : min.x, i & 2 ? max.y : min.y,
//     i & 4 ? max.z : min.z). With the column-major view_projection m (element (r, c) at
//     [c * 4 + r], the convention of Camera::view_projection()), each clip coordinate r of
//     (x, y, z, w) is ((m[r] * p.x + m[4 + r] * p.y) + m[8 + r] * p.z) + m[12 + r], and its
//     size a_r = ((|m[r] * p.x| + |m[4 + r] * p.y|) + |m[8 + r] * p.z|) + |m[12 + r]|.
//  2. If some corner has a non-finite clip coordinate or size, or w <= 0 (at or behind the
//     eye plane), the box is NOT occluded.
//  3. Per corner: inv = 1 / w, nx = x / w, ny = y / w, d = z / w (IEEE division, rounded to
//     nearest; a quotient whose magnitude is below 2^-126 becomes a zero of its sign), and each
//     quotient q of numerator size a gets a rounding margin e = (((|q| * a_w) + a) * inv) *
//     2^-19 + 2^-20 (so x's margin uses a_x, and so on). If a margin is not finite, the box is
//     NOT occluded. The corner spans [nx - ex, nx + ex] x [ny - ey, ny + ey] and has depth
//     d - ed. The box's depth is dmin = min over the corners of d - ed (in corner order; min is
//     exact). The rectangle is [min of nx - ex, max of nx + ex] x [min of ny - ey, max of
//     ny + ey], each bound clamped to [-1, 1].
//     Why the margins: float rounding of the clip coordinates is at most about 2^-22 (a_r)
//     relative, so the quotients are off their exact values by less than 2^-22 (a + |q| a_w) / w;
//     the rasterizer's own transform of a vertex is off by as much again. The margin is four
//     times that sum: a fragment's depth and position, as any conformant rasterizer computes
//     them from these corners, lie inside the span used here. The absolute 2^-20 covers the
//     rounding of steps 4 and 5 (u and the level's texel index) and depths near 1.
//  4. To level-0 texels: u = (n * 0.5f + 0.5f) * float(W) for x, and the same with H for y
//     (Vulkan NDC y = -1 is row 0, the top). Texel columns x0 = min(floor(u_lo), W - 1) ..
//     x1 = min(floor(u_hi), W - 1), rows the same: every texel the rectangle touches, edges
//     included (rounding outward).
//  5. The level: the smallest k with (x1 >> k) - (x0 >> k) <= 1 and (y1 >> k) - (y0 >> k) <= 1
//     (at most 2x2 texels; the 1x1 top level always qualifies). dmax = the max of the level-k
//     texels in [x0 >> k, x1 >> k] x [y0 >> k, y1 >> k].
//  6. Occluded iff dmin > dmax (strictly).
// The GPU port (shaders/cull/occlusion.glsl) matches bit for bit: +, - and * are correctly rounded
// in Vulkan, but OpFDiv is only required to be within 2.5 ulp, so it computes the three
// quotients of step 3 exactly from their bits (gpu/device/div_rn_check.hpp tests it); floor, min,
// max, clamp and the integer steps are exact. One condition: no clip coordinate (nor any partial
// sum of step 1) and no depth texel may be a nonzero float below 2^-126 in magnitude, since a GPU
// may flush those to zero; the flush in step 3 keeps the quotients out of that range on both sides.
// Why it is conservative (it never culls what the depth buffer would show): with every w > 0 the
// box's projection lies inside the corners' screen rectangle, which (widened by the margins of step
// 3) lies inside the texels read (step 4 rounds outward; clamping only drops what is off screen); a
// fragment of the box has depth z/w of a point of the box, and z/w, a ratio of affine functions
// with w > 0 on the box, takes its minimum at a corner, so every fragment is >= dmin (the margins
// cover the rounding of both this test and the rasterizer); the pyramid texel is >= every level-0
// depth it covers. So dmin > dmax means each fragment fails LESS against the depth already there.
// Equality is kept. The tests check it against a double-precision brute force over every covered
// level-0 texel, with coordinates up to 10^4.
//
// Depth file format (read_depth_file, write_depth_file): text; the first line is
// `broadphase-depth W H` (1 <= W, H <= 16384); then W * H depths, whitespace-separated (any
// number per line), row 0 first, each row left to right. Written one image row per line with
// the shortest round-trip form, so a written file reads back bit for bit.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase {

/// Largest width or height of a depth image (Vulkan's common maxImageDimension2D).
inline constexpr std::uint32_t kMaxDepthImageSize = 16384;

/// One pyramid level: its first float in DepthPyramid::texels() and its size in texels.
struct DepthLevel {
    std::uint32_t offset = 0, width = 0, height = 0;
};

/// The levels of the pyramid over a width x height image (layout at the top of this file):
/// level 0 the image, down to 1 x 1; the last level's offset + 1 is the pyramid's float count.
/// Empty for a size outside 1..kMaxDepthImageSize.
std::vector<DepthLevel> depth_pyramid_levels(std::uint32_t width, std::uint32_t height);

/// A max-depth pyramid over a depth image (layout at the top of this file).
class DepthPyramid {
public:
    /// The pyramid of a width x height row-major image (depth.size() == width * height).
    /// Errors (invalid_argument) for a size outside 1..kMaxDepthImageSize, a span of the wrong
    /// length, or a depth that is not finite or outside [0, 1] (the message names pixel x, y).
    static Result<DepthPyramid> build(std::uint32_t width, std::uint32_t height,
                                      std::span<const float> depth);

    std::uint32_t width() const { return levels_.front().width; }
    std::uint32_t height() const { return levels_.front().height; }
    std::size_t level_count() const { return levels_.size(); }
    const DepthLevel& level(std::size_t k) const { return levels_[k]; }
    /// Texel (x, y) of level k; x < level(k).width, y < level(k).height.
    float texel(std::size_t k, std::uint32_t x, std::uint32_t y) const {
        return texels_[levels_[k].offset + std::size_t(y) * levels_[k].width + x];
    }
    /// Every level packed, level 0 (the image) first.
    std::span<const float> texels() const { return texels_; }
    /// Level 0, the image it was built from.
    std::span<const float> image() const {
        return {texels_.data(), std::size_t(width()) * height()};
    }

private:
    std::vector<DepthLevel> levels_;
    std::vector<float> texels_;
};

/// True only when b is certainly hidden behind the pyramid's depths (the rule at the top of
/// this file); view_projection is column-major as Camera::view_projection().
bool occluded(const DepthPyramid& pyramid, const std::array<float, 16>& view_projection,
              const Box& b);

/// The pyramid of a depth file (format at the top of this file); errors name the file and the
/// 1-based line (parse_error), or the file (io_error).
Result<DepthPyramid> read_depth_file(const std::string& path);

/// The pyramid of a depth file's text; `source` names it in errors.
Result<DepthPyramid> parse_depth_text(std::string_view text, std::string_view source = "<depth>");

/// Writes level 0 of the pyramid as a depth file.
Status write_depth_file(const std::string& path, const DepthPyramid& pyramid);

}  // namespace broadphase
