// Batched closest-hit ray casts against a built LBVH: one invocation per ray, stack traversal
// of a Karras 2012 tree entering the nearer internal child first and pruning subtrees whose
// entry exceeds the best hit so far. Leaves use the exact slab test of ray_box_entry
// (core/types.cpp: divisions, not reciprocals; axis-parallel components as inside tests), so
// the hit is the box with the smallest entry t in [0, tmax] (0 inside), ties to the smallest
// id. Internal nodes use a conservative test with relative slack kRayNodeSlack so that an
// inexact division (Vulkan allows 2.5 ulp) never prunes the closest box. Only t itself may
// differ from the CPU by those ulps.
// CPU twin: lbvh::ray_cast_nodes. Push constants: see gpu_layout_queries.h.
#version 450
#include "common.glsl"
#include "gpu_layout_queries.h"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Nodes {
    LbvhNode nodes[];
};
layout(std430, binding = 1) readonly buffer Rays {
    GpuRay rays[];
};
layout(std430, binding = 2) writeonly buffer Hits {
    GpuRayHit hits[];
};

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

// Conservative node test (twin: lbvh::ray_may_hit_node).
bool may_hit_node(uint node, float best_t, out float t_near) {
    float t_far;
    if (!slabs(nodes[node].lo.xyz, nodes[node].hi.xyz, t_near, t_far)) return false;
    return !(t_near > slack_bound(t_far)) && !(t_near > slack_bound(best_t));
}

void main() {
    uint r = linear_thread();
    if (r >= pc.count) return;
    uint n = pc.offset;
    ray_o = rays[r].origin.xyz;
    ray_tmax = rays[r].origin.w;
    ray_d = rays[r].dir.xyz;
    uint best_id = kInvalidNode;
    float best_t = uintBitsToFloat(0x7f800000u);  // +infinity

    if (n == 1u) {
        float t, t_far;
        if (slabs(nodes[0].lo.xyz, nodes[0].hi.xyz, t, t_far) && t <= t_far) {
            best_id = nodes[0].link.x;
            best_t = t;
        }
    } else if (n >= 2u) {
        uint leaf_base = n - 1u;
        uint stack[kTraversalStack];
        float stack_t[kTraversalStack];
        uint top = 0u;
        uint node = 0u;
        float t_root;
        bool alive = may_hit_node(0u, best_t, t_root);
        while (alive) {
            uint cand[2] = uint[2](kInvalidNode, kInvalidNode);
            float cand_t[2] = float[2](0.0, 0.0);
            uint found = 0u;
            uint children[2] = uint[2](nodes[node].link.x, nodes[node].link.y);
            for (int c = 0; c < 2; ++c) {
                uint child = children[c];
                if (child >= leaf_base) {
                    float t, t_far;
                    if (slabs(nodes[child].lo.xyz, nodes[child].hi.xyz, t, t_far) && t <= t_far) {
                        uint id = nodes[child].link.x;
                        if (t < best_t || (t == best_t && id < best_id)) {
                            best_t = t;
                            best_id = id;
                        }
                    }
                    continue;
                }
                float t;
                if (may_hit_node(child, best_t, t)) {
                    cand[found] = child;
                    cand_t[found] = t;
                    ++found;
                }
            }
            if (found == 2u) {
                uint near = cand_t[1] < cand_t[0] ? 1u : 0u;
                stack[top] = cand[1u - near];
                stack_t[top] = cand_t[1u - near];
                ++top;
                node = cand[near];
                continue;
            }
            if (found == 1u) {
                node = cand[0];
                continue;
            }
            alive = false;
            while (top > 0u) {
                --top;
                if (!(stack_t[top] > slack_bound(best_t))) {
                    node = stack[top];
                    alive = true;
                    break;
                }
            }
        }
    }
    hits[r].id = best_id;
    hits[r].t_bits = best_id == kInvalidNode ? 0u : floatBitsToUint(best_t);
}
