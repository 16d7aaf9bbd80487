// The depth pyramid and the hierarchical-Z occlusion test (include/broadphase/occlusion.hpp) as
// numbered scenarios: level sizes and the exact max property, occluded() against a brute force
// over every level-0 texel the box's screen rectangle covers (it never culls what the brute
// force sees), a wall in front of boxes, the eye plane, and the depth file format.
#include "broadphase/occlusion.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "broadphase/frustum.hpp"
#include "cull_test_util.hpp"
#include "occlusion_test_util.hpp"

namespace broadphase::testing {
namespace {

DepthPyramid pyramid_of(std::uint32_t w, std::uint32_t h, const std::vector<float>& depth) {
    auto p = DepthPyramid::build(w, h, depth);
    EXPECT_TRUE(p) << (p ? "" : p.error().message);
    return p ? p.value() : DepthPyramid::build(1, 1, std::vector<float>{1.0f}).value();
}

std::vector<float> random_image(std::uint32_t w, std::uint32_t h, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<float> d(std::size_t(w) * h);
    for (float& v : d) v = u(rng);
    return d;
}

// Test 1: level sizes halve rounding up down to 1x1, packed one after another.
TEST(OcclusionPyramid, LevelSizesAndLayout) {
    std::mt19937 rng(1);
    const std::pair<std::uint32_t, std::uint32_t> sizes[] = {
        {1, 1}, {1, 7}, {7, 1}, {2, 2}, {8, 8}, {5, 3}, {6, 10}, {17, 2}, {64, 33}, {1, 100}};
    for (auto [w, h] : sizes) {
        SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
        const DepthPyramid p = pyramid_of(w, h, random_image(w, h, rng));
        const std::uint32_t longest = std::max(w, h);
        const std::size_t expected_levels = 1 + std::bit_width(longest - 1);  // 1 + ceil(log2)
        ASSERT_EQ(p.level_count(), expected_levels);
        std::uint32_t offset = 0;
        for (std::size_t k = 0; k < p.level_count(); ++k) {
            const std::uint32_t scale = 1u << k;
            EXPECT_EQ(p.level(k).width, (w + scale - 1) / scale);
            EXPECT_EQ(p.level(k).height, (h + scale - 1) / scale);
            EXPECT_EQ(p.level(k).offset, offset);
            offset += p.level(k).width * p.level(k).height;
        }
        EXPECT_EQ(p.texels().size(), offset);
        EXPECT_EQ(p.level(p.level_count() - 1).width, 1u);
        EXPECT_EQ(p.level(p.level_count() - 1).height, 1u);
        EXPECT_EQ(p.image().size(), std::size_t(w) * h);
    }
}

// Test 2: every texel of every level is exactly the max of the level-0 texels it covers
// (x0 >> k == x, y0 >> k == y), on random images of odd, even and 1xN sizes.
TEST(OcclusionPyramid, TexelIsMaxOfCoveredDepths) {
    std::mt19937 rng(2);
    for (int trial = 0; trial < 40; ++trial) {
        const std::uint32_t w = 1 + std::uint32_t(rng() % 40), h = 1 + std::uint32_t(rng() % 40);
        const std::vector<float> image = random_image(w, h, rng);
        const DepthPyramid p = pyramid_of(w, h, image);
        for (std::size_t k = 0; k < p.level_count(); ++k) {
            std::vector<float> expected(std::size_t(p.level(k).width) * p.level(k).height, 0.0f);
            for (std::uint32_t y = 0; y < h; ++y) {
                for (std::uint32_t x = 0; x < w; ++x) {
                    float& e = expected[std::size_t(y >> k) * p.level(k).width + (x >> k)];
                    e = std::max(e, image[std::size_t(y) * w + x]);
                }
            }
            for (std::uint32_t y = 0; y < p.level(k).height; ++y) {
                for (std::uint32_t x = 0; x < p.level(k).width; ++x) {
                    ASSERT_EQ(p.texel(k, x, y), expected[std::size_t(y) * p.level(k).width + x])
                        << w << "x" << h << " level " << k << " texel " << x << "," << y;
                }
            }
        }
    }
}

// Test 3: a depth that is not finite or outside [0, 1] is refused, naming its pixel; so are
// a wrong span length and sizes outside 1..kMaxDepthImageSize.
TEST(OcclusionPyramid, RejectsBadDepths) {
    for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                      std::numeric_limits<float>::infinity(), -0.25f, 1.5f}) {
        std::vector<float> d(12, 0.5f);
        d[2 * 4 + 3] = bad;  // pixel (3, 2) of a 4 x 3 image
        const auto p = DepthPyramid::build(4, 3, d);
        ASSERT_FALSE(p);
        EXPECT_NE(p.error().message.find("pixel (3, 2)"), std::string::npos) << p.error().message;
    }
    EXPECT_TRUE(DepthPyramid::build(2, 1, std::vector<float>{0.0f, 1.0f}));
    EXPECT_FALSE(DepthPyramid::build(4, 3, std::vector<float>(11, 0.5f)));
    EXPECT_FALSE(DepthPyramid::build(0, 3, std::vector<float>{}));
    EXPECT_FALSE(DepthPyramid::build(kMaxDepthImageSize + 1, 1,
                                     std::vector<float>(kMaxDepthImageSize + 1, 0.5f)));
}

// Test 4: on random blocky depth images and random boxes, occluded() never culls a box that
// the brute force over level 0 keeps, and does cull some.
TEST(Occlusion, NeverCullsWhatBruteForceKeeps) {
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::size_t culled = 0, brute_culled = 0, tested = 0;
    for (int trial = 0; trial < 30; ++trial) {
        const std::uint32_t w = 8 + std::uint32_t(rng() % 57), h = 8 + std::uint32_t(rng() % 57);
        // 8x8-pixel blocks at a depth between 0.85 and 1 (distances ~6.6 to 100), a little noise.
        std::vector<float> image(std::size_t(w) * h);
        std::vector<float> block(((w + 7) / 8) * ((h + 7) / 8));
        for (float& b : block) b = 0.85f + 0.15f * unit(rng);
        for (std::uint32_t y = 0; y < h; ++y) {
            for (std::uint32_t x = 0; x < w; ++x) {
                const float v = block[(y / 8) * ((w + 7) / 8) + x / 8] + 0.002f * unit(rng);
                image[std::size_t(y) * w + x] = std::min(v, 1.0f);
            }
        }
        const DepthPyramid p = pyramid_of(w, h, image);
        Camera c = down_z();
        c.aspect = float(w) / float(h);
        c.eye = {unit(rng) * 4 - 2, unit(rng) * 4 - 2, 10};
        c.target = {c.eye.x + unit(rng) - 0.5f, c.eye.y + unit(rng) - 0.5f, 0};
        const auto m = c.view_projection();
        for (int i = 0; i < 400; ++i) {
            const Box b = cube(unit(rng) * 40 - 20, unit(rng) * 40 - 20, unit(rng) * 100 - 85,
                               0.05f + 3 * unit(rng) * unit(rng));
            const bool o = occluded(p, m, b), brute = brute_occluded(p, m, b);
            ASSERT_TRUE(!o || brute) << "trial " << trial << " box " << i;
            culled += o;
            brute_culled += brute;
            ++tested;
        }
    }
    // Seed 4: 8181 occluded, 8187 by the brute force, of 12000: reading a coarser level
    // loses few culls.
    RecordProperty("occluded", int(culled));
    RecordProperty("brute_occluded", int(brute_culled));
    EXPECT_GT(culled, tested / 20);
    EXPECT_GE(culled * 10, brute_culled * 9);
    EXPECT_LT(brute_culled, tested);
}

// Test 5: against a constant depth image the test agrees with the brute force (occluded iff the
// nearest corner is strictly behind it) wherever the box is not within the rounding margin of
// the rule's step 3 (no box of this draw is).
TEST(Occlusion, ConstantDepthIsExact) {
    const auto m = down_z().view_projection();
    const float wall = float(depth_of(m, {0, 0, 0}));  // the depth of the plane z = 0
    const DepthPyramid p = pyramid_of(16, 16, std::vector<float>(256, wall));
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-30.0f, 9.0f);
    int both = 0;
    for (int i = 0; i < 2000; ++i) {
        const Box b = cube(u(rng) * 0.5f, u(rng) * 0.5f, u(rng), 0.5f);
        const bool o = occluded(p, m, b);
        EXPECT_EQ(o, brute_occluded(p, m, b)) << i;
        both += o;
    }
    EXPECT_GT(both, 0);
    EXPECT_FALSE(occluded(p, m, cube(0, 0, 0.5f, 0.5f)));  // its far face on the wall: equal
    EXPECT_TRUE(occluded(p, m, cube(0, 0, -0.6f, 0.5f)));
}

// Test 6: a wall filling the middle of the image (depth of the plane z = 0, background far)
// hides boxes behind it, not boxes in front of it or beside it.
TEST(Occlusion, WallHidesBoxesBehindIt) {
    const auto m = down_z().view_projection();
    const float wall = float(depth_of(m, {0, 0, 0}));
    const std::uint32_t n = 64;
    std::vector<float> image(n * n, 1.0f);
    for (std::uint32_t y = 16; y < 48; ++y) {
        for (std::uint32_t x = 16; x < 48; ++x) image[y * n + x] = wall;  // world x, y in [-5, 5)
    }
    const DepthPyramid p = pyramid_of(n, n, image);
    EXPECT_TRUE(occluded(p, m, cube(0, 0, -10, 1)));
    EXPECT_TRUE(occluded(p, m, cube(3, -3, -2, 0.5f)));
    EXPECT_TRUE(occluded(p, m, cube(-4, 4, -0.2f, 0.1f)));
    EXPECT_FALSE(occluded(p, m, cube(0, 0, 3, 0.5f)));   // in front of the wall
    EXPECT_FALSE(occluded(p, m, cube(0, 0, 0, 0.5f)));   // through the wall
    EXPECT_FALSE(occluded(p, m, cube(15, 0, -10, 1)));   // beside it
    EXPECT_FALSE(occluded(p, m, cube(0, -12, -10, 1)));  // below it
    // Half behind, half beside: at distance ~20 the wall's edge, x = 5 at distance 10, is x = 10.
    EXPECT_FALSE(occluded(p, m, cube(10, 0, -10, 1.5f)));
    EXPECT_TRUE(occluded(p, m, cube(7, 0, -10, 1.5f)));  // x up to 8.5 at distance >= 18.5
    // Past the far plane a box's depth is > 1: behind every depth, so occluded even beside
    // the wall (the frustum cull removes it anyway).
    EXPECT_TRUE(occluded(p, m, cube(0, 0, -95, 1)));
    EXPECT_TRUE(occluded(p, m, cube(60, 0, -95, 1)));
    for (const Box& b : {cube(0, 0, -10, 1), cube(15, 0, -10, 1), cube(0, 0, 3, 0.5f)}) {
        EXPECT_EQ(occluded(p, m, b), brute_occluded(p, m, b));
    }
}

// Test 7: a box crossing or behind the eye plane is never occluded, even behind depth 0.
TEST(Occlusion, EyePlaneIsNeverOccluded) {
    const auto m = down_z().view_projection();
    const DepthPyramid p = pyramid_of(8, 8, std::vector<float>(64, 0.0f));
    EXPECT_TRUE(occluded(p, m, cube(0, 0, -10, 1)));  // depth 0 everywhere hides what is ahead
    EXPECT_FALSE(occluded(p, m, cube(0, 0, 10, 1)));  // crosses the eye plane
    EXPECT_FALSE(occluded(p, m, cube(0, 0, 10.5f, 0.5f)));  // touches it (w = 0)
    EXPECT_FALSE(occluded(p, m, cube(0, 0, 20, 1)));        // wholly behind the eye
    EXPECT_FALSE(occluded(p, m, cube(0, 0, 9.5f, 0.2f)));   // nearer than the near plane: z < 0
    const float huge = std::numeric_limits<float>::max();
    EXPECT_FALSE(occluded(p, m, {{-huge, -huge, -huge}, {huge, huge, -20}}));  // overflows
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::path(::testing::TempDir()) / name).string();
}

// Test 8: a written depth file reads back bit for bit.
TEST(OcclusionDepthFile, RoundTripIsBitExact) {
    std::mt19937 rng(8);
    std::vector<float> image = random_image(13, 7, rng);
    image[0] = 0.0f;
    image[1] = 1.0f;
    image[2] = std::numeric_limits<float>::denorm_min();
    image[3] = std::nextafter(1.0f, 0.0f);
    image[4] = -0.0f;
    const DepthPyramid p = pyramid_of(13, 7, image);
    const std::string path = temp_path("broadphase_depth_round_trip.txt");
    ASSERT_TRUE(write_depth_file(path, p));
    const auto back = read_depth_file(path);
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->width(), 13u);
    ASSERT_EQ(back->height(), 7u);
    ASSERT_EQ(back->texels().size(), p.texels().size());
    EXPECT_EQ(std::memcmp(back->texels().data(), p.texels().data(), p.texels().size() * 4), 0);
    EXPECT_FALSE(read_depth_file(temp_path("broadphase_no_such_depth_file.txt")));
    const auto directory = read_depth_file(::testing::TempDir());
    ASSERT_FALSE(directory);
    EXPECT_EQ(directory.error().code, ErrorCode::io_error);
    EXPECT_FALSE(read_depth_file("/dev/zero"));
}

// Test 9: any number of depths per line is read; malformed files name the line.
TEST(OcclusionDepthFile, MalformedFilesNameTheLine) {
    const auto ok = parse_depth_text("broadphase-depth 3 2\n0 0.5 1\n\n0.25\n0.75 1e-3\n");
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_EQ(ok->texel(0, 2, 0), 1.0f);
    EXPECT_EQ(ok->texel(0, 2, 1), 1e-3f);
    EXPECT_EQ(ok->texel(1, 0, 0), 0.75f);  // max of 0, 0.5, 0.25, 0.75
    EXPECT_EQ(ok->texel(1, 1, 0), 1.0f);   // max of 1, 1e-3 (an odd edge)
    struct Case {
        const char* text;
        std::size_t line;
        const char* says;
    };
    const Case cases[] = {
        {"", 1, "header"},
        {"broadphase-dept 2 2\n0 0 0 0\n", 1, "header"},
        {"broadphase-depth 0 2\n", 1, "header"},
        {"broadphase-depth 2\n0 0\n", 1, "header"},
        {"broadphase-depth 2 2 0\n0 0 0\n", 1, "header"},
        {"broadphase-depth 2 x\n", 1, "header"},
        {"broadphase-depth 2 2\n0 0\n0\n", 3, "ends after 3 of the 4"},
        {"broadphase-depth 2 2\n0 0\n0 0 0\n", 3, "more than the 4"},
        {"broadphase-depth 2 2\n0 0\nnan 0\n", 3, "pixel (0, 1)"},
        {"broadphase-depth 2 2\n0 1.5\n0 0\n", 2, "pixel (1, 0)"},
        {"broadphase-depth 2 2\n0 -0.1\n0 0\n", 2, "not a finite depth"},
        {"broadphase-depth 2 2\n0 0\n0 inf\n", 3, "pixel (1, 1)"},
        {"broadphase-depth 2 2\n0 0\n0 abc\n", 3, "not a number"},
        {"broadphase-depth 2 2\n0 0,\n0 0\n", 2, "not a number"},
    };
    for (const Case& c : cases) {
        const auto r = parse_depth_text(c.text, "d.txt");
        ASSERT_FALSE(r) << c.text;
        EXPECT_EQ(r.error().code, ErrorCode::parse_error) << c.text;
        EXPECT_EQ(r.error().line, c.line) << c.text << ": " << r.error().message;
        EXPECT_NE(r.error().message.find("d.txt:" + std::to_string(c.line) + ": "),
                  std::string::npos)
            << r.error().message;
        EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
    }
}

}  // namespace
}  // namespace broadphase::testing
