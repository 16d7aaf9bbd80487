// All pairs by LBVH traversal: sorted position p queries leaf p's box against the tree,
// skipping every subtree whose last sorted position is <= p, so each pair is found exactly
// once, by its earlier leaf (Karras 2012, sec. 5 / the "only look right" trick). Bounded
// (gpu_layout.h, "Bounded traversal"): round 0 runs one invocation per sorted position from the
// root, later rounds one per queued (p, node) item; an invocation expands at most
// traversal_budget() nodes, then queues its pending subtrees. Pairs are appended with an atomic
// counter kept exact in 64 bits (total_lo plus its carries in total_hi); only the first
// `capacity` are stored (the host grows and retries). The internal nodes an invocation expands
// are added to visits_lo / visits_hi once, when it stops: the traversal's work, the same
// whatever the budget or rounds (MovingScene's policy compares it across frames).
//
// Proxies (pc.flags & kPairsProxies; gpu::ProxyScene): each leaf id is a slot whose
// ProxySlot (binding 4) holds the body's filter and handle. A pair is kept only when the two
// filters allow it (should_collide, tested before anything is appended, so a filtered pair
// costs no output) and is written as the two handles. Cross (pc.flags & kPairsCross): leaf p
// of the query tree (binding 0) is tested against every leaf of a second tree (binding 5,
// pc.offset leaves, slots in binding 6), with no "look right" skip: the dynamic bodies
// against the static world. Several passes may append to one list (pc.flags & kPairsAppend:
// the pass continues the status's pair counter); only the first pass counts its visits, the
// work of the tree the refit-or-rebuild policy watches.
//
// Keys (pc.flags & kPairsKeys; gpu::MovingScene and ProxyScene): each pair (i, j), i < j, is
// stored as its 64-bit sort key i << b | j (b = pc.key_words, the bits of the largest id or
// handle), so that the radix sort reads the keys straight from this pass's output.
//
// Short stack: kPairStack entries (or fewer, pc.key_word); a pending subtree that finds it full
// is handed to the work queue at once instead of being stacked, and expanded in a later round
// (the visits and pairs are the same, only the round that finds them differs).
//
// Appends: with BP_SUBGROUP_APPEND (lbvh_pairs_subgroup.comp, for devices with subgroup
// ballot), the invocations of a subgroup that append together reserve their slots with one
// atomic: the subgroup's first active invocation adds their count, and each takes the base
// plus its rank among them (ballot, exclusive bit count, broadcast). Without it
// (lbvh_pairs.comp, any device), one atomic per pair. Both count exactly the same pairs; only
// the order in which they are stored differs (the pair lists are sorted after).
// Each step reads one LbvhWideNode: the expanded node's children, their bounds and links.
// CPU twin: lbvh::self_pairs.
// Included by lbvh_pairs.comp and lbvh_pairs_subgroup.comp, after their #version.
#include "common.glsl"
#include "tree_parts.glsl"

layout(local_size_x = kWorkgroupSize) in;
TREE_ARRAY(readonly, 0, Nodes, LbvhNode, nodes, NODE_SHIFT)
layout(std430, binding = 1) writeonly buffer Pairs {
    uint pairs[];
};  // (i, j) per pair
layout(std430, binding = 2) buffer TStatus {
    TraversalStatus tstatus;
};
layout(std430, binding = 3) buffer Work {
    uint work[];
};
layout(std430, binding = 4) readonly buffer Slots {
    uvec4 slots[];
};  // ProxySlot (category, mask, group, handle) by leaf id of the query tree (kPairsProxies)
// the tree tested against (kPairsCross)
TREE_ARRAY(readonly, 5, OtherNodes, LbvhNode, other_nodes, NODE_SHIFT)
layout(std430, binding = 6) readonly buffer OtherSlots {
    uvec4 other_slots[];
};  // by leaf id of the other tree (kPairsCross)
// the query tree's internal nodes with their children's bounds (gpu_layout.h)
TREE_ARRAY(readonly, 7, Wide, LbvhWideNode, wide, WIDE_SHIFT)
// the same for the tree tested against (kPairsCross)
TREE_ARRAY(readonly, 8, OtherWide, LbvhWideNode, other_wide, WIDE_SHIFT)

#include "traversal.glsl"

void append(uint a, uint b) {
#ifdef BP_SUBGROUP_APPEND
    uvec4 together = subgroupBallot(true);
    uint count = subgroupBallotBitCount(together);
    uint base = 0u;
    if (subgroupElect()) {
        base = atomicAdd(tstatus.total_lo, count);
        if (base + count < base) atomicAdd(tstatus.total_hi, 1u);  // the low word wrapped
    }
    uint slot = subgroupBroadcastFirst(base) + subgroupBallotExclusiveBitCount(together);
#else
    uint slot = atomicAdd(tstatus.total_lo, 1u);
    if (slot == 0xffffffffu) atomicAdd(tstatus.total_hi, 1u);  // the low word wrapped
#endif
    if (slot < pc.capacity) {
        uint i = min(a, b), j = max(a, b);
        if ((pc.flags & kPairsKeys) != 0u) {  // the sort key i << bits | j, low word first
            uint bits = pc.key_words;         // 1..31
            pairs[2u * slot] = (i << bits) | j;
            pairs[2u * slot + 1u] = i >> (32u - bits);
        } else {
            pairs[2u * slot] = i;
            pairs[2u * slot + 1u] = j;
        }
    }
}

bool proxies() {
    return (pc.flags & kPairsProxies) != 0u;
}
bool cross_pass() {
    return (pc.flags & kPairsCross) != 0u;
}

// The pair of the query's leaf id `a` (its ProxySlot `self_slot` with proxies) and leaf id `b`
// of the tree walked.
void emit(uint a, uvec4 self_slot, uint b) {
    if (!proxies()) {
        append(a, b);
        return;
    }
    uvec4 other = cross_pass() ? other_slots[b] : slots[b];
    if (!proxy_should_collide(self_slot, other)) return;
    append(self_slot.w, other.w);
}

// Internal node `i` of the tree walked (the query tree itself, or the other one in a cross
// pass) with both children's bounds and links: one 64-byte record per step.
LbvhWideNode walked_wide(uint i) {
    if (cross_pass()) return OTHER_WIDE(i);
    return WIDE(i);
}

// Adds an invocation's expanded nodes to the traversal's 64-bit visit count.
void count_visits(uint expanded) {
    if ((pc.flags & kPairsAppend) != 0u) return;
    uint before = atomicAdd(tstatus.visits_lo, expanded);
    if (before + expanded < before) atomicAdd(tstatus.visits_hi, 1u);  // the low word wrapped
}

void main() {
    uint n = pc.count;
    bool cross = cross_pass();
    uint m = cross ? pc.offset : n;  // leaves of the tree walked
    if (cross ? (n == 0u || m == 0u) : n < 2u) return;
    uint leaf_base = m - 1u;
    uint p;
    uint node;
    if (traversal_root_round()) {
        p = linear_thread();
        if (p >= n) return;
        node = 0u;  // root: internal when m >= 2, the only leaf when m == 1
    } else {
        uint i = linear_thread();
        if (i >= traversal_items()) return;
        uvec2 item = traversal_item(i);
        p = item.x;
        node = item.y;
    }
    uint self = n - 1u + p;
    uint self_id = NODE(self).link.x;
    vec3 lo = NODE(self).lo.xyz, hi = NODE(self).hi.xyz;
    uvec4 self_slot = proxies() ? slots[self_id] : uvec4(0u);
    // Empty slots overlap nothing; the one-leaf tree of a cross pass has no children to walk.
    if (box_empty(NODE(self).lo, NODE(self).hi)) return;
    if (cross && m == 1u) {
        if (boxes_overlap(lo, hi, OTHER_NODE(0).lo.xyz, OTHER_NODE(0).hi.xyz))
            emit(self_id, self_slot, OTHER_NODE(0).link.x);
        return;
    }

    // Short stack (gpu_layout.h, kPairStack): a subtree that finds it full is queued.
    uint stack[kPairStack];
    uint stack_limit = pc.key_word == 0u ? kPairStack : min(pc.key_word, kPairStack);
    uint top = 0u;
    bool done = false;
    uint budget = traversal_budget();
    for (uint step = 0u; step < budget; ++step) {
        LbvhWideNode w = walked_wide(node);
        uint descend = kInvalidNode;
        for (uint c = 0u; c < 2u; ++c) {
            uint child = wide_child(w, c);
            bool leaf = child >= leaf_base;
            if (!cross && wide_last(w, c, leaf_base) <= p) continue;  // all at or before p
            if (!boxes_overlap(lo, hi, wide_lo(w, c), wide_hi(w, c))) continue;
            if (leaf) {
                emit(self_id, self_slot, wide_aux(w, c));  // a leaf's aux: its box id
            } else if (descend == kInvalidNode) {
                descend = child;
            } else if (top < stack_limit) {
                stack[top++] = child;
            } else {
                uint slot;  // expanded by another invocation next round
                if (traversal_reserve(1u, slot)) traversal_put(slot, p, child);
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
    count_visits(budget);
    // One reservation per pending subtree (see lbvh_raycast.comp).
    uint slot;
    if (traversal_reserve(1u, slot)) traversal_put(slot, p, node);
    for (uint k = 0u; k < top; ++k)
        if (traversal_reserve(1u, slot)) traversal_put(slot, p, stack[k]);
}
