// All pairs by LBVH traversal: one invocation per sorted position p queries leaf p's box
// against the tree, skipping every subtree whose last sorted position is <= p, so each pair
// is found exactly once, by its earlier leaf (Karras 2012, sec. 5 / the "only look right"
// trick). Pairs are appended with an atomic counter; the counter always reaches the exact
// number of pairs, and only the first `capacity` are stored (the host grows and retries).
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
layout(std430, binding = 2) buffer Count {
    uint pair_count;
};

void emit(uint a, uint b) {
    uint slot = atomicAdd(pair_count, 1u);
    if (slot < pc.capacity) {
        pairs[2u * slot] = min(a, b);
        pairs[2u * slot + 1u] = max(a, b);
    }
}

void main() {
    uint p = linear_thread();
    uint n = pc.count;
    if (p >= n || n < 2u) return;
    uint leaf_base = n - 1u;
    uint self = leaf_base + p;
    uint self_id = nodes[self].link.x;
    vec3 lo = nodes[self].lo.xyz, hi = nodes[self].hi.xyz;

    uint stack[kTraversalStack];
    uint top = 0u;
    uint node = 0u;  // root (internal, n >= 2)
    while (true) {
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
            break;
        }
    }
}
