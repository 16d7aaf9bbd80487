// Front-to-back frustum culling of a GPU LBVH into indirect draw commands: hierarchical
// rejection and acceptance per chunk of leaves (shaders/lbvh_cull.comp), compaction by an
// exclusive scan (no atomics, deterministic), then either the LBVH leaf order (approx) or a
// 64-bit radix sort of (distance, id) keys (exact), and the draw commands.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/gpu.hpp"

namespace broadphase::gpu {

/// The caller's cull output (offsets 0; storage usage, plus INDIRECT_BUFFER for draws).
/// visible_ids: capacity uints in order; draw_commands: capacity VkDrawIndexedIndirectCommand,
/// command i draws instance visible_ids[i] (firstInstance = id, instanceCount 1,
/// indexCount/firstIndex/vertexOffset from CullOptions); draw_count: one uint usable as the
/// countBuffer of vkCmdDrawIndexedIndirectCount (never above capacity) followed by one uint
/// with the exact number of visible boxes (may exceed capacity: then only the first capacity
/// ids in order were stored, and the caller grows the buffers and records the cull again).
struct CullOutput {
    VkBuffer visible_ids = VK_NULL_HANDLE;
    VkBuffer draw_commands = VK_NULL_HANDLE;
    VkBuffer draw_count = VK_NULL_HANDLE;
    std::uint32_t capacity = 0;
};

/// Draw parameters copied into every draw command.
struct CullOptions {
    std::uint32_t index_count = 36, first_index = 0;
    std::int32_t vertex_offset = 0;
};

/// The GPU culler. Holds pipelines (and, for the host helper, its working buffers).
/// Approximate order (CullOrder::approx): the LBVH leaf order, i.e. the Morton order of the
/// box centroids, of the visible boxes; exactly the visible set, not front to back.
/// Exact order: by the float distance from the eye to the box (sqrt of the float sum of
/// squared per-axis gaps; equals point_box_distance up to rounding), ties by id.
class Culler {
public:
    static Result<std::unique_ptr<Culler>> create(Context& context,
                                                  const CullOptions& options = {});
    ~Culler();

    /// Bytes of the `scratch` buffer record() needs for a tree over n boxes.
    static VkDeviceSize scratch_size(std::uint32_t n);

    /// Records the cull of a built LBVH (Lbvh::record_build output; only tree.nodes is read)
    /// into cmd. Preconditions: the build's node writes visible to compute-shader reads; no
    /// pending access to `scratch` or the outputs. Writes the frustum with vkCmdUpdateBuffer.
    /// Postcondition: the last command is a compute dispatch writing all three outputs; make
    /// them visible (srcStage COMPUTE_SHADER, srcAccess SHADER_WRITE; dstStage DRAW_INDIRECT /
    /// INDIRECT_COMMAND_READ for draws, or as needed) before use.
    void record(VkCommandBuffer cmd, const LbvhBuildBuffers& tree, std::uint32_t n,
                const Frustum& frustum, CullOrder order, VkBuffer scratch, const CullOutput& out);

    /// Host helper: uploads boxes (rejecting invalid ones), builds the LBVH, culls (growing the
    /// output until every visible id fits), and downloads the visible ids in order.
    Result<std::vector<std::uint32_t>> cull(std::span<const Box> boxes, const Frustum& frustum,
                                            CullOrder order);

    /// Capacity of the host helper's output now (grows when a cull overflows it).
    std::uint32_t capacity() const;

    struct Impl;

private:
    explicit Culler(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace broadphase::gpu
