// Moving scenes on the GPU: per-frame refit or rebuild of the LBVH and begin/end overlap
// events. Each frame the tree is refitted in place (leaves take their box's new bounds, then
// bottom-up bounds) and its normalised surface-area cost (SAH: sum of internal node areas over
// the root's area; Kopta et al., "Fast, Effective BVH Updates for Animated Scenes", I3D 2012)
// is compared with the cost right after the last build; above a threshold the tree is rebuilt.
// The frame's pairs are sorted on the GPU as keys i << b | j (b = bit_width(n - 1), so 2b sort
// bits) and diffed against the previous frame's sorted keys both ways (each key binary-searched
// in the other list, the missing ones appended, sorted and unpacked), giving exact, sorted
// began/ended lists.
//
// A whole frame is one recording with no host decision inside: the refit-or-rebuild choice is
// taken by a kernel that arms or empties the rebuild's indirect dispatches, and every count
// (pairs, began, ended) stays on the GPU, read by the kernels that need it. record_step puts
// the frame into the caller's command buffer; the host reads results only when it wants them
// (read_step), and the only host round trip left is growing the pair buffers when a frame
// finds more pairs than they hold (reported in the status, never silently dropped). A host
// step (step()) records its pairs pass's round 0 alone (two dispatches) until a frame queues
// work past it, and repairs a frame left short with every round (then kept until a frame
// resumes nothing past round 0); record_step's frames record every round.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "broadphase/gpu/layout/frames.h"
#include "broadphase/gpu/lbvh.hpp"

namespace broadphase::gpu {

/// When a frame refits the tree and when it rebuilds it.
enum class RefitPolicy {
    always_refit,    ///< never rebuild after reset (quality may degrade; pairs stay exact)
    always_rebuild,  ///< rebuild every frame (no refit, ratio reported as 1)
    by_ratio,        ///< refit, then rebuild when cost / cost_after_build > rebuild_ratio
};

struct MovingSceneOptions {
    CodeKind code = CodeKind::morton30;
    RefitPolicy policy = RefitPolicy::by_ratio;
    /// Rebuild threshold on the refitted tree's SAH cost relative to the last build's (> 0).
    double rebuild_ratio = 1.5;
    /// by_ratio also rebuilds when the previous frame's all-pairs traversal expanded more than
    /// this many times the nodes per (box + pair) of the first traversal after the last build
    /// (>= 0; 0 turns this rule off). The SAH cost alone misses a refit that scatters most of a
    /// scene when a few boxes (a world-wide ground slab, bodies fallen far away) dominate the
    /// root's and the upper nodes' areas; the traversal's work does not. It acts one frame
    /// late: the frame after the one that cost too much rebuilds.
    double rebuild_work_ratio = 2.0;
    /// Download the frame's full sorted pair list into FrameResult::pairs (events always are).
    bool return_pairs = true;
    /// Pairs the frame buffers hold at first (0: 4 per box, at least 1024). They grow, with a
    /// host round trip, when a frame finds more.
    std::uint32_t initial_pair_capacity = 0;
    /// (query, node) items the all-pairs traversal's work queue holds at first (0: the
    /// default, at least 65,536). It grows 4x, with a host round trip, when a frame overflows
    /// it; a small value makes frames exercise that path.
    std::uint32_t initial_work_capacity = 0;
    /// false: the frames keep the tree only (refit, SAH cost, the GPU's refit-or-rebuild
    /// decision, the rebuild), for callers that cull or query the moving boxes through tree()
    /// (moving instances: record_step, then Culler::record on tree(), in one command buffer
    /// with no host round trip). No pairs, events or pair buffers: FrameResult's lists stay
    /// empty, pair_count 0, and the work rule of by_ratio is off (there is no traversal to
    /// measure; the SAH rule decides alone).
    bool pairs = true;
};

/// Which path a frame took.
enum class FramePath { refit, rebuild };

/// One frame's outcome. Pair lists are sorted ascending, (i, j) with i < j.
struct FrameResult {
    std::vector<Pair> pairs;       ///< all overlapping pairs (empty unless return_pairs)
    std::vector<Pair> began;       ///< pairs overlapping now and not in the previous frame
    std::vector<Pair> ended;       ///< pairs of the previous frame not overlapping now
    std::uint32_t pair_count = 0;  ///< exact number of pairs this frame
    FramePath path = FramePath::refit;
    /// SAH cost of the refitted tree over the cost right after the last build (1 when the
    /// policy is always_rebuild or there are fewer than 2 boxes).
    double ratio = 1;
    /// The previous frame's all-pairs traversal work per (box + pair) over that of the first
    /// traversal after the last build (1 until measured, and when the policy is
    /// always_rebuild); by_ratio rebuilds when it passes rebuild_work_ratio.
    double work_ratio = 1;
    /// The frame found more pairs than the pair buffers held, or its pairs pass needed more
    /// rounds or a larger work queue than it was recorded with: they were grown and the
    /// frame's pairs, sort and differences redone (one host round trip; the results are
    /// exact).
    bool regrown = false;
};

/// GPU time of each stage of the last reset or step, from timestamp queries (ms; all zero
/// when the queue has no timestamps). A stage the frame did not take reads 0.
struct FrameTimes {
    FramePath path = FramePath::refit;  ///< the path the frame took
    /// host wall ms of writing the boxes into the staging buffer (its GPU copy is part of the
    /// frame's one submit, before the first stage; 0 for a step on the caller's range)
    double upload = 0;
    double refit = 0;  ///< refit, its SAH cost and the GPU's refit-or-rebuild decision
    /// LBVH rebuild and its SAH cost (GPU); on a refit frame of the ratio policy, the cost of
    /// the rebuild's emptied indirect dispatches
    double rebuild = 0;
    double pairs = 0;  ///< all-pairs traversal, every pass when the pair buffer grew (GPU)
    double sort = 0;   ///< radix sort of the packed pair keys (GPU)
    double diff = 0;   ///< began/ended differences with the previous frame (GPU)
    /// gpu::ProxyScene: the batch's scatter into the slots, the fresh tree's build and the
    /// static tree's rebuild after a static change (GPU; 0 for MovingScene)
    double proxies = 0;
    /// GPU stages together (upload excluded).
    double gpu_total() const { return proxies + refit + rebuild + pairs + sort + diff; }
};

/// The device buffers of the last recorded frame, for callers that consume the results on
/// the GPU. Valid until the next record_step, step or reset (a grown capacity replaces them).
/// Every buffer is read as a storage buffer at offset 0; the counts are in `status`.
struct FrameBuffers {
    VkBuffer status = VK_NULL_HANDLE;  ///< one gpu_layout::FrameStatus
    /// status.pairs sorted 64-bit keys i << pair_key_bits | j, as uint pairs (low word first)
    VkBuffer pairs = VK_NULL_HANDLE;
    VkBuffer began = VK_NULL_HANDLE;  ///< status.began pairs (i, j), ascending
    VkBuffer ended = VK_NULL_HANDLE;  ///< status.ended pairs (i, j), ascending
    std::uint32_t pair_capacity = 0;  ///< pairs each of pairs/began/ended holds
    std::uint32_t pair_key_bits = 0;  ///< bits of j in a key: bit_width(size() - 1), at least 1
};

/// A scene of n boxes moving from frame to frame (same count, same ids). Owns its device
/// buffers; the Context must outlive it. Not thread-safe.
class MovingScene {
public:
    /// No scene yet (call reset; its kernels are compiled by the first frame or refit).
    /// Rejects a non-positive rebuild_ratio and a negative rebuild_work_ratio.
    static Result<std::unique_ptr<MovingScene>> create(Context& context,
                                                       const MovingSceneOptions& options = {});
    ~MovingScene();

    /// Starts over with these boxes: builds the tree and records their pairs as the previous
    /// frame's. Rejects invalid boxes (the error names the box).
    Status reset(std::span<const Box> boxes);
    /// Advances one frame: the boxes' new positions (same count as reset, same ids).
    Result<FrameResult> step(std::span<const Box> new_boxes);
    /// As step, on the caller's device range of size() GpuBox (storage usage). Precondition:
    /// its writes complete and visible to the queue (e.g. uploaded with Context::upload or
    /// written by an earlier waited-on submit). The boxes are not validated; a range too small
    /// or misaligned is an error.
    Result<FrameResult> step(const BufferRange& boxes);

    /// Records one whole frame into the caller's command buffer, with no host work between its
    /// stages: refit, SAH cost, the GPU's refit-or-rebuild decision (the rebuild's dispatches
    /// are indirect, armed or emptied by that decision), all pairs, their sort and the
    /// began/ended differences with the previous recorded frame. Several frames may be
    /// recorded back to back (each diffs against the one before; only the last one's results
    /// stay readable). `boxes` holds size() GpuBox (storage usage; not validated).
    /// Preconditions: reset succeeded; writes to `boxes` made available to compute-shader reads
    /// (dstStage COMPUTE_SHADER, dstAccess SHADER_READ); the command buffer is submitted to
    /// the Context's queue family. Postcondition: the last command is a compute dispatch; make
    /// its writes visible (srcStage COMPUTE_SHADER, srcAccess SHADER_WRITE) before reading
    /// buffers(). If status.pairs exceeds status.pair_capacity the frame's lists are
    /// incomplete (the status says so): read_step repairs them.
    /// Records nothing and returns invalid_argument before a successful reset, or when `boxes`
    /// is too small or misaligned.
    Status record_step(VkCommandBuffer cmd, const BufferRange& boxes);
    /// After the submit holding the last record_step has completed: reads the frame's status
    /// and lists. When the frame found more pairs than the buffers hold, grows them and redoes
    /// that frame's pairs, sort and differences (the tree is already right; the frame's
    /// `boxes` buffer must still hold its boxes) before reading.
    /// When the frame recorded before it in the same submit had overflowed (so its lists, and
    /// this frame's differences with it, are incomplete), returns limit_exceeded after
    /// repairing this frame, so that the next frame is exact again.
    Result<FrameResult> read_step();
    /// The device buffers of the last recorded frame (see FrameBuffers).
    FrameBuffers buffers() const;

    /// Records a refit of a built tree (tree.n boxes) on the caller's ranges, one dispatch:
    /// leaves take the bounds of `boxes` (tree.n GpuBox) and internal nodes are recomputed
    /// bottom-up. `flags` holds at least refit_flags_bytes(tree.n) bytes: its first n - 1 uints
    /// are zeroed here by a transfer fill and a barrier before the dispatch, and are zero again
    /// after it. A tree too large for one storage descriptor (more than
    /// maxStorageBufferRange / 96 boxes: 44.7M where that is 2^32 - 1) is refitted in two
    /// dispatches, into arrays that follow the uints in `flags`, then into the tree.
    /// Preconditions: boxes and nodes visible to compute reads/writes. Postcondition: the last
    /// command is a compute dispatch writing nodes. Records nothing and returns an error when a
    /// range is too small or misaligned.
    Status record_refit(VkCommandBuffer cmd, const BufferRange& boxes, const LbvhTree& tree,
                        const BufferRange& flags) const;
    /// Bytes of record_refit's `flags` range for a tree of n boxes on this device: 4 (n - 1),
    /// and for a tree too large for one descriptor two arrays of 16 (2n - 1) bytes more.
    VkDeviceSize refit_flags_bytes(std::uint32_t n) const;

    /// The current tree (size() leaves): refitted or rebuilt by the last recorded frame, in a
    /// buffer that stays the same until the next reset. For Culler::record and the LbvhQueries
    /// recorders after record_step (make the frame's writes visible first: srcStage
    /// COMPUTE_SHADER, srcAccess SHADER_WRITE).
    LbvhTree tree() const;

    /// Stage times and path of the last reset or step.
    const FrameTimes& last_times() const;

    /// Number of boxes since the last reset.
    std::uint32_t size() const;
    /// Normalised SAH cost right after the last build.
    double build_cost() const;
    /// Nodes of the current tree (2n-1; empty when n == 0), for inspection and tests.
    Result<std::vector<gpu_layout::LbvhNode>> nodes();

private:
    BROADPHASE_GPU_IMPL(MovingScene);
};

}  // namespace broadphase::gpu
