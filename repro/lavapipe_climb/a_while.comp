// a: while loop, `break` on the first arrival, GLSL 450 memoryBarrierBuffer() around the
// atomic, coherent buffers.
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
        uint prev = ARRIVE(node);
        memoryBarrierBuffer();
        if (prev == 0u) break;
        val[node] = merge(node);
        node = parent[node];
    }
}
