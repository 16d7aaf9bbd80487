// Frustum cull of a built LBVH for several views in one traversal (gpu::Culler::record_views,
// cull_views; issue 11 item 2): invocation c walks the tree once for its chunk of sorted
// positions [c * kCullChunk, (c + 1) * kCullChunk), as lbvh_cull.comp does for one view, with a
// mask of the views whose frusta still straddle the node. At each node every view of the mask
// is classified (the same float operations as lbvh_cull.comp): a view that sees the node
// entirely, or sees a leaf at all, emits the node's leaf range into its own slots; a view that
// straddles an internal node stays in the mask of its children; the others drop out, and a
// node no view needs is not descended. Each view's positions are written in depth-first
// (left first) order, hence ascending, exactly as its single-view cull writes them. No
// near-child-first ranks: the exact order only (record_views culls each view of the approximate
// order with lbvh_cull.comp, which carries its ranks down).
// As in lbvh_cull.glsl, each step expands one internal node with one 64-byte LbvhWideNode and
// classifies both children from it (the root from nodes[0]); a right child decided while its
// left sibling is descended waits on the stack with the views that emit it and those that
// descend it. Reads per invocation: the root's bounds (32 B), then 64 B per expanded node
// (before: 48 B per classified node and 16 B per expanded one). Stack: three words per entry,
// 1,152 bytes per invocation (as before).
// Layout (strides keep each view's ranges aligned for binding): params[2 v] is view v's
// CullParams; view v's slots start at uint pc.shift * v, its counts at uint pc.key_words * v.
// pc.offset = views (1..kCullMaxViews).
// Work count: view 0's counts[chunks + 1] and counts[chunks + 2] hold the exact 64-bit number
// of internal nodes the traversal expanded, over all invocations (as lbvh_cull.glsl counts
// them; one atomicAdd per invocation, after its last store); the recorder zeroes both.
// CPU twin: lbvh::cull_chunk_views (cpu_reference/lbvh_cull.hpp), `expanded` its work count.
#version 450
#include "device/common.glsl"

#include "broadphase/gpu/layout/cull.h"
#include "lbvh/tree_parts.glsl"

layout(local_size_x = kWorkgroupSize) in;
TREE_ARRAY(readonly, 0, Nodes, LbvhNode, nodes, NODE_SHIFT)  // only the root is read
layout(std430, binding = 1) readonly buffer Params {
    CullParams params[];
};
layout(std430, binding = 2) writeonly buffer Slots {
    uint slots[];
};
layout(std430, binding = 3) buffer Counts {
    uint counts[];
};  // per view chunks + 1 counts; then, in view 0's, the visits (lo, hi)
// the internal nodes with their children's bounds and links (layout/common.h)
TREE_ARRAY(readonly, 4, Wide, LbvhWideNode, wide, WIDE_SHIFT)

// 0: outside one plane, 1: straddles, 2: inside all planes (lbvh_cull.comp classify).
uint classify(vec3 lo, vec3 hi, uint view) {
    bool inside = true;
    for (int i = 0; i < 6; ++i) {
        vec4 pl = params[2u * view].planes[i];
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

uint views;
uint written[kCullMaxViews];  // slots each view has written

// The views of `mask` that see node [lo, hi] (emit, its range) and those that straddle it and
// descend (go; never for a leaf), packed as go | emit << kCullMaxViews.
uint decide(vec3 lo, vec3 hi, bool leaf, uint mask) {
    uint emit = 0u;
    uint go = 0u;
    for (uint v = 0u; v < views; ++v) {
        if ((mask & (1u << v)) == 0u) continue;
        uint cls = classify(lo, hi, v);
        if (cls == 2u || (cls == 1u && leaf))
            emit |= 1u << v;
        else if (cls == 1u)
            go |= 1u << v;
    }
    return go | (emit << kCullMaxViews);
}

// Writes the positions [begin, end] to the slots of the views in `emit`.
void emit_range(uint emit, uint begin, uint end, uint lo) {
    for (uint v = 0u; v < views; ++v) {
        if ((emit & (1u << v)) == 0u) continue;
        uint base = pc.shift * v + lo;
        for (uint p = begin; p <= end; ++p) slots[base + written[v]++] = p;
    }
}

void main() {
    uint c = linear_thread();
    uint chunks = pc.tiles;
    uint n = pc.count;
    views = pc.offset;
    uint count_stride = pc.key_words;
    if (c == 0u) {
        for (uint v = 0u; v < views; ++v) counts[count_stride * v + chunks] = 0u;
    }
    if (c >= chunks || n == 0u) return;
    uint leaf_base = n - 1u;
    uint lo = c * kCullChunk;
    uint hi = min(n, lo + kCullChunk) - 1u;  // inclusive
    for (uint v = 0u; v < kCullMaxViews; ++v) written[v] = 0u;
    const uint views_mask = (1u << kCullMaxViews) - 1u;

    // A waiting right child: its index, first position, and decision (go | emit <<
    // kCullMaxViews | (its last position in the chunk - lo) << 2 kCullMaxViews).
    uint stack_node[kTraversalStack];
    uint stack_first[kTraversalStack];
    uint stack_mask[kTraversalStack];
    uint top = 0u;
    // The node expanded next, its first position and the views that descend it.
    uint node = 0u;
    uint first = 0u;
    uint root = decide(NODE(0).lo.xyz, NODE(0).hi.xyz, n == 1u, (1u << views) - 1u);
    emit_range(root >> kCullMaxViews, lo, hi, lo);
    uint mask = root & views_mask;
    uint expanded = 0u;  // internal nodes expanded (wide records loaded)
    while (mask != 0u) {
        ++expanded;
        LbvhWideNode w = WIDE(node);
        uint left = w.link.x;
        uint right = w.link.y;
        bool left_leaf = left >= leaf_base;
        bool right_leaf = right >= leaf_base;
        uint split = wide_last(w, 0u, leaf_base);  // the left child's last position
        uint last = wide_last(w, 1u, leaf_base);   // the node's last position
        uint l = split >= lo ? decide(wide_lo(w, 0u), wide_hi(w, 0u), left_leaf, mask) : 0u;
        uint r = split + 1u <= hi ? decide(wide_lo(w, 1u), wide_hi(w, 1u), right_leaf, mask) : 0u;
        emit_range(l >> kCullMaxViews, max(first, lo), min(split, hi), lo);
        uint go_left = l & views_mask;
        if (go_left != 0u) {
            // The right child waits for the left subtree.
            if (r != 0u) {
                stack_node[top] = right;
                stack_first[top] = split + 1u;
                stack_mask[top] = r | ((min(last, hi) - lo) << (2u * kCullMaxViews));
                ++top;
            }
            node = left;
            mask = go_left;
            continue;
        }
        emit_range(r >> kCullMaxViews, max(split + 1u, lo), min(last, hi), lo);
        mask = r & views_mask;
        if (mask != 0u) {
            node = right;
            first = split + 1u;
            continue;
        }
        // Neither child is descended: the next waiting child that is, emitting the waiting
        // ranges met on the way.
        while (top > 0u && mask == 0u) {
            --top;
            uint m = stack_mask[top];
            first = stack_first[top];
            emit_range((m >> kCullMaxViews) & views_mask, max(first, lo),
                       lo + (m >> (2u * kCullMaxViews)), lo);
            node = stack_node[top];
            mask = m & views_mask;
        }
    }
    for (uint v = 0u; v < views; ++v) counts[count_stride * v + c] = written[v];
    uint before = atomicAdd(counts[chunks + 1u], expanded);
    if (before + expanded < before) atomicAdd(counts[chunks + 2u], 1u);  // the low word wrapped
}
