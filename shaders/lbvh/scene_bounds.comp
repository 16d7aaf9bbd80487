// Scene bounds: min/max of box centroids, reduced per workgroup in shared memory, then one
// atomicMin/atomicMax per workgroup on order-preserving uints (portable: no float atomics).
// CPU twin: lbvh::centroid_bounds. Precondition: bounds.lo filled with 0xffffffff, hi with 0.
#version 450
#include "device/common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Boxes {
    GpuBox boxes[];
};
layout(std430, binding = 1) buffer Bounds {
    GpuBounds bounds;
};

shared uvec3 s_lo[kWorkgroupSize];
shared uvec3 s_hi[kWorkgroupSize];

void main() {
    uint i = linear_thread();
    uint t = gl_LocalInvocationID.x;
    uvec3 lo = uvec3(0xffffffffu), hi = uvec3(0u);
    if (i < pc.count && !box_empty(boxes[i].lo, boxes[i].hi)) {
        vec3 c = (boxes[i].lo.xyz + boxes[i].hi.xyz) * 0.5;
        lo = uvec3(float_to_ordered(c.x), float_to_ordered(c.y), float_to_ordered(c.z));
        hi = lo;
    }
    s_lo[t] = lo;
    s_hi[t] = hi;
    barrier();
    for (uint stride = kWorkgroupSize / 2u; stride > 0u; stride >>= 1u) {
        if (t < stride) {
            s_lo[t] = min(s_lo[t], s_lo[t + stride]);
            s_hi[t] = max(s_hi[t], s_hi[t + stride]);
        }
        barrier();
    }
    if (t == 0u && linear_group() * kWorkgroupSize < pc.count) {
        atomicMin(bounds.lo.x, s_lo[0].x);
        atomicMin(bounds.lo.y, s_lo[0].y);
        atomicMin(bounds.lo.z, s_lo[0].z);
        atomicMax(bounds.hi.x, s_hi[0].x);
        atomicMax(bounds.hi.y, s_hi[0].y);
        atomicMax(bounds.hi.z, s_hi[0].z);
    }
}
