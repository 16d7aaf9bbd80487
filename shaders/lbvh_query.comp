// Batched region queries (boxes; a point pick is the box {p, p}) against a built LBVH, in two
// passes so that no hit is ever dropped and no atomics are needed: the count pass writes the
// number of hits of query q to offsets[q]; the host scans offsets exclusively
// (RadixSort::record_scan); the fill pass traverses again and writes the hits of query q to
// ids[offsets[q] ...], skipping slots at or past `capacity` (the scanned total says how many
// are needed). Stack traversal of a Karras 2012 tree as in lbvh_pairs.comp.
// CPU twin: lbvh::query_region (same visiting order, so fill output matches it exactly).
// Push constants: see gpu_layout_queries.h.
#version 450
#include "common.glsl"
#include "gpu_layout_queries.h"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Nodes {
    LbvhNode nodes[];
};
layout(std430, binding = 1) readonly buffer Queries {
    GpuBox queries[];
};
layout(std430, binding = 2) buffer Offsets {
    uint offsets[];
};
layout(std430, binding = 3) writeonly buffer Ids {
    uint ids[];
};

void main() {
    uint q = linear_thread();
    if (q >= pc.count) return;
    uint n = pc.offset;
    bool fill = pc.flags == kQueryFill;
    uint base = fill ? offsets[q] : 0u;
    uint found = 0u;
    vec3 lo = queries[q].lo.xyz, hi = queries[q].hi.xyz;

    if (n == 1u) {
        if (boxes_overlap(lo, hi, nodes[0].lo.xyz, nodes[0].hi.xyz)) {
            if (fill && base < pc.capacity) ids[base] = nodes[0].link.x;
            found = 1u;
        }
    } else if (n >= 2u) {
        uint leaf_base = n - 1u;
        uint stack[kTraversalStack];
        uint top = 0u;
        uint node = 0u;  // root
        while (true) {
            uint children[2] = uint[2](nodes[node].link.x, nodes[node].link.y);
            uint descend = kInvalidNode;
            for (int c = 0; c < 2; ++c) {
                uint child = children[c];
                if (!boxes_overlap(lo, hi, nodes[child].lo.xyz, nodes[child].hi.xyz)) continue;
                if (child >= leaf_base) {
                    uint slot = base + found;
                    if (fill && slot < pc.capacity) ids[slot] = nodes[child].link.x;
                    ++found;
                } else if (descend == kInvalidNode) {
                    descend = child;
                } else {
                    stack[top++] = child;
                }
            }
            if (descend != kInvalidNode) {
                node = descend;
            } else if (top > 0u) {
                node = stack[--top];
            } else {
                break;
            }
        }
    }
    if (!fill) offsets[q] = found;
}
