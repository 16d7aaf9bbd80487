// Tests of the core value types: closed-box overlap, containment, merge, and the ray/box slab
// test (ray_box_entry), including axis-parallel rays and non-finite input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "broadphase/types.hpp"

namespace broadphase {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

const Box kUnit{{0, 0, 0}, {1, 1, 1}};

Box shifted(const Box& b, float dx, float dy, float dz) {
    return {{b.min.x + dx, b.min.y + dy, b.min.z + dz}, {b.max.x + dx, b.max.y + dy, b.max.z + dz}};
}

TEST(Overlaps, OverlappingAndSeparatedOnEachAxis) {
    EXPECT_TRUE(overlaps(kUnit, shifted(kUnit, 0.5f, 0.5f, 0.5f)));
    EXPECT_FALSE(overlaps(kUnit, shifted(kUnit, 1.5f, 0, 0)));
    EXPECT_FALSE(overlaps(kUnit, shifted(kUnit, 0, -1.5f, 0)));
    EXPECT_FALSE(overlaps(kUnit, shifted(kUnit, 0, 0, 1.5f)));
}

TEST(Overlaps, TouchingFacesEdgesAndCornersCount) {
    EXPECT_TRUE(overlaps(kUnit, shifted(kUnit, 1, 0, 0)));     // face
    EXPECT_TRUE(overlaps(kUnit, shifted(kUnit, 0, -1, 0)));    // face, other side
    EXPECT_TRUE(overlaps(kUnit, shifted(kUnit, 1, 1, 0)));     // edge
    EXPECT_TRUE(overlaps(kUnit, shifted(kUnit, 1, 1, 1)));     // corner
    EXPECT_TRUE(overlaps(kUnit, shifted(kUnit, -1, -1, -1)));  // corner, other side
    EXPECT_FALSE(overlaps(kUnit, shifted(kUnit, std::nextafter(1.0f, 2.0f), 0, 0)));
}

TEST(Overlaps, IsSymmetricAndReflexive) {
    const Box b = shifted(kUnit, 0.25f, 1.0f, -0.5f);
    EXPECT_EQ(overlaps(kUnit, b), overlaps(b, kUnit));
    EXPECT_TRUE(overlaps(b, b));
}

TEST(Overlaps, ZeroVolumeBoxes) {
    const Box point{{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}};
    const Box corner{{1, 1, 1}, {1, 1, 1}};
    const Box flat{{0, 0, 1}, {1, 1, 1}};  // the top face of kUnit
    EXPECT_TRUE(overlaps(point, point));
    EXPECT_TRUE(overlaps(kUnit, point));
    EXPECT_TRUE(overlaps(kUnit, corner));
    EXPECT_TRUE(overlaps(kUnit, flat));
    EXPECT_TRUE(overlaps(flat, corner));
    EXPECT_FALSE(overlaps(point, corner));
}

TEST(Overlaps, ContainedBox) {
    const Box inner{{0.25f, 0.25f, 0.25f}, {0.75f, 0.75f, 0.75f}};
    EXPECT_TRUE(overlaps(kUnit, inner));
    EXPECT_TRUE(overlaps(inner, kUnit));
}

TEST(Contains, InsideBoundaryAndOutside) {
    EXPECT_TRUE(contains(kUnit, {0.5f, 0.5f, 0.5f}));
    EXPECT_TRUE(contains(kUnit, {0, 0, 0}));
    EXPECT_TRUE(contains(kUnit, {1, 1, 1}));
    EXPECT_TRUE(contains(kUnit, {1, 0.5f, 0}));
    EXPECT_FALSE(contains(kUnit, {1.001f, 0.5f, 0.5f}));
    EXPECT_FALSE(contains(kUnit, {0.5f, -0.001f, 0.5f}));
    EXPECT_FALSE(contains(kUnit, {0.5f, 0.5f, 2}));
    EXPECT_FALSE(contains(kUnit, {kNaN, 0.5f, 0.5f}));
}

TEST(Merge, SmallestEnclosingBox) {
    const Box a{{0, 1, 2}, {1, 2, 3}};
    const Box b{{-1, 1.5f, 5}, {0.5f, 4, 6}};
    const Box m = merge(a, b);
    EXPECT_EQ(m, (Box{{-1, 1, 2}, {1, 4, 6}}));
    EXPECT_EQ(merge(b, a), m);
    EXPECT_EQ(merge(a, a), a);
}

// Ray tests, numbered as scenarios.

TEST(RayBoxEntry, Test1HitFromTheLeft) {
    const Ray ray{{-2, 0.5f, 0.5f}, {1, 0, 0}, 10};
    const auto t = ray_box_entry(ray, kUnit);
    ASSERT_TRUE(t);
    EXPECT_FLOAT_EQ(*t, 2);
}

TEST(RayBoxEntry, Test2HitFromTheRightWithUnnormalisedDirection) {
    const Ray ray{{5, 0.5f, 0.5f}, {-2, 0, 0}, 10};
    const auto t = ray_box_entry(ray, kUnit);
    ASSERT_TRUE(t);
    EXPECT_FLOAT_EQ(*t, 2);  // t is in units of dir: 5 - 2 * 2 = 1
}

TEST(RayBoxEntry, Test3DiagonalHit) {
    const Ray ray{{-1, -1, -1}, {1, 1, 1}, 10};
    const auto t = ray_box_entry(ray, kUnit);
    ASSERT_TRUE(t);
    EXPECT_FLOAT_EQ(*t, 1);
}

TEST(RayBoxEntry, Test4OriginInsideGivesZero) {
    const Ray ray{{0.5f, 0.5f, 0.5f}, {0.3f, -0.2f, 1}, 10};
    const auto t = ray_box_entry(ray, kUnit);
    ASSERT_TRUE(t);
    EXPECT_EQ(*t, 0);
}

TEST(RayBoxEntry, Test5OriginOnBoundaryGivesZero) {
    const Ray ray{{0, 0.5f, 0.5f}, {-1, 0, 0}, 10};  // pointing away, but starts on the face
    const auto t = ray_box_entry(ray, kUnit);
    ASSERT_TRUE(t);
    EXPECT_EQ(*t, 0);
}

TEST(RayBoxEntry, Test6BoxBehindTheRayMisses) {
    EXPECT_FALSE(ray_box_entry({{3, 0.5f, 0.5f}, {1, 0, 0}, 100}, kUnit));
    EXPECT_FALSE(ray_box_entry({{-3, -3, -3}, {-1, -1, -1}, 100}, kUnit));
}

TEST(RayBoxEntry, Test7TmaxLimitsTheRay) {
    const Ray ray{{-2, 0.5f, 0.5f}, {1, 0, 0}, 1.5f};
    EXPECT_FALSE(ray_box_entry(ray, kUnit));
    EXPECT_TRUE(ray_box_entry({ray.origin, ray.dir, 2.0f}, kUnit));  // entry exactly at tmax
    EXPECT_FALSE(ray_box_entry({ray.origin, ray.dir, -1.0f}, kUnit));
    EXPECT_TRUE(ray_box_entry({{0.5f, 0.5f, 0.5f}, ray.dir, 0.0f}, kUnit));  // inside, tmax 0
}

TEST(RayBoxEntry, Test8AxisParallelRayInsideSlab) {
    // dir.y = dir.z = 0: the origin's y and z must lie within the box's.
    const auto t = ray_box_entry({{-1, 0.25f, 0.75f}, {1, 0, 0}, 10}, kUnit);
    ASSERT_TRUE(t);
    EXPECT_FLOAT_EQ(*t, 1);
}

TEST(RayBoxEntry, Test9AxisParallelRayOutsideSlabMisses) {
    EXPECT_FALSE(ray_box_entry({{-1, 1.5f, 0.5f}, {1, 0, 0}, 10}, kUnit));
    EXPECT_FALSE(ray_box_entry({{-1, 0.5f, -0.5f}, {1, 0, 0}, 10}, kUnit));
    EXPECT_FALSE(ray_box_entry({{0.5f, 0.5f, 2}, {0, 1, 0}, 10}, kUnit));
}

TEST(RayBoxEntry, Test10AxisParallelRayAlongAFaceHits) {
    // The origin lies exactly in the plane y = 1 (the box's top face): closed boxes, a hit.
    const auto t = ray_box_entry({{-1, 1, 0.5f}, {1, 0, 0}, 10}, kUnit);
    ASSERT_TRUE(t);
    EXPECT_FLOAT_EQ(*t, 1);
    // Along an edge (y = 1 and z = 0).
    EXPECT_TRUE(ray_box_entry({{-1, 1, 0}, {1, 0, 0}, 10}, kUnit));
    // Negative zero direction components behave like zero.
    EXPECT_TRUE(ray_box_entry({{-1, 1, 0}, {1, -0.0f, -0.0f}, 10}, kUnit));
}

TEST(RayBoxEntry, Test11OriginOnSlabPlaneWithTinyDirectionHasNoNaN) {
    // With reciprocals, 1 / 1e-45 = inf and (min - origin) * inf = 0 * inf = NaN here.
    const float tiny = std::numeric_limits<float>::denorm_min();
    const auto t = ray_box_entry({{-1, 0, 0.5f}, {1, tiny, 0}, 10}, kUnit);
    ASSERT_TRUE(t);
    EXPECT_FLOAT_EQ(*t, 1);
}

TEST(RayBoxEntry, Test12RayGrazingAnEdgeHits) {
    // The line x - z = 1 meets the box only along its edge x = 1, z = 0.
    const auto t = ray_box_entry({{2, 0.5f, 1}, {-1, 0, -1}, 10}, kUnit);
    ASSERT_TRUE(t);
    EXPECT_FLOAT_EQ(*t, 1);
    EXPECT_FALSE(ray_box_entry({{2.01f, 0.5f, 1}, {-1, 0, -1}, 10}, kUnit));
}

TEST(RayBoxEntry, Test13ZeroVolumeBoxes) {
    const Box point{{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}};
    const auto t = ray_box_entry({{0, 0.5f, 0.5f}, {1, 0, 0}, 10}, point);
    ASSERT_TRUE(t);
    EXPECT_FLOAT_EQ(*t, 0.5f);
    const Box flat{{0, 0, 2}, {1, 1, 2}};
    const auto t2 = ray_box_entry({{0.5f, 0.5f, 0}, {0, 0, 1}, 10}, flat);
    ASSERT_TRUE(t2);
    EXPECT_FLOAT_EQ(*t2, 2);
}

TEST(RayBoxEntry, Test14ZeroDirectionIsAPointTest) {
    EXPECT_TRUE(ray_box_entry({{0.5f, 0.5f, 0.5f}, {0, 0, 0}, 10}, kUnit));
    EXPECT_FALSE(ray_box_entry({{1.5f, 0.5f, 0.5f}, {0, 0, 0}, 10}, kUnit));
}

TEST(RayBoxEntry, Test15InfiniteTmax) {
    const auto t = ray_box_entry({{-1e30f, 0.5f, 0.5f}, {1, 0, 0}, kInf}, kUnit);
    ASSERT_TRUE(t);
    EXPECT_FLOAT_EQ(*t, 1e30f);
}

TEST(RayBoxEntry, Test16NonFiniteInputNeverHits) {
    EXPECT_FALSE(ray_box_entry({{kNaN, 0.5f, 0.5f}, {1, 0, 0}, 10}, kUnit));
    EXPECT_FALSE(ray_box_entry({{kNaN, 0.5f, 0.5f}, {0, 1, 0}, 10}, kUnit));
    EXPECT_FALSE(ray_box_entry({{-1, 0.5f, 0.5f}, {kNaN, 0, 0}, 10}, kUnit));
    EXPECT_FALSE(ray_box_entry({{-1, 0.5f, 0.5f}, {1, 0, 0}, kNaN}, kUnit));
    EXPECT_FALSE(ray_box_entry({{-1, 0.5f, 0.5f}, {1, 0, 0}, 10}, {{kNaN, 0, 0}, {1, 1, 1}}));
}

// Test 17: value() on an error stops with the library's message and code, as std::expected's
// bad_expected_access carries its error; `*` and `->` too; a checked Result reads as before.
TEST(ResultAccess, Test17ValueOfAnErrorCarriesItsMessage) {
    Result<int> bad = Error{ErrorCode::invalid_argument, "unknown CPU method 'sweep_and_prun'"};
    try {
        (void)bad.value();
        FAIL() << "value() of an error returned";
    } catch (const BadResultAccess& e) {
        EXPECT_STREQ(e.what(), "unknown CPU method 'sweep_and_prun' [invalid_argument]");
        EXPECT_EQ(e.error().code, ErrorCode::invalid_argument);
        EXPECT_EQ(e.error().message, "unknown CPU method 'sweep_and_prun'");
    }
    EXPECT_THROW((void)*bad, BadResultAccess);
    Result<std::string> none = Error{ErrorCode::io_error, "cannot open 'x'"};
    EXPECT_THROW((void)none->size(), BadResultAccess);
    EXPECT_THROW((void)std::move(none).value(), BadResultAccess);
    Result<int> good = 7;
    ASSERT_TRUE(good);
    EXPECT_EQ(good.value(), 7);
    EXPECT_EQ(*good, 7);
    EXPECT_STREQ(error_code_name(ErrorCode::limit_exceeded), "limit_exceeded");
}

}  // namespace
}  // namespace broadphase
