// f: a loop of a fixed trip count (96, or pc.steps with F_RUNTIME so that nothing can unroll
// it), each step guarded by `if (climbing)`; no invocation leaves the loop early.
#version 450
#include "climb_common.glsl"
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint n = pc.n;
    bool climbing = i < n;
    uint node = kNone;
    if (climbing) {
        node = n - 1u + i;
        val[node] = uvec2(leafval[i], 1u);
        node = parent[node];
        climbing = node != kNone;
    }
#ifdef F_RUNTIME
    for (uint s = 0u; s < pc.steps; ++s) {
#else
    for (int s = 0; s < 96; ++s) {
#endif
        if (climbing) {
            memoryBarrierBuffer();
            uint prev = ARRIVE(node);
            memoryBarrierBuffer();
            if (prev == 0u) {
                climbing = false;
            } else {
                val[node] = merge(node);
                node = parent[node];
                climbing = node != kNone;
            }
        }
    }
}
