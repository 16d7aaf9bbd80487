// Shared GLSL helpers: layouts, push constants, folded workgroup ids, ordered floats.
#ifndef BROADPHASE_COMMON_GLSL
#define BROADPHASE_COMMON_GLSL

#include "gpu_layout.h"

layout(push_constant) uniform Push {
    PushConstants pc;
};

// Workgroup index when the dispatch was folded into x * y groups (Kernel::dispatch).
uint linear_group() {
    return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}
uint linear_thread() {
    return linear_group() * kWorkgroupSize + gl_LocalInvocationID.x;
}

// Order-preserving float <-> uint (see cpu_reference/lbvh.hpp float_to_ordered).
uint float_to_ordered(float f) {
    uint u = floatBitsToUint(f);
    return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}
float ordered_to_float(uint u) {
    return uintBitsToFloat((u & 0x80000000u) != 0u ? (u & 0x7fffffffu) : ~u);
}

// Count of leading zeros of a 32-bit value (32 for 0).
int clz32(uint x) {
    return x == 0u ? 32 : 31 - findMSB(x);
}

bool boxes_overlap(vec3 alo, vec3 ahi, vec3 blo, vec3 bhi) {
    return all(lessThanEqual(alo, bhi)) && all(lessThanEqual(blo, ahi));
}

#endif
