// View frusta for culling: a pinhole camera with Vulkan clip conventions, its six planes (built
// from the camera's basis; or extracted from a view-projection matrix after Gribb & Hartmann,
// "Fast Extraction of Viewing Frustum Planes from the World-View-Projection Matrix", 2001,
// adapted to Vulkan's 0..1 depth), the conservative box-versus-frustum test, and the
// brute-force cull every other culler is compared with.
//
// The box test (frustum_may_see), exactly: for each plane (n, d), take the box's "positive
// vertex" p, the corner farthest along n (p.x = n.x >= 0 ? max.x : min.x, same for y and z),
// and compute the margin  n.x * p.x + n.y * p.y + n.z * p.z + d  in float, in that order.
// The box is culled iff some plane's margin is < 0 (the whole box lies strictly outside that
// half-space). It is conservative: a box outside the frustum but not entirely outside any one
// plane (near a frustum edge or corner) is kept. Closed like boxes: touching a plane is seen.
//
// Numerics at the extremes (Frustum::from_camera). The planes are computed in double from the
// orthonormal camera basis (forward f, right s, up u = s x f), t = tan(fovy / 2) and the
// aspect: left/right (±s + aspect t f), bottom/top (±u + t f), near f, far -f, each normalised,
// with offsets d = -dot(n, eye), minus near for the near plane and plus far for the far plane,
// rounded to float once. So the normals are unit vectors whatever near and far are: every
// 0 < near < far in float is exact in the sense that no plane cancels (a view-projection
// matrix's far row, n / (far - near), is lost in float once far / near passes ~1e7, in double
// ~1e16; see from_view_projection). What remains is float rounding of the margin, an absolute
// error of a few ulps of |d| + sum |n_i p_i|: near, far and box positions are resolved relative
// to the eye's distance from the origin (an eye at 1e30 resolves about 1e23; a near of 1e-3
// there is lost in d and acts as 0), and frustum_test_ambiguous names the boxes where rounding
// could decide. No sum overflows while box coordinates stay within 2^125 (~4.2e37) and eye
// coordinates, near and far within 2^123 (~1.0e37). Beyond: from_camera rejects a camera whose
// plane offset d is past the float range (about |eye| + far > 3.4e38), and a margin that
// overflows is NaN (the box is kept) or ±infinity (its sign decides, so a box with coordinates
// past 2^125 may be misjudged).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase {

/// A half-space boundary: p is inside iff dot(normal, p) + d >= 0. Frustum planes are
/// normalised (|normal| = 1), so the margin is a signed distance in scene units.
struct Plane {
    Vec3 normal;
    float d = 0;
};

/// A right-handed pinhole camera looking from eye towards target; angles in degrees, near and
/// far are positive distances along the view direction (0 < near < far).
struct Camera {
    Vec3 eye, target, up{0, 1, 0};
    float fovy_deg = 60, aspect = 1, near = 0.1f, far = 100;

    /// Column-major (element (row r, column c) at [c * 4 + r]) right-handed look-at matrix.
    std::array<float, 16> view() const;
    /// Column-major perspective projection to Vulkan clip space: y down, depth 0 (near) .. 1 (far).
    std::array<float, 16> projection() const;
    /// projection() * view(), multiplied in double and rounded once.
    std::array<float, 16> view_projection() const;
};

/// Six inward-facing planes and the eye that orders what they see.
struct Frustum {
    /// left, right, bottom, top, near, far. Bottom/top are the image's bottom and top rows
    /// (Vulkan clip y points down: bottom is y_clip <= w, top is -w <= y_clip).
    std::array<Plane, 6> planes;
    Vec3 eye;

    /// Gribb-Hartmann extraction for Vulkan clip space (-w <= x, y <= w, 0 <= z <= w) from a
    /// column-major view-projection matrix; computed in double and normalised. The float
    /// matrix holds the far plane only as the difference of its third and fourth rows, which
    /// cancels as far / near grows: its direction is off by about far / near * 6e-8 radians,
    /// and past ~1.7e7 it is lost (a zero normal, which culls nothing, or a wrong direction,
    /// which may cull what is seen). Prefer from_camera.
    static Frustum from_view_projection(const std::array<float, 16>& m, const Vec3& eye);
    /// The camera's frustum, built from its basis (see "Numerics at the extremes" above).
    /// Errors (invalid_argument) for non-finite values, fovy_deg outside (0, 180), aspect <= 0,
    /// near <= 0, far <= near, eye == target, up parallel to the view, or a plane offset past
    /// the float range.
    static Result<Frustum> from_camera(const Camera& c);
};

/// The camera of a `--camera ex,ey,ez,tx,ty,tz,ux,uy,uz,fovy_deg,aspect,near,far` string
/// (13 comma-separated numbers); errors name what is wrong. Does not check the values.
Result<Camera> parse_camera(const std::string& text);

/// The camera of 13 numbers ex,ey,ez,tx,ty,tz,ux,uy,uz,fovy_deg,aspect,near,far, unchecked.
Camera camera_from_numbers(std::span<const float, 13> v);

/// False only if b lies entirely outside one plane (see the rule at the top of this file).
bool frustum_may_see(const Frustum& f, const Box& b);

/// True when b lies inside every plane: each plane's "negative vertex" (the corner nearest
/// along -normal) has margin >= 0, in float. Then every box inside b is seen (up to rounding).
bool frustum_contains_box(const Frustum& f, const Box& b);

/// Margin of plane `plane` for box b, computed in double: dot(normal, positive vertex) + d.
/// Its sign is frustum_may_see's per-plane decision, up to float rounding.
double frustum_plane_margin(const Frustum& f, const Box& b, int plane);

/// True when float rounding could flip frustum_may_see for b: some plane's margin (in double)
/// is within `relative` of 0, relative to the magnitude |d| + sum |normal_i * p_i| of its terms.
bool frustum_test_ambiguous(const Frustum& f, const Box& b, double relative = 1e-6);

/// Order of a cull's output.
enum class CullOrder {
    exact,   ///< by the distance from the eye to the box ascending, ties by id ascending
    approx,  ///< a method-specific near-to-far-ish order (each method documents its own)
};

/// Ids of the boxes frustum_may_see keeps, in exact order: by point_box_distance(eye, box)
/// (float), distances past the float range (point_box_distance = infinity) by their value in
/// double, then id. The oracle of every culler.
std::vector<std::uint32_t> cull_brute_force(const Frustum& f, std::span<const Box> boxes);

}  // namespace broadphase
