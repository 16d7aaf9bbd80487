// c: the loop's exit made uniform per subgroup: loop while any lane climbs, each step
// guarded by `if (climbing)`; no invocation returns early.
#version 450
#extension GL_KHR_shader_subgroup_vote : require
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
    while (subgroupAny(climbing)) {
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
