// Overlap events, step 1: turns the frame's pairs (i, j) into 64-bit sort keys i << 32 | j
// (two uints, low word first: (j, i)) with their index as value, for RadixSort (key_words 2).
// CPU twin: lbvh::pair_key.
#version 450
#include "common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Pairs {
    uint pairs[];
};
layout(std430, binding = 1) writeonly buffer Keys {
    uint keys[];
};
layout(std430, binding = 2) writeonly buffer Values {
    uint values[];
};

void main() {
    uint k = linear_thread();
    if (k >= pc.count) return;
    keys[2u * k] = pairs[2u * k + 1u];
    keys[2u * k + 1u] = pairs[2u * k];
    values[k] = k;
}
