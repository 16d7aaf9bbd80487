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
// Layout (strides keep each view's ranges aligned for binding): params[2 v] is view v's
// CullParams; view v's slots start at uint pc.shift * v, its counts at uint pc.key_words * v.
// pc.offset = views (1..kCullMaxViews).
// CPU twin: lbvh::cull_chunk_views (cpu_reference/lbvh_cull.hpp).
#version 450
#include "common.glsl"
#include "gpu_layout_cull.h"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Nodes {
    LbvhNode nodes[];
};
layout(std430, binding = 1) readonly buffer Params {
    CullParams params[];
};
layout(std430, binding = 2) writeonly buffer Slots {
    uint slots[];
};
layout(std430, binding = 3) writeonly buffer Counts {
    uint counts[];
};

// 0: outside one plane, 1: straddles, 2: inside all planes (lbvh_cull.comp classify).
uint classify(uint node, uint view) {
    vec3 lo = nodes[node].lo.xyz, hi = nodes[node].hi.xyz;
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

void main() {
    uint c = linear_thread();
    uint chunks = pc.tiles;
    uint n = pc.count;
    uint views = pc.offset;
    uint slot_stride = pc.shift;
    uint count_stride = pc.key_words;
    if (c == 0u) {
        for (uint v = 0u; v < views; ++v) counts[count_stride * v + chunks] = 0u;
    }
    if (c >= chunks || n == 0u) return;
    uint leaf_base = n - 1u;
    uint lo = c * kCullChunk;
    uint hi = min(n, lo + kCullChunk) - 1u;  // inclusive
    uint written[kCullMaxViews];
    for (uint v = 0u; v < kCullMaxViews; ++v) written[v] = 0u;

    uint stack_node[kTraversalStack];
    uint stack_first[kTraversalStack];
    uint stack_mask[kTraversalStack];
    uint top = 0u;
    uint node = 0u;
    uint first = 0u;
    uint mask = (1u << views) - 1u;
    while (true) {
        uint last = nodes[node].link.w;
        uint go = 0u;
        if (last >= lo && first <= hi) {
            bool leaf = node >= leaf_base;
            uint begin = max(first, lo);
            uint end = min(last, hi);
            for (uint v = 0u; v < views; ++v) {
                if ((mask & (1u << v)) == 0u) continue;
                uint cls = classify(node, v);
                if (cls == 2u || (cls == 1u && leaf)) {
                    uint base = slot_stride * v + lo;
                    for (uint p = begin; p <= end; ++p) slots[base + written[v]++] = p;
                } else if (cls == 1u) {
                    go |= 1u << v;
                }
            }
        }
        if (go != 0u) {
            uint left = nodes[node].link.x;
            uint right = nodes[node].link.y;
            uint split = nodes[left].link.w;
            if (split + 1u <= hi) {
                stack_node[top] = right;
                stack_first[top] = split + 1u;
                stack_mask[top] = go;
                ++top;
            }
            node = left;
            mask = go;
        } else if (top > 0u) {
            --top;
            node = stack_node[top];
            first = stack_first[top];
            mask = stack_mask[top];
        } else {
            break;
        }
    }
    for (uint v = 0u; v < views; ++v) counts[count_stride * v + c] = written[v];
}
