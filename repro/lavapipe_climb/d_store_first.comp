// d: each step first stores the current node's own result, then publishes the arrival at
// the parent; the second arrival reads only the sibling and carries the sum in a register
// (no store after the atomic in the same step).
#version 450
#include "climb_common.glsl"
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint n = pc.n;
    if (i >= n) return;
    uint node = n - 1u + i;
    uvec2 acc = uvec2(leafval[i], 1u);
    while (true) {
        val[node] = acc;
        uint p = parent[node];
        if (p == kNone) break;
        memoryBarrierBuffer();
        uint prev = ARRIVE(p);
        memoryBarrierBuffer();
        if (prev == 0u) break;
        uvec2 c = child[p];
        acc += val[c.x == node ? c.y : c.x];
        node = p;
    }
}
