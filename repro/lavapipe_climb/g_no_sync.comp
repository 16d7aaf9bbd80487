// g: negative control: the loop of a with no barriers and no coherent qualifiers (what a
// race without memory semantics looks like here).
#version 450
#define VAL_QUAL
#define FLAG_QUAL
#include "climb_common.glsl"
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint n = pc.n;
    if (i >= n) return;
    uint node = n - 1u + i;
    val[node] = uvec2(leafval[i], 1u);
    node = parent[node];
    while (node != kNone) {
        if (ARRIVE(node) == 0u) break;
        val[node] = merge(node);
        node = parent[node];
    }
}
