// Camera, frustum extraction and the conservative box test, as numbered scenarios; the
// brute-force cull's exact order; the sphere BVH's cull against brute force; the LBVH cull's
// CPU twin against brute force.
#include "broadphase/frustum.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "broadphase/scene.hpp"
#include "cull_test_util.hpp"
#include "lbvh.hpp"
#include "lbvh_cull.hpp"
#include "sphere_bvh.hpp"

namespace broadphase::testing {
namespace {

// Looking down -z from (0, 0, 10): 90 degrees vertical, square, near 1, far 100.
Camera down_z() {
    return {{0, 0, 10}, {0, 0, 0}, {0, 1, 0}, 90, 1, 1, 100};
}

Frustum frustum_of(const Camera& c) {
    auto f = Frustum::from_camera(c);
    EXPECT_TRUE(f) << (f ? "" : f.error().message);
    return f ? f.value() : Frustum{};
}

Box cube(float x, float y, float z, float h = 0.5f) {
    return {{x - h, y - h, z - h}, {x + h, y + h, z + h}};
}

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

}  // namespace
}  // namespace broadphase::testing
