// The GPU LBVH (Karras 2012): Morton or Hilbert codes, radix sort, hierarchy and bottom-up
// bounds, with the bounded all-pairs traversal, usable from host arrays or recorded into the
// caller's command buffer on the caller's buffers.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "broadphase/gpu/context.hpp"
#include "broadphase/gpu/layout/common.h"
#include "broadphase/types.hpp"

namespace broadphase::gpu {

/// Which space-filling curve orders the leaves (broadphase/types.hpp).
using broadphase::CodeKind;

/// How pairs are appended to the output (LbvhOptions::pair_append).
enum class PairAppend { automatic, subgroup, atomic };

struct LbvhOptions {
    CodeKind code = CodeKind::morton30;
    /// Adaptive codes (morton30 and hilbert30; lbvh::refine_codes in the CPU twin): when the
    /// first sort leaves a run of gpu_layout::kRefineRun or more equal codes (a dense cluster that
    /// one grid over far-spread centroids puts into a few cells), every box gets a second code in
    /// its run's own centroid bounds and the 64-bit keys are sorted again, so that the
    /// hierarchy splits such runs by position instead of by index. Decided on the GPU: a scene
    /// without long runs pays one pass over the codes (and, in a build that records the
    /// refinement's steps, their launches with no workgroup: refine_on_demand).
    bool refine = true;
    /// Refinement on demand, in the host helpers (find_pairs, build_nodes): until a build of
    /// this Lbvh finds a run of kRefineRun equal codes, a build records the check of the
    /// codes alone, not the refinement's later steps (launched empty on such a scene); a build
    /// whose check finds one is continued with them (find_pairs' pass over its first tree
    /// launches nothing; the refinement's steps and the hierarchy run over the first sort's
    /// keys, so the tree is then the CPU twin's; the report and times cover both parts), and
    /// later builds record them until one finds no long run again. The recorders
    /// (record_build) always record them. False: every build records them.
    bool refine_on_demand = true;
    /// Some boxes may be empty slots: lo.x > hi.x, written as lo = +inf, hi = -inf
    /// (layout/common.h, "Empty slots"; gpu::ProxyScene's free slots). Such a leaf overlaps
    /// nothing and sorts after every other box; the codes' sort takes one more bit for it.
    /// Other boxes must be valid as always.
    bool empty_slots = false;
    /// How the all-pairs traversal reserves output slots: `automatic` takes `subgroup` on a GPU
    /// (not a CPU device such as lavapipe, where it measured slower) with
    /// DeviceInfo::subgroup_ballot, else `atomic`. `subgroup`: one atomic per subgroup's
    /// appends (ballot; Lbvh::create refuses it on a device without ballot); `atomic`: one
    /// atomic per pair, on any device. Both store the same pairs (in another order before the
    /// sort) and count them exactly.
    PairAppend pair_append = PairAppend::automatic;
    /// Entries of the all-pairs traversal's per-invocation stack used before a pending subtree
    /// goes to the work queue for the next round (gpu_layout::kPairStack, the default, when 0;
    /// 1 .. kPairStack). A tuning knob: the pairs and the visit count are the same for every
    /// value; a smaller stack holds less per invocation and queues more work items.
    std::uint32_t pair_stack = 0;
    /// Steps one invocation of the all-pairs traversal takes in its first round, from 1 to
    /// gpu_layout::kTraversalBudget, when the pass's TraversalBuffers::budget is 0; 0 takes
    /// kPairGroup times the device's DeviceInfo::traversal_budget, at most kTraversalBudget
    /// (each invocation walks for kPairGroup leaves). Later rounds, which run only for walks
    /// the first round left unfinished, take the device's budget: a walk over half the scene
    /// fans out into many short items instead of a few long ones. A tuning knob: the pairs
    /// and the visit count are the same for every value.
    std::uint32_t pair_budget = 0;
    /// Steps one invocation of a region query or ray cast (LbvhQueries) takes in its first
    /// round, from 1 to gpu_layout::kTraversalBudget, when the pass's TraversalBuffers::budget
    /// is 0; 0 takes gpu_layout::kQueryFirstRound times the device's
    /// DeviceInfo::traversal_budget, at most kTraversalBudget. Later rounds take the device's
    /// budget, as the pairs pass's do. A tuning knob: the ids, hits and region visit counts are
    /// the same for every value.
    std::uint32_t query_budget = 0;
    /// find_pairs: sort the pairs on the GPU, as (i, j) ascending (a radix sort of i << b | j,
    /// the "pair sort" stage). False: each pair once, i < j, in the order the traversal
    /// appended them, which varies from run to run; the pair sort is skipped (0 dispatches), for
    /// callers that hash, count or re-sort the pairs themselves.
    bool sorted_pairs = true;
};

/// GPU time of each stage of the last host-array call, from timestamp queries (ms).
struct StageTimes {
    double bounds = 0, codes = 0, sort = 0;
    double hierarchy = 0;  ///< the hierarchy and its node bounds (one bottom-up pass)
    double pairs = 0;      ///< every attempt of the pairs pass (a pass that overflowed reruns)
    double pair_sort = 0;  ///< find_pairs: the radix sort of the pairs found (GPU)
    double total() const { return bounds + codes + sort + hierarchy + pairs + pair_sort; }
};

/// Sizes of the buffers an Lbvh's recorders need for n boxes (bytes; Lbvh::requirements).
struct LbvhRequirements {
    VkDeviceSize boxes = 0;  ///< n GpuBox
    /// The tree: 2n-1 LbvhNode (one when n == 0), then from the next multiple of 256 bytes the
    /// n-1 LbvhWideNode (one when n <= 1) that the traversals read (layout/common.h).
    VkDeviceSize nodes = 0;
    VkDeviceSize scratch = 0;  ///< codes, ids, sort ping-pong, histograms, flags, bounds
};

/// The caller's ranges for a build. Every buffer needs VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
/// and TRANSFER_DST, and `scratch` also INDIRECT_BUFFER (the refinement's second sort is
/// launched from a GPU-written count; Context::create_buffer sets all three). Sizes at least
/// those of Lbvh::requirements of the Lbvh that records. `boxes` holds n GpuBox (32 bytes each).
struct LbvhBuildBuffers {
    BufferRange boxes;
    BufferRange nodes;
    BufferRange scratch;
};

/// A built tree in the caller's buffers: `nodes` as written by Lbvh::record_build over n boxes
/// (2n-1 LbvhNode and the LbvhWideNode records after them: LbvhRequirements::nodes bytes).
struct LbvhTree {
    BufferRange nodes;
    std::uint32_t n = 0;
};

/// The work queues of a bounded traversal (layout/common.h, "Bounded traversal"): `work` holds
/// traversal_work_bytes(capacity) bytes (STORAGE | TRANSFER_DST), `capacity` items per queue;
/// `rounds` (1 .. kTraversalMaxRounds) dispatches are recorded. An invocation that would expand
/// more than `budget` nodes queues the rest for the next round, so no dispatch runs an
/// unbounded loop; kTraversalMaxRounds rounds always finish, fewer leave the status flag
/// kTraversalIncomplete when a scene needs more (record the pass again with more rounds), and a
/// queue too small for a round leaves kTraversalQueueOverflow (grow `work`). Either flag means
/// the results are incomplete; neither is ever silent.
struct TraversalBuffers {
    BufferRange work;
    std::uint32_t capacity = 0;
    std::uint32_t rounds = gpu_layout::kTraversalRounds;
    /// Steps one invocation takes per round (1 .. kTraversalBudget; larger is capped): nodes
    /// expanded, and in the all-pairs pass also the iterations that store its pairs. 0 takes
    /// the Context's DeviceInfo::traversal_budget, except in the all-pairs pass's first round,
    /// which takes LbvhOptions::pair_budget (by default gpu_layout::kPairGroup times the
    /// device's: each of its invocations walks for that many leaves), and in the first round of
    /// region queries and ray casts, which takes LbvhOptions::query_budget. The results are the
    /// same whatever it is; a smaller one needs more rounds and queue items but balances a
    /// lopsided scene.
    std::uint32_t budget = 0;
};
/// Bytes of a TraversalBuffers::work buffer of `capacity` items per queue (two queues of 8-byte
/// items, then as many 16-byte ray-cast candidates).
VkDeviceSize traversal_work_bytes(std::uint32_t capacity);
/// A work capacity that holds the queued items of every scene seen so far for `queries`
/// queries: max(queries, 2^16), capped so the buffer stays within `max_range` bytes.
std::uint32_t default_traversal_capacity(std::uint64_t queries, VkDeviceSize max_range);

/// Reads the outcome of a traversal from its TraversalStatus (downloaded by the caller).
/// Returns an error naming what is incomplete (rounds, queue), or the exact pair total.
Result<std::uint64_t> traversal_outcome(const gpu_layout::TraversalStatus& status,
                                        const char* what);
/// The caller's pair output: `pairs` holds `capacity` pairs as 2 uints (i, j) each, i < j;
/// `status` holds one gpu_layout::TraversalStatus (64 bytes; STORAGE | TRANSFER_DST |
/// INDIRECT_BUFFER usage): its first uint `count` is the number of pairs found saturated at
/// 2^32 - 1, total_lo / total_hi the exact 64-bit number; when it exceeds capacity only
/// `capacity` of them were stored, in no particular order (grow and record the pairs pass
/// again); its `flags` say whether the traversal finished (see TraversalBuffers). Past
/// 2^32 - 1 pairs the 32-bit slot numbers wrap and later pairs overwrite the first slots, so
/// the stored pairs are then not a usable subset: such a total can never fit (capacity * 8
/// bytes is one binding, under 2^32) and the host helpers refuse it by its exact count.
struct LbvhPairBuffers {
    BufferRange pairs;
    std::uint32_t capacity = 0;
    BufferRange status;
    TraversalBuffers traversal;
};
/// Linear BVH on the GPU: Morton codes, radix sort, Karras hierarchy, bottom-up bounds,
/// self-pairs. All data lives in buffers the caller or the host-array helpers provide; the
/// kernels are the Context's, compiled by the first build (those of its code kind and refine
/// option only) and the first pairs pass. Not thread-safe; one recording at a time per command
/// buffer.
class Lbvh {
public:
    static Result<std::unique_ptr<Lbvh>> create(Context& context, const LbvhOptions& options = {});
    ~Lbvh();

    /// Sizes of the buffers this Lbvh's recorders need for n boxes: they depend on its code
    /// kind and refine option, so buffers must be sized by the Lbvh that records into them.
    LbvhRequirements requirements(std::uint32_t n) const;

    /// Records the build over n boxes (n < 2^31). Precondition: writes to `boxes` made
    /// available to compute-shader reads (a barrier with dstStage COMPUTE_SHADER, dstAccess
    /// SHADER_READ). Postcondition: nodes hold the tree; the last command is a compute dispatch
    /// whose writes the caller must make visible (srcStage COMPUTE_SHADER, srcAccess
    /// SHADER_WRITE) before reading nodes. `timestamps` (optional) receives 5 timestamp queries
    /// from `first_query` on (stage boundaries); pass VK_NULL_HANDLE for none. Records nothing
    /// and returns an error when a range is smaller than requirements(n) or misaligned.
    Status record_build(VkCommandBuffer cmd, const LbvhBuildBuffers& buffers, std::uint32_t n,
                        VkQueryPool timestamps = VK_NULL_HANDLE, std::uint32_t first_query = 0);

    /// Records the all-pairs traversal of a built tree, in out.traversal.rounds bounded rounds.
    /// Preconditions: the build's node writes visible to compute-shader reads. Resets `status`
    /// with vkCmdFillBuffer itself. Postcondition as record_build, for `pairs` and `status`
    /// (the last command is a compute dispatch writing status.count and flags). Records nothing
    /// and returns an error when a range is too small or misaligned.
    Status record_pairs(VkCommandBuffer cmd, const LbvhTree& tree, const LbvhPairBuffers& out);

    /// Host-array helper: uploads, builds, finds all pairs (the traversal's round 0 first; the
    /// later rounds, up to kTraversalMaxRounds, in a second submission only when items were
    /// queued; the output and the work queue grown and the pass run again until every pair is
    /// found and fits), downloads, and returns them sorted ascending (with
    /// LbvhOptions::sorted_pairs). Rejects invalid boxes; more pairs than one
    /// storage buffer holds is an error giving the exact count.
    Result<std::vector<Pair>> find_pairs(std::span<const Box> boxes);

    /// Host-array helper: builds and returns the nodes (2n-1) for inspection and tests.
    Result<std::vector<gpu_layout::LbvhNode>> build_nodes(std::span<const Box> boxes);

    /// Stage times of the last find_pairs (all zero when timestamps are unsupported).
    const StageTimes& last_times() const;

    /// Whether the last host-array build refined its codes (LbvhOptions::refine: a run of
    /// gpu_layout::kRefineRun equal first codes or more was found, so the "sort" stage also
    /// re-coded the runs and sorted the 64-bit keys). Reads one word back from the device.
    Result<bool> read_refined();

    /// How this Lbvh's all-pairs pass appends: PairAppend::subgroup or PairAppend::atomic
    /// (LbvhOptions::pair_append, `automatic` resolved for the device).
    PairAppend pair_append() const;

private:
    BROADPHASE_GPU_IMPL(Lbvh);
};

/// Converts boxes to the GPU layout (w = 0).
std::vector<gpu_layout::GpuBox> to_gpu_boxes(std::span<const Box> boxes);

}  // namespace broadphase::gpu
