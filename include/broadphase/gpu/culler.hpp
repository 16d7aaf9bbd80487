// Front-to-back frustum culling of a GPU LBVH into indirect draw commands: hierarchical
// rejection and acceptance per chunk of leaves (shaders/cull/lbvh_cull.comp), compaction by an
// exclusive scan (no atomics, deterministic), then either a 32-bit radix sort of near-child-first
// depth-first ranks (approx; the front-to-back traversal order of P. Väänänen's "Sort a sphere
// BVH with split planes", docs/references.md, each leaf's rank carried down the chunked
// traversal) or a radix sort of the distance key and the id packed in 32 + bit_width(n - 1)
// bits (exact: by distance, ties by id), and the draw commands.
// Optionally per-instance meshes and levels of detail (CullLods: each draw its mesh's LOD for
// the view, flat or grouped per mesh by a stable radix sort on the mesh id), and several views
// in one traversal with a view mask (record_views).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/gpu/layout/cull.h"
#include "broadphase/gpu/lbvh.hpp"
#include "broadphase/occlusion.hpp"

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

/// One level of detail of a mesh: its index range and the eye-to-box distance from which it is
/// drawn (world units; LOD 0's must be 0).
struct MeshLod {
    std::uint32_t index_count = 0, first_index = 0;
    std::int32_t vertex_offset = 0;
    float switch_distance = 0;
};

/// A mesh's levels of detail, 1 to kMaxMeshLods, switch distances finite and strictly ascending
/// from 0. The LOD drawn for a box is the largest k with distance >= lods[k].switch_distance,
/// the distance compared as the exact order's key (cull_distance.glsl: the squared eye-to-box
/// distance rounded to 24 significant bits) against the key of a point at switch_distance: a
/// box within float rounding of a switch distance may take either side, the same on every
/// device and in the CPU twin (lbvh::select_lod).
struct Mesh {
    std::vector<MeshLod> lods;
};

inline constexpr std::uint32_t kMaxMeshLods = gpu_layout::kMaxMeshLods;

/// Validates `meshes` (1 to 2^24 meshes, each as Mesh says; the error names the mesh and LOD)
/// and packs them into the GPU table CullLods::mesh_table holds (144 bytes per mesh,
/// gpu_layout::CullMesh), with the switch distances turned into distance keys. For grouped
/// output, `group_capacity` gives each mesh's command capacity: mesh m's group is commands
/// [sum of the capacities before m, + group_capacity[m]) (group_first), their sum at most
/// 2^32 - 1; empty: no groups (flat output only).
Result<std::vector<gpu_layout::CullMesh>> pack_mesh_table(
    std::span<const Mesh> meshes, std::span<const std::uint32_t> group_capacity = {});

/// First command of each mesh's group for these capacities (element m: the sum of those
/// before m; one more element: their total, the CullOutput capacity grouped output needs).
std::vector<std::uint32_t> group_first(std::span<const std::uint32_t> group_capacity);

/// Per-instance meshes and levels of detail for Culler::record (the caller's buffers, storage
/// usage). Each visible instance's draw command carries its mesh's LOD for the view.
/// Flat (grouped = false): the commands in the cull's order, as without LODs (draw_count the
/// same); an instance whose mesh id is >= mesh_count gets a no-op command (instanceCount 0).
/// Grouped: mesh m's draws fill commands [info.y, info.y + info.z) of the table
/// (pack_mesh_table's group_first and group_capacity), front to back within the group (the
/// cull's order filtered to mesh m); group_counts holds 2 * mesh_count + 1 uints: the commands
/// stored per mesh (countBuffer of one vkCmdDrawIndexedIndirectCount per mesh, at byte 4m),
/// then each mesh's exact visible total (above its capacity: grow and record again), then the
/// visible instances with a mesh id >= mesh_count (drawn in no group). draw_count is then
/// (commands stored, visible total), and visible_ids[k] the instance of command k. A renderer
/// draws mesh m with its pipeline bound: vkCmdDrawIndexedIndirectCount(draw_commands at byte
/// 20 * group_first[m], group_counts at byte 4m, maxDrawCount group_capacity[m], stride 20).
/// The LOD's index_count, first_index and vertex_offset replace CullOptions' in each command.
struct CullLods {
    BufferRange mesh_table;  ///< mesh_count gpu_layout::CullMesh (pack_mesh_table's output)
    BufferRange mesh_ids;    ///< n uints: the mesh of each box id (read on the GPU)
    std::uint32_t mesh_count = 0;
    bool grouped = false;
    BufferRange group_counts;  ///< grouped: (2 * mesh_count + 1) uints; flat: unused
    BufferRange draw_lods{};   ///< optional, capacity uints: each stored command's LOD (kNoLod)
};

/// Which part of a cull against a depth pyramid Culler::record runs (CullOcclusion).
enum class OcclusionPhase : std::uint32_t {
    /// Frustum and pyramid: what is in the frustum and not certainly hidden. No history.
    single = gpu_layout::kOcclusionSingle,
    /// Two-phase occlusion, phase 1 (before this frame's depth exists): what is in the frustum
    /// and was found visible last frame (visibility stamp == frame - 1). No pyramid is read.
    early = gpu_layout::kOcclusionEarly,
    /// Phase 2 (against the pyramid built from phase 1's depth): every box in the frustum and
    /// not hidden is stamped visible this frame (visibility = frame); those phase 1 did not
    /// draw (stamp before != frame - 1) are the output.
    late = gpu_layout::kOcclusionLate,
};

/// Occlusion culling for Culler::record (issue 11 item 3; Haar & Aaltonen's two-phase
/// hierarchical-Z culling, SIGGRAPH 2015). The traversal tests every node that passes the
/// frustum against a max-depth pyramid with the conservative rule of broadphase::occluded()
/// (include/broadphase/occlusion.hpp; bit for bit, shaders/cull/occlusion.glsl) and rejects a
/// hidden node with its whole subtree; it never culls a box the depth buffer would show. A
/// renderer's frame with two-phase culling (visibility zero-filled once, frames from 1):
///  1. record(..., {early, {}, W, H, vp, visibility, frame}) and draw its output;
///  2. copy the depth attachment (D32_SFLOAT) into the first W * H floats of `pyramid`
///     (vkCmdCopyImageToBuffer, tightly packed: row 0 the top row) and record_depth_pyramid;
///  3. record(..., {late, pyramid, W, H, vp, visibility, frame}) and draw its output, loading
///     the depth and colour of step 1.
/// The frame counter must not wrap to 0 (after 2^32 - 1 frames, zero-fill visibility and
/// start again from 1). All phases take the same frustum and view_projection.
struct CullOcclusion {
    OcclusionPhase phase = OcclusionPhase::single;
    /// single and late: the pyramid, depth_pyramid_levels(width, height).back().offset + 1
    /// floats in DepthPyramid::texels()'s layout (storage usage).
    BufferRange pyramid;
    std::uint32_t width = 0, height = 0;  ///< level 0, 1..kMaxDepthImageSize
    /// Column-major, as Camera::view_projection(); the depth image is this matrix's.
    std::array<float, 16> view_projection{};
    /// early and late: one uint per box id (n uints, storage usage), the last frame in which
    /// the box was found visible (0: never); late writes it.
    BufferRange visibility;
    std::uint32_t frame = 1;  ///< early and late: this frame's number, >= 1
};

/// A draw the LOD host helper returns: the instance, its mesh and its LOD.
struct CullDraw {
    std::uint32_t id = 0, mesh = 0, lod = 0;
    friend bool operator==(const CullDraw&, const CullDraw&) = default;
};

/// GPU times of the stages of one cull (milliseconds; all 0 when the queue has no timestamps).
struct CullTimes {
    StageTimes build;    ///< LBVH build stages (host helper only; pairs stays 0)
    double cull = 0;     ///< hierarchical traversal (lbvh_cull.comp)
    double compact = 0;  ///< exclusive scan of the chunk counts + compaction (and order keys)
    double sort = 0;     ///< radix sort of the order keys (32-bit ranks or 64-bit distances)
    double emit = 0;     ///< visible ids, draw commands and draw count
    double pyramid = 0;  ///< depth pyramid levels (cull_occluded's first submission)
    double cull_total() const { return cull + compact + sort + emit; }
    double total() const { return build.total() + pyramid + cull_total(); }
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
inline constexpr std::size_t kMaxCullViews = gpu_layout::kCullMaxViews;

class Culler {
public:
    static Result<std::unique_ptr<Culler>> create(Context& context,
                                                  const CullOptions& options = {});
    ~Culler();

    /// Bytes of the `scratch` range record() needs for a tree over n boxes (and, for grouped
    /// LOD output, mesh_count meshes).
    VkDeviceSize scratch_size(std::uint32_t n, std::uint32_t mesh_count = 0) const;

    /// Records the cull of a built LBVH (Lbvh::record_build output) into cmd. Preconditions: the
    /// build's node writes visible to compute-shader reads; no pending access to `scratch` or the
    /// outputs. Writes the frustum with vkCmdUpdateBuffer and zeroes the traversal's visit count
    /// (two words of `scratch`, see last_visits) with vkCmdFillBuffer. Postcondition: the last
    /// command is a compute dispatch writing all three outputs; make them visible (srcStage
    /// COMPUTE_SHADER, srcAccess SHADER_WRITE; dstStage DRAW_INDIRECT / INDIRECT_COMMAND_READ for
    /// draws, or as needed) before use. With a timestamp `pool`, also writes kCullQueries
    /// timestamps at first_query.. (before the traversal and after traversal, compaction, sort and
    /// emit; reset them beforehand); the last command is then that timestamp write, after the emit
    /// dispatch. Records nothing and returns an error when a range is too small (scratch:
    /// scratch_size) or misaligned.
    Status record(VkCommandBuffer cmd, const LbvhTree& tree, const Frustum& frustum,
                  CullOrder order, const BufferRange& scratch, const CullOutput& out,
                  VkQueryPool pool = VK_NULL_HANDLE, std::uint32_t first_query = 0);

    /// record() with per-instance meshes and LODs (CullLods): flat or grouped per mesh. The
    /// stages are as record()'s; grouping adds a stable radix sort of the ordered instances by
    /// mesh and a pass finding each mesh's run, timed with the emit. scratch:
    /// scratch_size(n, lods.mesh_count). The mesh table is trusted as pack_mesh_table wrote it
    /// (no LOD read past kMaxMeshLods, no command written past the capacity); mesh ids are
    /// checked on the GPU (see CullLods).
    Status record(VkCommandBuffer cmd, const LbvhTree& tree, const Frustum& frustum,
                  CullOrder order, const BufferRange& scratch, const CullOutput& out,
                  const CullLods& lods, VkQueryPool pool = VK_NULL_HANDLE,
                  std::uint32_t first_query = 0);

    /// record() with occlusion culling (CullOcclusion; `lods` optional, as in the overload
    /// above): the traversal is lbvh_cull_occlusion.comp, the stages and timestamps are
    /// record()'s. Errors (recording nothing) for a pyramid size outside 1..16384 or a frame of
    /// 0, and for ranges too small: pyramid (single, late) and visibility (early, late: n uints).
    Status record(VkCommandBuffer cmd, const LbvhTree& tree, const Frustum& frustum,
                  CullOrder order, const BufferRange& scratch, const CullOutput& out,
                  const CullLods* lods, const CullOcclusion& occlusion,
                  VkQueryPool pool = VK_NULL_HANDLE, std::uint32_t first_query = 0);

    /// Records the levels above level 0 of the max-depth pyramid in `pyramid`, whose first
    /// width * height floats (level 0) the caller has written (a depth image copied row-major,
    /// row 0 the top; depths finite, in [0, 1]): one dispatch per level, each after a compute
    /// barrier (shaders/cull/depth_pyramid.comp); equal bit for bit to DepthPyramid::build.
    /// Precondition: level 0's writes visible to compute-shader reads. Postcondition: the last
    /// command is a compute dispatch writing `pyramid` (none for a 1 x 1 image).
    Status record_depth_pyramid(VkCommandBuffer cmd, const BufferRange& pyramid,
                                std::uint32_t width, std::uint32_t height);

    /// Host helper, one view against a depth image (phase single): uploads the boxes and the
    /// pyramid's level 0, builds the tree and the pyramid on the GPU, culls (growing the
    /// output) and returns the visible ids in order.
    Result<std::vector<std::uint32_t>> cull_occluded(std::span<const Box> boxes,
                                                     const Frustum& frustum, CullOrder order,
                                                     const DepthPyramid& depth,
                                                     const std::array<float, 16>& view_projection);

    /// Host helper with meshes and LODs: validates the meshes (pack_mesh_table) and the mesh
    /// ids (one per box, each < meshes.size(); the error names the box), builds, culls and
    /// returns the draws: flat, in the cull's order; grouped, mesh 0's group then mesh 1's...,
    /// each front to back. Grows every overflowing group (or the flat output) and culls again.
    Result<std::vector<CullDraw>> cull_lods(std::span<const Box> boxes, const Frustum& frustum,
                                            CullOrder order, std::span<const Mesh> meshes,
                                            std::span<const std::uint32_t> mesh_ids, bool grouped);

    /// Bytes of the `scratch` range record_views() needs for n boxes and `views` views.
    VkDeviceSize views_scratch_size(std::uint32_t n, std::uint32_t views) const;

    /// Records the cull of 1 to kMaxCullViews views of one built LBVH (issue 11 item 2), each
    /// view into its own outs[v] (visible list, draw commands and count), exactly what record()
    /// of that view alone writes. Exact order: the tree is traversed once per chunk of leaves
    /// with a mask of the views still straddling each node (shaders/cull/lbvh_cull_views.comp),
    /// then each view is compacted, sorted and emitted. Approximate order: each view is culled
    /// as record() does, one after another (its near-child-first ranks are carried down its own
    /// traversal; ranking after a shared traversal measured slower, docs/performance.md).
    /// Preconditions and postcondition as record(); scratch: views_scratch_size(n, views).
    /// With a timestamp pool: kCullQueries timestamps; exact: before and after the shared
    /// traversal (queries 1 to 3 all there) and after the last view's emit, so `cull` times the
    /// traversal and `emit` the views' compaction, sort and emit; approx: 0 before the first
    /// view, 1 to 4 after the last (all in `cull`).
    Status record_views(VkCommandBuffer cmd, const LbvhTree& tree, std::span<const Frustum> frusta,
                        CullOrder order, const BufferRange& scratch,
                        std::span<const CullOutput> outs, VkQueryPool pool = VK_NULL_HANDLE,
                        std::uint32_t first_query = 0);

    /// Host helper: uploads boxes (rejecting invalid ones), builds the LBVH, culls (growing the
    /// output until every visible id fits), and downloads the visible ids in order.
    Result<std::vector<std::uint32_t>> cull(std::span<const Box> boxes, const Frustum& frustum,
                                            CullOrder order);
    /// Host helper, several views of one scene (at most kMaxCullViews: a main camera, shadow
    /// cascades, a reflection): the LBVH is built once and, with two or more views, all views
    /// recorded by record_views in the same submission; element v holds view v's visible ids
    /// in order, as cull() would return them. last_times() then splits the stages as
    /// record_views' timestamps do.
    Result<std::vector<std::vector<std::uint32_t>>> cull_views(std::span<const Box> boxes,
                                                               std::span<const Frustum> frusta,
                                                               CullOrder order);

    /// GPU stage times of the host helper's last cull (build from its first submission, the
    /// cull stages from the last one, after any growth).
    const CullTimes& last_times() const;
    /// Internal nodes the host helper's last cull traversal expanded (each one 64-byte
    /// LbvhWideNode load), counted exactly on the GPU over every chunk (and view) as
    /// lbvh::cull_chunk's `expanded` counts them. Reads two words back; 0 before any cull.
    Result<std::uint64_t> last_visits();

    /// Capacity of the host helper's output now (grows when a cull overflows it).
    std::uint32_t capacity() const;

private:
    BROADPHASE_GPU_IMPL(Culler);
};

}  // namespace broadphase::gpu
