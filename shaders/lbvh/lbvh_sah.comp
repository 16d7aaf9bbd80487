// Surface-area (SAH) cost of an LBVH's internal nodes (MacDonald & Booth 1990; the
// refit-quality measure of Kopta et al., "Fast, Effective BVH Updates for Animated Scenes",
// I3D 2012): each workgroup sums the surface areas of kWorkgroupSize internal nodes with a
// shared-memory tree reduction and writes one partial sum; the host adds the partials and
// divides by the root's area. Invocation 0 also writes the root's area to partials[pc.tiles].
// Control flow is uniform up to the last barrier (no early return).
// CPU twin: lbvh::sah_partials.
#version 450
#include "device/common.glsl"
#include "lbvh/tree_parts.glsl"

layout(local_size_x = kWorkgroupSize) in;
TREE_ARRAY(readonly, 0, Nodes, LbvhNode, nodes, NODE_SHIFT)
layout(std430, binding = 1) writeonly buffer Partials {
    float partials[];
};

shared float sums[kWorkgroupSize];

// `precise`: no fused multiply-add, so that the CPU twin (lbvh::node_area) and every device
// get the same bits, and frame_policy.comp's decision is the twin's everywhere.
float area(uint node) {
    if (box_empty(NODE(node).lo, NODE(node).hi)) return 0.0;  // only empty slots below
    precise vec3 d = NODE(node).hi.xyz - NODE(node).lo.xyz;
    precise float a = 2.0 * (d.x * d.y + d.y * d.z + d.z * d.x);
    return a;
}

void main() {
    uint i = linear_thread();
    uint t = gl_LocalInvocationID.x;
    uint internal = pc.count > 1u ? pc.count - 1u : 0u;
    sums[t] = i < internal ? area(i) : 0.0;
    barrier();
    for (uint s = kWorkgroupSize / 2u; s > 0u; s >>= 1u) {
        if (t < s) sums[t] += sums[t + s];
        barrier();
    }
    if (t == 0u) partials[linear_group()] = sums[0];
    if (i == 0u) partials[pc.tiles] = internal > 0u ? area(0u) : 0.0;
}
