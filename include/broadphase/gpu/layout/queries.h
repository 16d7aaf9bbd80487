// Data layouts of the batched LBVH queries (region/point queries, closest-hit ray casts,
// set-versus-set pairs), shared by shaders/lbvh/lbvh_query.comp, shaders/lbvh/lbvh_raycast.comp and
// the C++ host (gpu/lbvh/lbvh_queries.cpp). Same rules as layout/common.h: 4-byte scalars and
// vec4/uvec4 only, static_asserts on every std430 size and offset.
//
// Push constants of the query kernels (gpu_layout::PushConstants, generic fields):
//   count    = number of queries (boxes or rays) in the batch
//   offset   = number of boxes n in the tree (2n-1 nodes; 0 is an empty tree)
//   capacity = capacity of the id output (lbvh_query fill pass)
//   flags    = kQueryCount or kQueryFill (lbvh_query); 0 or kRayResolve (lbvh_raycast)
//   shift    = the bounded traversal's round, tiles = its work queue capacity (layout/common.h)
#ifndef BROADPHASE_GPU_LAYOUT_QUERIES_H
#define BROADPHASE_GPU_LAYOUT_QUERIES_H

#include "common.h"

#include "open.h"

// lbvh_query passes (push constant `flags`).
BP_CONST kQueryCount = 0u;  // write the number of hits of query q to offsets[q]
BP_CONST kQueryFill = 1u;   // write the hits of query q to ids[offsets[q] ...]
// lbvh_raycast passes (push constant `flags`): 0 the traversal rounds, kRayResolve the pass
// over the candidates of rays that continued in queued items (smallest id at the minimum t).
BP_CONST kRayResolve = 1u;

// A ray: origin.xyz and tmax in origin.w; dir.xyz (w ignored).
// total: 32 bytes
struct GpuRay {
    vec4 origin;
    vec4 dir;
};

// The closest hit of one ray: id = kInvalidNode when the ray hits nothing; t_bits is the
// entry parameter t as floatBitsToUint (on a miss 0, or +infinity's bits for a ray that
// continued in queued items).
// total: 8 bytes
struct GpuRayHit {
    uint id;
    uint t_bits;
};

// Relative slack of the conservative ray-versus-node test of the ray cast traversal: a node
// is skipped only when its entry exceeds its exit (or the best hit so far) by more than this
// relative amount, so that an inexact division (Vulkan allows 2.5 ulp) never prunes a subtree
// holding the closest box. Leaves use the exact test of ray_box_entry.
#ifdef __cplusplus
inline constexpr float kRayNodeSlack = 1e-5f;
#else
const float kRayNodeSlack = 1e-5;
#endif

#ifdef __cplusplus
static_assert(sizeof(GpuRay) == 32 && offsetof(GpuRay, dir) == 16);
static_assert(sizeof(GpuRayHit) == 8 && offsetof(GpuRayHit, t_bits) == 4);
#endif
#include "close.h"

#endif  // BROADPHASE_GPU_LAYOUT_QUERIES_H
