// a0: the historical lbvh_bounds.comp loop (commit 738d2a6^): `return` inside the loop.
#version 450
#include "climb_common.glsl"
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint n = pc.n;
    if (i >= n) return;
    uint node = n - 1u + i;
    val[node] = uvec2(leafval[i], 1u);
    node = parent[node];
    while (node != kNone) {
        memoryBarrierBuffer();
        if (ARRIVE(node) == 0u) return;  // the sibling's climber will merge
        memoryBarrierBuffer();
        val[node] = merge(node);
        node = parent[node];
    }
}
