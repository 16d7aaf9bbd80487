// The per-run budget of `broadphase bench cpu` (tools/bench_budget.hpp): a method's time at
// the next size is extrapolated from its last size by the growth measured between its last two
// sizes, at least n log n (at least quadratic for brute force), and a method whose expected
// time is over the budget is not started.
#include <gtest/gtest.h>

#include <cmath>

#include "bench_budget.hpp"

namespace broadphase::tool {
namespace {

// Test 1: the growth exponent of two timed sizes.
TEST(BenchBudget, MeasuredGrowthIsTheExponentBetweenTwoSizes) {
    EXPECT_NEAR(measured_growth(1000, 0.01, 10000, 1.0), 2.0, 1e-12);  // quadratic
    EXPECT_NEAR(measured_growth(1000, 0.01, 10000, 0.1), 1.0, 1e-12);  // linear
    EXPECT_NEAR(measured_growth(1000, 0.02, 4000, 0.16), 1.5, 1e-12);
}

// Test 2: times too small to measure, or sizes that do not grow, say nothing about growth.
TEST(BenchBudget, NoGrowthFromNoiseOrEqualSizes) {
    EXPECT_EQ(measured_growth(1000, 0.0004, 10000, 0.5), 0.0);
    EXPECT_EQ(measured_growth(1000, 0.5, 10000, 0.0002), 0.0);
    EXPECT_EQ(measured_growth(1000, 0.5, 1000, 0.7), 0.0);
    EXPECT_EQ(measured_growth(2000, 0.5, 1000, 0.7), 0.0);
}

// Test 3: brute force is known to be quadratic; the others are assumed n log n at least.
TEST(BenchBudget, KnownGrowth) {
    EXPECT_EQ(known_growth("brute_force"), 2.0);
    EXPECT_EQ(known_growth("sweep_and_prune"), 1.0);
    EXPECT_EQ(known_growth("octree"), 1.0);
}

// Test 4: extrapolation follows the growth, and never less than n log n.
TEST(BenchBudget, ExtrapolationFollowsGrowthAndNLogN) {
    // Quadratic: ten times the boxes, a hundred times the time.
    EXPECT_NEAR(extrapolate_seconds(0.2, 10000, 100000, 2.0), 20.0, 1e-9);
    // Linear growth is raised to n log n: 10x boxes and log2(1e6)/log2(1e5) = 1.2.
    EXPECT_NEAR(extrapolate_seconds(1.0, 100000, 1000000, 1.0), 12.0, 1e-9);
    // A measured growth below n log n (noise, caches) is raised to it too.
    EXPECT_NEAR(extrapolate_seconds(1.0, 100000, 1000000, 0.5), 12.0, 1e-9);
    // Steeper than n log n: the measured growth wins.
    EXPECT_NEAR(extrapolate_seconds(1.0, 100000, 1000000, 1.5), std::pow(10.0, 1.5), 1e-9);
    // The same size (or a smaller one) costs what it cost.
    EXPECT_EQ(extrapolate_seconds(3.0, 1000, 1000, 2.0), 3.0);
}

// Test 5: the decision, as bench cpu takes it with its default budget of 10 s on the default
// sizes: brute force at 0.25 s for 10k boxes is not started at 100k (25 s expected); a method
// at 0.7 s for 100k with growth 1.57 (0.0185 s at 10k) is not started at 1M (26 s expected); a
// method at 0.9 s for 100k growing linearly is (10.8 s expected, over 10 s only with n log n);
// one at 0.3 s growing as 1.1 runs (3.8 s).
TEST(BenchBudget, WouldExceedTheDefaultBudget) {
    const double budget = 10;
    EXPECT_TRUE(would_exceed(0.25, 10000, 100000, known_growth("brute_force"), budget));
    const double nearest_x = measured_growth(10000, 0.0185, 100000, 0.69);
    EXPECT_NEAR(nearest_x, 1.57, 0.01);
    EXPECT_TRUE(would_exceed(0.69, 100000, 1000000, nearest_x, budget));
    EXPECT_TRUE(would_exceed(0.9, 100000, 1000000, 1.0, budget));
    EXPECT_FALSE(would_exceed(0.3, 100000, 1000000, 1.1, budget));
    // Just under and just over the budget.
    EXPECT_FALSE(would_exceed(0.1, 1000, 2000, 2.0, 0.4 + 1e-9));
    EXPECT_TRUE(would_exceed(0.1, 1000, 2000, 2.0, 0.4 - 1e-9));
}

}  // namespace
}  // namespace broadphase::tool
