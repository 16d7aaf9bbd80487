// CPU twin of the GPU LBVH frustum cull (shaders/cull/lbvh_cull.comp, lbvh_cull_compact.comp,
// lbvh_cull_emit.comp): chunked depth-first traversal with hierarchical rejection (a node
// entirely outside one plane) and acceptance (a node entirely inside all planes emits its
// whole leaf range), compaction in LBVH leaf order, the approximate order by near-child-first
// depth-first rank, and the exact order by the distance key (cull_distance_key). Same float
// operations as the shaders, so tests compare GPU output with these exactly.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/gpu/layout/common.h"
#include "broadphase/gpu/layout/cull.h"
#include "broadphase/occlusion.hpp"

namespace broadphase::lbvh {

/// The occlusion part of a cull, gpu::CullOcclusion's twin (lbvh_cull_occlusion.comp): every
/// node that passes the frustum test is also tested with occluded() against `pyramid` (single
/// and late phases) and rejected with its subtree when hidden; no range is accepted whole. A
/// visible leaf is kept: single, always; early, when visibility[id] == frame - 1; late, when
/// visibility[id] != frame - 1, after visibility[id] = frame.
struct CullOcclusionTwin {
    std::uint32_t phase = gpu_layout::kOcclusionSingle;
    const DepthPyramid* pyramid = nullptr;  ///< single and late
    std::array<float, 16> view_projection{};
    std::vector<std::uint32_t>* visibility = nullptr;  ///< early and late: one stamp per box id
    std::uint32_t frame = 1;
    std::uint64_t visits = 0;  ///< nodes classified, summed over the chunks culled (out)
};

/// What lbvh_cull.comp's invocation `chunk` writes: the sorted positions it sees, ascending,
/// among [chunk * kCullChunk, (chunk + 1) * kCullChunk) of a tree over n >= 1 leaves; with
/// `ranks` (kCullFlagRank), also each seen leaf's near-child-first rank (near_first_rank); with
/// `occlusion`, what lbvh_cull_occlusion.comp writes. The shaders classify each child from its
/// parent's LbvhWideNode (bit copies of the bounds read here) when they expand the parent, the
/// root from its own node; the nodes classified, and the order of everything written, are the
/// same as in this node-by-node walk. `expanded` (when given) is increased by the internal nodes
/// the shader expands (loads the LbvhWideNode of: those descended here), the work count it
/// adds to its Counts buffer (lbvh_cull.glsl).
std::vector<std::uint32_t> cull_chunk(std::span<const gpu_layout::LbvhNode> nodes, std::uint32_t n,
                                      const Frustum& f, std::uint32_t chunk,
                                      std::vector<std::uint32_t>* ranks = nullptr,
                                      CullOcclusionTwin* occlusion = nullptr,
                                      std::uint64_t* expanded = nullptr);

/// What lbvh_cull_views.comp's invocation `chunk` writes for several views in one traversal:
/// element v the sorted positions view frusta[v] sees, ascending, among the chunk's (equal to
/// cull_chunk's for that view alone, without ranks), and `visits` (when given) the nodes the
/// traversal classified against at least one view, summed over the chunk; `expanded` (when
/// given) is increased by the internal nodes it expands, as lbvh_cull_views.comp counts them.
std::vector<std::vector<std::uint32_t>> cull_chunk_views(
    std::span<const gpu_layout::LbvhNode> nodes, std::uint32_t n, std::span<const Frustum> frusta,
    std::uint32_t chunk, std::uint64_t* visits = nullptr, std::uint64_t* expanded = nullptr);

/// Order-preserving 32-bit key of the squared distance from eye to the box [lo, hi], never
/// overflowing (shaders/cull/cull_distance.glsl, the same float operations): the per-axis gaps are
/// computed halved, g = max(lo/2 - eye/2, eye/2 - hi/2, 0) (no overflow for any float input),
/// scaled exactly by 2^-k (k: the exponent of the largest gap m, m in [2^(k-1), 2^k)) into h
/// in [0, 1), s = h.x^2 + h.y^2 + h.z^2 in float (in [0.25, 3)), and the key is s * 4^k as a
/// float with a 9-bit exponent: ((s's biased exponent + 2k + 126) << 23) | s's mantissa, in
/// [1 << 23, 511 << 23). 0 when m < 2^-126 (the eye inside or within a float subnormal of
/// the box). No sqrt, no division: the same bits on every device that rounds add, subtract
/// and multiply correctly, whether it keeps or flushes subnormals (they only ever meet terms
/// too small to change a rounding), for coordinates that are 0 or at least 2^-125 in size.
std::uint32_t cull_distance_key(const Vec3& eye, const Vec3& lo, const Vec3& hi);

/// Near-child-first depth-first rank of the leaf at sorted position p of a tree over n >= 1
/// leaves, by one root-to-leaf descent (the reference cull_chunk's ranks are checked against): at
/// each internal node the child with the smaller cull_distance_key of its bounds comes first
/// (ties: left). Ranks are a permutation of [0, n).
std::uint32_t near_first_rank(std::span<const gpu_layout::LbvhNode> nodes, std::uint32_t n,
                              const Vec3& eye, std::uint32_t p);

/// The sorted positions of the visible leaves in the order cull() returns their ids;
/// `expanded` (when given) receives the internal nodes the traversal expands over all chunks
/// (cull_chunk's, the GPU traversal's work count).
std::vector<std::uint32_t> cull_positions(std::span<const gpu_layout::LbvhNode> nodes,
                                          std::uint32_t n, const Frustum& f, CullOrder order,
                                          CullOcclusionTwin* occlusion = nullptr,
                                          std::uint64_t* expanded = nullptr);

/// The switch key of a LOD switch distance d >= 0: cull_distance_key of the point (d, 0, 0)
/// seen from the origin, so that a box's key >= it means the box is at least d away, up to the
/// key's rounding (gpu::pack_mesh_table stores it in CullMesh::lods[k].w).
std::uint32_t switch_key(float distance);

/// The LOD of `mesh` for a box of distance key `key`: the largest k < min(lod count, 8) with
/// key >= lods[k].w, else 0 (lbvh_cull_emit_lods.comp select_lod).
std::uint32_t select_lod(const gpu_layout::CullMesh& mesh, std::uint32_t key);

/// What lbvh_cull_emit_lods.comp leaves in the caller's buffers (gpu::CullLods): ids, commands
/// (5 words each) and lods hold `capacity` entries, those not written equal to `fill`;
/// draw_count as the GPU's; group_counts (grouped: 2M + 1 uints) as the GPU's.
struct CullDraws {
    std::vector<std::uint32_t> ids, commands, lods;
    std::uint32_t draw_count[2] = {0, 0};
    std::vector<std::uint32_t> group_counts;
};

/// The GPU cull with per-instance meshes and LODs of a tree over n leaves: mesh_ids[id] is box
/// id's mesh, `table` the packed meshes (gpu::pack_mesh_table), flat or grouped per mesh.
CullDraws cull_draws(std::span<const gpu_layout::LbvhNode> nodes, std::uint32_t n, const Frustum& f,
                     CullOrder order, std::span<const gpu_layout::CullMesh> table,
                     std::span<const std::uint32_t> mesh_ids, bool grouped, std::uint32_t capacity,
                     std::uint32_t fill);

/// The whole GPU cull of a tree over n leaves (nodes.size() == 2n - 1; empty when n == 0).
/// approx: ids by cull_chunk's near-child-first ranks (a front-to-back-ish depth-first order).
/// exact: sorted by the 64-bit key (cull_distance_key << 32 | id).
/// With `occlusion`, the cull of Culler::record with that CullOcclusion; `expanded` as in
/// cull_positions.
std::vector<std::uint32_t> cull(std::span<const gpu_layout::LbvhNode> nodes, std::uint32_t n,
                                const Frustum& f, CullOrder order,
                                CullOcclusionTwin* occlusion = nullptr,
                                std::uint64_t* expanded = nullptr);

}  // namespace broadphase::lbvh
