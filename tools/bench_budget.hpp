// The per-run time budget of `broadphase bench cpu`: before a method starts the next box
// count, its time there is extrapolated from the sizes it has already run, and a method that
// would take longer than the budget is not started (a run cannot be stopped half-way without
// losing it). Time is modelled as t(n) = t(previous) * (n / previous)^growth, where growth is
// measured between the last two sizes, never below n log n and, for a method known to be
// quadratic (brute force), never below 2.
#pragma once

#include <cstddef>
#include <string_view>

namespace broadphase::tool {

/// Times below this (seconds) are too close to the clock's and the cache's noise to measure a
/// growth from: such a pair of sizes gives no growth (n log n is assumed).
inline constexpr double kMinMeasurableSeconds = 1e-3;

/// The exponent p of t ~ n^p between (n0, t0) and (n1, t1), n0 < n1; 0 (no information) when a
/// time is below kMinMeasurableSeconds or the sizes do not grow.
double measured_growth(double n0, double t0, double n1, double t1);

/// The least growth exponent a method may be assumed to have: 2 for brute force (it tests every
/// pair, whatever the scene), 1 (with the n log n floor of extrapolate_seconds) otherwise.
double known_growth(std::string_view method);

/// The seconds a run of `next_n` boxes is expected to take after `previous_seconds` at
/// `previous_n` (< next_n): previous * max((next/previous)^growth, next log next / (previous log
/// previous)).
double extrapolate_seconds(double previous_seconds, double previous_n, double next_n,
                           double growth);

/// True when that expected time is over `budget` seconds: the method is not run at `next_n`.
bool would_exceed(double previous_seconds, double previous_n, double next_n, double growth,
                  double budget);

}  // namespace broadphase::tool
