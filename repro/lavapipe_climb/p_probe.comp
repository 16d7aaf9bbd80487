// p: is a memory barrier an execution barrier on llvmpipe? Every invocation of one workgroup
// counts itself in flags[0], then BARRIER, then records the count it sees. With an execution
// barrier every invocation sees the whole workgroup; without, llvmpipe runs the subgroups one
// after another and subgroup k sees 8 (k + 1). PROBE 0: no barrier, 1: memoryBarrierBuffer(),
// 2: barrier(), 3: a queue-family-scope memoryBarrier (Vulkan memory model),
// 4: groupMemoryBarrier().
#version 450
#extension GL_KHR_memory_scope_semantics : enable
#if PROBE == 3
#pragma use_vulkan_memory_model
#endif
#include "climb_common.glsl"
void main() {
    atomicAdd(flags[0], 1u);
#if PROBE == 1
    memoryBarrierBuffer();
#elif PROBE == 2
    barrier();
#elif PROBE == 3  // needs the Vulkan memory model (glslang: #pragma use_vulkan_memory_model)
    memoryBarrier(gl_ScopeQueueFamily, gl_StorageSemanticsBuffer, gl_SemanticsAcquireRelease);
#elif PROBE == 4
    groupMemoryBarrier();
#endif
    val[gl_LocalInvocationID.x] = uvec2(atomicAdd(flags[0], 0u), 0u);
}
