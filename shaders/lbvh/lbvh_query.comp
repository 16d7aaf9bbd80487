// Batched region queries (boxes; a point pick is the box {p, p}) against a built LBVH, in two
// passes so that no hit is ever dropped: the count pass writes the number of hits of query q to
// offsets[q]; the host scans offsets exclusively (RadixSort::record_scan); the fill pass
// traverses again and writes the hits of query q to ids[offsets[q] ...], skipping slots at or
// past `capacity` (the scanned total says how many are needed). Stack traversal of a Karras
// 2012 tree as in lbvh_pairs.comp, bounded the same way (layout/common.h, "Bounded traversal"):
// round 0 runs one invocation per query from the root, later rounds one per queued
// (query, node) item. A query that finishes in round 0 writes its hits in the CPU twin's
// visiting order with no atomics; the queued items of a query add to offsets[q] (count pass)
// or take slots from cursors[q] (fill pass; round 0 leaves it at offsets[q] + its own hits)
// with atomics, so only their order within the query varies.
// Each step reads one 64-byte LbvhWideNode of the node it expands (both children's bounds and
// links; a leaf child's box id is its aux), never the children's LbvhNode records (a link and
// two child nodes were 112 B); only n == 1, whose single leaf is node 0 and which has no wide
// record, reads the LbvhNode array.
// Each invocation adds the internal nodes it expanded (one wide record each) to its pass's
// visits_lo / visits_hi (traversal_count_visits, once, at its end): the count pass and the
// fill pass walk the same nodes and each counts them into its own status, so both equal the
// twin's expanded count whatever the budget, rounds or order (a region query never prunes on
// what another item found).
// CPU twin: lbvh::query_region. Push constants: see layout/queries.h.
#version 450
#include "device/common.glsl"

#include "broadphase/gpu/layout/queries.h"
#include "lbvh/tree_parts.glsl"

layout(local_size_x = kWorkgroupSize) in;
TREE_ARRAY(readonly, 0, Nodes, LbvhNode, nodes, NODE_SHIFT)
layout(std430, binding = 1) readonly buffer Queries {
    GpuBox queries[];
};
layout(std430, binding = 2) buffer Offsets {
    uint offsets[];
};
layout(std430, binding = 3) writeonly buffer Ids {
    uint ids[];
};
layout(std430, binding = 4) buffer TStatus {
    TraversalStatus tstatus;
};
layout(std430, binding = 5) buffer Work {
    uint work[];
};
layout(std430, binding = 6) buffer Cursors {
    uint cursors[];
};
// internal node i's children with their bounds and links (layout/common.h), n - 1 of 64 B
TREE_ARRAY(readonly, 7, Wide, LbvhWideNode, wide, WIDE_SHIFT)

#include "lbvh/traversal.glsl"

void main() {
    uint n = pc.offset;
    bool fill = pc.flags == kQueryFill;
    bool root = traversal_root_round();
    uint q;
    uint node = 0u;  // root
    if (root) {
        q = linear_thread();
        if (q >= pc.count) return;
    } else {
        uint i = linear_thread();
        if (i >= traversal_items()) return;
        uvec2 item = traversal_item(i);
        q = item.x;
        node = item.y;
    }
    uint base = fill && root ? offsets[q] : 0u;
    uint found = 0u;
    vec3 lo = queries[q].lo.xyz, hi = queries[q].hi.xyz;

    if (n == 1u) {
        if (boxes_overlap(lo, hi, NODE(0).lo.xyz, NODE(0).hi.xyz)) {
            if (fill && base < pc.capacity) ids[base] = NODE(0).link.x;
            found = 1u;
        }
        if (!fill) offsets[q] = found;
        return;
    }
    if (n == 0u) {
        if (!fill) offsets[q] = 0u;
        return;
    }
    uint leaf_base = n - 1u;
    uint stack[kTraversalStack];
    uint top = 0u;
    bool done = false;
    uint expanded = 0u;  // internal nodes this invocation expands
    uint budget = traversal_budget();
    for (uint step = 0u; step < budget; ++step) {
        LbvhWideNode w = WIDE(node);  // the step's one load: both children, bounds and links
        ++expanded;
        uint descend = kInvalidNode;
        for (uint c = 0u; c < 2u; ++c) {
            uint child = wide_child(w, c);
            if (!boxes_overlap(lo, hi, wide_lo(w, c), wide_hi(w, c))) continue;
            if (child >= leaf_base) {
                if (fill) {
                    uint slot = root ? base + found : atomicAdd(cursors[q], 1u);
                    if (slot < pc.capacity) ids[slot] = wide_aux(w, c);  // box id
                }
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
            done = true;
            break;
        }
    }
    if (!fill) {
        if (root)
            offsets[q] = found;
        else if (found > 0u)
            atomicAdd(offsets[q], found);
    } else if (root && !done) {
        cursors[q] = base + found;  // the queued items continue from here
    }
    if (!done) {
        // One reservation per pending subtree (see lbvh_raycast.comp).
        uint slot;
        if (traversal_reserve(1u, slot)) traversal_put(slot, q, node);
        for (uint k = 0u; k < top; ++k)
            if (traversal_reserve(1u, slot)) traversal_put(slot, q, stack[k]);
    }
    traversal_count_visits(expanded);  // after the invocation's last store
}
