// Batched closest-hit ray casts against a built LBVH: one invocation per ray, stack traversal
// of a Karras 2012 tree entering the nearer internal child first and pruning subtrees whose
// entry exceeds the best hit so far. Leaves use the exact slab test of ray_box_entry
// (core/types.cpp: divisions, not reciprocals; axis-parallel components as inside tests), so
// the hit is the box with the smallest entry t in [0, tmax] (0 inside), ties to the smallest
// id. Internal nodes use a conservative test with relative slack kRayNodeSlack so that an
// inexact division (Vulkan allows 2.5 ulp) never prunes the closest box. Only t itself may
// differ from the CPU by those ulps.
// Bounded (layout/common.h, "Bounded traversal"): a ray that needs more than traversal_budget()
// steps (many boxes at the same entry t, e.g. a ray starting inside a dense cluster, defeat the
// pruning) queues its pending subtrees as (ray, node) items. Such a ray's hits[r] becomes a
// shared minimum: t_bits (t >= 0, so its bits order as the floats) lowered with atomicMin by
// every item that finds a hit, which also appends its own best (ray, t bits, id) as a
// candidate; after the last round, when no item is left, the resolve pass (kRayResolve) takes,
// among the candidates whose t equals the final minimum, the smallest id (hits[r].id starts at
// kInvalidNode, the largest uint).
// Each step reads one 64-byte LbvhWideNode of the node it expands (both children's bounds and
// links; a leaf child's box id is its aux), never the children's LbvhNode records (a link and
// two child nodes were 112 B). The LbvhNode array is read only for the start node's own box
// (the root, or a queued item's node) and for n == 1 (the single leaf is node 0, no wide
// record).
// Each invocation adds the internal nodes it expanded (one wide record each; a pop step
// expands none) to visits_lo / visits_hi (traversal_count_visits, once, at its end). When
// every ray finishes in round 0 this equals the twin's expanded count exactly; the queued
// items of a ray prune with the ray's shared minimum, which other items lower while they run,
// so with queued work the count depends on timing (never the hit).
// CPU twin: lbvh::ray_cast_nodes. Push constants: see layout/queries.h.
#version 450
#include "device/common.glsl"

#include "broadphase/gpu/layout/queries.h"
#include "lbvh/tree_parts.glsl"

layout(local_size_x = kWorkgroupSize) in;
TREE_ARRAY(readonly, 0, Nodes, LbvhNode, nodes, NODE_SHIFT)
layout(std430, binding = 1) readonly buffer Rays {
    GpuRay rays[];
};
layout(std430, binding = 2) buffer Hits {
    GpuRayHit hits[];
};
layout(std430, binding = 3) buffer TStatus {
    TraversalStatus tstatus;
};
layout(std430, binding = 4) buffer Work {
    uint work[];
};
// internal node i's children with their bounds and links (layout/common.h), n - 1 of 64 B
TREE_ARRAY(readonly, 5, Wide, LbvhWideNode, wide, WIDE_SHIFT)

#include "lbvh/traversal.glsl"

vec3 ray_o, ray_d;
float ray_tmax;

float slack_bound(float a) {
    return a + abs(a) * kRayNodeSlack + 1e-30;
}

// Slab test as ray_box_entry: false on a miss, else t_near = the clamped entry and t_far the
// exit (both before any slack).
bool slabs(vec3 lo, vec3 hi, out float t_near, out float t_far) {
    t_near = 0.0;
    t_far = ray_tmax;
    for (int axis = 0; axis < 3; ++axis) {
        float o = ray_o[axis], d = ray_d[axis];
        if (d == 0.0) {
            if (!(lo[axis] <= o && o <= hi[axis])) return false;
            continue;
        }
        float t0 = (lo[axis] - o) / d;
        float t1 = (hi[axis] - o) / d;
        if (isnan(t0) || isnan(t1)) return false;
        if (t0 > t1) {
            float s = t0;
            t0 = t1;
            t1 = s;
        }
        if (t_near < t0) t_near = t0;
        if (t1 < t_far) t_far = t1;
    }
    return true;
}

// Conservative node test of an internal node's bounds (twin: lbvh::ray_may_hit_node).
bool may_hit_node(vec3 lo, vec3 hi, float best_t, out float t_near) {
    float t_far;
    if (!slabs(lo, hi, t_near, t_far)) return false;
    return !(t_near > slack_bound(t_far)) && !(t_near > slack_bound(best_t));
}

// Appends this invocation's best hit of ray r as a candidate for the resolve pass.
void add_candidate(uint r, float t, uint id) {
    atomicMin(hits[r].t_bits, floatBitsToUint(t));
    uint c = atomicAdd(tstatus.candidates, 1u);
    if (c >= pc.tiles) {
        atomicOr(tstatus.flags, kTraversalCandidateOverflow);
        return;
    }
    uint base = 4u * pc.tiles + 4u * c;
    work[base] = r;
    work[base + 1u] = floatBitsToUint(t);
    work[base + 2u] = id;
}

void resolve() {
    // Only a finished traversal is resolved: with items left (a host helper records round 0
    // alone first, then continues) later items may still lower a ray's minimum.
    if ((tstatus.flags & kTraversalIncomplete) != 0u) return;
    uint c = linear_thread();
    if (c >= min(tstatus.candidates, pc.tiles)) return;
    uint base = 4u * pc.tiles + 4u * c;
    uint r = work[base];
    if (work[base + 1u] == hits[r].t_bits) atomicMin(hits[r].id, work[base + 2u]);
}

void main() {
    if (pc.flags == kRayResolve) {
        resolve();
        return;
    }
    bool root = traversal_root_round();
    uint r;
    uint node = 0u;
    if (root) {
        r = linear_thread();
        if (r >= pc.count) return;
    } else {
        uint i = linear_thread();
        if (i >= traversal_items()) return;
        uvec2 item = traversal_item(i);
        r = item.x;
        node = item.y;
    }
    uint n = pc.offset;
    ray_o = rays[r].origin.xyz;
    ray_tmax = rays[r].origin.w;
    ray_d = rays[r].dir.xyz;
    uint best_id = kInvalidNode;
    // A queued item starts from the ray's shared minimum so far (ties still taken).
    float best_t = root ? uintBitsToFloat(0x7f800000u) : uintBitsToFloat(hits[r].t_bits);

    if (n == 1u) {
        float t, t_far;
        if (slabs(NODE(0).lo.xyz, NODE(0).hi.xyz, t, t_far) && t <= t_far) {
            best_id = NODE(0).link.x;
            best_t = t;
        }
        hits[r].id = best_id;
        hits[r].t_bits = best_id == kInvalidNode ? 0u : floatBitsToUint(best_t);
        return;
    }
    bool done = true;
    uint expanded = 0u;  // internal nodes this invocation expands
    uint stack[kTraversalStack];
    uint top = 0u;
    if (n >= 2u) {
        uint leaf_base = n - 1u;
        float stack_t[kTraversalStack];  // entry t of each stacked subtree
        float t_node;
        done = false;
        // The start node's own box: the root's, or a queued item's tested again against the
        // ray's shared minimum (32 B once per item, not per step).
        if (!may_hit_node(NODE(node).lo.xyz, NODE(node).hi.xyz, best_t, t_node))
            node = kInvalidNode;
        // One step expands `node`, or (node == kInvalidNode) pops the next stacked subtree
        // unless its entry is past the best hit so far. (No loop nested in this one: Mesa 22.3's
        // lavapipe ran a later loop of this kernel only once after a break out of a nested
        // pop loop.)
        uint budget = traversal_budget();
        for (uint step = 0u; step < budget; ++step) {
            if (node == kInvalidNode) {
                if (top == 0u) {
                    done = true;
                    break;
                }
                --top;
                if (!(stack_t[top] > slack_bound(best_t))) node = stack[top];
            } else {
                uint cand[2] = uint[2](kInvalidNode, kInvalidNode);
                float cand_t[2] = float[2](0.0, 0.0);
                uint found = 0u;
                LbvhWideNode w = WIDE(node);  // the step's one load: both children
                ++expanded;
                for (uint c = 0u; c < 2u; ++c) {
                    uint child = wide_child(w, c);
                    vec3 lo = wide_lo(w, c), hi = wide_hi(w, c);
                    if (child >= leaf_base) {
                        float t, t_far;
                        if (slabs(lo, hi, t, t_far) && t <= t_far) {
                            uint id = wide_aux(w, c);  // a leaf's aux: box id
                            if (t < best_t || (t == best_t && id < best_id)) {
                                best_t = t;
                                best_id = id;
                            }
                        }
                    } else {
                        float t;
                        if (may_hit_node(lo, hi, best_t, t)) {
                            cand[found] = child;
                            cand_t[found] = t;
                            ++found;
                        }
                    }
                }
                if (found == 2u) {
                    uint near = cand_t[1] < cand_t[0] ? 1u : 0u;
                    stack[top] = cand[1u - near];
                    stack_t[top] = cand_t[1u - near];
                    ++top;
                    node = cand[near];
                } else {
                    node = found == 1u ? cand[0] : kInvalidNode;
                }
            }
        }
    }
    if (root && done) {
        hits[r].id = best_id;
        hits[r].t_bits = best_id == kInvalidNode ? 0u : floatBitsToUint(best_t);
    } else {
        if (!done) {
            // One reservation per pending subtree (see lbvh_pairs.comp).
            uint slot;
            if (node != kInvalidNode && traversal_reserve(1u, slot)) traversal_put(slot, r, node);
            for (uint k = 0u; k < top; ++k)
                if (traversal_reserve(1u, slot)) traversal_put(slot, r, stack[k]);
        }
        if (root) {  // this ray continues in queued items: hits[r] becomes the shared minimum
            hits[r].id = kInvalidNode;
            hits[r].t_bits = floatBitsToUint(best_t);
        }
        if (best_id != kInvalidNode) add_candidate(r, best_t, best_id);
    }
    traversal_count_visits(expanded);  // after the invocation's last store
}
