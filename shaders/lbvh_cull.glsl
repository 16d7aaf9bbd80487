// Frustum cull of a built LBVH, hierarchical rejection and acceptance: invocation c owns the
// sorted positions [c * kCullChunk, (c + 1) * kCullChunk) and walks the tree depth first (left
// child first) through the nodes whose leaf range meets its chunk. A node entirely outside
// one plane is skipped; a node entirely inside all six planes emits its whole leaf range (no
// more plane tests); a leaf that is neither is seen (the box test of frustum_may_see). Its
// first sorted position is carried down the traversal (a right child starts after its left
// sibling's last position). Seen positions go, in LBVH leaf order, to the invocation's own
// slots, and their number to counts[c]: no atomics, no inter-invocation dependence.
// With kCullFlagRank (approximate order) it also writes each seen leaf's near-child-first
// depth-first rank to ranks[] beside its slot: the leaf's index in a depth-first traversal of
// the whole tree that visits first, at every internal node, the child whose bounds are nearer
// the eye (smaller cull_distance_key; ties: left), as in the front-to-back sphere BVH
// traversal of the article "Sort a sphere BVH with split planes" (docs/references.md). The
// rank of the first leaf under each node is carried down with its first position (the farther
// child starts after the nearer child's leaf count), and an accepted node is descended
// (without plane tests) to give each of its leaves its rank.
// With CULL_OCCLUSION defined (lbvh_cull_occlusion.comp), a node that passes the frustum test
// is also tested against a depth pyramid (shaders/occlusion.glsl) and rejected with its whole
// subtree when hidden; no range is accepted whole, each leaf is tested and, in the two-phase
// scheme, filtered by its visibility stamp (gpu::CullOcclusion).
// CPU twin: lbvh::cull_chunk (cpu_reference/lbvh_cull.hpp).
#ifndef BROADPHASE_LBVH_CULL_GLSL
#define BROADPHASE_LBVH_CULL_GLSL
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
layout(std430, binding = 2) writeonly buffer Slots {
    uint slots[];
};
layout(std430, binding = 3) writeonly buffer Counts {
    uint counts[];
};
layout(std430, binding = 4) writeonly buffer Ranks {
    uint ranks[];
};
#ifdef CULL_OCCLUSION
layout(std430, binding = 5) readonly buffer OcclusionParams {
    CullOcclusionParams occ;
};
layout(std430, binding = 6) readonly buffer Pyramid {
    float pyramid_texels[];
};
// By box id: the frame in which the box was last found visible (0: never).
layout(std430, binding = 7) buffer Visibility {
    uint visibility[];
};
#include "occlusion.glsl"

// Whether a node that passed the frustum test is hidden behind the pyramid (single and late
// phases; the early phase has no pyramid yet).
bool node_occluded(uint node) {
    if (occ.info.z == kOcclusionEarly) return false;
    vec4 m[4] = occ.view_projection;
    return box_occluded(nodes[node].lo.xyz, nodes[node].hi.xyz, m, occ.info.xy);
}

// Whether a visible, unoccluded leaf is drawn in this phase: early, the leaves seen last frame;
// late, those the early phase did not draw, after stamping every one with this frame.
bool leaf_drawn(uint node) {
    uint phase = occ.info.z;
    if (phase == kOcclusionSingle) return true;
    uint id = nodes[node].link.x;
    uint previous = occ.info.w - 1u;
    uint seen = visibility[id];
    if (phase == kOcclusionEarly) return seen == previous;
    visibility[id] = occ.info.w;
    return seen != previous;
}
#endif

// Order-preserving key of the squared distance from the eye to node's bounds, overflow-free
// (cull_distance.glsl; twin: lbvh::cull_chunk).
uint node_distance2(vec3 e, uint node) {
    return cull_distance_key(e, nodes[node].lo.xyz, nodes[node].hi.xyz);
}

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
    bool want_ranks = (pc.flags & kCullFlagRank) != 0u;
    vec3 eye = params.eye.xyz;
    uint leaf_base = n - 1u;
    uint lo = c * kCullChunk;
    uint hi = min(n, lo + kCullChunk) - 1u;  // inclusive
    uint written = 0u;

    uint stack_node[kTraversalStack];
    uint stack_first[kTraversalStack];  // high bit: the node lies inside an accepted node
    uint stack_rank[kTraversalStack];
    uint top = 0u;
    uint node = 0u;
    uint first = 0u;
    uint rank = 0u;  // near-child-first rank of the first leaf under node (want_ranks)
    bool accepted = false;
    while (true) {
        uint last = nodes[node].link.w;
        bool descend = false;
        if (last >= lo && first <= hi) {
            uint cls = accepted ? 2u : classify(node);
            bool leaf = node >= leaf_base;
#ifdef CULL_OCCLUSION
            // Every node is tested against the pyramid, and every leaf on its own: no range is
            // emitted whole.
            if (cls != 0u && node_occluded(node)) cls = 0u;
            bool emit = cls != 0u && leaf && leaf_drawn(node);
            bool down = cls != 0u && !leaf;
#else
            bool emit = (cls == 2u && (leaf || !want_ranks)) || (cls == 1u && leaf);
            bool down = !emit && cls != 0u;
#endif
            if (emit) {
                uint end = min(last, hi);
                for (uint p = max(first, lo); p <= end; ++p) {
                    if (want_ranks) ranks[lo + written] = rank;
                    slots[lo + written++] = p;
                }
            } else if (down) {
                descend = true;
                accepted = cls == 2u;
            }
        }
        if (descend) {
            uint left = nodes[node].link.x;
            uint right = nodes[node].link.y;
            uint split = nodes[left].link.w;
            uint left_rank = rank;
            uint right_rank = rank;
            if (want_ranks) {
                if (node_distance2(eye, right) < node_distance2(eye, left))
                    left_rank += last - split;
                else
                    right_rank += split - first + 1u;
            }
            if (split + 1u <= hi) {
                stack_node[top] = right;
                stack_first[top] = (split + 1u) | (accepted ? 0x80000000u : 0u);
                stack_rank[top] = right_rank;
                ++top;
            }
            node = left;
            rank = left_rank;
        } else if (top > 0u) {
            --top;
            node = stack_node[top];
            first = stack_first[top] & 0x7fffffffu;
            accepted = (stack_first[top] & 0x80000000u) != 0u;
            rank = stack_rank[top];
        } else {
            break;
        }
    }
    counts[c] = written;
}

#endif
