// Bounded traversal: the work queue side of every tree walk (see layout/common.h, "Bounded
// traversal"). The including shader declares, before including this file:
//   layout(std430, binding = B) buffer Work { uint work[]; };             // the work queues
//   layout(std430, binding = S) buffer TStatus { TraversalStatus tstatus; };
// Queue k's item i is (query, node) at work[2 * (k * capacity + i)]; ray-cast candidates
// follow both queues, 4 words each, at work[4 * capacity + 4 * c].
#ifndef BROADPHASE_TRAVERSAL_GLSL
#define BROADPHASE_TRAVERSAL_GLSL

// Nodes an invocation expands in this round before it queues the rest (pc.budget, at most
// kTraversalBudget; 0 means kTraversalBudget).
uint traversal_budget() {
    return pc.budget == 0u ? kTraversalBudget : min(pc.budget, kTraversalBudget);
}

bool traversal_root_round() {
    return pc.shift == 0u;
}

// Items of this round's input queue (round r >= 1 reads queue (r - 1) & 1).
uint traversal_items() {
    uint queued = ((pc.shift - 1u) & 1u) == 0u ? tstatus.queued0 : tstatus.queued1;
    return min(queued, pc.tiles);
}

// Item i of this round's input queue: (query, node).
uvec2 traversal_item(uint i) {
    uint base = 2u * (((pc.shift - 1u) & 1u) * pc.tiles + i);
    return uvec2(work[base], work[base + 1u]);
}

// Reserves k slots of this round's output queue; false (and the overflow flag set) when they
// do not fit, in which case nothing may be written.
bool traversal_reserve(uint k, out uint first) {
    if ((pc.shift & 1u) == 0u)
        first = atomicAdd(tstatus.queued0, k);
    else
        first = atomicAdd(tstatus.queued1, k);
    if (first + k > pc.tiles || first + k < first) {
        atomicOr(tstatus.flags, kTraversalQueueOverflow);
        return false;
    }
    return true;
}

void traversal_put(uint slot, uint query, uint node) {
    uint base = 2u * ((pc.shift & 1u) * pc.tiles + slot);
    work[base] = query;
    work[base + 1u] = node;
}

// Adds the internal nodes an invocation of a region query or ray cast expanded to its
// traversal's exact 64-bit visit count (TraversalStatus visits_lo, the low word's carries in
// visits_hi): one atomic per invocation, made after its last store (lavapipe loses stores an
// invocation makes after an atomic inside a loop; see lbvh_build.comp). The all-pairs pass
// counts its own (lbvh_pairs.glsl count_visits).
void traversal_count_visits(uint expanded) {
    if (expanded == 0u) return;
    uint before = atomicAdd(tstatus.visits_lo, expanded);
    if (before + expanded < before) atomicAdd(tstatus.visits_hi, 1u);  // the low word wrapped
}

#endif
