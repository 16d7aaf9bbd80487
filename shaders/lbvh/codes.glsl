// Space-filling-curve codes of quantised centroids, shared by morton_codes.comp (the first
// code of every box) and refine_codes.comp (the second code inside a run's own bounds).
// CPU twin: lbvh::Quantizer, lbvh::morton30, lbvh::morton63, lbvh::hilbert30 (bit-identical:
// only correctly rounded operations; the reciprocal is made the correctly rounded one).
#ifndef BROADPHASE_CODES_GLSL
#define BROADPHASE_CODES_GLSL

// a * b = p + e exactly, with correctly rounded multiplies and adds alone (T. J. Dekker,
// "A floating-point technique for extending the available precision", Numer. Math. 18, 1971:
// Veltkamp's split of each factor into 12-bit halves). Vulkan guarantees correct rounding for
// OpFMul / OpFAdd / OpFSub but not a fused fma (lavapipe splits it into a multiply and an add),
// so the residual of a reciprocal is computed this way. |a|, |b| < 2^100 (no overflow).
void two_product(float a, float b, out float p, out float e) {
    precise float product = a * b;
    precise float ca = 4097.0 * a;
    precise float a_hi = ca - (ca - a);
    precise float a_lo = a - a_hi;
    precise float cb = 4097.0 * b;
    precise float b_hi = cb - (cb - b);
    precise float b_lo = b - b_hi;
    precise float err = ((a_hi * b_hi - product) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo;
    p = product;
    e = err;
}

// |1 - m c| for m in [0.5, 1) and c near 1 / m: 1 - p is exact (Sterbenz), then one rounding.
float reciprocal_residual(float m, float c) {
    float p, e;
    two_product(m, c, p, e);
    precise float one_minus_p = 1.0 - p;
    precise float r = one_minus_p - e;
    return abs(r);
}

// 1/x correctly rounded for a positive normal x whose reciprocal is normal, as the CPU's
// 1.0f / x: x = m 2^k with m in [0.5, 1); the driver's 1 / m (within 2.5 ulp in Vulkan) and its
// neighbours up to 3 ulp away are compared by their exact residual |1 - m c|, the nearest
// wins, and 2^-k scales it exactly.
float exact_reciprocal(float x) {
    int k;
    float m = frexp(x, k);
    precise float r = 1.0 / m;
    float best = r;
    float best_err = reciprocal_residual(m, r);
    for (int d = -3; d <= 3; ++d) {
        if (d == 0) continue;
        float c = uintBitsToFloat(uint(int(floatBitsToUint(r)) + d));
        float err = reciprocal_residual(m, c);
        if (err < best_err) {
            best = c;
            best_err = err;
        }
    }
    return ldexp(best, -k);
}

// One scale for all three axes, from the largest extent of the centroid bounds: the cells are
// cubes, so a thin axis gets few code bits instead of as many as the wide ones (per-axis scales
// made the top levels of the tree split the line scenes along the axis that every box spans).
float common_scale(vec3 lo, vec3 hi, uint bits) {
    precise vec3 extent = hi - lo;
    float largest = max(max(extent.x, extent.y), extent.z);
    return largest > 0.0 ? float(1u << bits) * exact_reciprocal(largest) : 0.0;
}

uint quantize(float c, float origin, float scale, uint bits) {
    precise float t = (c - origin) * scale;
    // min(uint(t), max) for every finite t >= 0, and defined when 1 / extent overflowed (t NaN
    // or infinite), exactly as lbvh::Quantizer::quantize.
    uint max_q = (1u << bits) - 1u;
    return t >= float(max_q) ? max_q : (t > 0.0 ? uint(t) : 0u);
}

uint expand_bits_10(uint v) {
    v &= 0x3ffu;
    v = (v * 0x00010001u) & 0xFF0000FFu;
    v = (v * 0x00000101u) & 0x0F00F00Fu;
    v = (v * 0x00000011u) & 0xC30C30C3u;
    v = (v * 0x00000005u) & 0x49249249u;
    return v;
}

uint morton30(uint qx, uint qy, uint qz) {
    return (expand_bits_10(qx) << 2) | (expand_bits_10(qy) << 1) | expand_bits_10(qz);
}

// Spreads 21 bits into 63 as (lo word, hi word): bit k of v goes to bit 3k of the result.
uvec2 expand_bits_21(uint v) {
    uvec2 r = uvec2(0u);
    for (uint k = 0u; k < 21u; ++k) {
        uint bit = (v >> k) & 1u;
        uint pos = 3u * k;
        if (pos < 32u)
            r.x |= bit << pos;
        else
            r.y |= bit << (pos - 32u);
    }
    return r;
}

// Skilling's AxesToTranspose (b = 10, n = 3) then Gray encode; x[0] is the highest axis.
uint hilbert30(uint q0, uint q1, uint q2) {
    uint x[3] = uint[3](q0 & 0x3ffu, q1 & 0x3ffu, q2 & 0x3ffu);
    for (uint bit = 1u << 9; bit > 1u; bit >>= 1u) {
        uint low = bit - 1u;
        for (int i = 0; i < 3; ++i) {
            if ((x[i] & bit) != 0u) {
                x[0] ^= low;
            } else {
                uint t = (x[0] ^ x[i]) & low;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
    }
    x[1] ^= x[0];
    x[2] ^= x[1];
    uint t = 0u;
    for (uint bit = 1u << 9; bit > 1u; bit >>= 1u) {
        if ((x[2] & bit) != 0u) t ^= bit - 1u;
    }
    x[0] ^= t;
    x[1] ^= t;
    x[2] ^= t;
    return morton30(x[0], x[1], x[2]);
}

#endif
