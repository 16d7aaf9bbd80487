// Front-to-back frustum culling of a GPU LBVH into indirect draw commands: hierarchical
// rejection and acceptance per chunk of leaves (shaders/lbvh_cull.comp), compaction by an
// exclusive scan (no atomics, deterministic), then either a 32-bit radix sort of near-child-first
// depth-first ranks (approx; the front-to-back traversal order of P. Väänänen's "Sort a sphere
// BVH with split planes", docs/references.md, each leaf's rank carried down the chunked
// traversal) or a 64-bit radix sort of (distance, id) keys (exact), and the draw commands.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/gpu.hpp"

namespace broadphase::gpu {

/// The caller's cull output ranges (storage usage, plus INDIRECT_BUFFER for draws).
/// visible_ids: capacity uints in order; draw_commands: capacity VkDrawIndexedIndirectCommand,
/// command i draws instance visible_ids[i] (firstInstance = id, instanceCount 1,
/// indexCount/firstIndex/vertexOffset from CullOptions); draw_count: one uint usable as the
/// countBuffer of vkCmdDrawIndexedIndirectCount (never above capacity) followed by one uint
/// with the exact number of visible boxes (may exceed capacity: then only the first capacity
/// ids in order were stored, and the caller grows the buffers and records the cull again).
struct CullOutput {
    BufferRange visible_ids;
    BufferRange draw_commands;
    BufferRange draw_count;
    std::uint32_t capacity = 0;
};

/// Draw parameters copied into every draw command.
struct CullOptions {
    std::uint32_t index_count = 36, first_index = 0;
    std::int32_t vertex_offset = 0;
};

/// GPU times of the stages of one cull (milliseconds; all 0 when the queue has no timestamps).
struct CullTimes {
    StageTimes build;    ///< LBVH build stages (host helper only; pairs stays 0)
    double cull = 0;     ///< hierarchical traversal (lbvh_cull.comp)
    double compact = 0;  ///< exclusive scan of the chunk counts + compaction (and order keys)
    double sort = 0;     ///< radix sort of the order keys (32-bit ranks or 64-bit distances)
    double emit = 0;     ///< visible ids, draw commands and draw count
    double cull_total() const { return cull + compact + sort + emit; }
    double total() const { return build.total() + cull_total(); }
};

/// Timestamp queries Culler::record writes when given a query pool.
inline constexpr std::uint32_t kCullQueries = 5;

/// The GPU culler. Holds its kernels, compiled by the Context on the first cull (and, for the
/// host helper, its working buffers).
/// Approximate order (CullOrder::approx): near-child-first depth-first order of the LBVH (as in
/// "Sort a sphere BVH with split planes", docs/references.md): at every internal node the
/// subtree whose bounds are nearer the eye (the distance key below, ties: left child) comes
/// first; roughly front to back, exactly the visible set, ids in that order.
/// Exact order: by a 32-bit key of the squared distance from the eye to the box (24 significant
/// bits, a 9-bit exponent: no overflow at any distance between float boxes and eye; equals
/// point_box_distance's order up to rounding), ties by id.
/// Views one Culler::cull_views call takes.
inline constexpr std::size_t kMaxCullViews = 8;

class Culler {
public:
    static Result<std::unique_ptr<Culler>> create(Context& context,
                                                  const CullOptions& options = {});
    ~Culler();

    /// Bytes of the `scratch` range record() needs for a tree over n boxes.
    VkDeviceSize scratch_size(std::uint32_t n) const;

    /// Records the cull of a built LBVH (Lbvh::record_build output) into cmd. Preconditions: the
    /// build's node writes visible to compute-shader reads; no pending access to `scratch` or the
    /// outputs. Writes the frustum with vkCmdUpdateBuffer. Postcondition: the last command is a
    /// compute dispatch writing all three outputs; make them visible (srcStage COMPUTE_SHADER,
    /// srcAccess SHADER_WRITE; dstStage DRAW_INDIRECT / INDIRECT_COMMAND_READ for draws, or as
    /// needed) before use. With a timestamp `pool`, also writes kCullQueries timestamps at
    /// first_query.. (before the traversal and after traversal, compaction, sort and emit; reset
    /// them beforehand); the last command is then that timestamp write, after the emit dispatch.
    /// Records nothing and returns an error when a range is too small (scratch: scratch_size)
    /// or misaligned.
    Status record(VkCommandBuffer cmd, const LbvhTree& tree, const Frustum& frustum,
                  CullOrder order, const BufferRange& scratch, const CullOutput& out,
                  VkQueryPool pool = VK_NULL_HANDLE, std::uint32_t first_query = 0);

    /// Host helper: uploads boxes (rejecting invalid ones), builds the LBVH, culls (growing the
    /// output until every visible id fits), and downloads the visible ids in order.
    Result<std::vector<std::uint32_t>> cull(std::span<const Box> boxes, const Frustum& frustum,
                                            CullOrder order);
    /// Host helper, several views of one scene (at most kMaxCullViews: a main camera, shadow
    /// cascades, a reflection): the LBVH is built once and each view culled over it in turn;
    /// element v holds view v's visible ids in order, as cull() would return them.
    Result<std::vector<std::vector<std::uint32_t>>> cull_views(std::span<const Box> boxes,
                                                               std::span<const Frustum> frusta,
                                                               CullOrder order);

    /// GPU stage times of the host helper's last cull (build from its first submission, the
    /// cull stages from the last one, after any growth).
    const CullTimes& last_times() const;

    /// Capacity of the host helper's output now (grows when a cull overflows it).
    std::uint32_t capacity() const;

    struct Impl;

private:
    explicit Culler(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace broadphase::gpu
