// Levels of detail of a cull (Culler::record with CullLods, pack_mesh_table): per-instance
// meshes, each with up to kMaxMeshLods LODs chosen by distance; the compaction keeps sorted
// positions, an optional grouping per mesh (lbvh_cull_group.comp -> stable radix sort by mesh ->
// lbvh_cull_group_bounds.comp) follows the order sort, and lbvh_cull_emit_lods.comp writes each
// draw with its LOD.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/layout/cull.h"
// The switch keys of the mesh table are the CPU twin's distance keys of the switch distances.
#include "../cpu_reference/lbvh_cull.hpp"
#include "cull/culler_impl.hpp"
#include "device/buffer_sizing.hpp"
#include "device/range_check.hpp"
#include "lbvh/lbvh_build.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::gpu {

namespace culling {

void record_lods(CullerImpl& im, VkCommandBuffer cmd, const LbvhTree& tree, const CullScratch& s,
                 const CullOutput& out, const CullLods& lods, bool exact, PushConstants pc) {
    const std::uint32_t n = tree.n;
    const std::uint32_t mesh_count = lods.mesh_count;
    const BufferRange nodes = first_bytes(tree.nodes, lbvh_nodes_bytes(n));
    const VkDeviceSize id_bytes = std::max<VkDeviceSize>(out.capacity * 4ull, 4);
    const BufferRange mesh_ids = first_bytes(lods.mesh_ids, n * 4ull);
    const BufferRange table = first_bytes(lods.mesh_table, mesh_count * sizeof(CullMesh));
    pc.offset = mesh_count;
    pc.key_words = id_bits(n);  // the exact keys' id bits
    // Exact: the sorted keys (distance key, id) give both, no leaf node is read; approx: the
    // compaction left sorted positions in values.
    pc.flags = (lods.draw_lods.buffer != VK_NULL_HANDLE ? kCullFlagDrawLods : 0u) |
               (exact ? kCullFlagSortedKeys : 0u);
    BufferRange ordered = s.values, bounds = s.args, group_counts = out.draw_count;
    std::uint32_t threads = std::max<std::uint32_t>(1, std::min(n, out.capacity));
    if (lods.grouped && n > 0) {
        // Mesh keys of the ordered list (into ranks) with the elements as values (into slots;
        // both free since the compaction), stably sorted by mesh, then the runs.
        im.group.dispatch(cmd, {nodes, s.offsets, s.values, mesh_ids, s.ranks, s.slots, s.keys}, pc,
                          workgroups(n));
        compute_barrier(cmd);
        SortBuffers sort{s.ranks, s.slots, s.keys_tmp, s.values_tmp, s.work};
        sort.count = s.visible;
        sort.args = s.args;
        im.sort.record(cmd, sort, n, 1, std::max<std::uint32_t>(1, std::bit_width(mesh_count)));
        compute_barrier(cmd);
        im.group_bounds.dispatch(cmd, {s.offsets, s.ranks, s.bounds}, pc, workgroups(n));
        compute_barrier(cmd);
        ordered = s.slots;
    }
    if (lods.grouped) {
        bounds = s.bounds;
        group_counts = first_bytes(lods.group_counts, (2ull * mesh_count + 1) * 4);
        pc.flags |= kCullFlagGrouped;
        threads = std::max(n, mesh_count + 1);
    }
    const BufferRange visible = first_bytes(out.visible_ids, id_bytes);
    im.emit_lods.dispatch(
        cmd,
        {s.params, s.offsets, nodes, ordered, s.ranks, mesh_ids, table, bounds, visible,
         first_bytes(out.draw_commands, out.capacity * 4ull * kDrawCommandWords),
         first_bytes(out.draw_count, 8), group_counts,
         lods.draw_lods.buffer != VK_NULL_HANDLE ? first_bytes(lods.draw_lods, id_bytes) : visible,
         s.keys},
        pc, workgroups(threads));
}

}  // namespace culling

Result<std::vector<CullMesh>> pack_mesh_table(std::span<const Mesh> meshes,
                                              std::span<const std::uint32_t> group_capacity) {
    auto fail = [](std::string message) {
        return Error{ErrorCode::invalid_argument, "pack_mesh_table: " + std::move(message)};
    };
    if (meshes.empty() || meshes.size() > (1u << 24))
        return fail("takes 1 to 2^24 meshes, got " + std::to_string(meshes.size()));
    if (!group_capacity.empty() && group_capacity.size() != meshes.size())
        return fail(std::to_string(group_capacity.size()) + " group capacities for " +
                    std::to_string(meshes.size()) + " meshes");
    std::vector<CullMesh> table(meshes.size());
    std::uint64_t first = 0;
    for (std::size_t m = 0; m < meshes.size(); ++m) {
        const std::vector<MeshLod>& lods = meshes[m].lods;
        const std::string mesh = "mesh " + std::to_string(m);
        if (lods.empty() || lods.size() > kMaxMeshLods)
            return fail(mesh + " has " + std::to_string(lods.size()) + " LODs (1 to " +
                        std::to_string(kMaxMeshLods) + ")");
        if (lods[0].switch_distance != 0)
            return fail(mesh + " LOD 0 switch distance is " +
                        std::to_string(lods[0].switch_distance) + ", must be 0");
        CullMesh& out = table[m];
        const std::uint32_t capacity = group_capacity.empty() ? 0 : group_capacity[m];
        out.info = {static_cast<std::uint32_t>(lods.size()), static_cast<std::uint32_t>(first),
                    capacity, 0};
        first += capacity;
        if (first > 0xffffffffull) return fail("the group capacities add up past 2^32 - 1");
        for (std::size_t k = 0; k < lods.size(); ++k) {
            const float d = lods[k].switch_distance;
            if (!std::isfinite(d) || (k > 0 && !(d > lods[k - 1].switch_distance)))
                return fail(mesh + " LOD " + std::to_string(k) + " switch distance " +
                            std::to_string(d) + " is not finite and above the previous LOD's");
            std::uint32_t vertex_offset = 0;
            std::memcpy(&vertex_offset, &lods[k].vertex_offset, 4);
            out.lods[k] = {lods[k].index_count, lods[k].first_index, vertex_offset,
                           lbvh::switch_key(d)};
        }
    }
    return table;
}

std::vector<std::uint32_t> group_first(std::span<const std::uint32_t> group_capacity) {
    std::vector<std::uint32_t> first(group_capacity.size() + 1, 0);
    for (std::size_t m = 0; m < group_capacity.size(); ++m)
        first[m + 1] = first[m] + group_capacity[m];
    return first;
}

}  // namespace broadphase::gpu
