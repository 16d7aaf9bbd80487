// All pairs by LBVH traversal, in groups (layout/common.h, kPairGroup): invocation g takes the
// sorted positions [g * kPairGroup, g * kPairGroup + kPairGroup) (its members, the last group
// fewer), tests them against each other in registers, then walks the tree once per run of
// them (a member farther from the run before it than either is wide begins the next: where the
// code order jumps across the scene) with the union of the run's boxes, skipping every
// subtree whose last sorted position is <= the group's last, and tests each leaf it reaches
// against every member of the run. So each pair is found exactly once, by the group of its
// earlier leaf (Karras 2012, sec. 5, the "only look right" trick, with one walk per run instead
// of one per leaf: the nodes from the root down to the run are read once for all of it).
// Bounded (layout/common.h, "Bounded traversal"): round 0 runs one invocation per group from the
// root, later rounds one per queued item (a pending subtree of one run, or the runs a group had
// not begun), which loads its group's members again; an invocation takes at most
// traversal_budget() steps, each a node expanded or an iteration of storing pairs, then queues
// what is pending. Pairs are appended with an atomic counter kept exact in 64 bits (total_lo
// plus its carries in total_hi); only the first `capacity` are stored (the host grows and
// retries). The internal nodes an invocation expands are added to visits_lo / visits_hi once,
// when it stops: the traversal's work, the same whatever the budget or rounds (MovingScene's
// policy compares it across frames).
//
// Proxies (pc.flags & kPairsProxies; gpu::ProxyScene): each leaf id is a slot whose
// ProxySlot (binding 4) holds the body's filter and handle. A pair is kept only when the two
// filters allow it (should_collide, tested before anything is appended, so a filtered pair
// costs no output) and is written as the two handles. An empty slot is no member (it overlaps
// nothing). Cross (pc.flags & kPairsCross): the groups of the query tree (binding 0) are
// tested against every leaf of a second tree (binding 5, pc.offset leaves, slots in binding 6),
// with no "look right" skip and no pairs within a group: the dynamic bodies against the static
// world. Several passes may append to one list (pc.flags & kPairsAppend: the pass continues the
// status's pair counter); only the first pass counts its visits, the work of the tree the
// refit-or-rebuild policy watches.
//
// Keys (pc.flags & kPairsKeys; gpu::MovingScene and ProxyScene): each pair (i, j), i < j, is
// stored as its 64-bit sort key i << b | j (b = pc.key_words, the bits of the largest id or
// handle), so that the radix sort reads the keys straight from this pass's output.
//
// Short stack: kPairStack entries (or fewer, pc.key_word); a pending subtree that finds it full
// is handed to the work queue at once instead of being stacked, and expanded in a later round
// (the visits and pairs are the same, only the round that finds them differs).
//
// Appends: each step reserves the slots of all the pairs it found at once (emit_hits: up to
// two leaves against every member). With BP_SUBGROUP_APPEND (lbvh_pairs_subgroup.comp, for
// devices with subgroup ballot), the invocations of a subgroup reserve theirs together with one
// atomic: their counts are summed from ballots, the first active invocation adds the sum, and
// each takes the base plus the counts of the invocations before it. Without it (lbvh_pairs.comp,
// any device), one atomic per step that found pairs. Both count exactly the same pairs; only the
// order in which they are stored differs (the pair lists are sorted after).
// Each step reads one LbvhWideNode: the expanded node's children, their bounds and links.
// CPU twin: lbvh::self_pairs.
// Included by lbvh_pairs.comp and lbvh_pairs_subgroup.comp, after their #version.
#extension GL_EXT_control_flow_attributes : require
#include "device/common.glsl"
#include "lbvh/tree_parts.glsl"

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
// the query tree's internal nodes with their children's bounds (layout/common.h)
TREE_ARRAY(readonly, 7, Wide, LbvhWideNode, wide, WIDE_SHIFT)
// the same for the tree tested against (kPairsCross)
TREE_ARRAY(readonly, 8, OtherWide, LbvhWideNode, other_wide, WIDE_SHIFT)

#include "lbvh/traversal.glsl"

bool proxies() {
    return (pc.flags & kPairsProxies) != 0u;
}
bool cross_pass() {
    return (pc.flags & kPairsCross) != 0u;
}

// Reserves `count` consecutive slots of the pair list (count < 32, possibly 0) and returns the
// first. With BP_SUBGROUP_APPEND one atomic per subgroup: the counts of its active invocations
// are summed bit by bit from ballots (their exclusive bit counts giving each its offset), the
// first active invocation adds the sum and broadcasts the base.
uint reserve_pairs(uint count) {
#ifdef BP_SUBGROUP_APPEND
    uint total = 0u, before = 0u;
    [[unroll]] for (uint bit = 0u; bit < 5u; ++bit) {
        uvec4 set = subgroupBallot((count >> bit & 1u) != 0u);
        total += subgroupBallotBitCount(set) << bit;
        before += subgroupBallotExclusiveBitCount(set) << bit;
    }
    uint base = 0u;
    if (subgroupElect() && total > 0u) {
        base = atomicAdd(tstatus.total_lo, total);
        if (base + total < base) atomicAdd(tstatus.total_hi, 1u);  // the low word wrapped
    }
    return subgroupBroadcastFirst(base) + before;
#else
    if (count == 0u) return 0u;
    uint base = atomicAdd(tstatus.total_lo, count);
    if (base + count < base) atomicAdd(tstatus.total_hi, 1u);  // the low word wrapped
    return base;
#endif
}

// Stores pair (a, b) (box ids, or handles with proxies) in `slot` when it is within capacity.
void store_pair(uint slot, uint a, uint b) {
    if (slot >= pc.capacity) return;
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

// Internal node `i` of the tree walked (the query tree itself, or the other one in a cross
// pass) with both children's bounds and links: one 64-byte record per step.
LbvhWideNode walked_wide(uint i) {
    if (cross_pass()) return OTHER_WIDE(i);
    return WIDE(i);
}

// The ProxySlot of leaf id b of the tree walked.
uvec4 walked_slot(uint b) {
    return cross_pass() ? other_slots[b] : slots[b];
}

// Adds an invocation's expanded nodes to the traversal's 64-bit visit count.
void count_visits(uint expanded) {
    if ((pc.flags & kPairsAppend) != 0u) return;
    uint before = atomicAdd(tstatus.visits_lo, expanded);
    if (before + expanded < before) atomicAdd(tstatus.visits_hi, 1u);  // the low word wrapped
}

// The group's members (main loads them): box ids and boxes, constant-indexed only (the loops
// over them are unrolled), so that they stay in registers.
uint member_ids[kPairGroup];
vec3 member_lo[kPairGroup], member_hi[kPairGroup];

// Member k's box id and box, k not constant: a select per member rather than an indexed
// private array.
uint member_id(uint k) {
    uint id = 0u;
    [[unroll]] for (uint j = 0u; j < kPairGroup; ++j) id = j == k ? member_ids[j] : id;
    return id;
}
void member_box(uint k, out vec3 lo, out vec3 hi) {
    lo = vec3(0.0);
    hi = vec3(0.0);
    [[unroll]] for (uint j = 0u; j < kPairGroup; ++j) {
        lo = j == k ? member_lo[j] : lo;
        hi = j == k ? member_hi[j] : hi;
    }
}

// The bits of `mask` above bit k (the members after member k).
uint bits_after(uint mask, uint k) {
    return mask & ~((2u << k) - 1u);
}

// The bit mask of the `live` members whose boxes overlap lo, hi.
uint members_hit(uint live, vec3 lo, vec3 hi) {
    uint hits = 0u;
    [[unroll]] for (uint k = 0u; k < kPairGroup; ++k) {
        if (boxes_overlap(member_lo[k], member_hi[k], lo, hi)) hits |= 1u << k;
    }
    return hits & live;
}

// The pairs of member t % kPairGroup with leaf id others.x (bits t < kPairGroup of `hits`) and
// with others.y (bits t >= kPairGroup): with proxies only those the two slots' filters allow
// (tested before anything is reserved, so a filtered pair costs no output), then one
// reservation for all of them. Returns the iterations its loops took, which the walk counts
// against its budget: a CPU device (Mesa's llvmpipe) ends an invocation's loops once they have
// taken 65,535 iterations together, and runs a loop only while some SIMD lane is in it, so the
// pairs are stored in a loop over the set bits (not in code for each of the 2 kPairGroup
// candidates, which it would run masked at every step).
uint emit_hits(uint hits, uvec2 others) {
    uint iterations = 0u;
    if (proxies()) {
        for (uint rest = hits; rest != 0u; rest &= rest - 1u) {
            uint t = uint(findLSB(rest));
            uvec4 a = slots[member_id(t % kPairGroup)];
            uvec4 b = walked_slot(t < kPairGroup ? others.x : others.y);
            if (!proxy_should_collide(a, b)) hits &= ~(1u << t);
            ++iterations;
        }
    }
    uint slot = reserve_pairs(bitCount(hits));
    for (; hits != 0u; hits &= hits - 1u) {
        uint t = uint(findLSB(hits));
        uint a = member_id(t % kPairGroup), b = t < kPairGroup ? others.x : others.y;
        if (proxies()) {
            a = slots[a].w;
            b = walked_slot(b).w;
        }
        store_pair(slot++, a, b);
        ++iterations;
    }
    return iterations;
}

// Whether box b lies farther from the box lo, hi than the larger of the two is wide (the gap
// along some axis above both sizes): where consecutive sorted positions jump across the scene
// (a Morton curve does between its large cells), and the group's next run begins.
bool far_apart(vec3 lo, vec3 hi, vec3 blo, vec3 bhi) {
    precise vec3 gaps = max(lo - bhi, blo - hi);
    precise vec3 a = hi - lo, b = bhi - blo;
    float gap = max(gaps.x, max(gaps.y, gaps.z));
    float size = max(max(a.x, max(a.y, a.z)), max(b.x, max(b.y, b.z)));
    return gap > size;
}

// The union of the boxes of the members in `mask` (not empty).
void members_union(uint mask, out vec3 lo, out vec3 hi) {
    lo = vec3(0.0);
    hi = vec3(0.0);
    bool any = false;
    [[unroll]] for (uint k = 0u; k < kPairGroup; ++k) {
        if ((mask >> k & 1u) == 0u) continue;
        lo = any ? min(lo, member_lo[k]) : member_lo[k];
        hi = any ? max(hi, member_hi[k]) : member_hi[k];
        any = true;
    }
}

// The members of the run that begins at member `start`: the live ones from it to the next run's.
uint run_members(uint live, uint starts, uint start) {
    uint later = bits_after(starts, start);
    uint end = later == 0u ? kPairGroup : uint(findLSB(later));
    return live & ((1u << end) - 1u) & ~((1u << start) - 1u);
}

// A queued item's first word: the group, the member its run begins at, and whether the runs after
// it follow (an item for a pending subtree walks its own run's rest only).
uint pair_item(uint group, uint start, bool follow) {
    return group << 4 | start << 1 | (follow ? 1u : 0u);
}

void main() {
    uint n = pc.count;
    bool cross = cross_pass();
    uint m = cross ? pc.offset : n;  // leaves of the tree walked
    if (cross ? (n == 0u || m == 0u) : n < 2u) return;
    uint leaf_base = m - 1u;
    uint group;
    uint node = 0u;           // root: internal when m >= 2, the only leaf when m == 1
    uint start = kPairGroup;  // the run's first member (round 0: the first run's)
    bool follow = true;
    bool root_round = traversal_root_round();
    if (root_round) {
        group = linear_thread();
        if (group >= (n + kPairGroup - 1u) / kPairGroup) return;
    } else {
        uint i = linear_thread();
        if (i >= traversal_items()) return;
        uvec2 item = traversal_item(i);
        group = item.x >> 4;
        start = item.x >> 1 & 7u;
        follow = (item.x & 1u) != 0u;
        node = item.y;
    }
    // The members, `live` those that exist and are not empty slots, and their runs: a member
    // far_apart from the union of the run before it begins the next (bits of `starts`). One
    // leaf read in a loop, each member's registers assigned by a select: code for a read per
    // member (for a split tree, each a switch over the parts) cost a CPU device twice the
    // compiling, and ran no faster there.
    uint first = group * kPairGroup;
    uint last = min(first + kPairGroup, n) - 1u;  // the group's last sorted position
    uint live = 0u, starts = 0u;
    vec3 lo = vec3(0.0), hi = vec3(0.0);
    [[unroll]] for (uint k = 0u; k < kPairGroup; ++k) {
        member_ids[k] = 0u;
        member_lo[k] = vec3(0.0);
        member_hi[k] = vec3(0.0);
    }
    for (uint k = 0u; k <= last - first; ++k) {
        LbvhNode leaf = NODE(n - 1u + first + k);
        if (box_empty(leaf.lo, leaf.hi)) continue;
        [[unroll]] for (uint j = 0u; j < kPairGroup; ++j) {
            member_ids[j] = j == k ? leaf.link.x : member_ids[j];
            member_lo[j] = j == k ? leaf.lo.xyz : member_lo[j];
            member_hi[j] = j == k ? leaf.hi.xyz : member_hi[j];
        }
        bool begins = live == 0u || far_apart(lo, hi, leaf.lo.xyz, leaf.hi.xyz);
        lo = begins ? leaf.lo.xyz : min(lo, leaf.lo.xyz);
        hi = begins ? leaf.hi.xyz : max(hi, leaf.hi.xyz);
        if (begins) starts |= 1u << k;
        live |= 1u << k;
    }
    if (live == 0u) return;
    if (root_round && !cross) {  // the pairs within the group: member a with each later one
        for (uint a = 0u; a + 1u < kPairGroup; ++a) {
            vec3 alo, ahi;
            member_box(a, alo, ahi);
            uint later = members_hit(bits_after(live, a), alo, ahi);
            emit_hits((live >> a & 1u) != 0u ? later : 0u, uvec2(member_id(a)));
        }
    }
    // The one-leaf tree of a cross pass has no children to walk.
    if (cross && m == 1u) {
        emit_hits(members_hit(live, OTHER_NODE(0).lo.xyz, OTHER_NODE(0).hi.xyz),
                  uvec2(OTHER_NODE(0).link.x));
        return;
    }
    if (root_round) start = uint(findLSB(starts));
    uint run = run_members(live, starts, start);
    members_union(run, lo, hi);

    // Short stack (layout/common.h, kPairStack): a subtree that finds it full is queued. One walk
    // per run, each from the root, one after the other in this loop (its steps share the budget).
    uint stack[kPairStack];
    uint stack_limit = pc.key_word == 0u ? kPairStack : min(pc.key_word, kPairStack);
    uint top = 0u;
    bool done = false;
    uint budget = traversal_budget();
    uint steps = 0u, used = 0u;  // nodes expanded; those and the pairs' loop iterations
    while (used < budget) {
        ++steps;
        ++used;
        LbvhWideNode w = walked_wide(node);
        uint descend = kInvalidNode;
        uint hits = 0u;  // members (bits 0..) against the left leaf, (bits kPairGroup..) the right
        for (uint c = 0u; c < 2u; ++c) {
            uint child = wide_child(w, c);
            bool leaf = child >= leaf_base;
            if (!cross && wide_last(w, c, leaf_base) <= last) continue;  // all at or before it
            vec3 clo = wide_lo(w, c), chi = wide_hi(w, c);
            if (!boxes_overlap(lo, hi, clo, chi)) continue;
            if (leaf) {
                hits |= members_hit(run, clo, chi) << (c * kPairGroup);
            } else if (descend == kInvalidNode) {
                descend = child;
            } else if (top < stack_limit) {
                stack[top++] = child;
            } else {
                uint slot;  // expanded by another invocation next round
                if (traversal_reserve(1u, slot))
                    traversal_put(slot, pair_item(group, start, false), child);
            }
        }
        used += emit_hits(hits, uvec2(wide_aux(w, 0u), wide_aux(w, 1u)));  // leaf aux: box id
        if (descend != kInvalidNode) {
            node = descend;
        } else if (top > 0u) {
            node = stack[--top];
        } else if (follow && bits_after(starts, start) != 0u) {  // the next run, from the root
            start = uint(findLSB(bits_after(starts, start)));
            run = run_members(live, starts, start);
            members_union(run, lo, hi);
            node = 0u;
        } else {
            done = true;
            break;
        }
    }
    count_visits(steps);
    if (done) return;
    // One reservation per pending subtree (see lbvh_raycast.comp), then the runs not begun.
    uint slot;
    if (traversal_reserve(1u, slot)) traversal_put(slot, pair_item(group, start, false), node);
    for (uint k = 0u; k < top; ++k)
        if (traversal_reserve(1u, slot))
            traversal_put(slot, pair_item(group, start, false), stack[k]);
    uint next = bits_after(starts, start);
    if (follow && next != 0u && traversal_reserve(1u, slot))
        traversal_put(slot, pair_item(group, uint(findLSB(next)), true), 0u);
}
