// Bottom-up node bounds (Apetrei 2014 / Karras 2012 style): one invocation per leaf climbs
// towards the root; at each internal node the first arrival stops (atomic counter) and the
// second merges both children and goes on. No invocation ever waits for another, so there is
// no forward-progress assumption. Precondition: flags[0, n-1) zeroed, leaves' bounds written.
// CPU twin: lbvh::compute_bounds. The moving scene's refit uses it (lbvh_refit.comp writes the
// leaves); the build writes hierarchy and bounds in one pass (lbvh_build.comp).
#version 450
#include "common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) coherent buffer Nodes {
    LbvhNode nodes[];
};
layout(std430, binding = 1) coherent buffer Flags {
    uint flags[];
};

// One step of the climb: arrive at `node`; the second arrival merges and moves to the parent.
#define CLIMB_STEP                                                             \
    if (climbing) {                                                            \
        memoryBarrierBuffer();                                                 \
        uint arrived = atomicAdd(flags[node], 1u);                             \
        memoryBarrierBuffer();                                                 \
        if (arrived == 0u) {                                                   \
            climbing = false;                                                  \
        } else {                                                               \
            uint l = nodes[node].link.x, r = nodes[node].link.y;               \
            nodes[node].lo = vec4(min(nodes[l].lo.xyz, nodes[r].lo.xyz), 0.0); \
            nodes[node].hi = vec4(max(nodes[l].hi.xyz, nodes[r].hi.xyz), 0.0); \
            node = nodes[node].link.z;                                         \
            climbing = node != kInvalidNode;                                   \
        }                                                                      \
    }
#define CLIMB_8 \
    CLIMB_STEP CLIMB_STEP CLIMB_STEP CLIMB_STEP CLIMB_STEP CLIMB_STEP CLIMB_STEP CLIMB_STEP

void main() {
    uint p = linear_thread();
    uint n = pc.count;
    if (p >= n || n < 2u) return;
    uint node = nodes[n - 1u + p].link.z;
    bool climbing = node != kInvalidNode;
    // Straight-line code, no loop: Mesa's llvmpipe (lavapipe) loses the stores an invocation
    // makes after an atomic inside a loop once other invocations have left the loop. The tree
    // is at most kTraversalStack = 96 = 12 * 8 levels deep (gpu_layout.h).
    CLIMB_8 CLIMB_8 CLIMB_8 CLIMB_8 CLIMB_8 CLIMB_8 CLIMB_8 CLIMB_8 CLIMB_8 CLIMB_8 CLIMB_8 CLIMB_8
}
