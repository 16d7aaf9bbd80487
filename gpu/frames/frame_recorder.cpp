// One frame of a moving scene, recorded (MovingScene::Impl::record_frame), shared by MovingScene
// (gpu/frames/moving_scene.cpp) and ProxyScene (gpu/frames/proxy_scene.cpp); the functions follow
// the order a frame records them. Per frame: an LBVH refit (shaders/lbvh/lbvh_refit.comp, leaves
// and bottom-up bounds in one pass) or rebuild (the Lbvh build), chosen on the GPU by the
// refitted tree's normalised SAH cost (shaders/lbvh/lbvh_sah.comp,
// shaders/frames/frame_policy.comp; Kopta et al., I3D 2012) and by the previous frame's traversal
// work; then all pairs (Lbvh::record_pairs, each pair written as its 64-bit sort key i << b | j), a
// radix sort of those keys (RadixSort) and the difference of consecutive frames' sorted pairs both
// ways (shaders/frames/pair_diff_append.comp, RadixSort, shaders/frames/pair_unpack.comp).
//
// One frame is one recording without host decisions: the rebuild's dispatches are indirect
// (DispatchGate), their arguments written by frame_policy.comp from a table captured while
// recording the reset's build; the pair and event counts are read on the GPU, and the kernels
// after the pairs pass are launched indirectly for exactly those counts
// (shaders/device/count_args.comp), in buffers sized by the pair capacity.
#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstddef>
#include <vector>

#include "frames/moving_scene_impl.hpp"

namespace broadphase::gpu {

using namespace gpu_layout;

Status MovingScene::Impl::record_frame(VkCommandBuffer cmd, const BufferRange& box_range,
                                       bool first, bool timed) {
    // The caller's boxes are the only range from outside: checked before anything changes.
    if (Status s = check_ranges(impl_of(*context), "MovingScene::record_step",
                                {{"boxes", box_range, n * VkDeviceSize(sizeof(GpuBox))}});
        !s)
        return s;
    // Every kernel a frame may record, before anything is recorded.
    if (Status s = gpu::ready({&policy, &diff_append, &unpack}); !s) return s;
    if (Status s = gpu::ready_for_tree(n, {&refit, &sah}); !s) return s;
    if (Status s = sort.ready_sort(); !s) return s;
    if (Status s = sort.ready_count_args(); !s) return s;
    if (Status s = ready_lbvh_kernels(*lbvh, n); !s) return s;
    if (!first) cur ^= 1;
    last_boxes = box_range;
    last_first = first;
    if (timed) timestamps.reset(cmd, 0, kFrameQueries);
    compute_barrier(cmd);
    stamp(cmd, timed, 0);
    // The frame's defaults: no events, ratio 1, rebuilt when the recording rebuilds
    // unconditionally. The ratio policy's decision overwrites rebuilt and ratio.
    const bool rebuild_always =
        first || force_rebuild || options.policy == RefitPolicy::always_rebuild;
    counts.rebuild_always = n > 0 && rebuild_always;
    counts.gated = n > 1 && !rebuild_always && options.policy == RefitPolicy::by_ratio;
    repair_dispatches.fill(0);
    if (first) {
        FrameStatus initial{};
        initial.rebuilt = 1;
        initial.ratio = 1.0f;
        initial.work_ratio = 1.0f;
        vkCmdUpdateBuffer(cmd, status.handle(), 0, sizeof(initial), &initial);
        // The refit's counters start zero once; every refit leaves them zero (lbvh_refit.comp).
        if (n > 1) fill(cmd, prefix(flags, (n - 1) * 4ull), 0u);
        // Without pairs no traversal writes these; the policy reads the previous one's work
        // (0 visits: nothing to compare) and read_step the counts.
        if (!options.pairs)
            for (const Buffer& b : pair_count) fill(cmd, whole(b), 0u);
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
        // A split tree refits into its build scratch's arrays, idle between rebuilds.
        const std::array<BufferRange, 2> lent = build_soa_bounds(*lbvh, whole(scratch), n);
        if (Status s = record_refit(cmd, box_range, {whole(nodes), n}, whole(flags), false,
                                    lent[0].buffer ? &lent : nullptr);
            !s)
            return s;
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
    if (!options.pairs) {  // the tree only: the pair stages read as 0 ms
        for (std::uint32_t q = 3; q < 7; ++q) stamp(cmd, timed, q);
        return {};
    }
    // Timed is a host step (frame()), whose status is read and repaired after it.
    frame_rounds = timed && !pairs_queued ? 1 : rounds;
    return record_pair_stages(cmd, first, timed, 3);
}

void MovingScene::Impl::stamp(VkCommandBuffer cmd, bool timed, std::uint32_t query) const {
    if (timed) timestamps.write(cmd, query);
    marks[query] = impl_of(*context).dispatches_recorded;
}

// The build, its cost and the commit of that cost as the new base; through `g` when given
// (captured at reset, gated afterwards).
Status MovingScene::Impl::record_rebuild(VkCommandBuffer cmd, const BufferRange& box_range,
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

void MovingScene::Impl::record_sah(VkCommandBuffer cmd, DispatchGate* g) const {
    PushConstants pc{};
    pc.count = n;
    pc.tiles = cost_tiles();
    sah.dispatch(cmd, {prefix(nodes, lbvh_nodes_bytes(n)), prefix(partials, (pc.tiles + 1) * 4ull)},
                 pc, pc.tiles, g);
}

void MovingScene::Impl::record_policy(VkCommandBuffer cmd, std::uint32_t mode,
                                      DispatchGate* g) const {
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
                    {prefix(partials, (pc.tiles + 1) * 4ull), prefix(status, sizeof(FrameStatus)),
                     prefix(args_on, table), prefix(args, table),
                     prefix(pair_count[cur ^ 1], sizeof(TraversalStatus))},
                    pc, 1, g);
}

MovingScene::Impl::RefitLayout MovingScene::Impl::refit_layout(std::uint32_t count) const {
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
Status MovingScene::Impl::record_refit(VkCommandBuffer cmd, const BufferRange& box_range,
                                       const LbvhTree& tree, const BufferRange& flag_range,
                                       bool zero_flags,
                                       const std::array<BufferRange, 2>* lent) const {
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
    if (Status s = layout.soa ? ready_for_tree(count, {&refit_soa, &assemble}) : refit.ready(); !s)
        return s;
    if (count == 0) return {};
    PushConstants pc{};
    pc.count = count;
    const TreeBindings bound = tree_bindings(tree.nodes, count);
    const BufferRange node_range = bound.nodes;
    const BufferRange box_used = first_bytes(box_range, count * sizeof(GpuBox));
    // One leaf climbs nowhere: its flags binding takes the nodes (never read).
    const BufferRange flags_used = count >= 2 ? first_bytes(flag_range, layout.flags) : node_range;
    if (zero_flags && count >= 2) {
        fill(cmd, flags_used, 0u);
        compute_barrier(cmd);
    }
    if (!layout.soa) {
        refit.dispatch(cmd, {box_used, node_range, flags_used, bound.wide}, pc, workgroups(count));
        return {};
    }
    const BufferRange lo =
        lent ? (*lent)[0] : BufferRange{flag_range.buffer, flag_range.offset + layout.lo, array};
    const BufferRange hi =
        lent ? (*lent)[1] : BufferRange{flag_range.buffer, flag_range.offset + layout.hi, array};
    refit_soa.dispatch(cmd, {box_used, node_range, flags_used, lo, hi}, pc, workgroups(count));
    compute_barrier(cmd);
    record_assemble(assemble, cmd, {lo, hi, lo}, bound, count, true);
    return {};
}

// All pairs, written as their sort keys into keys[cur] by the pairs pass itself (kPairsKeys),
// sorted there, and unless this is the reset's frame the differences with keys[cur ^ 1].
// Timestamps q (pairs), q + 1 (the count's status words and arguments), q + 2 (sort),
// q + 3 (differences).
Status MovingScene::Impl::record_pair_stages(VkCommandBuffer cmd, bool first, bool timed,
                                             std::uint32_t q) const {
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
    sort.record_count_args(cmd, prefix(pair_count[cur], 4), capacity, args_range(pair_args[cur]));
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

// Sorts the m keys of `keys_buffer` (m in `count`, arguments in `sort_args`), keys only.
void MovingScene::Impl::record_key_sort(VkCommandBuffer cmd, const Buffer& keys_buffer,
                                        const Buffer& count, const Buffer& sort_args) const {
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
void MovingScene::Impl::record_diff(VkCommandBuffer cmd, int a, int b, const Buffer& out,
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

// Records copies of the status and of the previous and current frames' pair traversal
// status into `readback` (at 0, kReadbackPrevious, kReadbackCurrent), made visible to the
// host.
void MovingScene::Impl::record_status_readback(VkCommandBuffer cmd) const {
    compute_barrier(cmd);
    const VkBufferCopy status_copy{0, 0, sizeof(FrameStatus)};
    vkCmdCopyBuffer(cmd, status.handle(), readback.handle(), 1, &status_copy);
    const VkBufferCopy previous_copy{0, kReadbackPrevious, sizeof(TraversalStatus)};
    vkCmdCopyBuffer(cmd, pair_count[cur ^ 1].handle(), readback.handle(), 1, &previous_copy);
    const VkBufferCopy current_copy{0, kReadbackCurrent, sizeof(TraversalStatus)};
    vkCmdCopyBuffer(cmd, pair_count[cur].handle(), readback.handle(), 1, &current_copy);
    host_barrier(cmd);
}

}  // namespace broadphase::gpu
