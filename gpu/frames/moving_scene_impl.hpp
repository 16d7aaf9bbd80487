// MovingScene's implementation, shared by gpu/frames/moving_scene.cpp and gpu::ProxyScene
// (gpu/frames/proxy_scene.cpp), which runs its frames over slots with filters and a static tree.
// Private to the library.
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

// The helpers above, for the struct below and its two translation units.
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

    // A device buffer of at least `size` bytes; one that would be bound over
    // maxStorageBufferRange is refused, naming it (`name`).
    Status ensure(Buffer& buffer, VkDeviceSize size, const char* name = "a buffer of the scene") {
        size = std::max<VkDeviceSize>(size, 8);
        if (buffer.handle() && buffer.size() >= size) return {};
        const BindingSize binding{name, size};
        if (Status s = check_bindings(device_limits(context->info()), "MovingScene",
                                      std::span<const BindingSize>(&binding, 1));
            !s)
            return s;
        return grow_buffer(*context, buffer, size);
    }

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

    // Records copies of the status and of the previous and current frames' pair traversal
    // status into `readback` (at 0, kReadbackPrevious, kReadbackCurrent), made visible to the
    // host.
    void record_status_readback(VkCommandBuffer cmd) const {
        compute_barrier(cmd);
        const VkBufferCopy status_copy{0, 0, sizeof(FrameStatus)};
        vkCmdCopyBuffer(cmd, status.handle(), readback.handle(), 1, &status_copy);
        const VkBufferCopy previous_copy{0, kReadbackPrevious, sizeof(TraversalStatus)};
        vkCmdCopyBuffer(cmd, pair_count[cur ^ 1].handle(), readback.handle(), 1, &previous_copy);
        const VkBufferCopy current_copy{0, kReadbackCurrent, sizeof(TraversalStatus)};
        vkCmdCopyBuffer(cmd, pair_count[cur].handle(), readback.handle(), 1, &current_copy);
        host_barrier(cmd);
    }

    VkDeviceSize max_pairs() const { return max_stored_pairs(device_limits(context->info())); }

    LbvhBuildBuffers build_buffers(const BufferRange& box_range) const {
        return {box_range, whole(nodes), whole(scratch)};
    }

    std::uint32_t cost_tiles() const {
        return std::max<std::uint32_t>(workgroups(n > 1 ? n - 1 : 0), 1);
    }

    // Sizes every pair buffer for `pairs` pairs; keys[cur ^ 1] (the previous frame's sorted
    // keys, which the repair of the current frame diffs against) keeps its contents.
    Status set_capacity(std::uint32_t pairs, bool keep_previous) {
        const std::uint32_t old_capacity = capacity;
        Buffer previous;
        if (keep_previous) previous = std::move(keys[cur ^ 1]);
        capacity = pairs;
        const VkDeviceSize c = capacity;
        for (Buffer* b : {&keys[0], &keys[1], &keys_tmp, &began, &ended})
            if (Status s = ensure(*b, c * 8); !s) return s;
        if (Status s = ensure(sort_scratch, RadixSort::scratch_size(capacity)); !s) return s;
        if (!previous.handle()) return {};
        Buffer& kept = keys[cur ^ 1];
        return context->submit_and_wait([&](VkCommandBuffer cmd) {
            compute_barrier(cmd);
            VkBufferCopy copy{0, 0,
                              std::min<VkDeviceSize>(
                                  {VkDeviceSize(old_capacity) * 8, previous.size(), kept.size()})};
            vkCmdCopyBuffer(cmd, previous.handle(), kept.handle(), 1, &copy);
            compute_barrier(cmd);
        });
    }

    void stamp(VkCommandBuffer cmd, bool timed, std::uint32_t query) const {
        if (timed) timestamps.write(cmd, query);
        marks[query] = impl_of(*context).dispatches_recorded;
    }

    void record_sah(VkCommandBuffer cmd, DispatchGate* g) const {
        PushConstants pc{};
        pc.count = n;
        pc.tiles = cost_tiles();
        sah.dispatch(cmd,
                     {prefix(nodes, lbvh_nodes_bytes(n)), prefix(partials, (pc.tiles + 1) * 4ull)},
                     pc, pc.tiles, g);
    }

    void record_policy(VkCommandBuffer cmd, std::uint32_t mode, DispatchGate* g) const {
        PushConstants pc{};
        pc.tiles = cost_tiles();
        pc.count = static_cast<std::uint32_t>(gate.counts.size() * 3);
        pc.flags = mode;
        pc.offset = std::bit_cast<std::uint32_t>(static_cast<float>(options.rebuild_ratio));
        // The work rule reads the previous frame's traversal: off when frames find no pairs.
        const double work_ratio = options.pairs ? options.rebuild_work_ratio : 0.0;
        pc.capacity = std::bit_cast<std::uint32_t>(static_cast<float>(work_ratio));
        pc.shift = n;
        const VkDeviceSize table = kGateSlots * sizeof(VkDispatchIndirectCommand);
        policy.dispatch(cmd,
                        {prefix(partials, (pc.tiles + 1) * 4ull),
                         prefix(status, sizeof(FrameStatus)), prefix(args_on, table),
                         prefix(args, table), prefix(pair_count[cur ^ 1], sizeof(TraversalStatus))},
                        pc, 1, g);
    }

    // The build, its cost and the commit of that cost as the new base; through `g` when given
    // (captured at reset, gated afterwards).
    Status record_rebuild(VkCommandBuffer cmd, const BufferRange& box_range,
                          DispatchGate* g) const {
        Status built = g ? record_gated_build(*lbvh, cmd, build_buffers(box_range), n, *g)
                         : lbvh->record_build(cmd, build_buffers(box_range), n);
        if (!built) return built;
        compute_barrier(cmd);
        if (n < 2) return {};
        record_sah(cmd, g);
        compute_barrier(cmd);
        record_policy(cmd, kPolicyCommit, g);
        compute_barrier(cmd);
        return {};
    }

    // Range of a buffer's indirect dispatch arguments (kArgsSlots commands).
    static BufferRange args_range(const Buffer& b) {
        return prefix(b, kArgsSlots * sizeof(VkDispatchIndirectCommand));
    }
    static BufferRange args_slot(const Buffer& b, std::uint32_t slot) {
        return {b.handle(), slot * sizeof(VkDispatchIndirectCommand),
                sizeof(VkDispatchIndirectCommand)};
    }

    // Sorts the m keys of `keys_buffer` (m in `count`, arguments in `sort_args`), keys only.
    void record_key_sort(VkCommandBuffer cmd, const Buffer& keys_buffer, const Buffer& count,
                         const Buffer& sort_args) const {
        const VkDeviceSize c = capacity;
        SortBuffers sb{};
        sb.keys = prefix(keys_buffer, c * 8);
        sb.keys_tmp = prefix(keys_tmp, c * 8);
        sb.scratch = prefix(sort_scratch, RadixSort::scratch_size(capacity));
        sb.count = prefix(count, 4);
        sb.args = args_range(sort_args);
        // Keys i << b | j with i < j < n take 2b bits.
        sort.record(cmd, sb, capacity, 2, 2 * key_bits());
        compute_barrier(cmd);
    }

    // Records out = A \ B of the sorted keys a and b as sorted pairs; the size goes to the
    // status (which: kDiffBegan or kDiffEnded). Every dispatch is sized by GPU-side counts.
    // Precondition: event_count[which] zeroed and visible (record_pair_stages fills both
    // before the pairs pass, whose own barrier covers them: no fill and barrier here).
    void record_diff(VkCommandBuffer cmd, int a, int b, const Buffer& out,
                     std::uint32_t which) const {
        const VkDeviceSize c = capacity;
        const Buffer& count = event_count[which];
        const Buffer& diff_args = event_args[which];
        PushConstants pc{};
        pc.count = capacity;
        pc.capacity = capacity;
        diff_append.dispatch_indirect(
            cmd,
            {prefix(keys[a], c * 8), prefix(keys[b], c * 8), prefix(out, c * 8),
             prefix(pair_count[a], 4), prefix(pair_count[b], 4), prefix(count, 4)},
            pc, args_slot(pair_args[a], kArgsElements));
        compute_barrier(cmd);
        sort.record_count_args(cmd, prefix(count, 4), capacity, args_range(diff_args));
        record_key_sort(cmd, out, count, diff_args);
        pc = {};
        pc.flags = which;
        pc.shift = key_bits();
        unpack.dispatch_indirect(
            cmd, {prefix(out, c * 8), prefix(count, 4), prefix(status, sizeof(FrameStatus))}, pc,
            args_slot(diff_args, kArgsElements));
        compute_barrier(cmd);
    }

    // All pairs, written as their sort keys into keys[cur] by the pairs pass itself (kPairsKeys),
    // sorted there, and unless this is the reset's frame the differences with keys[cur ^ 1].
    // Timestamps q (pairs), q + 1 (the count's status words and arguments), q + 2 (sort),
    // q + 3 (differences).
    Status record_pair_stages(VkCommandBuffer cmd, bool first, bool timed, std::uint32_t q) const {
        const LbvhPairBuffers out{whole(keys[cur]),
                                  capacity,
                                  whole(pair_count[cur]),
                                  {whole(work), work_capacity, frame_rounds}};
        const LbvhTree tree{whole(nodes), n};
        if (!first)
            for (const Buffer& count : event_count) fill(cmd, prefix(count, 4), 0u);
        ProxyPairs own{proxy_slots};
        own.key_bits = key_bits();
        if (Status s = record_proxy_pairs(*lbvh, cmd, tree, out, own); !s) return s;
        for (auto [query, pass] : extra_passes) {
            pass.key_bits = key_bits();
            if (Status s = record_proxy_pairs(*lbvh, cmd, query, out, pass); !s) return s;
        }
        stamp(cmd, timed, q);
        // The status's pair count (the traversal's saturated count) and the capacity the
        // frame's buffers hold, by transfers: no kernel reads the pairs for them.
        compute_barrier(cmd);
        const VkBufferCopy count_copy{0, offsetof(FrameStatus, pairs), 4};
        vkCmdCopyBuffer(cmd, pair_count[cur].handle(), status.handle(), 1, &count_copy);
        vkCmdUpdateBuffer(cmd, status.handle(), offsetof(FrameStatus, pair_capacity), 4, &capacity);
        sort.record_count_args(cmd, prefix(pair_count[cur], 4), capacity,
                               args_range(pair_args[cur]));
        stamp(cmd, timed, q + 1);
        record_key_sort(cmd, keys[cur], pair_count[cur], pair_args[cur]);
        stamp(cmd, timed, q + 2);
        if (!first) {
            record_diff(cmd, cur, cur ^ 1, began, kDiffBegan);
            record_diff(cmd, cur ^ 1, cur, ended, kDiffEnded);
        }
        stamp(cmd, timed, q + 3);
        return {};
    }

    // Where a refit's arrays lie in its flags range (MovingScene::refit_flags_bytes): the
    // n - 1 flags, then, for a tree too large for one descriptor (`soa`), the lo and hi arrays
    // it is refitted into (soa_array_bytes each, from 256-byte boundaries).
    struct RefitLayout {
        bool soa = false;
        VkDeviceSize flags = 0, lo = 0, hi = 0, size = 0;
    };
    RefitLayout refit_layout(std::uint32_t count) const {
        RefitLayout r;
        r.flags = count >= 2 ? (count - 1) * 4ull : 0;
        r.size = r.flags;
        r.soa = assemble.needs_split(count);
        if (r.soa) {
            r.lo = align_up(r.flags, 256);
            r.hi = align_up(r.lo + soa_array_bytes(count), 256);
            r.size = r.hi + soa_array_bytes(count);
        }
        return r;
    }

    // lbvh_refit.comp: leaves and internal nodes in one pass (see MovingScene::record_refit);
    // for a tree too large for one descriptor, lbvh_refit_soa.comp into the arrays after the
    // flags (or into `lent`, the scene's own build scratch arrays: then the flags range holds
    // the flags only), then lbvh_assemble.comp into the tree.
    // The climb leaves its counters zero, so `zero_flags` (a fill and a barrier) is needed
    // only for flags of unknown contents: the caller's, not the scene's own (zeroed by the
    // reset's frame).
    Status record_refit(VkCommandBuffer cmd, const BufferRange& box_range, const LbvhTree& tree,
                        const BufferRange& flag_range, bool zero_flags,
                        const std::array<BufferRange, 2>* lent = nullptr) const {
        const std::uint32_t count = tree.n;
        RefitLayout layout = refit_layout(count);
        // A split tree's flags range holds three bindings, the flags, lo and hi, unless the
        // arrays are lent.
        const bool in_flags = layout.soa && !lent;
        if (!in_flags) layout.size = layout.flags;
        const VkDeviceSize array = in_flags ? soa_array_bytes(count) : 0;
        const std::array<BindingSize, 3> flag_parts{{{"the refit's flags", layout.flags},
                                                     {"the refit's lo array", array},
                                                     {"the refit's hi array", array}}};
        if (Status s = check_ranges(impl_of(*context), "MovingScene::record_refit",
                                    {{"boxes", box_range, count * VkDeviceSize(sizeof(GpuBox))},
                                     {"nodes", tree.nodes, count > 0 ? lbvh_tree_bytes(count) : 0,
                                      false, tree_binding_sizes(count)},
                                     {"flags", flag_range, layout.size, !in_flags,
                                      in_flags ? std::span<const BindingSize>(flag_parts)
                                               : std::span<const BindingSize>()}});
            !s)
            return s;
        if (Status s = layout.soa ? ready_for_tree(count, {&refit_soa, &assemble}) : refit.ready();
            !s)
            return s;
        if (count == 0) return {};
        PushConstants pc{};
        pc.count = count;
        const TreeBindings bound = tree_bindings(tree.nodes, count);
        const BufferRange node_range = bound.nodes;
        const BufferRange box_used = first_bytes(box_range, count * sizeof(GpuBox));
        // One leaf climbs nowhere: its flags binding takes the nodes (never read).
        const BufferRange flags_used =
            count >= 2 ? first_bytes(flag_range, layout.flags) : node_range;
        if (zero_flags && count >= 2) {
            fill(cmd, flags_used, 0u);
            compute_barrier(cmd);
        }
        if (!layout.soa) {
            refit.dispatch(cmd, {box_used, node_range, flags_used, bound.wide}, pc,
                           workgroups(count));
            return {};
        }
        const BufferRange lo =
            lent ? (*lent)[0]
                 : BufferRange{flag_range.buffer, flag_range.offset + layout.lo, array};
        const BufferRange hi =
            lent ? (*lent)[1]
                 : BufferRange{flag_range.buffer, flag_range.offset + layout.hi, array};
        refit_soa.dispatch(cmd, {box_used, node_range, flags_used, lo, hi}, pc, workgroups(count));
        compute_barrier(cmd);
        record_assemble(assemble, cmd, {lo, hi, lo}, bound, count, true);
        return {};
    }

    // The instruments of the last frame (MovingScene::last_report), its counts read back.
    Result<std::vector<StageReport>> report();

    Status record_frame(VkCommandBuffer cmd, const BufferRange& box_range, bool first, bool timed);
    Status repair(const FrameStatus& st, const TraversalStatus& traversal);
    Result<FrameResult> read_step(bool status_copied);
    Result<FrameResult> frame(const BufferRange& box_range, bool first_frame, bool staged);
    Status stage(std::span<const Box> input);

    // Refuses, before allocating anything, a scene whose per-box buffers exceed the device's
    // maxStorageBufferRange (names the buffer and the limit).
    Status check_limits(std::uint32_t count) const {
        return check_bindings(device_limits(context->info()),
                              "a moving scene of " + std::to_string(count) + " boxes",
                              build_bindings(*lbvh, count));
    }

    Status allocate(std::uint32_t count) {
        n = count;
        const LbvhRequirements req = lbvh->requirements(n);
        if (Status s = ensure(boxes, n * sizeof(GpuBox)); !s) return s;
        if (Status s = ensure_unbound(nodes, req.nodes); !s) return s;
        if (Status s = ensure_unbound(scratch, req.scratch); !s) return s;
        // The refit's flags; a split tree's refit borrows the build scratch's arrays.
        if (Status s = ensure(flags, std::max<std::uint32_t>(n, 1) * 4ull); !s) return s;
        if (Status s = ensure(partials, (workgroups(n) + 2) * 4ull); !s) return s;
        if (Status s = ensure(status, sizeof(FrameStatus)); !s) return s;
        for (Buffer* b : {&pair_count[0], &pair_count[1]})
            if (Status s = ensure(*b, sizeof(TraversalStatus)); !s) return s;
        for (Buffer* b : {&event_count[0], &event_count[1]})
            if (Status s = ensure(*b, 4); !s) return s;
        if (work_capacity == 0)
            work_capacity =
                !options.pairs ? 1
                : options.initial_work_capacity > 0
                    ? options.initial_work_capacity
                    : default_traversal_capacity(n, context->info().max_storage_buffer_range);
        if (Status s = ensure(work, traversal_work_bytes(work_capacity)); !s) return s;
        for (Buffer* b : {&pair_args[0], &pair_args[1], &event_args[0], &event_args[1]})
            if (Status s = ensure(*b, kArgsSlots * sizeof(VkDispatchIndirectCommand)); !s) return s;
        const VkDeviceSize table = kGateSlots * sizeof(VkDispatchIndirectCommand);
        if (Status s = ensure(args, table); !s) return s;
        if (Status s = ensure(args_on, table); !s) return s;
        std::uint64_t pairs = !options.pairs ? 1
                              : options.initial_pair_capacity > 0
                                  ? options.initial_pair_capacity
                                  : std::max<std::uint64_t>(4ull * n, 1024);
        pairs = std::min<std::uint64_t>(pairs, max_pairs());
        return set_capacity(static_cast<std::uint32_t>(pairs), false);
    }
};

/// The state of a moving scene with every kernel declared (compiled by the first frame), its
/// Lbvh built with LbvhOptions::empty_slots as asked. Options are not checked here.
Result<std::unique_ptr<MovingSceneImpl>> make_frames(Context& context,
                                                     const MovingSceneOptions& options,
                                                     bool empty_slots);

}  // namespace broadphase::gpu
