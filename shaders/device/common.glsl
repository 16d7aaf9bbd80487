// Shared GLSL helpers: layouts, push constants, folded workgroup ids, ordered floats.
#ifndef BROADPHASE_COMMON_GLSL
#define BROADPHASE_COMMON_GLSL

#include "broadphase/gpu/layout/common.h"

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

// An empty slot (layout/common.h, "Empty slots"); NaN-free boxes only.
bool box_empty(vec4 lo, vec4 hi) {
    return lo.x > hi.x;
}

// broadphase::should_collide (types.hpp), bit for bit, on two ProxySlots read as uvec4
// (category, mask, group, handle).
bool proxy_should_collide(uvec4 a, uvec4 b) {
    if (a.z == b.z && a.z != 0u) return int(a.z) > 0;
    return (a.x & b.y) != 0u && (b.x & a.y) != 0u;
}

bool boxes_overlap(vec3 alo, vec3 ahi, vec3 blo, vec3 bhi) {
    return all(lessThanEqual(alo, bhi)) && all(lessThanEqual(blo, ahi));
}

// A child's bounds from its parent's LbvhWideNode (layout/common.h): side 0 left, 1 right.
vec3 wide_lo(LbvhWideNode w, uint side) {
    return side == 0u ? w.a.xyz : vec3(w.b.zw, w.c.x);
}
vec3 wide_hi(LbvhWideNode w, uint side) {
    return side == 0u ? vec3(w.a.w, w.b.xy) : w.c.yzw;
}
// The child's node index, and its aux: a leaf's box id, an internal node's last position.
uint wide_child(LbvhWideNode w, uint side) {
    return side == 0u ? w.link.x : w.link.y;
}
uint wide_aux(LbvhWideNode w, uint side) {
    return side == 0u ? w.link.z : w.link.w;
}
// The last sorted position under the child (a leaf's own: its index - leaf_base, n - 1).
uint wide_last(LbvhWideNode w, uint side, uint leaf_base) {
    uint child = wide_child(w, side);
    return child >= leaf_base ? child - leaf_base : wide_aux(w, side);
}
// The record of internal node `parent` with the bounds of its children (the build and refit).
LbvhWideNode wide_record(vec3 llo, vec3 lhi, vec3 rlo, vec3 rhi, uvec4 link) {
    LbvhWideNode w;
    w.a = vec4(llo, lhi.x);
    w.b = vec4(lhi.yz, rlo.xy);
    w.c = vec4(rlo.z, rhi);
    w.link = link;
    return w;
}

#endif
