// Overlap events, step 3: the sorted keys i << b | j of a difference (pair_diff_append.comp,
// then RadixSort) become pairs (i, j) in place, b = pc.shift in 1..31 (lbvh_pairs.glsl,
// kPairsKeys).
// Launched indirectly for the difference's size (at least one workgroup); invocation 0 writes
// that size into the frame status (began or ended, by pc.flags).
#version 450
#include "device/common.glsl"

#include "broadphase/gpu/layout/frames.h"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) buffer Keys {
    uint keys[];
};
layout(std430, binding = 1) readonly buffer Count {
    uint count;
};
layout(std430, binding = 2) buffer Status {
    FrameStatus status;
};

void main() {
    uint k = linear_thread();
    uint m = count;
    if (k == 0u) {
        if (pc.flags == kDiffBegan) {
            status.began = m;
        } else {
            status.ended = m;
        }
    }
    if (k >= m) return;
    uint lo = keys[2u * k], hi = keys[2u * k + 1u], b = pc.shift;
    keys[2u * k] = (lo >> b) | (hi << (32u - b));
    keys[2u * k + 1u] = lo & ((1u << b) - 1u);
}
