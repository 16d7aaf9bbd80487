// CPU twins of the batched GPU LBVH queries (shaders/lbvh/lbvh_query.comp, lbvh_raycast.comp):
// stack traversals of a Karras 2012 tree (the node layout of layout/common.h) doing the same
// per-invocation logic as the shaders, in the same visiting order, so that tests compare GPU
// output with these results exactly (region hits in the same order, ray hits by id and t).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "broadphase/gpu/layout/common.h"
#include "broadphase/types.hpp"

namespace broadphase::lbvh {

/// Region query of lbvh_query.comp over 2n-1 nodes (empty span: empty tree): appends the id of
/// every box overlapping the closed `region`, in the shader's visiting order (left child
/// before right, the second overlapping internal child deferred on a stack). A point pick is
/// the query of the box {p, p}. When `expanded` is given, adds the internal nodes the query
/// expands (the shader's visit count, TraversalStatus visits_lo / visits_hi).
void query_region(std::span<const gpu_layout::LbvhNode> nodes, const Box& region,
                  std::vector<std::uint32_t>& out, std::uint64_t* expanded = nullptr);

/// Conservative ray-versus-node test of lbvh_raycast.comp: the slab test of ray_box_entry,
/// passing unless the entry exceeds the exit, or `best_t`, by more than kRayNodeSlack
/// relative. Sets `t_near` to the (clamped) entry parameter.
bool ray_may_hit_node(const Ray& ray, const Box& node, float best_t, float& t_near);

/// Closest-hit ray cast of lbvh_raycast.comp over 2n-1 nodes: smallest ray_box_entry t in
/// [0, tmax], ties to the smallest id; nothing when the ray misses every box. When `expanded`
/// is given, adds the internal nodes the cast expands (the shader's visit count when the ray
/// finishes in round 0).
std::optional<RayHit> ray_cast_nodes(std::span<const gpu_layout::LbvhNode> nodes, const Ray& ray,
                                     std::uint64_t* expanded = nullptr);

}  // namespace broadphase::lbvh
