// Data layouts of the GPU frustum cull (shaders/lbvh_cull*.comp, gpu/cull/culler.cpp), shared by
// GLSL and C++ like layout/common.h: 4-byte scalars and vec4/uvec4 only, sizes asserted in C++.
#ifndef BROADPHASE_GPU_LAYOUT_CULL_H
#define BROADPHASE_GPU_LAYOUT_CULL_H

#include "common.h"

#include "open.h"

// Leaves (sorted positions) per traversal invocation: invocation c culls positions
// [c * kCullChunk, (c + 1) * kCullChunk) and writes what it sees to the same slots.
BP_CONST kCullChunk = 32u;
// uints per VkDrawIndexedIndirectCommand (indexCount, instanceCount, firstIndex, vertexOffset,
// firstInstance).
BP_CONST kDrawCommandWords = 5u;
// Push constant `flags` of lbvh_cull_compact: write 64-bit sort keys alone (exact order): the
// eye-to-box distance key above the id's bits (cull_order_key, shaders/cull/cull_distance.glsl).
BP_CONST kCullFlagKeys = 1u;
// Push constant `flags` of lbvh_cull (carry and write 32-bit near-child-first DFS ranks) and
// lbvh_cull_compact (use them as the sort keys): approximate front-to-back order.
BP_CONST kCullFlagRank = 2u;

// Push constant `flags` of lbvh_cull_compact: write sorted positions (not ids) as the values,
// so that the LOD emit (lbvh_cull_emit_lods) reaches each visible leaf's box and id.
BP_CONST kCullFlagPositions = 4u;
// Push constant `flags` of lbvh_cull_emit_lods: group the draws per mesh (else flat).
BP_CONST kCullFlagGrouped = 8u;
// Push constant `flags` of lbvh_cull_emit_lods: also write each stored draw's LOD index.
BP_CONST kCullFlagDrawLods = 16u;
// Push constant `flags` of lbvh_cull_emit, lbvh_cull_group and lbvh_cull_emit_lods (exact
// order): read each ordered instance's id (and distance key) from the sorted 64-bit keys
// (cull_order_id, cull_order_distance) instead of a sorted value or its leaf node; the elements
// are then indices into the order.
BP_CONST kCullFlagSortedKeys = 64u;

// Occlusion phases of lbvh_cull_occlusion.comp (gpu::OcclusionPhase, CullOcclusionParams
// info.z): single, test every node against the depth pyramid; early, no pyramid, keep the
// leaves whose visibility stamp is the previous frame's; late, test against the pyramid, stamp
// every leaf that passes with this frame and keep those the early phase did not draw.
BP_CONST kOcclusionSingle = 0u;
BP_CONST kOcclusionEarly = 1u;
BP_CONST kOcclusionLate = 2u;
// Levels a depth pyramid of at most 16384 x 16384 texels has (kMaxDepthImageSize).
BP_CONST kMaxDepthLevels = 15u;

// Views one traversal of lbvh_cull_views culls (gpu::kMaxCullViews).
BP_CONST kCullMaxViews = 8u;

// Levels of detail per mesh (gpu::Mesh, CullMesh).
BP_CONST kMaxMeshLods = 8u;
// The LOD written for a visible instance whose mesh id is not below the mesh count (flat
// output: its draw command is a no-op, instanceCount 0).
BP_CONST kNoLod = 0xffffffffu;

// One mesh of the LOD table (gpu::pack_mesh_table writes it; lbvh_cull_emit_lods reads it):
// info = (lod count in [1, 8], first draw command of the mesh's group, the group's capacity,
// unused); lods[k] = (indexCount, firstIndex, vertexOffset as int32 bits, switch key): LOD k
// is drawn for a box whose eye-to-box distance key (cull_distance.glsl) is >= its switch key,
// the largest such k winning; lods[0]'s switch key is 0.
// total: 144 bytes
struct CullMesh {
    uvec4 info;
    uvec4 lods[kMaxMeshLods];
};

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

// Parameters of an occlusion cull (lbvh_cull_occlusion.comp), written with vkCmdUpdateBuffer:
// view_projection the column-major matrix of occluded() (include/broadphase/occlusion.hpp),
// one column per vec4; info = (pyramid width, pyramid height (level 0), phase, frame).
// total: 80 bytes
struct CullOcclusionParams {
    vec4 view_projection[4];
    uvec4 info;
};

#ifdef __cplusplus
static_assert(sizeof(CullParams) == 128 && offsetof(CullParams, eye) == 96 &&
              offsetof(CullParams, draw) == 112);
static_assert(sizeof(CullMesh) == 144 && offsetof(CullMesh, lods) == 16);
static_assert(sizeof(CullOcclusionParams) == 80 && offsetof(CullOcclusionParams, info) == 64);
#endif
#include "close.h"

#endif  // BROADPHASE_GPU_LAYOUT_CULL_H
