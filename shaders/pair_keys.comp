// Overlap events, step 1: turns the frame's pairs (i, j), i < j < n, into 64-bit sort keys
// i << b | j with b = pc.shift = bit_width(n - 1) (two uints, low word first), so that the
// radix sort (keys only) runs on 2b bits instead of 64. The number of pairs is read on the
// GPU (the all-pairs pass's counter) and clamped to the pair buffer's capacity, so no host
// read sits between the pairs pass and the sort; invocation 0 reports the exact count and the
// capacity in the frame's status. Unpacked by pair_diff_compact.comp and the host
// (gpu/moving_scene.cpp unpack_pair_key).
#version 450
#include "common.glsl"
#include "gpu_layout_frames.h"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Pairs {
    uint pairs[];
};
layout(std430, binding = 1) writeonly buffer Keys {
    uint keys[];
};
layout(std430, binding = 2) readonly buffer Count {
    uint pair_count;
};
layout(std430, binding = 3) buffer Status {
    FrameStatus status;
};

void main() {
    uint k = linear_thread();
    uint found = pair_count;
    if (k == 0u) {
        status.pairs = found;
        status.pair_capacity = pc.capacity;
    }
    if (k >= min(found, pc.capacity)) return;
    uint i = pairs[2u * k], j = pairs[2u * k + 1u];
    uint b = pc.shift;  // 1..31
    keys[2u * k] = (i << b) | j;
    keys[2u * k + 1u] = i >> (32u - b);
}
