// Camera, frustum extraction and the conservative box test, as numbered scenarios; the
// brute-force cull's exact order; the sphere BVH's cull against brute force; the LBVH cull's
// CPU twin against brute force; the numerics at the extremes (far / near up to the float
// range, an eye far from the origin, the overflow-free distance key of the exact order).
#include "broadphase/frustum.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "broadphase/scene.hpp"
#include "cull_test_util.hpp"
#include "lbvh.hpp"
#include "lbvh_cull.hpp"
#include "sphere_bvh.hpp"

namespace broadphase::testing {
namespace {

// Test 1: a box straight ahead is seen.
TEST(Frustum, BoxInFront) {
    Frustum f = frustum_of(down_z());
    EXPECT_TRUE(frustum_may_see(f, cube(0, 0, 0)));
    EXPECT_TRUE(frustum_contains_box(f, cube(0, 0, 0)));
}

// Test 2: a box behind the eye, or beyond the far plane, is culled.
TEST(Frustum, BoxBehindOrBeyondFar) {
    Frustum f = frustum_of(down_z());
    EXPECT_FALSE(frustum_may_see(f, cube(0, 0, 12)));
    EXPECT_FALSE(frustum_may_see(f, cube(0, 0, -100)));
    EXPECT_TRUE(frustum_may_see(f, cube(0, 0, -89)));
}

// Test 3: boxes straddling each side plane are seen, not contained; just outside is culled.
TEST(Frustum, StraddlingPlanes) {
    Frustum f = frustum_of(down_z());
    // At z = 0 (distance 10) the half-width of a 90-degree square frustum is 10.
    for (Vec3 d : {Vec3{1, 0, 0}, Vec3{-1, 0, 0}, Vec3{0, 1, 0}, Vec3{0, -1, 0}}) {
        Box on = cube(10 * d.x, 10 * d.y, 0);
        EXPECT_TRUE(frustum_may_see(f, on));
        EXPECT_FALSE(frustum_contains_box(f, on));
        EXPECT_FALSE(frustum_may_see(f, cube(12 * d.x, 12 * d.y, 0)));
    }
    // Straddling the near plane (z = 9) and the far plane (z = -90).
    EXPECT_TRUE(frustum_may_see(f, cube(0, 0, 9)));
    EXPECT_FALSE(frustum_contains_box(f, cube(0, 0, 9)));
    EXPECT_TRUE(frustum_may_see(f, cube(0, 0, -90)));
    // Touching a plane counts as seen (closed boxes): the box [9, 10] on z touches near z = 9.
    EXPECT_TRUE(frustum_may_see(f, {{-1, -1, 8}, {1, 1, 9}}));
}

// Test 4: conservative near a frustum edge: outside the frustum but not outside one plane.
TEST(Frustum, ConservativeAtEdges) {
    Frustum f = frustum_of(down_z());
    // Beyond the edge where the left plane (x - z + 10 >= 0) meets the far plane (z >= -90):
    // each plane alone keeps part of the box, but no point of it is inside both.
    Box corner{{-110, -1, -95}, {-101, 1, -85}};
    EXPECT_TRUE(frustum_may_see(f, corner));
}

// Test 5: a camera inside a box sees it, at distance 0.
TEST(Frustum, CameraInsideBox) {
    Frustum f = frustum_of(down_z());
    Box around = cube(0, 0, 10, 2);
    EXPECT_TRUE(frustum_may_see(f, around));
    std::vector<Box> boxes{cube(0, 0, 0), around};
    EXPECT_EQ(cull_brute_force(f, boxes), (std::vector<std::uint32_t>{1, 0}));
}

// Test 6: looking along each axis (both signs) sees the box ahead, not the one behind.
TEST(Frustum, LookingAlongEachAxis) {
    for (int axis = 0; axis < 3; ++axis) {
        for (float sign : {1.0f, -1.0f}) {
            Vec3 dir{};
            dir[axis] = sign;
            Vec3 up = axis == 1 ? Vec3{0, 0, 1} : Vec3{0, 1, 0};
            Camera c{{0, 0, 0}, dir, up, 60, 1.3f, 0.1f, 50};
            Frustum f = frustum_of(c);
            Vec3 ahead{5 * dir.x, 5 * dir.y, 5 * dir.z};
            EXPECT_TRUE(frustum_may_see(f, cube(ahead.x, ahead.y, ahead.z)))
                << "axis " << axis << " sign " << sign;
            EXPECT_FALSE(frustum_may_see(f, cube(-ahead.x, -ahead.y, -ahead.z)))
                << "axis " << axis << " sign " << sign;
        }
    }
}

// Test 7: the frustum from the camera equals the one from its view-projection matrix, and
// the matrix maps the look-at target to the centre of the image at depth in (0, 1).
TEST(Frustum, MatrixMatchesCamera) {
    Camera c{{1, 2, 3}, {-2, 0.5f, -4}, {0, 1, 0}, 55, 1.7f, 0.2f, 40};
    Frustum a = frustum_of(c);
    Frustum b = Frustum::from_view_projection(c.view_projection(), c.eye);
    for (int i = 0; i < 6; ++i) {
        EXPECT_NEAR(a.planes[i].normal.x, b.planes[i].normal.x, 1e-5);
        EXPECT_NEAR(a.planes[i].normal.y, b.planes[i].normal.y, 1e-5);
        EXPECT_NEAR(a.planes[i].normal.z, b.planes[i].normal.z, 1e-5);
        EXPECT_NEAR(a.planes[i].d, b.planes[i].d, 1e-4);
    }
    auto m = c.view_projection();
    auto apply = [&](const Vec3& p) {
        std::array<double, 4> r{};
        for (int row = 0; row < 4; ++row)
            r[row] = m[row] * p.x + m[4 + row] * p.y + m[8 + row] * p.z + m[12 + row];
        return r;
    };
    auto t = apply(c.target);
    EXPECT_NEAR(t[0] / t[3], 0, 1e-5);
    EXPECT_NEAR(t[1] / t[3], 0, 1e-5);
    EXPECT_GT(t[2] / t[3], 0);
    EXPECT_LT(t[2] / t[3], 1);
    // Vulkan y is down: a point above the target (world up) lands at negative clip y.
    auto u = apply({c.target.x, c.target.y + 0.5f, c.target.z});
    EXPECT_LT(u[1] / u[3], 0);
    // The near plane maps to depth 0: its normal points along the view direction.
    Vec3 n = a.planes[4].normal;
    Vec3 dir{c.target.x - c.eye.x, c.target.y - c.eye.y, c.target.z - c.eye.z};
    EXPECT_GT(n.x * dir.x + n.y * dir.y + n.z * dir.z, 0);
}

// Test 8: bad camera parameters are rejected with invalid_argument.
TEST(Frustum, BadParametersRejected) {
    const float nan = std::nanf("");
    std::vector<Camera> bad;
    for (float fov : {0.0f, -10.0f, 180.0f, 200.0f, nan}) {
        Camera c = down_z();
        c.fovy_deg = fov;
        bad.push_back(c);
    }
    for (float aspect : {0.0f, -1.0f, nan, INFINITY}) {
        Camera c = down_z();
        c.aspect = aspect;
        bad.push_back(c);
    }
    for (auto [near, far] : {std::pair{0.0f, 10.0f},
                             {-1.0f, 10.0f},
                             {5.0f, 5.0f},
                             {5.0f, 1.0f},
                             {1.0f, INFINITY},
                             {nan, 10.0f}}) {
        Camera c = down_z();
        c.near = near;
        c.far = far;
        bad.push_back(c);
    }
    Camera same = down_z();
    same.target = same.eye;
    bad.push_back(same);
    Camera parallel = down_z();
    parallel.up = {0, 0, 1};
    bad.push_back(parallel);
    Camera zero_up = down_z();
    zero_up.up = {0, 0, 0};
    bad.push_back(zero_up);
    Camera nan_eye = down_z();
    nan_eye.eye.x = nan;
    bad.push_back(nan_eye);
    for (std::size_t i = 0; i < bad.size(); ++i) {
        auto f = Frustum::from_camera(bad[i]);
        ASSERT_FALSE(f) << "camera " << i << " accepted";
        EXPECT_EQ(f.error().code, ErrorCode::invalid_argument);
    }
}

// Test 9: --camera strings parse, and bad ones are rejected.
TEST(Frustum, ParseCamera) {
    auto c = parse_camera("0,0,10,0,0,0,0,1,0,90,1,1,100");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->eye, (Vec3{0, 0, 10}));
    EXPECT_EQ(c->far, 100);
    EXPECT_FALSE(parse_camera("0,0,10,0,0,0,0,1,0,90,1,1"));
    EXPECT_FALSE(parse_camera("0,0,10,0,0,0,0,1,0,90,1,1,x"));
    EXPECT_FALSE(parse_camera(""));
}

// Test 10: brute force orders by distance from the eye, then id.
TEST(Frustum, BruteForceExactOrder) {
    Frustum f = frustum_of(down_z());
    std::vector<Box> boxes{cube(0, 0, -5), cube(0, 0, 0),  cube(2, 0, 0),
                           cube(0, 0, 20), cube(-2, 0, 0), cube(0, 0, 5)};
    // Distances: 14.5, 9.5, ~9.7 (ids 2 and 4 tie), behind, tie, 4.5.
    EXPECT_EQ(cull_brute_force(f, boxes), (std::vector<std::uint32_t>{5, 1, 2, 4, 0}));
    EXPECT_TRUE(cull_brute_force(f, {}).empty());
}

std::vector<Scene> standard_scenes(std::size_t n) {
    std::vector<Scene> scenes;
    for (const char* g : {"uniform", "clustered", "xline", "yline", "mixed_sizes", "degenerate"}) {
        auto s = generate_scene(g, n);
        EXPECT_TRUE(s) << g;
        if (s) scenes.push_back(std::move(s.value()));
    }
    return scenes;
}

// Test 11: the sphere BVH's cull returns exactly brute force's set, every id once, and its
// leaves in distance order (the approximate order is near-child first).
TEST(Frustum, SphereBvhCullMatchesBruteForce) {
    for (const Scene& scene : standard_scenes(3000)) {
        SphereBvh bvh;
        ASSERT_TRUE(bvh.build(scene.boxes));
        for (const Camera& cam : cameras_for(scene.boxes)) {
            Frustum f = frustum_of(cam);
            std::vector<std::uint32_t> got;
            bvh.cull_front_to_back(f, got);
            std::vector<std::uint32_t> expected = cull_brute_force(f, scene.boxes);
            std::sort(got.begin(), got.end());
            std::sort(expected.begin(), expected.end());
            EXPECT_EQ(got, expected);
        }
    }
    SphereBvh empty;
    ASSERT_TRUE(empty.build({}));
    std::vector<std::uint32_t> none;
    empty.cull_front_to_back(frustum_of(down_z()), none);
    EXPECT_TRUE(none.empty());
}

// Test 12: the LBVH cull's CPU twin (what the GPU computes) against brute force, both orders.
TEST(Frustum, LbvhCullTwinMatchesBruteForce) {
    for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(33), std::size_t(3000)}) {
        for (const Scene& scene : standard_scenes(n)) {
            auto codes = lbvh::compute_codes(scene.boxes, lbvh::CodeKind::morton30);
            auto ids = lbvh::sort_codes(codes);
            auto nodes = lbvh::build_hierarchy(codes, ids);
            lbvh::compute_bounds(nodes, scene.boxes);
            const auto count = static_cast<std::uint32_t>(scene.boxes.size());
            for (const Camera& cam : cameras_for(scene.boxes)) {
                Frustum f = frustum_of(cam);
                auto expected = cull_brute_force(f, scene.boxes);
                auto exact = lbvh::cull(nodes, count, f, CullOrder::exact);
                auto approx = lbvh::cull(nodes, count, f, CullOrder::approx);
                EXPECT_EQ(compare_cull(f, scene.boxes, expected, exact, true), "") << n;
                EXPECT_EQ(compare_cull(f, scene.boxes, expected, approx, false), "") << n;
            }
        }
    }
}

// An LBVH over boxes, as the GPU builds it (the twin's steps).
std::vector<lbvh::LbvhNode> twin_tree(const std::vector<Box>& boxes) {
    auto codes = lbvh::compute_codes(boxes, lbvh::CodeKind::morton30);
    auto ids = lbvh::sort_codes(codes);
    auto nodes = lbvh::build_hierarchy(codes, ids);
    lbvh::compute_bounds(nodes, boxes);
    return nodes;
}

// Test 13: near 1e-3, far 1e15 (far / near = 1e18, past what a view-projection matrix holds
// even in double): the planes are unit, the far plane is -forward at distance far, a box at
// 1e20 is culled, one just inside far is seen and one just beyond it is culled.
TEST(Frustum, FarNearRatio1e18) {
    const Camera c{{0, 0, 0}, {0, 0, -1}, {0, 1, 0}, 60, 1.5f, 1e-3f, 1e15f};
    Frustum f = frustum_of(c);
    for (const Plane& p : f.planes) {
        const double length =
            std::sqrt(double(p.normal.x) * p.normal.x + double(p.normal.y) * p.normal.y +
                      double(p.normal.z) * p.normal.z);
        EXPECT_NEAR(length, 1, 1e-6);
    }
    EXPECT_EQ(f.planes[5].normal, (Vec3{0, 0, 1}));
    EXPECT_EQ(f.planes[5].d, 1e15f);
    EXPECT_EQ(f.planes[4].normal, (Vec3{0, 0, -1}));
    EXPECT_EQ(f.planes[4].d, -1e-3f);
    const Box beyond = cube(0, 0, -1e20f, 1e18f);
    const Box just_inside{{-1e12f, -1e12f, -0.999e15f}, {1e12f, 1e12f, -0.998e15f}};
    const Box just_beyond{{-1e12f, -1e12f, -1.002e15f}, {1e12f, 1e12f, -1.001e15f}};
    EXPECT_FALSE(frustum_may_see(f, beyond));
    EXPECT_TRUE(frustum_may_see(f, just_inside));
    EXPECT_FALSE(frustum_may_see(f, just_beyond));
    EXPECT_TRUE(frustum_may_see(f, cube(0, 0, -1, 0.01f)));           // near 1e-3 still resolved
    EXPECT_FALSE(frustum_may_see(f, {{-1, -1, -5e-4f}, {1, 1, 1}}));  // between eye and near
    for (const Box& b : {beyond, just_inside, just_beyond})
        EXPECT_FALSE(frustum_test_ambiguous(f, b));
    std::vector<Box> boxes{beyond, just_inside, just_beyond};
    EXPECT_EQ(cull_brute_force(f, boxes), (std::vector<std::uint32_t>{1}));
    // The same camera seen through its float view-projection matrix: the far row has cancelled
    // (the reason from_camera builds the planes from the basis).
    Frustum m = Frustum::from_view_projection(c.view_projection(), c.eye);
    EXPECT_TRUE(frustum_may_see(m, beyond));
}

// Test 14: an eye at 1e30 from the origin looking at boxes near it (1e26 ahead, 1e24 wide):
// the box ahead is seen, the ones behind, off to the side and beyond far are culled, none of
// them within rounding of a plane; the far plane still sits at far from the eye.
TEST(Frustum, EyeFarFromOrigin) {
    const Vec3 eye{1e30f, -1e30f, 1e30f};
    const Camera c{eye, {eye.x, eye.y + 1e27f, eye.z}, {0, 0, 1}, 60, 1, 1e-3f, 1e28f};
    Frustum f = frustum_of(c);
    auto at = [&](float dx, float dy, float dz) {
        return cube(eye.x + dx, eye.y + dy, eye.z + dz, 1e24f);
    };
    const Box ahead = at(0, 1e26f, 0), behind = at(0, -1e26f, 0), side = at(1e27f, 1e26f, 0),
              above = at(0, 1e26f, 1e27f), past_far = at(0, 1e29f, 0),
              near_far = at(0, 0.99e28f, 0);
    EXPECT_TRUE(frustum_may_see(f, ahead));
    EXPECT_TRUE(frustum_may_see(f, near_far));
    for (const Box& b : {behind, side, above, past_far}) EXPECT_FALSE(frustum_may_see(f, b));
    for (const Box& b : {ahead, behind, side, above, past_far, near_far})
        EXPECT_FALSE(frustum_test_ambiguous(f, b));
    EXPECT_NEAR(double(f.planes[5].d) + double(f.planes[5].normal.y) * eye.y, 1e28, 1e24);
    std::vector<Box> boxes{past_far, near_far, behind, ahead, side};
    EXPECT_EQ(cull_brute_force(f, boxes), (std::vector<std::uint32_t>{3, 1}));
    // The CPU structures' frustum paths see the same: the sphere BVH and the LBVH twin.
    SphereBvh bvh;
    ASSERT_TRUE(bvh.build(boxes));
    std::vector<std::uint32_t> sphere_seen;
    bvh.cull_front_to_back(f, sphere_seen);
    EXPECT_EQ(sphere_seen, (std::vector<std::uint32_t>{3, 1}));
    EXPECT_EQ(lbvh::cull(twin_tree(boxes), 5, f, CullOrder::exact),
              (std::vector<std::uint32_t>{3, 1}));
}

// Test 15: a plane offset past the float range is rejected with a message; right below it the
// camera is accepted with finite planes.
TEST(Frustum, PlaneOffsetPastFloatRange) {
    Camera c{{3e38f, 0, 0}, {3.1e38f, 0, 0}, {0, 1, 0}, 60, 1, 1, 1e38f};
    auto rejected = Frustum::from_camera(c);
    ASSERT_FALSE(rejected);
    EXPECT_EQ(rejected.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(rejected.error().message.find("float range"), std::string::npos)
        << rejected.error().message;
    c.far = 3e37f;
    Frustum f = frustum_of(c);
    for (const Plane& p : f.planes) EXPECT_TRUE(std::isfinite(p.d));
    EXPECT_TRUE(frustum_may_see(f, cube(3.2e38f, 0, 0, 1e36f)));
    EXPECT_FALSE(frustum_may_see(f, cube(3.35e38f, 0, 0, 1e36f)));
}

// Test 16: boxes at 1e20, 2e20 and 3e20 along the view (their squared distances overflow
// float): brute force and the twin's exact and approximate orders are nearest first.
TEST(Frustum, ExactOrderAtExtremeDistances) {
    const Camera c{{0, 0, 0}, {0, 0, -1}, {0, 1, 0}, 60, 1, 1e-3f, 1e21f};
    Frustum f = frustum_of(c);
    const std::vector<Box> boxes{cube(0, 0, -3e20f, 1e18f), cube(0, 0, -1e20f, 1e18f),
                                 cube(0, 0, -2e20f, 1e18f)};
    const std::vector<std::uint32_t> nearest_first{1, 2, 0};
    EXPECT_EQ(cull_brute_force(f, boxes), nearest_first);
    auto nodes = twin_tree(boxes);
    EXPECT_EQ(lbvh::cull(nodes, 3, f, CullOrder::exact), nearest_first);
    EXPECT_EQ(lbvh::cull(nodes, 3, f, CullOrder::approx), nearest_first);
    SphereBvh bvh;
    ASSERT_TRUE(bvh.build(boxes));
    std::vector<std::uint32_t> sphere_seen;
    bvh.cull_front_to_back(f, sphere_seen);
    EXPECT_EQ(sphere_seen, nearest_first);
}

// Test 17: the distance key orders like the distance in double, over the whole float range:
// on a ray of distances 2^-120 .. 2^126 (and across the origin, gaps up to 2 * FLT_MAX) it is
// strictly increasing; on boxes with log-uniform coordinates in +-[1e-30, 3e38] any two whose
// double distances differ by more than 1e-6 (relative) compare the same way by key; it is 0
// exactly for an eye inside (or touching) the box.
TEST(Frustum, DistanceKeyOrdersLikeDistance) {
    std::uint32_t previous = 0;
    for (int e = -120; e <= 126; ++e) {
        const float d = std::ldexp(1.0f, e);
        const std::uint32_t key = lbvh::cull_distance_key({0, 0, 0}, {d, d / 2, 0}, {2 * d, d, 0});
        EXPECT_GT(key, previous) << "2^" << e;
        previous = key;
    }
    const float big = std::numeric_limits<float>::max();
    const std::uint32_t across = lbvh::cull_distance_key({-big, 0, 0}, {big, 0, 0}, {big, 0, 0});
    const std::uint32_t corner =
        lbvh::cull_distance_key({-big, -big, -big}, {big, big, big}, {big, big, big});
    EXPECT_GT(across, previous);
    EXPECT_GT(corner, across);
    EXPECT_LT(corner, 511u << 23);
    EXPECT_EQ(lbvh::cull_distance_key({1, 2, 3}, {1, 2, 3}, {1, 2, 3}), 0u);
    EXPECT_EQ(lbvh::cull_distance_key({1, 2, 3}, {0, 0, 0}, {4, 5, 6}), 0u);
    EXPECT_EQ(lbvh::cull_distance_key({1, 2, 3}, {1, 2, 3}, {4, 5, 6}), 0u);

    std::mt19937 rng(11);
    std::uniform_real_distribution<float> exponent(-30, 38.5f);
    std::bernoulli_distribution negative(0.5);
    auto coordinate = [&] {
        const float v = std::min(std::pow(10.0f, exponent(rng)), big);
        return negative(rng) ? -v : v;
    };
    auto point = [&] { return Vec3{coordinate(), coordinate(), coordinate()}; };
    std::vector<std::pair<double, std::uint32_t>> keyed;
    const Vec3 eye = point();
    for (int i = 0; i < 4000; ++i) {
        Vec3 a = point(), b = point();
        Box box{{std::min(a.x, b.x), std::min(a.y, b.y), std::min(a.z, b.z)},
                {std::max(a.x, b.x), std::max(a.y, b.y), std::max(a.z, b.z)}};
        keyed.push_back(
            {cull_distance_d(eye, box), lbvh::cull_distance_key(eye, box.min, box.max)});
    }
    std::sort(keyed.begin(), keyed.end());
    // Every key must exceed the largest key of the boxes nearer by more than the tolerance.
    std::size_t nearer = 0;
    std::uint32_t nearer_max = 0;
    std::size_t zeros = 0;
    for (const auto& [d, key] : keyed) {
        while (keyed[nearer].first < d * (1 - kCullTolerance))
            nearer_max = std::max(nearer_max, keyed[nearer++].second);
        if (nearer > 0) {
            ASSERT_GT(key, nearer_max) << "distance " << d;
        }
        zeros += d == 0;
        EXPECT_EQ(d == 0, key == 0u) << "distance " << d;
    }
    EXPECT_GT(zeros, 0u);
    EXPECT_LT(zeros, keyed.size() / 2);
}

}  // namespace
}  // namespace broadphase::testing
