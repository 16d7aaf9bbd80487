// Grouping of the ordered visible list per mesh, step 2 (after the stable sort by mesh key,
// lbvh_cull_group.comp): where each key's run begins and ends in the sorted keys, from the
// neighbours of each element (no atomics): bounds[2k] = first index of key k, bounds[2k + 1] =
// one past its last. Keys absent from the list keep the zeros the recorder filled in.
// CPU twin: lbvh::cull_draws (cpu_reference/lbvh_cull.hpp).
#version 450
#include "device/common.glsl"

#include "broadphase/gpu/layout/cull.h"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Offsets {
    uint offsets[];
};  // offsets[pc.tiles] is the number of visible boxes
layout(std430, binding = 1) readonly buffer Keys {
    uint keys[];
};
layout(std430, binding = 2) writeonly buffer Bounds {
    uint bounds[];
};

void main() {
    uint j = linear_thread();
    if (pc.count == 0u) return;
    uint total = offsets[pc.tiles];
    if (j >= total) return;
    uint k = keys[j];
    if (j == 0u || keys[j - 1u] != k) bounds[2u * k] = j;
    if (j + 1u == total || keys[j + 1u] != k) bounds[2u * k + 1u] = j + 1u;
}
