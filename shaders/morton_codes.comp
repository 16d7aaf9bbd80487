// Morton codes of box centroids (30-bit: 10 bits per axis; 63-bit: 21 bits per axis, stored
// as two uints, low word first), or 30-bit Hilbert indices (J. Skilling, "Programming the
// Hilbert curve", AIP Conf. Proc. 707, 2004: AxesToTranspose, then the transposed bits read
// as a Morton code), and the identity permutation as sort values.
// CPU twin: lbvh::Quantizer, lbvh::morton30, lbvh::morton63, lbvh::hilbert30 (bit-identical:
// only correctly rounded operations; the reciprocal is refined to the correctly rounded one).
#version 450
#include "common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Boxes {
    GpuBox boxes[];
};
layout(std430, binding = 1) readonly buffer Bounds {
    GpuBounds bounds;
};
layout(std430, binding = 2) writeonly buffer Keys {
    uint keys[];
};
layout(std430, binding = 3) writeonly buffer Values {
    uint values[];
};

// 1/x correctly rounded: the driver's reciprocal may be off by an ulp or two, so one Newton
// step with fused residual picks the right neighbour (the CPU computes 1.0f / x exactly).
float exact_reciprocal(float x) {
    precise float r = 1.0 / x;
    for (int k = 0; k < 2; ++k) {
        precise float e = fma(-x, r, 1.0);  // exact residual 1 - x r
        r = fma(e, r, r);
    }
    // Final check: choose among r and its neighbours the one with the smallest residual.
    precise float best = r;
    precise float best_err = abs(fma(-x, r, 1.0));
    for (int k = -1; k <= 1; k += 2) {
        precise float c = uintBitsToFloat(uint(int(floatBitsToUint(r)) + k));
        precise float err = abs(fma(-x, c, 1.0));
        if (err < best_err) {
            best = c;
            best_err = err;
        }
    }
    return best;
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
    return (expand_bits_10(x[0]) << 2) | (expand_bits_10(x[1]) << 1) | expand_bits_10(x[2]);
}

void main() {
    uint i = linear_thread();
    if (i >= pc.count) return;
    uint bits = pc.key_word == kCodeMorton63 ? 21u : 10u;
    vec3 lo = vec3(ordered_to_float(bounds.lo.x), ordered_to_float(bounds.lo.y),
                   ordered_to_float(bounds.lo.z));
    vec3 hi = vec3(ordered_to_float(bounds.hi.x), ordered_to_float(bounds.hi.y),
                   ordered_to_float(bounds.hi.z));
    precise vec3 c = (boxes[i].lo.xyz + boxes[i].hi.xyz) * 0.5;
    float scale = common_scale(lo, hi, bits);
    uint qx = quantize(c.x, lo.x, scale, bits);
    uint qy = quantize(c.y, lo.y, scale, bits);
    uint qz = quantize(c.z, lo.z, scale, bits);
    if (pc.key_word == kCodeMorton63) {
        uvec2 x = expand_bits_21(qx), y = expand_bits_21(qy), z = expand_bits_21(qz);
        // code = x << 2 | y << 1 | z over 64 bits
        uvec2 code;
        code.x = (x.x << 2) | (y.x << 1) | z.x;
        code.y = (x.y << 2) | (x.x >> 30) | (y.y << 1) | (y.x >> 31) | z.y;
        keys[2u * i] = code.x;
        keys[2u * i + 1u] = code.y;
    } else if (pc.key_word == kCodeHilbert30) {
        keys[i] = hilbert30(qx, qy, qz);
    } else {
        keys[i] = (expand_bits_10(qx) << 2) | (expand_bits_10(qy) << 1) | expand_bits_10(qz);
    }
    values[i] = i;
}
