// The outward rounding of a double box to a float box, shared by the Bullet and FCL adapters:
// each bound cast to float and moved one float further out where the cast rounded it inward,
// so that two overlapping double boxes always give overlapping float boxes (no pair is lost to
// rounding); values past the float range clamp to +-FLT_MAX.
#pragma once

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "broadphase/types.hpp"

namespace broadphase::adapters {

/// round_outward for a v with |v| < FLT_MAX (so neither NaN nor infinite), without the checks:
/// the float at or below v (at or above it when `up`). A step towards -infinity moves a float's
/// bits down by one where its sign is clear and up by one where it is set (-0 included, whose
/// step is -denorm_min); towards +infinity the other way. A select, not a branch: the cast
/// rounds inward about half the time, unpredictably. Callers that check the range once for a
/// whole box call it directly.
inline float round_outward_in_range(double v, bool up) {
    const float f = static_cast<float>(v);
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
    const bool negative = (bits >> 31) != 0;
    const std::uint32_t stepped = negative != up ? bits + 1 : bits - 1;
    const bool rounded_inward = up ? double(f) < v : double(f) > v;
    return rounded_inward ? std::bit_cast<float>(stepped) : f;
}

/// The box [round_outward_in_range(lo, down), round_outward_in_range(hi, up)] into `out` when
/// every bound is ordered (lo <= hi) and inside the float range; false, `out` untouched,
/// otherwise (NaN included). The check is made once for the box: the path taken per object per
/// step when an engine's boxes are read again.
inline bool round_outward_in_range(const double lo[3], const double hi[3], Box& out) {
#if defined(__SSE2__)
    // Both bounds of all three axes at once, in registers: assembling the box from six scalar
    // results cost a stalled store-to-load forward per box.
    const __m128d lo01 = _mm_loadu_pd(lo), lo2 = _mm_set_sd(lo[2]);  // the upper lane 0
    const __m128d hi01 = _mm_loadu_pd(hi), hi2 = _mm_set_sd(hi[2]);
    const __m128d low = _mm_set1_pd(-double(FLT_MAX)), high = _mm_set1_pd(double(FLT_MAX));
    const auto ok = [&](__m128d l, __m128d h) {  // false for NaN
        return _mm_and_pd(_mm_cmple_pd(l, h),
                          _mm_and_pd(_mm_cmpgt_pd(l, low), _mm_cmplt_pd(h, high)));
    };
    if (_mm_movemask_pd(_mm_and_pd(ok(lo01, hi01), ok(lo2, hi2))) != 3) return false;
    // Each bound cast to float (lanes x y z 0), and where the cast went inward, stepped one
    // float outward: down is bits - 1 with the sign clear and bits + 1 with it set, up the
    // reverse (s, the sign spread over the lane: down adds (~s << 1) | 1, up (s << 1) | 1).
    const auto step = [](__m128 f, __m128d v01, __m128d v2, bool up) {
        const __m128d b01 = _mm_cvtps_pd(f), b2 = _mm_cvtps_pd(_mm_movehl_ps(f, f));
        const __m128d in01 = up ? _mm_cmplt_pd(b01, v01) : _mm_cmpgt_pd(b01, v01);
        const __m128d in2 = up ? _mm_cmplt_pd(b2, v2) : _mm_cmpgt_pd(b2, v2);
        const __m128i inward = _mm_castps_si128(
            _mm_shuffle_ps(_mm_castpd_ps(in01), _mm_castpd_ps(in2), _MM_SHUFFLE(2, 0, 2, 0)));
        const __m128i bits = _mm_castps_si128(f);
        const __m128i sign = _mm_srai_epi32(bits, 31);
        const __m128i toward = up ? sign : _mm_xor_si128(sign, _mm_set1_epi32(-1));
        const __m128i delta = _mm_or_si128(_mm_slli_epi32(toward, 1), _mm_set1_epi32(1));
        return _mm_castsi128_ps(_mm_add_epi32(bits, _mm_and_si128(delta, inward)));
    };
    const __m128 fmin =
        step(_mm_movelh_ps(_mm_cvtpd_ps(lo01), _mm_cvtpd_ps(lo2)), lo01, lo2, false);
    const __m128 fmax = step(_mm_movelh_ps(_mm_cvtpd_ps(hi01), _mm_cvtpd_ps(hi2)), hi01, hi2, true);
    static_assert(sizeof(Box) == 24);
    // min.x min.y min.z max.x, then max.y max.z
    const __m128 mid = _mm_shuffle_ps(fmin, fmax, _MM_SHUFFLE(0, 0, 2, 2));
    _mm_storeu_ps(&out.min.x, _mm_shuffle_ps(fmin, mid, _MM_SHUFFLE(2, 0, 1, 0)));
    _mm_storel_pi(reinterpret_cast<__m64*>(&out.max.y),
                  _mm_shuffle_ps(fmax, fmax, _MM_SHUFFLE(3, 3, 2, 1)));
    return true;
#else
    constexpr double kMax = FLT_MAX;
    bool ok = true;
    for (int axis = 0; axis < 3; ++axis)
        ok &= (lo[axis] <= hi[axis]) & (lo[axis] > -kMax) & (hi[axis] < kMax);
    if (!ok) return false;
    for (int axis = 0; axis < 3; ++axis) {
        out.min[axis] = round_outward_in_range(lo[axis], false);
        out.max[axis] = round_outward_in_range(hi[axis], true);
    }
    return true;
#endif
}

/// The float at or below v (at or above it when `up`), clamped to +-FLT_MAX (infinities too);
/// NaN stays NaN.
inline float round_outward(double v, bool up) {
    if (std::isnan(v)) return static_cast<float>(v);
    if (v >= double(FLT_MAX)) return FLT_MAX;
    if (v <= -double(FLT_MAX)) return -FLT_MAX;
    return round_outward_in_range(v, up);
}

/// The float box [round_outward(lo, down), round_outward(hi, up)] on each axis.
inline Box round_outward(const double lo[3], const double hi[3]) {
    Box b;
    for (int axis = 0; axis < 3; ++axis) {
        b.min[axis] = round_outward(lo[axis], false);
        b.max[axis] = round_outward(hi[axis], true);
    }
    return b;
}

}  // namespace broadphase::adapters
