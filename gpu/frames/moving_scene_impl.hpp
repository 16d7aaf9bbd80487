// MovingScene's implementation: its state, small accessors and the declarations of its parts, in
// gpu/frames/: the frame recorder (frame_recorder.cpp), the host helper (frame_helper.cpp) and the
// class with the frame's instruments (moving_scene.cpp). gpu::ProxyScene (proxy_scene.cpp) runs
// its frames through the same Impl, over slots with filters and a static tree. Private to the
// library.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broadphase/gpu/moving_scene.hpp"
#include "device/buffer_sizing.hpp"
#include "device/grow.hpp"
#include "device/impl_access.hpp"
#include "device/range_check.hpp"
#include "device/timestamps.hpp"
#include "lbvh/lbvh_build.hpp"
#include "lbvh/lbvh_pairs.hpp"
#include "lbvh/traversal.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::gpu {

namespace frames {

using namespace gpu_layout;

// The first `size` bytes (at least 4) of one of the scene's own buffers.
inline BufferRange prefix(const Buffer& b, VkDeviceSize size) {
    return {b.handle(), 0, std::max<VkDeviceSize>(size, 4)};
}

inline Error limit(const std::string& what) {
    return Error{ErrorCode::limit_exceeded, what};
}

// Timestamp queries of a frame: start [0], after the refit, its cost and the decision [1],
// after the (gated) rebuild [2], after pairs [3], the pair keys and their count's arguments
// [4], sort [5], differences [6]. A repair after the pair buffers grew: start [7], pairs [8],
// keys [9], sort [10], differences [11].
constexpr std::uint32_t kFrameQueries = 12;
constexpr std::uint32_t kRepairQueries = 7;
// The stages of a frame's report (MovingScene::last_report), between consecutive stamps 0..6.
constexpr std::uint32_t kFrameStages = 6;
// The last kRepairStages of them are recorded again by a repair.
constexpr std::uint32_t kRepairStages = 4;

// What the instruments of the last frame need: the dispatches recorded at each stamp, and
// the frame's counts read back by read_step (the dynamic part of the traffic model,
// frame_traffic in gpu/frames/moving_scene.cpp).
struct FrameCounts {
    std::uint32_t n = 0;
    bool first = false;           // the reset's frame (or ProxyScene's growth): built, no diff
    bool rebuild_always = false;  // recorded an ungated rebuild (first, forced or always)
    bool gated = false;           // recorded the gated rebuild after the decision (by_ratio)
    bool rebuilt = false;         // the frame's status said it rebuilt
    bool refined = false;         // a rebuild refined its codes
    bool pairs = false;           // the pair stages ran
    std::uint32_t key_bits = 1;
    std::uint64_t stored = 0;    // pairs stored (the count clamped to the capacity)
    std::uint64_t previous = 0;  // the previous frame's stored pairs
    std::uint64_t visits = 0;    // nodes the all-pairs traversal expanded
    std::uint64_t resumed = 0;   // queued items its later rounds resumed
    std::uint64_t began = 0, ended = 0;
    std::uint32_t gate_words = 0;  // uints of the gated rebuild's argument table
};

// Slots of the gated rebuild's dispatch-argument table. A build records at most
// 2 + 8 passes x (histogram + scatter + 2 x 4 scan levels) + 2 dispatches (reduce_then_scan;
// onesweep: 2 + 1 + 8 + 2; a split tree's build one more), plus the cost and the commit.
constexpr std::uint32_t kGateSlots = 256;

// Bytes at the start of the readback buffer for the status and a pair counter.
constexpr VkDeviceSize kReadbackHeader = 256;
// Where record_status_readback puts the previous and the current frame's pair traversal status.
constexpr VkDeviceSize kReadbackPrevious = sizeof(FrameStatus);
constexpr VkDeviceSize kReadbackCurrent = kReadbackPrevious + sizeof(TraversalStatus);
static_assert(kReadbackCurrent + sizeof(TraversalStatus) <= kReadbackHeader);

inline double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
}

}  // namespace frames

// The helpers above, for the struct below and the files that include this header.
using namespace frames;

struct MovingScene::Impl {
    Context* context = nullptr;
    MovingSceneOptions options;
    std::unique_ptr<Lbvh> lbvh;
    RadixSort sort;
    // refit writes a tree bound whole; refit_soa and assemble a tree too large for one
    // descriptor (shaders/lbvh/lbvh_refit.glsl).
    Kernel refit, refit_soa, assemble, sah, policy, diff_append, unpack;
    Timestamps timestamps;
    FrameTimes times;

    std::uint32_t n = 0;
    bool ready = false;
    double base_cost = 0;
    // Scene and tree.
    Buffer boxes, nodes, scratch, flags, partials;
    // The frame's results and the policy's state (one FrameStatus).
    Buffer status;
    // The gated rebuild: dispatch arguments (armed or emptied on the GPU) and their table.
    Buffer args, args_on;
    DispatchGate gate;
    // Pair buffers, all sized by `capacity` pairs. keys[k] holds the sorted keys of the frame
    // whose all-pairs counter is pair_count[k]; the last recorded frame's are keys[cur].
    std::uint32_t capacity = 0;
    // pair_count[k] is the all-pairs pass's TraversalStatus (its first word the pair count).
    Buffer pair_count[2], pair_args[2], keys[2];
    // The all-pairs pass's work queues (layout/common.h, "Bounded traversal") and the rounds it
    // records (kTraversalRounds; a repair of a frame that needed more records the maximum).
    Buffer work;
    std::uint32_t work_capacity = 0;
    std::uint32_t rounds = kTraversalRounds;
    // The rounds the last recorded frame's pairs pass took: `rounds` in the frames of
    // record_step, which the caller submits with no host check; a host step (frame(): its
    // status is read and a frame short of rounds repaired) records round 0 alone, two
    // dispatches, until a frame queues work past it (pairs_queued), then `rounds` until a
    // frame resumes nothing past round 0 again.
    std::uint32_t frame_rounds = kTraversalRounds;
    bool pairs_queued = false;
    Buffer keys_tmp, sort_scratch, began, ended;
    // The sizes of the began and ended differences and their dispatch arguments.
    Buffer event_count[2], event_args[2];
    int cur = 0;
    // Host-visible buffers of the host helpers, kept across frames: the boxes staged for
    // upload, and what read_step reads back (the status and the previous frame's pair counter
    // at kReadbackHeader, then the lists).
    Buffer staging, readback;
    // gpu::ProxyScene's frames: the slots' filters and handles of this tree's pairs pass, the
    // passes after it (each a query tree and its ProxyPairs, appending to the same list), the
    // bound on the ids the pair keys pack (0: n), a rebuild forced for one frame, and what
    // frame() records before the frame in its submit (the batch and the other trees).
    BufferRange proxy_slots{};
    std::vector<std::pair<LbvhTree, ProxyPairs>> extra_passes;
    bool force_rebuild = false;
    std::uint32_t key_bound = 0;
    std::function<void(VkCommandBuffer)> prologue;
    // The last recorded frame, for a repair after growing the pair buffers.
    BufferRange last_boxes{};
    bool last_first = true;
    // Instruments: Context::Impl::dispatches_recorded at each stamp of the last recording
    // (stamp numbers as kFrameQueries; marked whether timed or not), before and after the
    // prologue, what a repair added per repaired stage, and the last frame's counts.
    mutable std::array<std::uint64_t, kFrameQueries> marks{};
    std::uint64_t prologue_marks[2] = {0, 0};
    std::array<std::uint32_t, kRepairStages> repair_dispatches{};
    std::array<double, kFrameStages> stage_ms{};
    FrameCounts counts;

    // Bits of j in the frame's pair keys (i << bits | j).
    std::uint32_t key_bits() const { return pair_key_bits(key_bound > 0 ? key_bound : n); }

    // A buffer never bound whole: a tree's node range (LbvhRequirements::nodes, bound as its
    // node and wide arrays, each split over several descriptors where the device allows:
    // layout/common.h, "Split tree bindings") or a build's scratch (bound array by array); their
    // bindings are what check_limits checked.
    Status ensure_unbound(Buffer& buffer, VkDeviceSize size) {
        return grow_buffer(*context, buffer, size);
    }

    // A host-visible buffer of at least `size` bytes (grown with headroom; not bound as
    // storage, so not limited by maxStorageBufferRange).
    Status ensure_host(Buffer& buffer, VkDeviceSize size, MemoryKind kind) {
        return grow_host_buffer(*context, buffer, size, kind);
    }

    VkDeviceSize max_pairs() const { return max_stored_pairs(device_limits(context->info())); }

    LbvhBuildBuffers build_buffers(const BufferRange& box_range) const {
        return {box_range, whole(nodes), whole(scratch)};
    }

    std::uint32_t cost_tiles() const {
        return std::max<std::uint32_t>(workgroups(n > 1 ? n - 1 : 0), 1);
    }

    // Range of a buffer's indirect dispatch arguments (kArgsSlots commands).
    static BufferRange args_range(const Buffer& b) {
        return prefix(b, kArgsSlots * sizeof(VkDispatchIndirectCommand));
    }
    static BufferRange args_slot(const Buffer& b, std::uint32_t slot) {
        return {b.handle(), slot * sizeof(VkDispatchIndirectCommand),
                sizeof(VkDispatchIndirectCommand)};
    }

    // Where a refit's arrays lie in its flags range (MovingScene::refit_flags_bytes): the
    // n - 1 flags, then, for a tree too large for one descriptor (`soa`), the lo and hi arrays
    // it is refitted into (soa_array_bytes each, from 256-byte boundaries).
    struct RefitLayout {
        bool soa = false;
        VkDeviceSize flags = 0, lo = 0, hi = 0, size = 0;
    };

    // The frame recorder (gpu/frames/frame_recorder.cpp), in the order a frame records:
    // the frame, its stamps, rebuild or refit (with the cost and the policy), the pair
    // stages (pairs, key sort, differences), the status read back by the host steps.
    Status record_frame(VkCommandBuffer cmd, const BufferRange& box_range, bool first, bool timed);
    void stamp(VkCommandBuffer cmd, bool timed, std::uint32_t query) const;
    Status record_rebuild(VkCommandBuffer cmd, const BufferRange& box_range, DispatchGate* g) const;
    void record_sah(VkCommandBuffer cmd, DispatchGate* g) const;
    void record_policy(VkCommandBuffer cmd, std::uint32_t mode, DispatchGate* g) const;
    RefitLayout refit_layout(std::uint32_t count) const;
    Status record_refit(VkCommandBuffer cmd, const BufferRange& box_range, const LbvhTree& tree,
                        const BufferRange& flag_range, bool zero_flags,
                        const std::array<BufferRange, 2>* lent = nullptr) const;
    Status record_pair_stages(VkCommandBuffer cmd, bool first, bool timed, std::uint32_t q) const;
    void record_key_sort(VkCommandBuffer cmd, const Buffer& keys_buffer, const Buffer& count,
                         const Buffer& sort_args) const;
    void record_diff(VkCommandBuffer cmd, int a, int b, const Buffer& out,
                     std::uint32_t which) const;
    void record_status_readback(VkCommandBuffer cmd) const;

    // The host helper (gpu/frames/frame_helper.cpp): the buffers sized before use, the boxes
    // staged, one frame submitted and its status read, a frame repaired after its pair
    // buffers grew.
    Status ensure(Buffer& buffer, VkDeviceSize size, const char* name = "a buffer of the scene");
    Status check_limits(std::uint32_t count) const;
    Status allocate(std::uint32_t count);
    Status set_capacity(std::uint32_t pairs, bool keep_previous);
    Status stage(std::span<const Box> input);
    Result<FrameResult> frame(const BufferRange& box_range, bool first_frame, bool staged);
    Result<FrameResult> read_step(bool status_copied);
    Status repair(const FrameStatus& st, const TraversalStatus& traversal);

    // The instruments of the last frame (MovingScene::last_report), its counts read back
    // (gpu/frames/moving_scene.cpp).
    Result<std::vector<StageReport>> report();
};

/// The state of a moving scene with every kernel declared (compiled by the first frame), its
/// Lbvh built with LbvhOptions::empty_slots as asked. Options are not checked here.
Result<std::unique_ptr<MovingSceneImpl>> make_frames(Context& context,
                                                     const MovingSceneOptions& options,
                                                     bool empty_slots);

}  // namespace broadphase::gpu
