// Frustum cull of a built LBVH, hierarchical rejection and acceptance: invocation c owns the
// sorted positions [c * kCullChunk, (c + 1) * kCullChunk) and walks the tree depth first (left
// child first) through the nodes whose leaf range meets its chunk. A node entirely outside
// one plane is skipped; a node entirely inside all six planes emits its whole leaf range (no
// more plane tests); a leaf that is neither is seen (the box test of frustum_may_see). Seen
// positions go, in LBVH leaf order, to the invocation's own slots, and their number to
// counts[c]: no atomics, no inter-invocation dependence.
// Each traversal step expands one internal node with one load: its LbvhWideNode (64 bytes,
// layout/common.h) holds both children's bounds and links, so both children are classified from
// it and never from their own LbvhNode. The root's box is the one LbvhNode read (nodes[0]; the
// single leaf when n == 1). A child's leaf range follows from the record: the left child
// starts where its parent does, its last position is its aux (internal) or its own position
// (leaf), and the right child starts after it and ends where the parent ends. A child decided
// while its left sibling is descended waits on the stack with its decision: descended later,
// or its range emitted later (the positions stay in leaf order). The set of nodes classified
// (a node in the chunk whose parent was descended) is the same as when each node was
// classified from its own record.
// With kCullFlagRank (approximate order) it also writes each seen leaf's near-child-first
// depth-first rank to ranks[] beside its slot: the leaf's index in a depth-first traversal of
// the whole tree that visits first, at every internal node, the child whose bounds are nearer
// the eye (smaller cull_distance_key; ties: left), as in the front-to-back sphere BVH
// traversal of the article "Sort a sphere BVH with split planes" (docs/references.md). The
// rank of the first leaf under each node is carried down with its first position (the farther
// child starts after the nearer child's leaf count), and an accepted node is descended
// (without plane tests) to give each of its leaves its rank.
// With CULL_OCCLUSION defined (lbvh_cull_occlusion.comp), a node that passes the frustum test
// is also tested against a depth pyramid (shaders/cull/occlusion.glsl) and rejected with its whole
// subtree when hidden; no range is accepted whole, each leaf is tested and, in the two-phase
// scheme, filtered by its visibility stamp (gpu::CullOcclusion).
// Reads per invocation: the root's bounds (32 B; its id too when n == 1), then 64 B per
// expanded node, about half the nodes classified. Before the wide records: 16 + 32 B (link,
// bounds) per classified node and 16 B (the left child's link) per expanded node, about 112 B
// per expanded node, and for ranks both children's bounds again (64 B).
// Work count: after its counts[chunks + 1] (the chunk counts and the scan's total slot) the
// Counts buffer holds the exact 64-bit number of internal nodes the traversal expanded (one
// LbvhWideNode load each), summed over the invocations as in lbvh_pairs.glsl count_visits:
// counts[chunks + 1] the low word, counts[chunks + 2] its carries; the recorder zeroes both.
// One atomicAdd per invocation (chunk of kCullChunk leaves), after its last store.
// CPU twin: lbvh::cull_chunk (cpu_reference/lbvh_cull.hpp), its `expanded` output.
#ifndef BROADPHASE_LBVH_CULL_GLSL
#define BROADPHASE_LBVH_CULL_GLSL
#include "device/common.glsl"

#include "cull/cull_distance.glsl"

#include "broadphase/gpu/layout/cull.h"
#include "lbvh/tree_parts.glsl"

layout(local_size_x = kWorkgroupSize) in;
// only the root is read (the compaction reads the leaves)
TREE_ARRAY(readonly, 0, Nodes, LbvhNode, nodes, NODE_SHIFT)
layout(std430, binding = 1) readonly buffer Params {
    CullParams params;
};
layout(std430, binding = 2) writeonly buffer Slots {
    uint slots[];
};
layout(std430, binding = 3) buffer Counts {
    uint counts[];
};  // chunks + 1 counts (the last the scan's total), then the visits (lo, hi)
layout(std430, binding = 4) writeonly buffer Ranks {
    uint ranks[];
};
// the internal nodes with their children's bounds and links (layout/common.h)
TREE_ARRAY(readonly, 5, Wide, LbvhWideNode, wide, WIDE_SHIFT)
#ifdef CULL_OCCLUSION
layout(std430, binding = 6) readonly buffer OcclusionParams {
    CullOcclusionParams occ;
};
layout(std430, binding = 7) readonly buffer Pyramid {
    float pyramid_texels[];
};
// By box id: the frame in which the box was last found visible (0: never).
layout(std430, binding = 8) buffer Visibility {
    uint visibility[];
};
#include "cull/occlusion.glsl"

// Whether a node that passed the frustum test is hidden behind the pyramid (single and late
// phases; the early phase has no pyramid yet).
bool node_occluded(vec3 lo, vec3 hi) {
    if (occ.info.z == kOcclusionEarly) return false;
    vec4 m[4] = occ.view_projection;
    return box_occluded(lo, hi, m, occ.info.xy);
}

// Whether a visible, unoccluded leaf (box `id`) is drawn in this phase: early, the leaves seen
// last frame; late, those the early phase did not draw, after stamping every one with this
// frame.
bool leaf_drawn(uint id) {
    uint phase = occ.info.z;
    if (phase == kOcclusionSingle) return true;
    uint previous = occ.info.w - 1u;
    uint seen = visibility[id];
    if (phase == kOcclusionEarly) return seen == previous;
    visibility[id] = occ.info.w;
    return seen != previous;
}
#endif

// 0: outside one plane, 1: straddles, 2: inside all planes (same float ops as the C++ test).
uint classify(vec3 lo, vec3 hi) {
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

// What becomes of a node in the chunk (decide).
const uint kSkip = 0u;             // rejected (outside, hidden, or a leaf not drawn)
const uint kEmit = 1u;             // its leaf range is seen
const uint kDescend = 2u;          // its children are decided
const uint kDescendAccepted = 3u;  // the same, inside every plane (no more plane tests)
// A stack entry whose range waits to be emitted: stack_first holds its first and last
// positions as offsets into the chunk (below kCullChunk), 16 bits each.
const uint kEmitEntry = kInvalidNode;

// The decision on node [lo, hi] (a leaf: box `id`) whose parent was `accepted`.
uint decide(vec3 lo, vec3 hi, bool leaf, uint id, bool accepted, bool want_ranks) {
    uint cls = accepted ? 2u : classify(lo, hi);
#ifdef CULL_OCCLUSION
    // Every node is tested against the pyramid, and every leaf on its own: no range is
    // emitted whole.
    if (cls != 0u && node_occluded(lo, hi)) cls = 0u;
    if (cls == 0u) return kSkip;
    if (leaf) return leaf_drawn(id) ? kEmit : kSkip;
#else
    if ((cls == 2u && (leaf || !want_ranks)) || (cls == 1u && leaf)) return kEmit;
    if (cls == 0u) return kSkip;
#endif
    return cls == 2u ? kDescendAccepted : kDescend;
}

uint written = 0u;  // slots this invocation has written

// Writes the positions [begin, end] of the chunk starting at `lo` (with ranks, a leaf's).
void emit_range(uint lo, uint begin, uint end, uint rank, bool want_ranks) {
    for (uint p = begin; p <= end; ++p) {
        if (want_ranks) ranks[lo + written] = rank;
        slots[lo + written++] = p;
    }
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

    // Three words per entry, 1,152 bytes per invocation (as before the wide records).
    uint stack_node[kTraversalStack];   // a child to descend, or kEmitEntry
    uint stack_first[kTraversalStack];  // its first position, high bit: accepted (or a range)
    uint stack_rank[kTraversalStack];
    uint top = 0u;
    // The node expanded next (an internal node decided kDescend*), its first position, the
    // near-child-first rank of its first leaf, and whether it lies inside every plane. The
    // root's leaf range [0, n - 1] meets every chunk.
    uint node = 0u;
    uint first = 0u;
    uint rank = 0u;
    uint root = decide(NODE(0).lo.xyz, NODE(0).hi.xyz, n == 1u, n == 1u ? NODE(0).link.x : 0u,
                       false, want_ranks);
    if (root == kEmit) emit_range(lo, lo, hi, 0u, want_ranks);
    bool accepted = root == kDescendAccepted;
    bool expand = root >= kDescend;
    uint expanded = 0u;  // internal nodes expanded (wide records loaded)
    while (expand) {
        ++expanded;
        LbvhWideNode w = WIDE(node);
        uint left = w.link.x;
        uint right = w.link.y;
        bool left_leaf = left >= leaf_base;
        bool right_leaf = right >= leaf_base;
        uint split = wide_last(w, 0u, leaf_base);  // the left child's last position
        uint last = wide_last(w, 1u, leaf_base);   // the node's last position
        uint left_rank = rank;
        uint right_rank = rank;
        if (want_ranks) {
            if (cull_distance_key(eye, wide_lo(w, 1u), wide_hi(w, 1u)) <
                cull_distance_key(eye, wide_lo(w, 0u), wide_hi(w, 0u)))
                left_rank += last - split;
            else
                right_rank += split - first + 1u;
        }
        // The node meets the chunk (first <= hi, last >= lo): the left child does when
        // split >= lo, the right one when split + 1 <= hi.
        uint go_left = split >= lo ? decide(wide_lo(w, 0u), wide_hi(w, 0u), left_leaf,
                                            wide_aux(w, 0u), accepted, want_ranks)
                                   : kSkip;
        uint go_right = split + 1u <= hi ? decide(wide_lo(w, 1u), wide_hi(w, 1u), right_leaf,
                                                  wide_aux(w, 1u), accepted, want_ranks)
                                         : kSkip;
        if (go_left == kEmit) emit_range(lo, max(first, lo), min(split, hi), left_rank, want_ranks);
        if (go_left >= kDescend) {
            // The right child waits for the left subtree.
            if (go_right == kEmit) {
                stack_node[top] = kEmitEntry;
                stack_first[top] = (max(split + 1u, lo) - lo) | ((min(last, hi) - lo) << 16);
                stack_rank[top] = right_rank;
                ++top;
            } else if (go_right >= kDescend) {
                stack_node[top] = right;
                stack_first[top] = (split + 1u) | (go_right == kDescendAccepted ? 0x80000000u : 0u);
                stack_rank[top] = right_rank;
                ++top;
            }
            node = left;
            rank = left_rank;
            accepted = go_left == kDescendAccepted;
            continue;
        }
        if (go_right == kEmit)
            emit_range(lo, max(split + 1u, lo), min(last, hi), right_rank, want_ranks);
        if (go_right >= kDescend) {
            node = right;
            first = split + 1u;
            rank = right_rank;
            accepted = go_right == kDescendAccepted;
            continue;
        }
        // Neither child is descended: the next waiting child that is, emitting the waiting
        // ranges met on the way.
        expand = false;
        while (top > 0u && !expand) {
            --top;
            uint f = stack_first[top];
            if (stack_node[top] == kEmitEntry) {
                emit_range(lo, lo + (f & 0xffffu), lo + (f >> 16), stack_rank[top], want_ranks);
            } else {
                node = stack_node[top];
                first = f & 0x7fffffffu;
                accepted = (f & 0x80000000u) != 0u;
                rank = stack_rank[top];
                expand = true;
            }
        }
    }
    counts[c] = written;
    // The visit count, after every store of this invocation (see the lavapipe note in
    // lbvh_build.comp: no store follows an atomic).
    uint before = atomicAdd(counts[chunks + 1u], expanded);
    if (before + expanded < before) atomicAdd(counts[chunks + 2u], 1u);  // the low word wrapped
}

#endif
