// The cull's eye-to-box distance key (exact order in lbvh_cull_compact.comp, near child first
// in lbvh_cull.comp): an order-preserving 32-bit key of the squared distance that never
// overflows, with no sqrt or division, so every device computes the same bits as the twin.
// CPU twin and the exact rule: lbvh::cull_distance_key (cpu_reference/lbvh_cull.hpp).
#ifndef BROADPHASE_CULL_DISTANCE_GLSL
#define BROADPHASE_CULL_DISTANCE_GLSL

// 2^-a as a float, for a in [-126, 127] (built from its bits, exact).
float cull_power_of_two(int minus_a) {
    return uintBitsToFloat(uint(127 + minus_a) << 23);
}

uint cull_distance_key(vec3 e, vec3 lo, vec3 hi) {
    // Halved gaps: no overflow for any float input; halving is exact above 2^-125.
    precise vec3 below = lo * 0.5 - e * 0.5;
    precise vec3 above = e * 0.5 - hi * 0.5;
    vec3 g = max(max(below, above), vec3(0.0));
    float m = max(max(g.x, g.y), g.z);
    if (!(m >= uintBitsToFloat(0x00800000u))) return 0u;  // below 2^-126, or the eye inside
    // m in [2^(k-1), 2^k), k in [-125, 128]; 2^-k in two exact steps of at most 2^64 each.
    int k = int(floatBitsToUint(m) >> 23) - 126;
    int half_k = k >> 1;
    precise vec3 h = (g * cull_power_of_two(-half_k)) * cull_power_of_two(half_k - k);
    precise float s = h.x * h.x + h.y * h.y + h.z * h.z;  // in [0.25, 3)
    uint bits = floatBitsToUint(s);
    return (uint(int(bits >> 23) + 2 * k + 126) << 23) | (bits & 0x7fffffu);
}

// The exact order's 64-bit sort key (lbvh_cull_compact.comp; low word first): the distance key
// above the box id's b bits (pc.key_words: bit_width(n - 1), at least 1, at most 30), so that
// the sort orders by distance, ties by id, over 32 + b bits (7 passes of 8 bits up to 2^24
// boxes, not 8), and the id and distance key read back exactly.
uvec2 cull_order_key(uint distance_key, uint id, uint b) {
    return uvec2((distance_key << b) | id, distance_key >> (32u - b));
}
uint cull_order_id(uvec2 key, uint b) {
    return key.x & ((1u << b) - 1u);
}
uint cull_order_distance(uvec2 key, uint b) {
    return (key.y << (32u - b)) | (key.x >> b);
}

#endif
