// m: the minimal loop, its qualifiers chosen by macros (build.sh: m_*.spv):
//   COH_VAL: val[] coherent; COH_FLAGS: flags[] coherent; BARRIER: memoryBarrierBuffer()
//   around the atomic.
#version 450
#ifdef COH_VAL
#define VAL_QUAL coherent
#else
#define VAL_QUAL
#endif
#ifdef COH_FLAGS
#define FLAG_QUAL coherent
#else
#define FLAG_QUAL
#endif
#include "climb_common.glsl"
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint n = pc.n;
    if (i >= n) return;
    uint node = n - 1u + i;
    val[node] = uvec2(leafval[i], 1u);
    node = parent[node];
    while (node != kNone) {
#ifdef BARRIER
        memoryBarrierBuffer();
#endif
        uint prev = atomicAdd(flags[node], 1u);
#ifdef BARRIER
        memoryBarrierBuffer();
#endif
        if (prev == 0u) break;
        val[node] = merge(node);
        node = parent[node];
    }
}
