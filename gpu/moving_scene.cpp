// Moving scenes on the GPU (include/broadphase/gpu_frames.hpp): per-frame LBVH refit
// (shaders/lbvh_refit.comp + lbvh_bounds.comp) or rebuild (the Lbvh build), chosen on the GPU
// by the refitted tree's normalised SAH cost (shaders/lbvh_sah.comp, shaders/frame_policy.comp;
// Kopta et al., I3D 2012) and by the previous frame's traversal work, then all pairs
// (Lbvh::record_pairs), a 64-bit radix sort of the pairs (shaders/pair_keys.comp, RadixSort) and
// the difference of consecutive frames' sorted pairs both ways (shaders/pair_diff_append.comp,
// RadixSort, shaders/pair_unpack.comp).
//
// One frame is one recording without host decisions: the rebuild's dispatches are indirect
// (DispatchGate), their arguments written by frame_policy.comp from a table captured while
// recording the reset's build; the pair and event counts are read on the GPU, and the kernels
// after the pairs pass are launched indirectly for exactly those counts
// (shaders/count_args.comp), in buffers sized by the pair capacity.
#include <algorithm>
#include <bit>
#include <cassert>
#include <chrono>
#include <cstring>

#include "broadphase/gpu_frames.hpp"
#include "broadphase/scene.hpp"
#include "lbvh_gated.hpp"
#include "radix_sort.hpp"
#include "range_check.hpp"
#include "shaders.hpp"
#include "timestamps.hpp"

namespace broadphase::gpu {

using namespace gpu_layout;

namespace {

std::uint32_t groups(std::uint64_t count) {
    return static_cast<std::uint32_t>(div_up(count, kWorkgroupSize));
}

VkDeviceSize nodes_bytes(std::uint32_t n) {
    return std::max<VkDeviceSize>(2ull * std::max<std::uint32_t>(n, 1) - 1, 1) * sizeof(LbvhNode);
}

// The first `size` bytes (at least 4) of one of the scene's own buffers.
BufferRange prefix(const Buffer& b, VkDeviceSize size) {
    return {b.handle(), 0, std::max<VkDeviceSize>(size, 4)};
}

Error limit(const std::string& what) {
    return Error{ErrorCode::limit_exceeded, what, {}, {}};
}

// Timestamp queries of a frame: start [0], after the refit, its cost and the decision [1],
// after the (gated) rebuild [2], after pairs [3], sort [4], differences [5]. A repair after
// the pair buffers grew: start [6], pairs [7], sort [8], differences [9].
constexpr std::uint32_t kFrameQueries = 10;
constexpr std::uint32_t kRepairQueries = 6;

// Slots of the gated rebuild's dispatch-argument table. A build records at most
// 2 + 16 passes x (histogram + scatter + 2 x 4 scan levels) + 2 dispatches, plus the cost
// and the commit.
constexpr std::uint32_t kGateSlots = 256;

// Bits of j in a pair key i << b | j (shaders/pair_keys.comp): j < n needs bit_width(n - 1).
std::uint32_t pair_key_bits(std::uint32_t n) {
    return std::max<std::uint32_t>(std::bit_width(n > 0 ? n - 1 : 0u), 1);
}

// The pair of a key (low word, high word) of pair_keys.comp.
Pair unpack_pair_key(std::uint32_t lo, std::uint32_t hi, std::uint32_t b) {
    return {(lo >> b) | (hi << (32 - b)), lo & ((1u << b) - 1)};
}

// Bytes at the start of the readback buffer for the status and a pair counter.
constexpr VkDeviceSize kReadbackHeader = 256;
// Where record_status_readback puts the previous and the current frame's pair traversal status.
constexpr VkDeviceSize kReadbackPrevious = sizeof(FrameStatus);
constexpr VkDeviceSize kReadbackCurrent = kReadbackPrevious + sizeof(TraversalStatus);
static_assert(kReadbackCurrent + sizeof(TraversalStatus) <= kReadbackHeader);

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
}

}  // namespace

struct MovingScene::Impl {
    Context* context = nullptr;
    MovingSceneOptions options;
    std::unique_ptr<Lbvh> lbvh;
    RadixSort sort;
    Kernel refit, node_bounds, sah, policy, pair_keys, diff_append, unpack;
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
    Buffer pair_buffer, pair_count[2], pair_args[2], keys[2];
    // The all-pairs pass's work queues (gpu_layout.h, "Bounded traversal") and the rounds it
    // records (kTraversalRounds; a repair of a frame that needed more records the maximum).
    Buffer work;
    std::uint32_t work_capacity = 0;
    std::uint32_t rounds = kTraversalRounds;
    Buffer keys_tmp, sort_scratch, began, ended;
    // The sizes of the began and ended differences and their dispatch arguments.
    Buffer event_count[2], event_args[2];
    int cur = 0;
    // Host-visible buffers of the host helpers, kept across frames: the boxes staged for
    // upload, and what read_step reads back (the status and the previous frame's pair counter
    // at kReadbackHeader, then the lists).
    Buffer staging, readback;
    // The last recorded frame, for a repair after growing the pair buffers.
    BufferRange last_boxes{};
    bool last_first = true;

    Status ensure(Buffer& buffer, VkDeviceSize size) {
        size = std::max<VkDeviceSize>(size, 8);
        if (buffer.handle() && buffer.size() >= size) return {};
        if (size > context->info().max_storage_buffer_range)
            return limit(std::to_string(size) +
                         " bytes for one buffer exceed the device's maxStorageBufferRange");
        buffer = Buffer();
        auto b = context->create_buffer(size, MemoryKind::device);
        if (!b) return b.error();
        buffer = std::move(b.value());
        return {};
    }

    // A host-visible buffer of at least `size` bytes (grown with headroom; not bound as
    // storage, so not limited by maxStorageBufferRange).
    Status ensure_host(Buffer& buffer, VkDeviceSize size, MemoryKind kind) {
        if (buffer.handle() && buffer.size() >= size) return {};
        buffer = Buffer();
        auto b = context->create_buffer(std::max<VkDeviceSize>(size + size / 4, 256), kind);
        if (!b) return b.error();
        buffer = std::move(b.value());
        return {};
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

    VkDeviceSize max_pairs() const { return context->info().max_storage_buffer_range / 8; }

    LbvhBuildBuffers build_buffers(const BufferRange& box_range) const {
        return {box_range, whole(nodes), whole(scratch)};
    }

    std::uint32_t cost_tiles() const {
        return std::max<std::uint32_t>(groups(n > 1 ? n - 1 : 0), 1);
    }

    // Sizes every pair buffer for `pairs` pairs; keys[cur ^ 1] (the previous frame's sorted
    // keys, which the repair of the current frame diffs against) keeps its contents.
    Status set_capacity(std::uint32_t pairs, bool keep_previous) {
        const std::uint32_t old_capacity = capacity;
        Buffer previous;
        if (keep_previous) previous = std::move(keys[cur ^ 1]);
        capacity = pairs;
        const VkDeviceSize c = capacity;
        for (Buffer* b : {&pair_buffer, &keys[0], &keys[1], &keys_tmp, &began, &ended})
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
    }

    void record_sah(VkCommandBuffer cmd, DispatchGate* g) const {
        PushConstants pc{};
        pc.count = n;
        pc.tiles = cost_tiles();
        sah.dispatch(cmd, {prefix(nodes, nodes_bytes(n)), prefix(partials, (pc.tiles + 1) * 4ull)},
                     pc, pc.tiles, g);
    }

    void record_policy(VkCommandBuffer cmd, std::uint32_t mode, DispatchGate* g) const {
        PushConstants pc{};
        pc.tiles = cost_tiles();
        pc.count = static_cast<std::uint32_t>(gate.counts.size() * 3);
        pc.flags = mode;
        pc.offset = std::bit_cast<std::uint32_t>(static_cast<float>(options.rebuild_ratio));
        pc.capacity = std::bit_cast<std::uint32_t>(static_cast<float>(options.rebuild_work_ratio));
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
        sort.record(cmd, sb, capacity, 2, 2 * pair_key_bits(n));
        compute_barrier(cmd);
    }

    // Records out = A \ B of the sorted keys a and b as sorted pairs; the size goes to the
    // status (which: kDiffBegan or kDiffEnded). Every dispatch is sized by GPU-side counts.
    void record_diff(VkCommandBuffer cmd, int a, int b, const Buffer& out,
                     std::uint32_t which) const {
        const VkDeviceSize c = capacity;
        const Buffer& count = event_count[which];
        const Buffer& diff_args = event_args[which];
        fill(cmd, prefix(count, 4), 0u);
        compute_barrier(cmd);
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
        pc.shift = pair_key_bits(n);
        unpack.dispatch_indirect(
            cmd, {prefix(out, c * 8), prefix(count, 4), prefix(status, sizeof(FrameStatus))}, pc,
            args_slot(diff_args, kArgsElements));
        compute_barrier(cmd);
    }

    // All pairs into pair_buffer, their keys sorted into keys[cur], and unless this is the
    // reset's frame the differences with keys[cur ^ 1]. Timestamps q, q + 1, q + 2.
    Status record_pair_stages(VkCommandBuffer cmd, bool first, bool timed, std::uint32_t q) const {
        const VkDeviceSize c = capacity;
        if (Status s = lbvh->record_pairs(cmd, {whole(nodes), n},
                                          {whole(pair_buffer),
                                           capacity,
                                           whole(pair_count[cur]),
                                           {whole(work), work_capacity, rounds}});
            !s)
            return s;
        stamp(cmd, timed, q);
        sort.record_count_args(cmd, prefix(pair_count[cur], 4), capacity,
                               args_range(pair_args[cur]));
        PushConstants pc{};
        pc.capacity = capacity;
        pc.shift = pair_key_bits(n);
        pair_keys.dispatch_indirect(
            cmd,
            {prefix(pair_buffer, c * 8), prefix(keys[cur], c * 8), prefix(pair_count[cur], 4),
             prefix(status, sizeof(FrameStatus))},
            pc, args_slot(pair_args[cur], kArgsElements));
        compute_barrier(cmd);
        record_key_sort(cmd, keys[cur], pair_count[cur], pair_args[cur]);
        stamp(cmd, timed, q + 1);
        if (!first) {
            record_diff(cmd, cur, cur ^ 1, began, kDiffBegan);
            record_diff(cmd, cur ^ 1, cur, ended, kDiffEnded);
        }
        stamp(cmd, timed, q + 2);
        return {};
    }

    // lbvh_refit.comp, then lbvh_bounds.comp over the internal nodes (see record_refit).
    Status record_refit(VkCommandBuffer cmd, const BufferRange& box_range, const LbvhTree& tree,
                        const BufferRange& flag_range) const {
        const std::uint32_t count = tree.n;
        const VkDeviceSize flag_bytes = count >= 2 ? (count - 1) * 4ull : 0;
        if (Status s = check_ranges(context->impl(), "MovingScene::record_refit",
                                    {{"boxes", box_range, count * VkDeviceSize(sizeof(GpuBox))},
                                     {"nodes", tree.nodes, count > 0 ? nodes_bytes(count) : 0},
                                     {"flags", flag_range, flag_bytes}});
            !s)
            return s;
        if (Status s = gpu::ready({&refit, &node_bounds}); !s) return s;
        if (count == 0) return {};
        PushConstants pc{};
        pc.count = count;
        const BufferRange node_range = first_bytes(tree.nodes, nodes_bytes(count));
        refit.dispatch(cmd, {first_bytes(box_range, count * sizeof(GpuBox)), node_range}, pc,
                       groups(count));
        if (count < 2) return {};
        const BufferRange flags_used = first_bytes(flag_range, flag_bytes);
        fill(cmd, flags_used, 0u);
        compute_barrier(cmd);
        node_bounds.dispatch(cmd, {node_range, flags_used}, pc, groups(count));
        return {};
    }

    Status record_frame(VkCommandBuffer cmd, const BufferRange& box_range, bool first, bool timed);
    Status repair(const FrameStatus& st, const TraversalStatus& traversal);
    Result<FrameResult> read_step(bool status_copied);
    Result<FrameResult> frame(const BufferRange& box_range, bool first_frame, bool staged);
    Status stage(std::span<const Box> input);

    // Refuses, before allocating anything, a scene whose per-box buffers exceed the device's
    // maxStorageBufferRange (names the buffer and the limit).
    Status check_limits(std::uint32_t count) const {
        const VkDeviceSize range = context->info().max_storage_buffer_range;
        struct Need {
            const char* what;
            VkDeviceSize bytes;
        };
        const Need needs[] = {
            {"the box buffer", count * VkDeviceSize(sizeof(GpuBox))},
            {"the node buffer", nodes_bytes(count)},
            {"the sort-key buffer", count * 8ull},
        };
        for (const Need& need : needs) {
            if (need.bytes > range)
                return limit(std::string(need.what) + " of a moving scene of " +
                             std::to_string(count) + " boxes needs " + std::to_string(need.bytes) +
                             " bytes, over the device's maxStorageBufferRange of " +
                             std::to_string(range));
        }
        return {};
    }

    Status allocate(std::uint32_t count) {
        n = count;
        const LbvhRequirements req = lbvh->requirements(n);
        if (Status s = ensure(boxes, n * sizeof(GpuBox)); !s) return s;
        if (Status s = ensure(nodes, req.nodes); !s) return s;
        if (Status s = ensure(scratch, req.scratch); !s) return s;
        if (Status s = ensure(flags, std::max<std::uint32_t>(n, 1) * 4ull); !s) return s;
        if (Status s = ensure(partials, (groups(n) + 2) * 4ull); !s) return s;
        if (Status s = ensure(status, sizeof(FrameStatus)); !s) return s;
        for (Buffer* b : {&pair_count[0], &pair_count[1]})
            if (Status s = ensure(*b, sizeof(TraversalStatus)); !s) return s;
        for (Buffer* b : {&event_count[0], &event_count[1]})
            if (Status s = ensure(*b, 4); !s) return s;
        if (work_capacity == 0)
            work_capacity =
                options.initial_work_capacity > 0
                    ? options.initial_work_capacity
                    : default_traversal_capacity(n, context->info().max_storage_buffer_range);
        if (Status s = ensure(work, traversal_work_bytes(work_capacity)); !s) return s;
        for (Buffer* b : {&pair_args[0], &pair_args[1], &event_args[0], &event_args[1]})
            if (Status s = ensure(*b, kArgsSlots * sizeof(VkDispatchIndirectCommand)); !s) return s;
        const VkDeviceSize table = kGateSlots * sizeof(VkDispatchIndirectCommand);
        if (Status s = ensure(args, table); !s) return s;
        if (Status s = ensure(args_on, table); !s) return s;
        std::uint64_t pairs = options.initial_pair_capacity > 0
                                  ? options.initial_pair_capacity
                                  : std::max<std::uint64_t>(4ull * n, 1024);
        pairs = std::min<std::uint64_t>(pairs, max_pairs());
        return set_capacity(static_cast<std::uint32_t>(pairs), false);
    }
};

Status MovingScene::Impl::record_frame(VkCommandBuffer cmd, const BufferRange& box_range,
                                       bool first, bool timed) {
    // The caller's boxes are the only range from outside: checked before anything changes.
    if (Status s = check_ranges(context->impl(), "MovingScene::record_step",
                                {{"boxes", box_range, n * VkDeviceSize(sizeof(GpuBox))}});
        !s)
        return s;
    // Every kernel a frame may record, before anything is recorded.
    if (Status s =
            gpu::ready({&refit, &node_bounds, &sah, &policy, &pair_keys, &diff_append, &unpack});
        !s)
        return s;
    if (Status s = sort.ready_sort(); !s) return s;
    if (Status s = sort.ready_count_args(); !s) return s;
    if (Status s = ready_lbvh_kernels(*lbvh); !s) return s;
    if (!first) cur ^= 1;
    last_boxes = box_range;
    last_first = first;
    if (timed) timestamps.reset(cmd, 0, kFrameQueries);
    compute_barrier(cmd);
    stamp(cmd, timed, 0);
    // The frame's defaults: no events, ratio 1, rebuilt when the recording rebuilds
    // unconditionally. The ratio policy's decision overwrites rebuilt and ratio.
    const bool rebuild_always = first || options.policy == RefitPolicy::always_rebuild;
    if (first) {
        FrameStatus initial{};
        initial.rebuilt = 1;
        initial.ratio = 1.0f;
        initial.work_ratio = 1.0f;
        vkCmdUpdateBuffer(cmd, status.handle(), 0, sizeof(initial), &initial);
    } else {
        const std::uint32_t defaults[4] = {0, 0, rebuild_always ? 1u : 0u,
                                           std::bit_cast<std::uint32_t>(1.0f)};
        vkCmdUpdateBuffer(cmd, status.handle(), offsetof(FrameStatus, began), sizeof(defaults),
                          defaults);
        const float work_ratio = 1.0f;
        vkCmdUpdateBuffer(cmd, status.handle(), offsetof(FrameStatus, work_ratio),
                          sizeof(work_ratio), &work_ratio);
    }
    compute_barrier(cmd);

    if (n > 0 && rebuild_always) {
        stamp(cmd, timed, 1);
        if (first) {
            // Capture the rebuild's dispatches: later frames replay them through the gate.
            gate.mode = DispatchGate::Mode::capture;
            gate.counts.clear();
            if (Status s = record_rebuild(cmd, box_range, &gate); !s) return s;
            assert(gate.counts.size() <= kGateSlots);
            std::vector<VkDispatchIndirectCommand> table = gate.counts;
            table.resize(kGateSlots, VkDispatchIndirectCommand{0, 0, 0});
            vkCmdUpdateBuffer(cmd, args_on.handle(), 0, table.size() * sizeof(table[0]),
                              table.data());
            compute_barrier(cmd);
        } else {
            if (Status s = record_rebuild(cmd, box_range, nullptr); !s) return s;
        }
    } else if (n > 0) {
        if (Status s = record_refit(cmd, box_range, {whole(nodes), n}, whole(flags)); !s) return s;
        compute_barrier(cmd);
        const bool by_ratio = options.policy == RefitPolicy::by_ratio;
        if (n > 1) {
            record_sah(cmd, nullptr);
            compute_barrier(cmd);
            record_policy(cmd, kPolicyDecide | (by_ratio ? 0u : kPolicyNoRebuild), nullptr);
            indirect_barrier(cmd);
        }
        stamp(cmd, timed, 1);
        if (n > 1 && by_ratio) {
            gate.mode = DispatchGate::Mode::indirect;
            gate.args = args.handle();
            gate.next = 0;
            if (Status s = record_rebuild(cmd, box_range, &gate); !s) return s;
            // Same n, same code: the same dispatches as the captured build, slot for slot.
            assert(gate.next == gate.counts.size());
        }
    } else {
        stamp(cmd, timed, 1);
    }
    stamp(cmd, timed, 2);
    return record_pair_stages(cmd, first, timed, 3);
}

// Grows the pair buffers to the frame's count and records the frame's pair stages again.
Status MovingScene::Impl::repair(const FrameStatus& st, const TraversalStatus& traversal) {
    // A traversal that did not finish: more rounds (kTraversalMaxRounds always finish) or a
    // larger work queue, kept for the frames after this one.
    if (traversal.flags & kTraversalIncomplete) {
        if (rounds >= kTraversalMaxRounds) return traversal_outcome(traversal, "all pairs").error();
        rounds = kTraversalMaxRounds;
    }
    if (traversal.flags & kTraversalQueueOverflow) {
        const std::uint32_t most =
            default_traversal_capacity(~0ull, context->info().max_storage_buffer_range);
        if (work_capacity >= most) return traversal_outcome(traversal, "all pairs").error();
        work_capacity =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(4ull * work_capacity, most));
        if (Status s = ensure(work, traversal_work_bytes(work_capacity)); !s) return s;
    }
    if (st.pairs > max_pairs())
        return limit(std::to_string(st.pairs) +
                     " pairs do not fit one storage buffer (device limit " +
                     std::to_string(max_pairs()) + " pairs)");
    // Never below the present capacity: a repair for the traversal's sake (rounds, queue) may
    // come with fewer pairs than the buffers hold, and the kept keys must still fit.
    const std::uint32_t grown =
        std::max(capacity, static_cast<std::uint32_t>(std::min<std::uint64_t>(
                               st.pairs + std::uint64_t(st.pairs) / 4, max_pairs())));
    if (Status s = set_capacity(grown, !last_first); !s) return s;
    Status recorded;
    Status s = context->submit_and_wait([&](VkCommandBuffer cmd) {
        timestamps.reset(cmd, kRepairQueries, 4);
        compute_barrier(cmd);
        timestamps.write(cmd, kRepairQueries);
        recorded = record_pair_stages(cmd, last_first, true, kRepairQueries + 1);
        record_status_readback(cmd);
    });
    if (!s) return s;
    if (!recorded) return recorded;
    times.pairs += timestamps.ms(kRepairQueries, kRepairQueries + 1);
    times.sort += timestamps.ms(kRepairQueries + 1, kRepairQueries + 2);
    times.diff += timestamps.ms(kRepairQueries + 2, kRepairQueries + 3);
    return {};
}

Result<FrameResult> MovingScene::Impl::read_step(bool status_copied) {
    if (!status_copied) {  // frame() copies it in its own submit
        if (Status s = ensure_host(readback, kReadbackHeader, MemoryKind::readback); !s)
            return s.error();
        Status s =
            context->submit_and_wait([&](VkCommandBuffer cmd) { record_status_readback(cmd); });
        if (!s) return s.error();
    }
    FrameStatus st{};
    std::memcpy(&st, readback.mapped(), sizeof(st));
    // A previous frame recorded in the same submit that overflowed was never repaired: its
    // sorted keys are incomplete, so this frame's differences with it are wrong.
    TraversalStatus previous{}, current{};
    if (!last_first)
        std::memcpy(&previous, static_cast<const char*>(readback.mapped()) + kReadbackPrevious,
                    sizeof(previous));
    std::memcpy(&current, static_cast<const char*>(readback.mapped()) + kReadbackCurrent,
                sizeof(current));
    const std::uint32_t previous_pairs = previous.count;
    const std::uint32_t recorded_capacity = st.pair_capacity;
    const bool previous_incomplete = previous_pairs > recorded_capacity || previous.flags != 0;
    const bool regrown = st.pairs > st.pair_capacity || current.flags != 0;
    if (regrown) {
        // Reads the status back again; a frame that still did not finish is an error.
        if (Status s = repair(st, current); !s) return s.error();
        std::memcpy(&st, readback.mapped(), sizeof(st));
        std::memcpy(&current, static_cast<const char*>(readback.mapped()) + kReadbackCurrent,
                    sizeof(current));
        if (auto done = traversal_outcome(current, "all pairs"); !done) return done.error();
    }
    if (previous_incomplete)
        return Error{ErrorCode::limit_exceeded,
                     "the frame before this one " +
                         (previous.flags != 0
                              ? std::string("did not finish its pair traversal (flags ") +
                                    std::to_string(previous.flags) + ")"
                              : "found " + std::to_string(previous_pairs) +
                                    " pairs, over the pair capacity of " +
                                    std::to_string(recorded_capacity) + " it was recorded with") +
                         ", and was not read before this frame was "
                         "recorded: this frame's began/ended lists cannot be exact (this frame "
                         "is repaired, so the next one will be). Call read_step after every "
                         "frame that may overflow, or set MovingSceneOptions::"
                         "initial_pair_capacity",
                     {},
                     {}};
    base_cost = st.base_root > 0 ? double(st.base_sum) / double(st.base_root) : 0.0;
    FrameResult result;
    result.pair_count = st.pairs;
    result.path = st.rebuilt ? FramePath::rebuild : FramePath::refit;
    result.ratio = st.ratio;
    result.work_ratio = st.work_ratio;
    result.regrown = regrown;
    times.path = result.path;

    // The lists, copied into the readback buffer in one submit: began, ended, sorted keys.
    const VkDeviceSize began_bytes = last_first ? 0 : st.began * 8ull;
    const VkDeviceSize ended_bytes = last_first ? 0 : st.ended * 8ull;
    const VkDeviceSize pairs_bytes = options.return_pairs ? st.pairs * 8ull : 0;
    const VkDeviceSize total = began_bytes + ended_bytes + pairs_bytes;
    if (total == 0) return result;
    if (Status s = ensure_host(readback, total, MemoryKind::readback); !s) return s.error();
    Status s = context->submit_and_wait([&](VkCommandBuffer cmd) {
        compute_barrier(cmd);
        VkDeviceSize at = 0;
        for (auto [src, bytes] : {std::pair{&began, began_bytes}, std::pair{&ended, ended_bytes},
                                  std::pair{&keys[cur], pairs_bytes}}) {
            if (bytes == 0) continue;
            const VkBufferCopy copy{0, at, bytes};
            vkCmdCopyBuffer(cmd, src->handle(), readback.handle(), 1, &copy);
            at += bytes;
        }
        host_barrier(cmd);
    });
    if (!s) return s.error();
    const char* data = static_cast<const char*>(readback.mapped());
    result.began.resize(began_bytes / 8);
    result.ended.resize(ended_bytes / 8);
    result.pairs.resize(pairs_bytes / 8);
    // (An empty vector's data() may be null, which memcpy does not allow even for 0 bytes.)
    if (began_bytes > 0) std::memcpy(result.began.data(), data, began_bytes);
    if (ended_bytes > 0) std::memcpy(result.ended.data(), data + began_bytes, ended_bytes);
    if (pairs_bytes > 0)
        std::memcpy(result.pairs.data(), data + began_bytes + ended_bytes, pairs_bytes);
    const std::uint32_t b = pair_key_bits(n);
    for (Pair& p : result.pairs) p = unpack_pair_key(p.i, p.j, b);
    return result;
}

// Writes the boxes into the persistent staging buffer (the GPU copy is recorded in the frame).
Status MovingScene::Impl::stage(std::span<const Box> input) {
    const auto start = std::chrono::steady_clock::now();
    if (Status s = ensure_host(staging, input.size() * sizeof(GpuBox), MemoryKind::upload); !s)
        return s;
    auto* out = static_cast<GpuBox*>(staging.mapped());
    for (const Box& b : input)
        *out++ = {{b.min.x, b.min.y, b.min.z, 0}, {b.max.x, b.max.y, b.max.z, 0}};
    times.upload = ms_since(start);
    return {};
}

Result<FrameResult> MovingScene::Impl::frame(const BufferRange& box_range, bool first_frame,
                                             bool staged) {
    const double upload_ms = staged ? times.upload : 0.0;
    times = {};
    times.upload = upload_ms;
    if (Status s = ensure_host(readback, kReadbackHeader, MemoryKind::readback); !s)
        return s.error();
    Status recorded;
    Status s = context->submit_and_wait([&](VkCommandBuffer cmd) {
        if (staged && n > 0) {
            const VkBufferCopy copy{0, 0, n * sizeof(GpuBox)};
            vkCmdCopyBuffer(cmd, staging.handle(), boxes.handle(), 1, &copy);
        }
        recorded = record_frame(cmd, box_range, first_frame, true);
        if (recorded) record_status_readback(cmd);
    });
    if (!s) return s.error();
    if (!recorded) return recorded.error();
    times.refit = timestamps.ms(0, 1);
    times.rebuild = timestamps.ms(1, 2);
    times.pairs = timestamps.ms(2, 3);
    times.sort = timestamps.ms(3, 4);
    times.diff = timestamps.ms(4, 5);
    if (first_frame) {
        times.rebuild += times.refit;  // the reset's frame only builds
        times.refit = 0;
    }
    return read_step(true);
}

MovingScene::MovingScene(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MovingScene::~MovingScene() = default;

Result<std::unique_ptr<MovingScene>> MovingScene::create(Context& context,
                                                         const MovingSceneOptions& options) {
    if (!(options.rebuild_ratio > 0))
        return Error{ErrorCode::invalid_argument, "rebuild_ratio must be positive", {}, {}};
    if (!(options.rebuild_work_ratio >= 0))
        return Error{
            ErrorCode::invalid_argument, "rebuild_work_ratio must be 0 (off) or positive", {}, {}};
    auto impl = std::make_unique<Impl>();
    impl->context = &context;
    impl->options = options;
    auto lbvh = Lbvh::create(context, {options.code});
    if (!lbvh) return lbvh.error();
    impl->lbvh = std::move(lbvh.value());
    // Nothing is compiled here: the kernels on the first frame (record_frame) or refit.
    impl->sort = RadixSort(context);
    impl->refit = Kernel(context, shaders::lbvh_refit, 2, "lbvh_refit");
    impl->node_bounds = Kernel(context, shaders::lbvh_bounds, 2, "lbvh_bounds");
    impl->sah = Kernel(context, shaders::lbvh_sah, 2, "lbvh_sah");
    impl->policy = Kernel(context, shaders::frame_policy, 5, "frame_policy");
    impl->pair_keys = Kernel(context, shaders::pair_keys, 4, "pair_keys");
    impl->diff_append = Kernel(context, shaders::pair_diff_append, 6, "pair_diff_append");
    impl->unpack = Kernel(context, shaders::pair_unpack, 3, "pair_unpack");
    auto timestamps = Timestamps::create(context, kFrameQueries);
    if (!timestamps) return timestamps.error();
    impl->timestamps = std::move(timestamps.value());
    return std::unique_ptr<MovingScene>(new MovingScene(std::move(impl)));
}

Status MovingScene::reset(std::span<const Box> input) {
    Impl& im = *impl_;
    im.ready = false;
    if (Status s = validate_boxes(input); !s) return s;
    if (input.size() >= (1ull << 31)) return limit("at most 2^31 - 1 boxes per moving scene");
    if (Status s = im.check_limits(static_cast<std::uint32_t>(input.size())); !s) return s;
    im.cur = 0;
    im.capacity = 0;
    if (Status s = im.allocate(static_cast<std::uint32_t>(input.size())); !s) return s;
    im.base_cost = 0;
    if (Status s = im.stage(input); !s) return s;
    auto r = im.frame(whole(im.boxes), true, true);
    if (!r) return r.error();
    im.ready = true;
    return {};
}

Result<FrameResult> MovingScene::step(std::span<const Box> new_boxes) {
    Impl& im = *impl_;
    if (!im.ready) return Error{ErrorCode::invalid_argument, "step before reset", {}, {}};
    if (new_boxes.size() != im.n)
        return Error{ErrorCode::invalid_argument,
                     "step got " + std::to_string(new_boxes.size()) + " boxes, the scene has " +
                         std::to_string(im.n),
                     {},
                     {}};
    if (Status s = validate_boxes(new_boxes); !s) return s.error();
    if (Status s = im.stage(new_boxes); !s) return s.error();
    return im.frame(whole(im.boxes), false, true);
}

Result<FrameResult> MovingScene::step(const BufferRange& boxes) {
    Impl& im = *impl_;
    if (!im.ready) return Error{ErrorCode::invalid_argument, "step before reset", {}, {}};
    return im.frame(boxes, false, false);
}

Status MovingScene::record_step(VkCommandBuffer cmd, const BufferRange& boxes) {
    Impl& im = *impl_;
    if (!im.ready) return Error{ErrorCode::invalid_argument, "record_step before reset", {}, {}};
    return im.record_frame(cmd, boxes, false, false);
}

Result<FrameResult> MovingScene::read_step() {
    Impl& im = *impl_;
    if (!im.ready) return Error{ErrorCode::invalid_argument, "read_step before reset", {}, {}};
    im.times = {};
    return im.read_step(false);
}

FrameBuffers MovingScene::buffers() const {
    const Impl& im = *impl_;
    return {im.status.handle(), im.keys[im.cur].handle(), im.began.handle(), im.ended.handle(),
            im.capacity,        pair_key_bits(im.n)};
}

Status MovingScene::record_refit(VkCommandBuffer cmd, const BufferRange& boxes,
                                 const LbvhTree& tree, const BufferRange& flags) const {
    return impl_->record_refit(cmd, boxes, tree, flags);
}

const FrameTimes& MovingScene::last_times() const {
    return impl_->times;
}

std::uint32_t MovingScene::size() const {
    return impl_->n;
}

double MovingScene::build_cost() const {
    return impl_->base_cost;
}

Result<std::vector<LbvhNode>> MovingScene::nodes() {
    Impl& im = *impl_;
    if (im.n == 0) return std::vector<LbvhNode>{};
    std::vector<LbvhNode> out(2ull * im.n - 1);
    if (Status s = im.context->download(im.nodes, out.data(), out.size() * sizeof(LbvhNode)); !s)
        return s.error();
    return out;
}

}  // namespace broadphase::gpu
