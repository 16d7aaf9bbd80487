// e: the control: 64 straight-line steps (no loop), as the project's CLIMB_96.
#version 450
#include "climb_common.glsl"
#define STEP                          \
    if (climbing) {                   \
        memoryBarrierBuffer();        \
        uint prev = ARRIVE(node);     \
        memoryBarrierBuffer();        \
        if (prev == 0u) {             \
            climbing = false;         \
        } else {                      \
            val[node] = merge(node);  \
            node = parent[node];      \
            climbing = node != kNone; \
        }                             \
    }
#define STEP8 STEP STEP STEP STEP STEP STEP STEP STEP
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint n = pc.n;
    if (i >= n) return;
    uint node = n - 1u + i;
    val[node] = uvec2(leafval[i], 1u);
    node = parent[node];
    bool climbing = node != kNone;
    STEP8 STEP8 STEP8 STEP8 STEP8 STEP8 STEP8 STEP8
}
