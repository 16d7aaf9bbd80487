// What the radix sort's two digit-pass kernels share (radix_onesweep.glsl, radix_scatter.glsl):
// the tile's elements (bindings 0 to 3: keys and values in, keys and values out; keys of
// pc.key_words words), the digits of this invocation's items loaded for radix_rank.glsl, and the
// scatter of the ranked tile: the element at sorted tile position p with digit d goes to
// s_base[d] + p, so that consecutive invocations write consecutive addresses within a digit.
// pc.shift / pc.key_word / pc.capacity: the digit's shift, key word and mask.
#ifndef BROADPHASE_RADIX_TILE_GLSL
#define BROADPHASE_RADIX_TILE_GLSL

#include "sort/radix_rank.glsl"

layout(std430, binding = 0) readonly buffer KeysIn {
    uint keys_in[];
};
layout(std430, binding = 1) readonly buffer ValuesIn {
    uint values_in[];
};
layout(std430, binding = 2) writeonly buffer KeysOut {
    uint keys_out[];
};
layout(std430, binding = 3) writeonly buffer ValuesOut {
    uint values_out[];
};

// Per digit: the global position of the digit's first element in the tile, less its sorted
// tile position (set by the kernel before scatter_tile).
shared uint s_base[kSortBuckets];

// The digits of this invocation's items (tile positions rank_position(k) of the tile starting
// at element `first`), 255 at or past `valid`.
void load_tile_digits(uint first, uint valid, out uint digit[kSortItemsPerThread]) {
    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint q = rank_position(k);
        digit[k] = q < valid ? (keys_in[(first + q) * pc.key_words + pc.key_word] >> pc.shift) &
                                   pc.capacity
                             : 255u;
    }
}

// Writes the ranked tile's `valid` elements (keys, and values unless kSortKeysOnly) to
// s_base[digit] + sorted tile position.
void scatter_tile(uint first, uint valid) {
    uint t = gl_LocalInvocationID.x;
    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint p = k * kWorkgroupSize + t;
        if (p < valid) {
            uint e = s_rank[rank_cell(p)];
            uint src = first + (e & 0xffffu);
            uint dst = s_base[e >> 16] + p;
            for (uint w = 0u; w < pc.key_words; ++w)
                keys_out[dst * pc.key_words + w] = keys_in[src * pc.key_words + w];
            if ((pc.flags & kSortKeysOnly) == 0u) values_out[dst] = values_in[src];
        }
    }
}

#endif
