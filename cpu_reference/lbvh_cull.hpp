// CPU twin of the GPU LBVH frustum cull (shaders/lbvh_cull.comp, lbvh_cull_compact.comp,
// lbvh_cull_emit.comp): chunked depth-first traversal with hierarchical rejection (a node
// entirely outside one plane) and acceptance (a node entirely inside all planes emits its
// whole leaf range), compaction in LBVH leaf order, the approximate order by near-child-first
// depth-first rank, and the exact order by the float distance key. Same float operations as the
// shaders, so tests compare GPU output with these exactly.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/gpu_layout.h"

namespace broadphase::lbvh {

/// What lbvh_cull.comp's invocation `chunk` writes: the sorted positions it sees, ascending,
/// among [chunk * kCullChunk, (chunk + 1) * kCullChunk) of a tree over n >= 1 leaves; with
/// `ranks` (kCullFlagRank), also each seen leaf's near-child-first rank (near_first_rank).
std::vector<std::uint32_t> cull_chunk(std::span<const gpu_layout::LbvhNode> nodes, std::uint32_t n,
                                      const Frustum& f, std::uint32_t chunk,
                                      std::vector<std::uint32_t>* ranks = nullptr);

/// The shaders' eye-to-box distance in float: sqrt of the float sum of squared per-axis gaps.
float cull_distance(const Vec3& eye, const gpu_layout::LbvhNode& leaf);

/// Near-child-first depth-first rank of the leaf at sorted position p of a tree over n >= 1
/// leaves, by one root-to-leaf descent (the reference cull_chunk's ranks are checked against): at
/// each internal node the child with the smaller squared float distance from the eye comes first
/// (ties: left). Ranks are a permutation of [0, n).
std::uint32_t near_first_rank(std::span<const gpu_layout::LbvhNode> nodes, std::uint32_t n,
                              const Vec3& eye, std::uint32_t p);

/// The whole GPU cull of a tree over n leaves (nodes.size() == 2n - 1; empty when n == 0).
/// approx: ids by cull_chunk's near-child-first ranks (a front-to-back-ish depth-first order).
/// exact: sorted by (float_to_ordered(cull_distance), id).
std::vector<std::uint32_t> cull(std::span<const gpu_layout::LbvhNode> nodes, std::uint32_t n,
                                const Frustum& f, CullOrder order);

}  // namespace broadphase::lbvh
