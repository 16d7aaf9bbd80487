// Tests of scenes: box validation messages, the standard generators (counts, validity,
// determinism, the properties each one promises, pair density) and `name:count[:seed]` specs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "broadphase/scene.hpp"

namespace broadphase {
namespace {

constexpr float kInfinity = std::numeric_limits<float>::infinity();
constexpr float kQuietNaN = std::numeric_limits<float>::quiet_NaN();

const Box kUnitBox{{0, 0, 0}, {1, 1, 1}};

std::size_t brute_force_pair_count(const std::vector<Box>& boxes) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        for (std::size_t j = i + 1; j < boxes.size(); ++j) count += overlaps(boxes[i], boxes[j]);
    }
    return count;
}

float volume(const Box& b) {
    return (b.max.x - b.min.x) * (b.max.y - b.min.y) * (b.max.z - b.min.z);
}

// Validation.

TEST(ValidateBox, AcceptsOrdinaryAndZeroVolumeBoxes) {
    EXPECT_TRUE(validate_box(kUnitBox, 0));
    EXPECT_TRUE(validate_box({{1, 2, 3}, {1, 2, 3}}, 0));
    EXPECT_TRUE(validate_box({{-1e30f, -0.0f, 0}, {1e30f, 0.0f, 0}}, 0));
    EXPECT_TRUE(validate_boxes({}));
}

TEST(ValidateBox, NamesTheBoxAndCoordinateForNaN) {
    const char* names[] = {"min.x", "min.y", "min.z", "max.x", "max.y", "max.z"};
    for (int k = 0; k < 6; ++k) {
        Box b = kUnitBox;
        (k < 3 ? b.min : b.max)[k % 3] = kQuietNaN;
        const Status s = validate_box(b, 4);
        ASSERT_FALSE(s) << k;
        EXPECT_EQ(s.error().code, ErrorCode::invalid_box);
        EXPECT_EQ(s.error().message, std::string("box 4: ") + names[k] + " is NaN");
        EXPECT_EQ(s.error().box, 4u);
    }
}

TEST(ValidateBox, NamesTheBoxAndCoordinateForInfinity) {
    const char* names[] = {"min.x", "min.y", "min.z", "max.x", "max.y", "max.z"};
    for (int k = 0; k < 6; ++k) {
        for (float value : {kInfinity, -kInfinity}) {
            Box b = kUnitBox;
            (k < 3 ? b.min : b.max)[k % 3] = value;
            const Status s = validate_box(b, 12);
            ASSERT_FALSE(s) << k;
            EXPECT_EQ(s.error().code, ErrorCode::invalid_box);
            EXPECT_EQ(s.error().message, std::string("box 12: ") + names[k] + " is infinite (" +
                                             (value > 0 ? "inf" : "-inf") + ")");
            EXPECT_EQ(s.error().box, 12u);
        }
    }
}

TEST(ValidateBox, NamesTheAxisForMinGreaterThanMax) {
    const std::string axes = "xyz";
    for (int axis = 0; axis < 3; ++axis) {
        Box b = kUnitBox;
        b.min[axis] = 3;
        b.max[axis] = 2;
        const Status s = validate_box(b, 17);
        ASSERT_FALSE(s);
        EXPECT_EQ(s.error().code, ErrorCode::invalid_box);
        const std::string a(1, axes[static_cast<std::size_t>(axis)]);
        EXPECT_EQ(s.error().message, "box 17: min." + a + " (3) > max." + a + " (2)");
        EXPECT_EQ(s.error().box, 17u);
    }
}

TEST(ValidateBox, PrintsCoordinatesExactly) {
    const Status s = validate_box({{0.1f, 0, 0}, {0.099999994f, 1, 1}}, 0);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().message, "box 0: min.x (0.1) > max.x (0.099999994)");
}

// validate_box tests a box before it builds any message: on every axis, for every pair of edge
// values (infinities, the largest finite floats, denormals, signed zeros, NaN), it accepts
// exactly the boxes with finite coordinates and min <= max, and names the box otherwise.
TEST(ValidateBox, AcceptsExactlyFiniteOrderedBoxesAtTheEdges) {
    constexpr float kMax = std::numeric_limits<float>::max();
    constexpr float kDenorm = std::numeric_limits<float>::denorm_min();
    const float values[] = {-kInfinity, -kMax, -1.0f, -kDenorm,  -0.0f,    0.0f,
                            kDenorm,    1.0f,  kMax,  kInfinity, kQuietNaN};
    for (int axis = 0; axis < 3; ++axis) {
        for (float lo : values) {
            for (float hi : values) {
                Box b = kUnitBox;
                b.min[axis] = lo;
                b.max[axis] = hi;
                const bool valid = std::isfinite(lo) && std::isfinite(hi) && !(lo > hi);
                const Status s = validate_box(b, 9);
                EXPECT_EQ(bool(s), valid) << "axis " << axis << ": " << lo << ", " << hi;
                if (!s) {
                    EXPECT_EQ(s.error().box, 9u);
                    EXPECT_EQ(s.error().message.rfind("box 9: ", 0), 0u) << s.error().message;
                }
            }
        }
    }
}

TEST(ValidateBoxes, ReportsTheFirstBadBox) {
    std::vector<Box> boxes(10, kUnitBox);
    boxes[6].max.y = kQuietNaN;
    boxes[8].min.z = 5;
    const Status s = validate_boxes(boxes);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().box, 6u);
    EXPECT_EQ(s.error().message, "box 6: max.y is NaN");
}

// Generators.

TEST(Generators, NamesInOrder) {
    const std::vector<std::string_view> expected = {"uniform", "clustered",   "xline",
                                                    "yline",   "mixed_sizes", "degenerate",
                                                    "level",   "multiscale"};
    EXPECT_EQ(generator_names(), expected);
}

class EveryGenerator : public ::testing::TestWithParam<std::string_view> {};

TEST_P(EveryGenerator, RightCountValidAndDeterministic) {
    for (std::size_t n : {0u, 1u, 2u, 3u, 5u, 7u, 10u, 13u, 1000u}) {
        SCOPED_TRACE(n);
        const auto a = generate_scene(GetParam(), n);
        ASSERT_TRUE(a) << a.error().message;
        EXPECT_EQ(a->boxes.size(), n);
        EXPECT_EQ(a->name, std::string(GetParam()) + ":" + std::to_string(n));
        const Status valid = validate_boxes(a->boxes);
        EXPECT_TRUE(valid) << valid.error().message;
        const auto b = generate_scene(GetParam(), n);
        ASSERT_TRUE(b);
        EXPECT_EQ(a->boxes, b->boxes);
    }
}

TEST_P(EveryGenerator, SeedChangesTheScene) {
    const auto a = generate_scene(GetParam(), 100, 42);
    const auto b = generate_scene(GetParam(), 100, 7);
    ASSERT_TRUE(a && b);
    EXPECT_NE(a->boxes, b->boxes);
    EXPECT_EQ(b->name, std::string(GetParam()) + ":100:7");
}

TEST_P(EveryGenerator, AFewPairsPerBox) {
    for (std::size_t n : {100u, 2000u}) {
        const auto scene = generate_scene(GetParam(), n);
        ASSERT_TRUE(scene);
        const double per_box =
            static_cast<double>(brute_force_pair_count(scene->boxes)) / static_cast<double>(n);
        EXPECT_GE(per_box, 0.5) << n;
        EXPECT_LE(per_box, 10.0) << n;
    }
}

INSTANTIATE_TEST_SUITE_P(Scenes, EveryGenerator, ::testing::ValuesIn(generator_names()),
                         [](const auto& test) { return std::string(test.param); });

TEST(Generators, UnknownNameIsAnError) {
    const auto scene = generate_scene("nope", 10);
    ASSERT_FALSE(scene);
    EXPECT_EQ(scene.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(scene.error().message.find("'nope'"), std::string::npos);
    EXPECT_NE(scene.error().message.find("uniform"), std::string::npos);
}

TEST(Generators, TooManyBoxesIsAnError) {
    const auto scene =
        generate_scene("uniform", std::size_t{std::numeric_limits<std::uint32_t>::max()} + 1);
    ASSERT_FALSE(scene);
    EXPECT_EQ(scene.error().code, ErrorCode::invalid_argument);
}

TEST(Uniform, MatchesADirectMt19937Draw) {
    const std::size_t n = 1000;
    const auto scene = generate_scene("uniform", n);
    ASSERT_TRUE(scene);
    std::mt19937 gen(42);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    const float side = static_cast<float>(0.8 * std::pow(1000.0, -1.0 / 3.0));
    EXPECT_FLOAT_EQ(side, 0.08f);
    for (std::size_t i = 0; i < n; ++i) {
        const float x = unit(gen);
        const float y = unit(gen);
        const float z = unit(gen);
        const Box expected{{x, y, z}, {x + side, y + side, z + side}};
        ASSERT_EQ(scene->boxes[i], expected) << i;
    }
}

TEST(Uniform, OneBoxHasSideEightTenths) {
    const auto scene = generate_scene("uniform", 1);
    ASSERT_TRUE(scene);
    const Box& b = scene->boxes[0];
    EXPECT_FLOAT_EQ(b.max.x - b.min.x, 0.8f);
}

TEST(Lines, AreTwoDimensional) {
    for (const char* name : {"xline", "yline"}) {
        const auto scene = generate_scene(name, 1000);
        ASSERT_TRUE(scene);
        for (const Box& b : scene->boxes) {
            ASSERT_EQ(b.min.z, 0.0f) << name;
            ASSERT_EQ(b.max.z, 0.0f) << name;
        }
    }
}

double centre_variance(const std::vector<Box>& boxes, int axis) {
    double sum = 0, sum2 = 0;
    for (const Box& b : boxes) {
        const double c = 0.5 * (double(b.min[axis]) + double(b.max[axis]));
        sum += c;
        sum2 += c * c;
    }
    const double n = static_cast<double>(boxes.size());
    return sum2 / n - (sum / n) * (sum / n);
}

TEST(Lines, XLineHasLittleXVarianceAndYLineMirrorsIt) {
    const auto x = generate_scene("xline", 1000);
    const auto y = generate_scene("yline", 1000);
    ASSERT_TRUE(x && y);
    EXPECT_LT(centre_variance(x->boxes, 0) * 100, centre_variance(x->boxes, 1));
    for (std::size_t i = 0; i < x->boxes.size(); ++i) {
        const Box& a = x->boxes[i];
        const Box& b = y->boxes[i];
        ASSERT_EQ(a.min.x, b.min.y);
        ASSERT_EQ(a.min.y, b.min.x);
        ASSERT_EQ(a.max.x, b.max.y);
        ASSERT_EQ(a.max.y, b.max.x);
    }
}

TEST(MixedSizes, FourPercentAreLarge) {
    const std::size_t n = 1000;
    const auto scene = generate_scene("mixed_sizes", n);
    ASSERT_TRUE(scene);
    // Small diagonals are in [u, 3u), large ones in [3u, 15u).
    const double u = 0.5 * std::pow(double(n), -1.0 / 3.0);
    std::size_t large = 0;
    for (const Box& b : scene->boxes) {
        const double dx = b.max.x - b.min.x, dy = b.max.y - b.min.y, dz = b.max.z - b.min.z;
        const double diagonal = std::sqrt(dx * dx + dy * dy + dz * dz);
        EXPECT_GT(diagonal, 0.99 * u);
        EXPECT_LT(diagonal, 15.01 * u);
        large += diagonal >= 3.001 * u;
    }
    EXPECT_NEAR(double(large), 40.0, 1.0);
}

TEST(Clustered, BoxesGatherInFewDenseRegions) {
    const auto scene = generate_scene("clustered", 4000);
    ASSERT_TRUE(scene);
    // Eight clusters of sigma 0.05 in a unit cube: most of a 16^3 grid's cells are empty.
    std::vector<int> cells(16 * 16 * 16, 0);
    for (const Box& b : scene->boxes) {
        int cell = 0;
        for (int axis = 0; axis < 3; ++axis) {
            const int c = std::clamp(static_cast<int>(b.min[axis] * 16), 0, 15);
            cell = cell * 16 + c;
        }
        cells[static_cast<std::size_t>(cell)] = 1;
    }
    EXPECT_LT(std::count(cells.begin(), cells.end(), 1), 16 * 16 * 16 / 4);
}

TEST(Degenerate, HasEveryDegenerateCase) {
    const std::size_t n = 1000;
    const auto scene = generate_scene("degenerate", n);
    ASSERT_TRUE(scene);
    const auto& boxes = scene->boxes;

    std::size_t points = 0, flat = 0, far = 0, duplicates = 0, covering = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const Box& b = boxes[i];
        const int zero_axes = (b.min.x == b.max.x) + (b.min.y == b.max.y) + (b.min.z == b.max.z);
        points += zero_axes == 3;
        flat += zero_axes == 1;
        far += std::fabs(b.min.x) >= 9e5f && std::fabs(b.min.y) >= 9e5f;
        duplicates += i > 0 && boxes[i - 1] == b;
        bool covers_all = true;
        for (const Box& other : boxes) covers_all = covers_all && merge(b, other) == b;
        covering += covers_all;
    }
    EXPECT_GT(points, 100u);
    EXPECT_GT(flat, 100u);
    EXPECT_GT(far, 100u);
    EXPECT_GT(duplicates, 100u);
    EXPECT_EQ(covering, 1u);
    EXPECT_TRUE(overlaps(boxes[n / 2], boxes[0]));
    EXPECT_GT(volume(boxes[n / 2]), 1e18f);

    // The huge box overlaps every other box.
    std::size_t huge_pairs = 0;
    for (std::size_t i = 0; i < n; ++i)
        huge_pairs += i != n / 2 && overlaps(boxes[n / 2], boxes[i]);
    EXPECT_EQ(huge_pairs, n - 1);
}

TEST(Degenerate, SmallCountsStillHaveOneBoxCoveringAll) {
    for (std::size_t n = 1; n <= 12; ++n) {
        const auto scene = generate_scene("degenerate", n);
        ASSERT_TRUE(scene);
        const Box& huge = scene->boxes[n / 2];
        for (const Box& b : scene->boxes) EXPECT_EQ(merge(huge, b), huge) << n;
        EXPECT_GE(brute_force_pair_count(scene->boxes), n - 1) << n;
    }
}

TEST(Degenerate, TouchingNeighboursShareAFaceExactly) {
    const auto scene = generate_scene("degenerate", 100);
    ASSERT_TRUE(scene);
    std::size_t touching = 0;
    for (const Box& a : scene->boxes) {
        for (const Box& b : scene->boxes) touching += a.max.x == b.min.x && overlaps(a, b);
    }
    EXPECT_GT(touching, 10u);
}

// Specs.

TEST(LoadScene, GeneratorSpecs) {
    const auto a = load_scene("uniform:100");
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->name, "uniform:100");
    EXPECT_EQ(a->boxes, generate_scene("uniform", 100)->boxes);

    const auto b = load_scene("clustered:50:7");
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_EQ(b->boxes, generate_scene("clustered", 50, 7)->boxes);

    const auto c = load_scene("degenerate:0");
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->boxes.empty());

    const auto d = load_scene("xline:10:4294967295");
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(d->boxes.size(), 10u);
}

TEST(LoadScene, BadGeneratorSpecsAreRejected) {
    for (const char* spec :
         {"uniform:", "uniform:abc", "uniform:-1", "uniform:+5", "uniform: 5", "uniform:5 ",
          "uniform:1e3", "uniform:10:", "uniform:10:x", "uniform:10:-1", "uniform:10:1:2",
          "uniform:10:4294967296", "uniform:99999999999999999999999", "uniform:4294967296",
          "uniform::10", "mixed_sizes:0x10"}) {
        const auto scene = load_scene(spec);
        ASSERT_FALSE(scene) << spec;
        EXPECT_EQ(scene.error().code, ErrorCode::invalid_argument) << spec;
        EXPECT_NE(scene.error().message.find(spec), std::string::npos) << spec;
    }
}

TEST(LoadScene, BareGeneratorNameAsksForACount) {
    const auto scene = load_scene("uniform");
    ASSERT_FALSE(scene);
    EXPECT_EQ(scene.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(scene.error().message.find("uniform:COUNT"), std::string::npos);
}

TEST(LoadScene, UnknownPrefixIsAFilePath) {
    const auto scene = load_scene("/nonexistent/nosuchgen:10");
    ASSERT_FALSE(scene);
    EXPECT_EQ(scene.error().code, ErrorCode::io_error);
    EXPECT_NE(scene.error().message.find("/nonexistent/nosuchgen:10"), std::string::npos);
}

// A NAME:... that is no file and no generator gets generate_scene's words, with the known
// names, as the tool and the Python module say it; what reads as a path still cannot open.
TEST(LoadScene, MisspelledGeneratorIsNamedAsOne) {
    const auto scene = load_scene("unifrom:100");
    ASSERT_FALSE(scene);
    EXPECT_EQ(scene.error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(scene.error().message.rfind("unknown generator 'unifrom' (known: uniform", 0), 0u)
        << scene.error().message;
    // A bare word that is neither: both readings said.
    const auto bare = load_scene("unifrom");
    ASSERT_FALSE(bare);
    EXPECT_EQ(bare.error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(bare.error().message.rfind("no file 'unifrom'; unknown generator 'unifrom' (known: "
                                         "uniform",
                                         0),
              0u)
        << bare.error().message;
    for (const char* path : {"boxes:1.txt", "no_such_dir:1/boxes"}) {
        const auto file = load_scene(path);
        ASSERT_FALSE(file) << path;
        EXPECT_EQ(file.error().code, ErrorCode::io_error) << path;
    }
}

// Pairs output.

TEST(FormatPairs, OnePairPerLine) {
    const std::vector<Pair> pairs = {{0, 1}, {2, 10}, {7, 4294967295u}};
    EXPECT_EQ(format_pairs(pairs), "0 1\n2 10\n7 4294967295\n");
    EXPECT_EQ(format_pairs({}), "");
}

}  // namespace
}  // namespace broadphase
