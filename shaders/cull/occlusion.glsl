// Hierarchical-Z occlusion test of a box against a max-depth pyramid, bit for bit the CPU
// reference broadphase::occluded() (include/broadphase/occlusion.hpp states the rule; core/
// occlusion.cpp is its twin), after Haar & Aaltonen, "GPU-Driven Rendering Pipelines",
// SIGGRAPH 2015. The includer declares the pyramid's texels as `pyramid_texels[]` (floats, the
// levels packed as DepthPyramid::texels()) before including this file.
//
// Why the division is written out: Vulkan requires +, - and * to be correctly rounded but lets
// OpFDiv be off by 2.5 ulp, and the reference divides with IEEE division. div_rn computes the
// correctly rounded quotient from the operands' bits (the hardware quotient of the
// significands, corrected with the exact integer remainder), and flushes a quotient
// below 2^-126 in magnitude to zero as the reference does (a GPU may flush subnormals, so
// neither side lets one reach a comparison).
#ifndef BROADPHASE_OCCLUSION_GLSL
#define BROADPHASE_OCCLUSION_GLSL

#include "broadphase/gpu/layout/cull.h"

bool occlusion_finite(float v) {
    return (floatBitsToUint(v) & 0x7f800000u) != 0x7f800000u;
}

// Significand (with its leading one) and unbiased-plus-127 exponent of a finite nonzero float's
// bits, subnormals normalised.
void occlusion_unpack(uint bits, out uint m, out int e) {
    e = int((bits >> 23) & 0xffu);
    m = bits & 0x7fffffu;
    if (e == 0) {
        int shift = 23 - findMSB(m);
        m <<= uint(shift);
        e = 1 - shift;
    } else {
        m |= 0x800000u;
    }
}

// x / w rounded to nearest even for finite x and finite w > 0; quotients of magnitude below
// 2^-126 (after rounding) become a zero of the quotient's sign; too large ones infinity.
float div_rn(float x, float w) {
    uint ux = floatBitsToUint(x), uw = floatBitsToUint(w);
    uint sign = (ux ^ uw) & 0x80000000u;
    if ((ux & 0x7fffffffu) == 0u) return uintBitsToFloat(sign);
    uint mx, mw;
    int ex, ew;
    occlusion_unpack(ux, mx, ex);
    occlusion_unpack(uw, mw, ew);
    int e = ex - ew + 127;  // biased exponent of the quotient once mx / mw is in [1, 2)
    if (mx < mw) {
        mx <<= 1;
        e -= 1;
    }
    // q = floor(mx * 2^24 / mw), 25 bits (24 of significand and a guard bit), and its
    // remainder r. The hardware quotient of the exact floats mx and mw (mx is even when above
    // 2^24) is within 2.5 ulp, so the estimate is within 6 of q, and |r| < 7 mw < 2^31: its
    // low 32 bits, mx * 2^24 - q * mw taken modulo 2^32, are r exactly as a signed int.
    uint q = uint(float(mx) / float(mw) * 16777216.0);
    int r = int((mx << 24) - q * mw);
    while (r < 0) {
        q -= 1u;
        r += int(mw);
    }
    while (r >= int(mw)) {
        q += 1u;
        r -= int(mw);
    }
    bool sticky = r != 0;
    if (e <= 0) {
        // Below the normal range: only e == 0 can round up to 2^-126 (the subnormal grid's
        // units are q / 4 there); everything else flushes.
        if (e < 0) return uintBitsToFloat(sign);
        uint m = q >> 2, rem = q & 3u;
        if (rem > 2u || (rem == 2u && (sticky || (m & 1u) != 0u))) m += 1u;
        return uintBitsToFloat(m == 0x800000u ? (sign | 0x800000u) : sign);
    }
    uint m = q >> 1;
    if ((q & 1u) != 0u && (sticky || (m & 1u) != 0u)) m += 1u;
    if (m == 0x1000000u) {
        m >>= 1;
        e += 1;
    }
    if (e >= 255) return uintBitsToFloat(sign | 0x7f800000u);
    return uintBitsToFloat(sign | (uint(e) << 23) | (m & 0x7fffffu));
}

// Level-0 texel index of a normalised device coordinate n in [-1, 1] (step 4 of the rule).
uint occlusion_texel(float n, uint size) {
    precise float u = (n * 0.5 + 0.5) * float(size);
    return min(uint(floor(u)), size - 1u);
}

// Step 3's margin of a quotient q of numerator size a (occlusion.hpp; core/occlusion.cpp
// rounding_margin): (a + |q| * aw) * inv * 2^-19 + 2^-20, each operation rounded on its own.
float rounding_margin(float a, float q, float aw, float inv) {
    precise float per_w = (a + abs(q) * aw) * inv;
    precise float margin = per_w * (1.0 / 524288.0) + (1.0 / 1048576.0);
    return margin;
}

// True only when the box [lo, hi] is certainly hidden behind the pyramid (occlusion.hpp's
// rule, step by step); m the column-major view-projection, size the level-0 width and height.
bool box_occluded(vec3 lo, vec3 hi, vec4 m[4], uvec2 size) {
    float nx_lo = 0.0, nx_hi = 0.0, ny_lo = 0.0, ny_hi = 0.0, dmin = 0.0;
    for (int i = 0; i < 8; ++i) {
        vec3 p = vec3((i & 1) != 0 ? hi.x : lo.x, (i & 2) != 0 ? hi.y : lo.y,
                      (i & 4) != 0 ? hi.z : lo.z);
        precise vec4 clip = ((m[0] * p.x + m[1] * p.y) + m[2] * p.z) + m[3];
        precise vec4 size = ((abs(m[0] * p.x) + abs(m[1] * p.y)) + abs(m[2] * p.z)) + abs(m[3]);
        for (int r = 0; r < 4; ++r)
            if (!occlusion_finite(clip[r]) || !occlusion_finite(size[r])) return false;
        if (!(clip.w > 0.0)) return false;
        float inv = div_rn(1.0, clip.w);
        float nx = div_rn(clip.x, clip.w), ny = div_rn(clip.y, clip.w), d = div_rn(clip.z, clip.w);
        float ex = rounding_margin(size.x, nx, size.w, inv);
        float ey = rounding_margin(size.y, ny, size.w, inv);
        float ed = rounding_margin(size.z, d, size.w, inv);
        if (!occlusion_finite(ex) || !occlusion_finite(ey) || !occlusion_finite(ed)) return false;
        precise float x_lo = nx - ex, x_hi = nx + ex, y_lo = ny - ey, y_hi = ny + ey;
        precise float d_lo = d - ed;
        if (i == 0) {
            nx_lo = x_lo;
            nx_hi = x_hi;
            ny_lo = y_lo;
            ny_hi = y_hi;
            dmin = d_lo;
        } else {
            nx_lo = min(nx_lo, x_lo);
            nx_hi = max(nx_hi, x_hi);
            ny_lo = min(ny_lo, y_lo);
            ny_hi = max(ny_hi, y_hi);
            dmin = min(dmin, d_lo);
        }
    }
    uint x0 = occlusion_texel(clamp(nx_lo, -1.0, 1.0), size.x);
    uint x1 = occlusion_texel(clamp(nx_hi, -1.0, 1.0), size.x);
    uint y0 = occlusion_texel(clamp(ny_lo, -1.0, 1.0), size.y);
    uint y1 = occlusion_texel(clamp(ny_hi, -1.0, 1.0), size.y);
    // The smallest level where the rectangle covers at most 2 x 2 texels (the 1 x 1 top level
    // always does), and where that level starts.
    uint k = 0u, offset = 0u, w = size.x, h = size.y;
    while (!(w == 1u && h == 1u) && ((x1 >> k) - (x0 >> k) > 1u || (y1 >> k) - (y0 >> k) > 1u)) {
        offset += w * h;
        w = (w + 1u) / 2u;
        h = (h + 1u) / 2u;
        ++k;
    }
    float dmax = 0.0;
    for (uint y = y0 >> k; y <= y1 >> k; ++y)
        for (uint x = x0 >> k; x <= x1 >> k; ++x)
            dmax = max(dmax, pyramid_texels[offset + y * w + x]);
    return dmin > dmax;
}

#endif
