// Data layouts of the GPU frustum cull (shaders/lbvh_cull*.comp, gpu/cull.cpp), shared by
// GLSL and C++ like gpu_layout.h: 4-byte scalars and vec4/uvec4 only, sizes asserted in C++.
#ifndef BROADPHASE_GPU_LAYOUT_CULL_H
#define BROADPHASE_GPU_LAYOUT_CULL_H

#include "gpu_layout.h"

#ifdef __cplusplus
namespace broadphase::gpu_layout {
#define BP_CONST inline constexpr uint
#else
#define BP_CONST const uint
#endif

// Leaves (sorted positions) per traversal invocation: invocation c culls positions
// [c * kCullChunk, (c + 1) * kCullChunk) and writes what it sees to the same slots.
BP_CONST kCullChunk = 32u;
// uints per VkDrawIndexedIndirectCommand (indexCount, instanceCount, firstIndex, vertexOffset,
// firstInstance).
BP_CONST kDrawCommandWords = 5u;
// Push constant `flags` of lbvh_cull_compact: write 64-bit sort keys (exact order): high word
// the eye-to-box distance key (shaders/cull_distance.glsl), low word the id.
BP_CONST kCullFlagKeys = 1u;
// Push constant `flags` of lbvh_cull (carry and write 32-bit near-child-first DFS ranks) and
// lbvh_cull_compact (use them as the sort keys): approximate front-to-back order.
BP_CONST kCullFlagRank = 2u;

// Parameters of one cull, written by the recorder with vkCmdUpdateBuffer: planes left,
// right, bottom, top, near, far as (normal.xyz, d) with dot(normal, p) + d >= 0 inside;
// eye.xyz the viewpoint (w unused); draw = (indexCount, firstIndex, vertexOffset as int32
// bits, unused) copied into every draw command.
// total: 128 bytes
struct CullParams {
    vec4 planes[6];
    vec4 eye;
    uvec4 draw;
};

#ifdef __cplusplus
static_assert(sizeof(CullParams) == 128 && offsetof(CullParams, eye) == 96 &&
              offsetof(CullParams, draw) == 112);
}  // namespace broadphase::gpu_layout
#endif
#undef BP_CONST

#endif  // BROADPHASE_GPU_LAYOUT_CULL_H
