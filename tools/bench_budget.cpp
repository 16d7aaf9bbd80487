// Extrapolation of a method's run time to the next box count (see bench_budget.hpp).
#include "bench_budget.hpp"

#include <algorithm>
#include <cmath>

namespace broadphase::tool {

double measured_growth(double n0, double t0, double n1, double t1) {
    if (!(n1 > n0) || !(n0 > 0) || t0 < kMinMeasurableSeconds || t1 < kMinMeasurableSeconds)
        return 0;
    return std::log(t1 / t0) / std::log(n1 / n0);
}

double known_growth(std::string_view method) {
    return method == "brute_force" ? 2.0 : 1.0;
}

double extrapolate_seconds(double previous_seconds, double previous_n, double next_n,
                           double growth) {
    if (!(next_n > previous_n) || !(previous_n > 0)) return previous_seconds;
    const double ratio = next_n / previous_n;
    // n log n, with log n at least 1 so that tiny sizes do not make the ratio blow up.
    const double n_log_n =
        ratio * std::max(1.0, std::log2(next_n)) / std::max(1.0, std::log2(previous_n));
    return previous_seconds * std::max(std::pow(ratio, growth), n_log_n);
}

bool would_exceed(double previous_seconds, double previous_n, double next_n, double growth,
                  double budget) {
    return extrapolate_seconds(previous_seconds, previous_n, next_n, growth) > budget;
}

}  // namespace broadphase::tool
