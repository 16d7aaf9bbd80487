// Overlap events, step 1: turns the frame's pairs (i, j) into 64-bit sort keys i << 32 | j
// (two uints, low word first: (j, i)) with their index as value, for RadixSort (key_words 2).
// The number of pairs is read on the GPU (the all-pairs pass's counter) and clamped to the
// pair buffer's capacity, so no host read sits between the pairs pass and the sort;
// invocation 0 reports the exact count and the capacity in the frame's status.
// CPU twin: lbvh::pair_key.
#version 450
#include "common.glsl"
#include "gpu_layout_frames.h"

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
layout(std430, binding = 3) readonly buffer Count {
    uint pair_count;
};
layout(std430, binding = 4) buffer Status {
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
    keys[2u * k] = pairs[2u * k + 1u];
    keys[2u * k + 1u] = pairs[2u * k];
    values[k] = k;
}
