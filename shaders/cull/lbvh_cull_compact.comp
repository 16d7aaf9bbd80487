// Compaction of the cull's per-chunk slots (lbvh_cull.comp) into one dense array, after an
// exclusive scan of the chunk counts: slot j of chunk c goes to offsets[c] + j, with
// kCullFlagKeys as the 64-bit exact-order key alone (cull_order_key: the cull_distance_key, the
// squared distance from the eye, overflow-free, above the id's pc.key_words bits; the order
// sort moves these keys only, and the emits read the id from them), else as the box id (values)
// and, with kCullFlagRank, the 32-bit near-child-first rank lbvh_cull.comp wrote beside the
// slot; with kCullFlagPositions the values are the sorted positions instead of the ids (the LOD
// emit reads each leaf's box). Order-preserving: the dense array is in LBVH leaf order. CPU twin:
// lbvh::cull (cpu_reference/lbvh_cull.hpp).
#version 450
#include "device/common.glsl"

#include "cull/cull_distance.glsl"

#include "broadphase/gpu/layout/cull.h"
#include "lbvh/tree_parts.glsl"

layout(local_size_x = kWorkgroupSize) in;
TREE_ARRAY(readonly, 0, Nodes, LbvhNode, nodes, NODE_SHIFT)
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
    uint id = NODE(leaf).link.x;
    if ((pc.flags & kCullFlagKeys) != 0u) {
        uvec2 key =
            cull_order_key(cull_distance_key(params.eye.xyz, NODE(leaf).lo.xyz, NODE(leaf).hi.xyz),
                           id, pc.key_words);
        keys[2u * dst] = key.x;
        keys[2u * dst + 1u] = key.y;
        return;
    }
    values[dst] = (pc.flags & kCullFlagPositions) != 0u ? slots[s] : id;
    if ((pc.flags & kCullFlagRank) != 0u) keys[dst] = ranks[s];
}
