// Compaction of the cull's per-chunk slots (lbvh_cull.comp) into one dense array, after an
// exclusive scan of the chunk counts: slot j of chunk c goes to offsets[c] + j, as the box id
// (values) and, with kCullFlagKeys, the 64-bit exact-order key (low word id, high word
// cull_distance_key: the squared distance from the eye, overflow-free) or, with kCullFlagRank,
// the 32-bit near-child-first rank lbvh_cull.comp wrote beside the slot; with
// kCullFlagPositions the values are the sorted positions instead of the ids (the LOD emit reads
// each leaf's box); with kCullFlagRankDescent the rank comes from a root-to-leaf descent
// (several views). Order-preserving: the dense array is in LBVH leaf order. CPU twin: lbvh::cull (cpu_reference/lbvh_cull.hpp).
#version 450
#include "common.glsl"
#include "cull_distance.glsl"
#include "gpu_layout_cull.h"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Nodes {
    LbvhNode nodes[];
};
layout(std430, binding = 1) readonly buffer Params {
    CullParams params;
};
layout(std430, binding = 2) readonly buffer Slots {
    uint slots[];
};
layout(std430, binding = 3) readonly buffer Offsets {
    uint offsets[];
};  // exclusive scan of the chunk counts; offsets[chunks] is the total
layout(std430, binding = 4) writeonly buffer Keys {
    uint keys[];
};
layout(std430, binding = 5) writeonly buffer Values {
    uint values[];
};
layout(std430, binding = 6) readonly buffer Ranks {
    uint ranks[];
};

// Near-child-first depth-first rank of the leaf at sorted position p, by one root-to-leaf
// descent (kCullFlagRankDescent; twin: lbvh::near_first_rank): at each internal node the child
// with the smaller distance key comes first (ties: left).
uint near_first_rank(vec3 eye, uint n, uint p) {
    uint leaf_base = n - 1u;
    uint node = 0u;
    uint first = 0u;
    uint rank = 0u;
    while (node < leaf_base) {
        uint left = nodes[node].link.x;
        uint right = nodes[node].link.y;
        uint split = nodes[left].link.w;
        bool right_nearer =
            cull_distance_key(eye, nodes[right].lo.xyz, nodes[right].hi.xyz) <
            cull_distance_key(eye, nodes[left].lo.xyz, nodes[left].hi.xyz);
        if (p <= split) {
            if (right_nearer) rank += nodes[node].link.w - split;
            node = left;
        } else {
            if (!right_nearer) rank += split - first + 1u;
            first = split + 1u;
            node = right;
        }
    }
    return rank;
}

void main() {
    uint s = linear_thread();
    uint n = pc.count;
    if (s >= n) return;
    uint c = s / kCullChunk;
    uint j = s - c * kCullChunk;
    uint begin = offsets[c];
    if (j >= offsets[c + 1u] - begin) return;
    uint dst = begin + j;
    uint leaf = n - 1u + slots[s];
    uint id = nodes[leaf].link.x;
    values[dst] = (pc.flags & kCullFlagPositions) != 0u ? slots[s] : id;
    if ((pc.flags & kCullFlagKeys) != 0u) {
        keys[2u * dst] = id;
        keys[2u * dst + 1u] =
            cull_distance_key(params.eye.xyz, nodes[leaf].lo.xyz, nodes[leaf].hi.xyz);
    } else if ((pc.flags & kCullFlagRankDescent) != 0u) {
        keys[dst] = near_first_rank(params.eye.xyz, n, slots[s]);
    } else if ((pc.flags & kCullFlagRank) != 0u) {
        keys[dst] = ranks[s];
    }
}
