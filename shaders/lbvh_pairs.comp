// All pairs by LBVH traversal: sorted position p queries leaf p's box against the tree,
// skipping every subtree whose last sorted position is <= p, so each pair is found exactly
// once, by its earlier leaf (Karras 2012, sec. 5 / the "only look right" trick). Bounded
// (gpu_layout.h, "Bounded traversal"): round 0 runs one invocation per sorted position from the
// root, later rounds one per queued (p, node) item; an invocation expands at most
// kTraversalBudget nodes, then queues its pending subtrees. Pairs are appended with an atomic
// counter kept exact in 64 bits (total_lo plus its carries in total_hi); only the first
// `capacity` are stored (the host grows and retries). The internal nodes an invocation expands
// are added to visits_lo / visits_hi once, when it stops: the traversal's work, the same
// whatever the budget or rounds (MovingScene's policy compares it across frames).
// CPU twin: lbvh::self_pairs.
#version 450
#include "common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Nodes {
    LbvhNode nodes[];
};
layout(std430, binding = 1) writeonly buffer Pairs {
    uint pairs[];
};  // (i, j) per pair
layout(std430, binding = 2) buffer TStatus {
    TraversalStatus tstatus;
};
layout(std430, binding = 3) buffer Work {
    uint work[];
};

#include "traversal.glsl"

void emit(uint a, uint b) {
    uint slot = atomicAdd(tstatus.total_lo, 1u);
    if (slot == 0xffffffffu) atomicAdd(tstatus.total_hi, 1u);  // the low word wrapped
    if (slot < pc.capacity) {
        pairs[2u * slot] = min(a, b);
        pairs[2u * slot + 1u] = max(a, b);
    }
}

// Adds an invocation's expanded nodes to the traversal's 64-bit visit count.
void count_visits(uint expanded) {
    uint before = atomicAdd(tstatus.visits_lo, expanded);
    if (before + expanded < before) atomicAdd(tstatus.visits_hi, 1u);  // the low word wrapped
}

void main() {
    uint n = pc.count;
    if (n < 2u) return;
    uint leaf_base = n - 1u;
    uint p;
    uint node;
    if (traversal_root_round()) {
        p = linear_thread();
        if (p >= n) return;
        node = 0u;  // root (internal, n >= 2)
    } else {
        uint i = linear_thread();
        if (i >= traversal_items()) return;
        uvec2 item = traversal_item(i);
        p = item.x;
        node = item.y;
    }
    uint self = leaf_base + p;
    uint self_id = nodes[self].link.x;
    vec3 lo = nodes[self].lo.xyz, hi = nodes[self].hi.xyz;

    uint stack[kTraversalStack];
    uint top = 0u;
    bool done = false;
    for (uint step = 0u; step < kTraversalBudget; ++step) {
        uint children[2] = uint[2](nodes[node].link.x, nodes[node].link.y);
        uint descend = kInvalidNode;
        for (int c = 0; c < 2; ++c) {
            uint child = children[c];
            if (nodes[child].link.w <= p) continue;  // all leaves at or before p
            if (!boxes_overlap(lo, hi, nodes[child].lo.xyz, nodes[child].hi.xyz)) continue;
            if (child >= leaf_base) {
                emit(self_id, nodes[child].link.x);
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
            count_visits(step + 1u);
            break;
        }
    }
    if (done) return;
    count_visits(kTraversalBudget);
    // One reservation per pending subtree (see lbvh_raycast.comp).
    uint slot;
    if (traversal_reserve(1u, slot)) traversal_put(slot, p, node);
    for (uint k = 0u; k < top; ++k)
        if (traversal_reserve(1u, slot)) traversal_put(slot, p, stack[k]);
}
