// Frustum cull of a built LBVH, hierarchical rejection and acceptance: invocation c owns the
// sorted positions [c * kCullChunk, (c + 1) * kCullChunk) and walks the tree depth first (left
// child first) through the nodes whose leaf range meets its chunk. A node entirely outside
// one plane is skipped; a node entirely inside all six planes emits its whole leaf range (no
// more plane tests); a leaf that is neither is seen (the box test of frustum_may_see). Its
// first sorted position is carried down the traversal (a right child starts after its left
// sibling's last position). Seen positions go, in LBVH leaf order, to the invocation's own
// slots, and their number to counts[c]: no atomics, no inter-invocation dependence.
// CPU twin: lbvh::cull_chunk (cpu_reference/lbvh_cull.hpp).
#version 450
#include "common.glsl"
#include "gpu_layout_cull.h"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Nodes {
    LbvhNode nodes[];
};
layout(std430, binding = 1) readonly buffer Params {
    CullParams params;
};
layout(std430, binding = 2) writeonly buffer Slots {
    uint slots[];
};
layout(std430, binding = 3) writeonly buffer Counts {
    uint counts[];
};

// 0: outside one plane, 1: straddles, 2: inside all planes (same float ops as the C++ test).
uint classify(uint node) {
    vec3 lo = nodes[node].lo.xyz, hi = nodes[node].hi.xyz;
    bool inside = true;
    for (int i = 0; i < 6; ++i) {
        vec4 pl = params.planes[i];
        bvec3 pos = greaterThanEqual(pl.xyz, vec3(0.0));
        vec3 pv = mix(lo, hi, pos);
        vec3 nv = mix(hi, lo, pos);
        precise float mp = pl.x * pv.x + pl.y * pv.y + pl.z * pv.z + pl.w;
        precise float mn = pl.x * nv.x + pl.y * nv.y + pl.z * nv.z + pl.w;
        if (mp < 0.0) return 0u;
        if (mn < 0.0) inside = false;
    }
    return inside ? 2u : 1u;
}

void main() {
    uint c = linear_thread();
    uint chunks = pc.tiles;
    uint n = pc.count;
    if (c == 0u) counts[chunks] = 0u;  // the exclusive scan's total slot
    if (c >= chunks || n == 0u) return;
    uint leaf_base = n - 1u;
    uint lo = c * kCullChunk;
    uint hi = min(n, lo + kCullChunk) - 1u;  // inclusive
    uint written = 0u;

    uint stack_node[kTraversalStack];
    uint stack_first[kTraversalStack];
    uint top = 0u;
    uint node = 0u;
    uint first = 0u;
    while (true) {
        uint last = nodes[node].link.w;
        bool descend = false;
        if (last >= lo && first <= hi) {
            uint cls = classify(node);
            if (cls == 2u || (cls == 1u && node >= leaf_base)) {
                uint end = min(last, hi);
                for (uint p = max(first, lo); p <= end; ++p) slots[lo + written++] = p;
            } else if (cls == 1u) {
                descend = true;
            }
        }
        if (descend) {
            uint left = nodes[node].link.x;
            uint right = nodes[node].link.y;
            uint right_first = nodes[left].link.w + 1u;
            if (right_first <= hi) {
                stack_node[top] = right;
                stack_first[top] = right_first;
                ++top;
            }
            node = left;
        } else if (top > 0u) {
            --top;
            node = stack_node[top];
            first = stack_first[top];
        } else {
            break;
        }
    }
    counts[c] = written;
}
