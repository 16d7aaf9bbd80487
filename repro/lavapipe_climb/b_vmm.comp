// b: the loop of a with the Vulkan memory model: the arrival is an acquire-release atomic
// at queue-family scope that makes the buffer writes available / visible, val[] nonprivate.
// B_COHERENT: val[] coherent (each access made available / visible), the atomic
// acquire-release at device scope (glslang 2022 drops the VulkanMemoryModelDeviceScope
// capability when device scope comes with MakeAvailable / MakeVisible, so those are left out).
#version 450
#extension GL_KHR_memory_scope_semantics : require
#ifdef B_COHERENT
#define VAL_QUAL coherent
#define SCOPE gl_ScopeDevice
#define SEM gl_SemanticsAcquireRelease
#else
#define VAL_QUAL nonprivate
#define SCOPE gl_ScopeQueueFamily
#define SEM (gl_SemanticsAcquireRelease | gl_SemanticsMakeAvailable | gl_SemanticsMakeVisible)
#endif
#define FLAG_QUAL
#include "climb_common.glsl"
#if FLAG_OP == 1
#define ARRIVE_VMM(x) atomicXor(flags[x], 1u, SCOPE, gl_StorageSemanticsBuffer, SEM)
#elif FLAG_OP == 2
#define ARRIVE_VMM(x) atomicExchange(flags[x], 1u, SCOPE, gl_StorageSemanticsBuffer, SEM)
#else
#define ARRIVE_VMM(x) atomicAdd(flags[x], 1u, SCOPE, gl_StorageSemanticsBuffer, SEM)
#endif
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint n = pc.n;
    if (i >= n) return;
    uint node = n - 1u + i;
    val[node] = uvec2(leafval[i], 1u);
    node = parent[node];
    while (node != kNone) {
        uint prev = ARRIVE_VMM(node);
        if (prev == 0u) break;
        val[node] = merge(node);
        node = parent[node];
    }
}
