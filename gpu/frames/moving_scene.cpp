// Moving scenes on the GPU (include/broadphase/gpu/moving_scene.hpp): per-frame LBVH refit
// (shaders/lbvh/lbvh_refit.comp, leaves and bottom-up bounds in one pass) or rebuild (the Lbvh
// build), chosen on the GPU by the refitted tree's normalised SAH cost (shaders/lbvh/lbvh_sah.comp,
// shaders/frames/frame_policy.comp; Kopta et al., I3D 2012) and by the previous frame's traversal
// work, then all pairs (Lbvh::record_pairs, writing each pair as its 64-bit sort key i << b | j), a
// radix sort of those keys (RadixSort) and the difference of consecutive frames' sorted pairs both
// ways (shaders/frames/pair_diff_append.comp, RadixSort, shaders/frames/pair_unpack.comp).
//
// One frame is one recording without host decisions: the rebuild's dispatches are indirect
// (DispatchGate), their arguments written by frame_policy.comp from a table captured while
// recording the reset's build; the pair and event counts are read on the GPU, and the kernels
// after the pairs pass are launched indirectly for exactly those counts
// (shaders/device/count_args.comp), in buffers sized by the pair capacity.
#include <algorithm>
#include <bit>
#include <cassert>
#include <chrono>
#include <cstring>

#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/scene.hpp"
#include "frames/moving_scene_impl.hpp"
#include "shaders.hpp"

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

// Grows the pair buffers to the frame's count and records the frame's pair stages again.
Status MovingScene::Impl::repair(const FrameStatus& st, const TraversalStatus& traversal) {
    // A traversal that did not finish: more rounds (a host step's round 0 alone: `rounds`;
    // else kTraversalMaxRounds, which always finish, kept for the frames after this one) or a
    // larger work queue.
    if (traversal.flags & kTraversalIncomplete) {
        if (frame_rounds < rounds) {
            frame_rounds = rounds;
        } else {
            if (rounds >= kTraversalMaxRounds)
                return traversal_outcome(traversal, "all pairs").error();
            rounds = frame_rounds = kTraversalMaxRounds;
        }
    }
    if (traversal.flags & kTraversalQueueOverflow) {
        const std::uint32_t most =
            default_traversal_capacity(~0ull, context->info().max_storage_buffer_range);
        if (work_capacity >= most) return traversal_outcome(traversal, "all pairs").error();
        work_capacity =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(4ull * work_capacity, most));
        if (Status s = ensure(work, traversal_work_bytes(work_capacity)); !s) return s;
    }
    // The exact total, also past 2^32 (st.pairs is the count saturated at 2^32 - 1), once the
    // traversal finished: one short of rounds counted only part of its pairs (the run with
    // more rounds is checked in its turn).
    if ((traversal.flags & kTraversalIncomplete) == 0) {
        if (Status s = check_pair_total(device_limits(context->info()), "all pairs of the frame",
                                        pair_total(traversal));
            !s)
            return s;
    }
    // Never below the present capacity: a repair for the traversal's sake (rounds, queue) may
    // come with fewer pairs than the buffers hold, and the kept keys must still fit.
    const std::uint32_t grown =
        std::max(capacity, static_cast<std::uint32_t>(std::min<std::uint64_t>(
                               st.pairs + std::uint64_t(st.pairs) / 4, max_pairs())));
    if (Status s = set_capacity(grown, !last_first); !s) return s;
    Status recorded;
    Status s = context->submit_and_wait([&](VkCommandBuffer cmd) {
        timestamps.reset(cmd, kRepairQueries, kFrameQueries - kRepairQueries);
        compute_barrier(cmd);
        stamp(cmd, true, kRepairQueries);
        recorded = record_pair_stages(cmd, last_first, true, kRepairQueries + 1);
        record_status_readback(cmd);
    });
    if (!s) return s;
    if (!recorded) return recorded;
    // The repair's passes count with the frame's (both ran).
    for (std::uint32_t k = 0; k < kRepairStages; ++k) {
        const std::uint32_t q = kRepairQueries + k;
        const std::uint32_t stage = kFrameStages - kRepairStages + k;
        repair_dispatches[k] += static_cast<std::uint32_t>(marks[q + 1] - marks[q]);
        stage_ms[stage] += timestamps.ms(q, q + 1);
    }
    times.pairs += timestamps.ms(kRepairQueries, kRepairQueries + 1);
    times.sort += timestamps.ms(kRepairQueries + 1, kRepairQueries + 3);
    times.diff += timestamps.ms(kRepairQueries + 3, kRepairQueries + 4);
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
    const bool previous_incomplete =
        options.pairs && (previous_pairs > recorded_capacity || previous.flags != 0);
    const bool regrown = options.pairs && (st.pairs > st.pair_capacity || current.flags != 0);
    if (regrown) {
        // Repairs until the frame finishes with its pairs stored: a queue that overflowed again
        // grows again (4x each time; a small traversal budget queues many items), a traversal
        // short of rounds gets more (a host step's round 0 alone: kTraversalRounds; then
        // kTraversalMaxRounds), pairs over the capacity grow it. repair()
        // refuses what cannot grow; a frame still unfinished after that is an error.
        for (int attempt = 0;; ++attempt) {
            if (Status s = repair(st, current); !s) return s.error();
            std::memcpy(&st, readback.mapped(), sizeof(st));
            std::memcpy(&current, static_cast<const char*>(readback.mapped()) + kReadbackCurrent,
                        sizeof(current));
            const bool again = st.pairs > st.pair_capacity ||
                               (current.flags & (kTraversalQueueOverflow | kTraversalIncomplete));
            if (!again || attempt >= 16) break;
        }
        if (auto done = traversal_outcome(current, "all pairs"); !done) return done.error();
        if (st.pairs > st.pair_capacity)
            return Error{ErrorCode::limit_exceeded,
                         "the frame's " + std::to_string(st.pairs) +
                             " pairs still exceed the pair capacity of " +
                             std::to_string(st.pair_capacity) + " after its repairs"};
    }
    // Whether this frame's pairs pass queued work past round 0: then the next host steps
    // record every round at once (frame_rounds).
    if (options.pairs) pairs_queued = traversal_queued(current);
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
                         "initial_pair_capacity"};
    base_cost = st.base_root > 0 ? double(st.base_sum) / double(st.base_root) : 0.0;
    counts.n = n;
    counts.first = last_first;
    counts.rebuilt = st.rebuilt != 0;
    counts.pairs = options.pairs;
    counts.key_bits = key_bits();
    counts.stored = options.pairs ? std::min(st.pairs, st.pair_capacity) : 0;
    counts.previous =
        options.pairs && !last_first ? std::min(previous.count, recorded_capacity) : 0;
    counts.visits = options.pairs ? traversal_visits(current) : 0;
    counts.resumed = options.pairs ? current.resumed : 0;
    counts.began = last_first || !options.pairs ? 0 : st.began;
    counts.ended = last_first || !options.pairs ? 0 : st.ended;
    counts.gate_words = static_cast<std::uint32_t>(gate.counts.size() * 3);
    counts.refined = false;
    if (counts.rebuilt && n > 0) {
        auto refined = read_build_refined(*lbvh, scratch, n);
        if (!refined) return refined.error();
        counts.refined = refined.value();
    }
    FrameResult result;
    result.pair_count = st.pairs;
    result.path = st.rebuilt ? FramePath::rebuild : FramePath::refit;
    result.ratio = st.ratio;
    result.work_ratio = st.work_ratio;
    result.regrown = regrown;
    times.path = result.path;

    // The lists, copied into the readback buffer in one submit: began, ended, sorted keys.
    const VkDeviceSize began_bytes = last_first || !options.pairs ? 0 : st.began * 8ull;
    const VkDeviceSize ended_bytes = last_first || !options.pairs ? 0 : st.ended * 8ull;
    const VkDeviceSize pairs_bytes = options.pairs && options.return_pairs ? st.pairs * 8ull : 0;
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
    // (An empty vector's data() may be null, which memcpy does not allow even for 0 bytes.)
    if (began_bytes > 0) std::memcpy(result.began.data(), data, began_bytes);
    if (ended_bytes > 0) std::memcpy(result.ended.data(), data + began_bytes, ended_bytes);
    // The sorted keys are unpacked where they lie in the readback buffer.
    result.pairs = unpack_pair_keys(data + began_bytes + ended_bytes, pairs_bytes / 8, key_bits());
    return result;
}

namespace {

// The memory traffic of each stage of a frame (gpu/instruments/traffic.hpp), from the kernels'
// access patterns. Static parts follow n; the dynamic parts use the frame's own counts, read back
// after the frame (FrameCounts: the pairs stored, the previous frame's, the nodes the
// traversal expanded, the began and ended sizes, whether it rebuilt and refined).
//   refit + cost + decision (refit frames only)
//     lbvh_refit   reads each leaf's box id and parent (4 + 4 B) and its box (32 B), writes its
//                  bounds (32 B); per internal node two arrivals at its counter (4 + 4 B
//                  each), and the second reads its link (16 B) and both children's bounds
//                  (64 B) and writes its bounds (32 B) and its children's bounds in its
//                  LbvhWideNode (48 B; the links stay). The counters end zero: no fill.
//     lbvh_sah     reads every internal node's bounds and the root's again (32 B each), writes
//                  one partial per tile and the root's area (4 B);
//     frame_policy reads the partials, the status (48 B) and the previous traversal's status
//                  (64 B), and the armed table (4 B per word) when it rebuilds; writes the
//                  status (48 B, counted whole) and the gate's table (4 B per word).
//   rebuild + cost (gated)  the build's model (gpu/lbvh/lbvh.cpp stage_traffic, refined or not)
//                  with its scratch fills, lbvh_sah and the commit (reads the partials, writes
//                  16 B of status), when the frame rebuilt; on a refit frame the rebuild's
//                  dispatches are emptied (no traffic), but its transfer fills still run.
//   all pairs      lbvh_pairs as in gpu/lbvh/lbvh.cpp (pairs_traffic: 48 B per leaf, 64 B per
//                  expanded node, 48 B per leaf of each resumed item's group, 8 B per stored
//                  pair) and its status fill (64 B). ProxyScene's appended passes (filters,
//                  handles, cross trees) count no visits and are not modelled, but the
//                  status's resumed items include theirs.
//   pair keys      the pairs pass writes the keys itself (kPairsKeys): what is left is the
//                  copy of the count into the status (4, 4 B), the update of its capacity word
//                  (4 B written), and count_args (reads the count, writes two dispatch slots:
//                  4, 24 B).
//   sort           RadixSort::traffic of the stored keys (2 words, 2 b key bits, keys only).
//   differences    each way (began: now \ previous, ended: previous \ now): the counter fill
//                  (4 B, recorded before the pairs pass so that its barrier covers it);
//                  pair_diff_append reads both counts, every key of A and (once) of B (8 B
//                  each; the binary search's re-reads are cached, not counted) and writes each
//                  kept key (8 B) and its counter (4 + 4 B per append); count_args (4, 24 B);
//                  RadixSort::traffic of the kept keys; pair_unpack reads the count and every
//                  kept key, writes every pair (8 B) and one status word.
std::array<Traffic, kFrameStages> frame_traffic(const FrameCounts& c, const Lbvh& lbvh,
                                                SortPath path, std::uint32_t* sort_passes) {
    std::array<Traffic, kFrameStages> t{};
    *sort_passes = 0;
    const std::uint64_t n = c.n;
    if (n == 0) return t;
    const std::uint64_t internal = n - 1;
    const std::uint64_t tiles = std::max<std::uint64_t>(div_up(internal, kWorkgroupSize), 1);
    const Traffic sah{32 * internal + 32, 4 * (tiles + 1)};
    const bool refit = !c.rebuild_always;
    if (refit) {
        t[0] = {40 * n, 32 * n};
        if (n > 1) {
            t[0] += {(8 + 16 + 64) * internal, (8 + 32 + 48) * internal};
            t[0] += sah;
            const std::uint64_t table = c.rebuilt && c.gated ? 4ull * c.gate_words : 0;
            t[0] += {4 * (tiles + 1) + 48 + 64 + table, 48 + 4ull * c.gate_words};
        }
    }
    if (c.rebuild_always || c.gated) {
        if (c.rebuild_always || c.rebuilt) {
            t[1] += build_traffic(lbvh, c.n, c.refined, nullptr);
            if (n > 1) {
                t[1] += sah;
                t[1] += {4 * (tiles + 1), 16};
            }
        }
        t[1] += build_fill_traffic(lbvh, c.n);
    }
    if (!c.pairs) return t;
    t[2] = pairs_traffic(n, c.visits, c.resumed, c.stored);
    t[2].written += 64;
    t[3] = {4 + 4, 4 + 4 + 24};
    t[4] = RadixSort::traffic(static_cast<std::uint32_t>(c.stored), 2, 2 * c.key_bits, true, path,
                              sort_passes);
    if (c.first) return t;
    auto diff = [&](std::uint64_t a, std::uint64_t b, std::uint64_t kept) {
        t[5] += {0, 4};
        t[5] += {8 + 8 * a + 8 * b + 4 * kept, 12 * kept};
        t[5] += {4, 24};
        t[5] += RadixSort::traffic(static_cast<std::uint32_t>(kept), 2, 2 * c.key_bits, true, path);
        t[5] += {4 + 8 * kept, 8 * kept + 4};
    };
    diff(c.stored, c.previous, c.began);
    diff(c.previous, c.stored, c.ended);
    return t;
}

}  // namespace

Result<std::vector<StageReport>> MovingScene::Impl::report() {
    static constexpr const char* kNames[kFrameStages] = {"refit + cost + decision",
                                                         "rebuild (gated)",
                                                         "all pairs",
                                                         "pair keys",
                                                         "sort",
                                                         "differences"};
    std::uint32_t passes = 0;
    const auto traffic = frame_traffic(counts, *lbvh, sort.path(), &passes);
    std::vector<StageReport> out;
    for (std::uint32_t k = 0; k < kFrameStages; ++k) {
        StageReport r;
        r.name = kNames[k];
        r.dispatches = static_cast<std::uint32_t>(marks[k + 1] - marks[k]);
        if (k >= kFrameStages - kRepairStages)
            r.dispatches += repair_dispatches[k - (kFrameStages - kRepairStages)];
        r.bytes_read = traffic[k].read;
        r.bytes_written = traffic[k].written;
        r.ms = stage_ms[k];
        r.passes = k == 4 ? passes : 0;
        out.push_back(r);
    }
    return out;
}

// Writes the boxes into the persistent staging buffer (the GPU copy is recorded in the frame).
Status MovingScene::Impl::stage(std::span<const Box> input) {
    const auto start = std::chrono::steady_clock::now();
    if (Status s = ensure_host(staging, input.size() * sizeof(GpuBox), MemoryKind::upload); !s)
        return s;
    write_gpu_boxes(input, static_cast<GpuBox*>(staging.mapped()));
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
        prologue_marks[0] = impl_of(*context).dispatches_recorded;
        if (prologue) prologue(cmd);
        prologue_marks[1] = impl_of(*context).dispatches_recorded;
        recorded = record_frame(cmd, box_range, first_frame, true);
        if (recorded) record_status_readback(cmd);
    });
    if (!s) return s.error();
    if (!recorded) return recorded.error();
    for (std::uint32_t k = 0; k < kFrameStages; ++k) stage_ms[k] = timestamps.ms(k, k + 1);
    times.refit = stage_ms[0];
    times.rebuild = stage_ms[1];
    times.pairs = stage_ms[2];
    times.sort = stage_ms[3] + stage_ms[4];  // the pair keys and their sort
    times.diff = stage_ms[5];
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
        return Error{ErrorCode::invalid_argument, "rebuild_ratio must be positive"};
    if (!(options.rebuild_work_ratio >= 0))
        return Error{ErrorCode::invalid_argument, "rebuild_work_ratio must be 0 (off) or positive"};
    auto impl = make_frames(context, options, false);
    if (!impl) return impl.error();
    return std::unique_ptr<MovingScene>(new MovingScene(std::move(impl.value())));
}

Result<std::unique_ptr<MovingSceneImpl>> make_frames(Context& context,
                                                     const MovingSceneOptions& options,
                                                     bool empty_slots) {
    using Impl = MovingSceneImpl;
    auto impl = std::make_unique<Impl>();
    impl->context = &context;
    impl->options = options;
    LbvhOptions lbvh_options;
    lbvh_options.code = options.code;
    lbvh_options.empty_slots = empty_slots;
    auto lbvh = Lbvh::create(context, lbvh_options);
    if (!lbvh) return lbvh.error();
    impl->lbvh = std::move(lbvh.value());
    // Nothing is compiled here: the kernels on the first frame (record_frame) or refit.
    impl->sort = RadixSort(context);
    impl->refit = Kernel(context, shaders::lbvh_refit, 4, "lbvh_refit");
    impl->refit_soa = Kernel(context, shaders::lbvh_refit_soa, 5, "lbvh_refit_soa",
                             {shaders::lbvh_refit_soa_split, 1u << 1, 0});
    impl->assemble = assemble_kernel(context);
    impl->sah =
        Kernel(context, shaders::lbvh_sah, 2, "lbvh_sah", {shaders::lbvh_sah_split, 1u << 0});
    impl->policy = Kernel(context, shaders::frame_policy, 5, "frame_policy");
    impl->diff_append = Kernel(context, shaders::pair_diff_append, 6, "pair_diff_append");
    impl->unpack = Kernel(context, shaders::pair_unpack, 3, "pair_unpack");
    auto timestamps = Timestamps::create(context, kFrameQueries);
    if (!timestamps) return timestamps.error();
    impl->timestamps = std::move(timestamps.value());
    return impl;
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
    if (!im.ready) return Error{ErrorCode::invalid_argument, "step before reset"};
    if (new_boxes.size() != im.n)
        return Error{ErrorCode::invalid_argument, "step got " + std::to_string(new_boxes.size()) +
                                                      " boxes, the scene has " +
                                                      std::to_string(im.n)};
    if (Status s = validate_boxes(new_boxes); !s) return s.error();
    if (Status s = im.stage(new_boxes); !s) return s.error();
    return im.frame(whole(im.boxes), false, true);
}

Result<FrameResult> MovingScene::step(const BufferRange& boxes) {
    Impl& im = *impl_;
    if (!im.ready) return Error{ErrorCode::invalid_argument, "step before reset"};
    return im.frame(boxes, false, false);
}

Status MovingScene::record_step(VkCommandBuffer cmd, const BufferRange& boxes) {
    Impl& im = *impl_;
    if (!im.ready) return Error{ErrorCode::invalid_argument, "record_step before reset"};
    return im.record_frame(cmd, boxes, false, false);
}

Result<FrameResult> MovingScene::read_step() {
    Impl& im = *impl_;
    if (!im.ready) return Error{ErrorCode::invalid_argument, "read_step before reset"};
    im.times = {};
    im.stage_ms.fill(0);
    return im.read_step(false);
}

LbvhTree MovingScene::tree() const {
    return {whole(impl_->nodes), impl_->n};
}

FrameBuffers MovingScene::buffers() const {
    const Impl& im = *impl_;
    return {im.status.handle(), im.keys[im.cur].handle(),
            im.began.handle(),  im.ended.handle(),
            im.capacity,        im.key_bits()};
}

Status MovingScene::record_refit(VkCommandBuffer cmd, const BufferRange& boxes,
                                 const LbvhTree& tree, const BufferRange& flags) const {
    return impl_->record_refit(cmd, boxes, tree, flags, true);
}

VkDeviceSize MovingScene::refit_flags_bytes(std::uint32_t n) const {
    return impl_->refit_layout(n).size;
}

const FrameTimes& MovingScene::last_times() const {
    return impl_->times;
}

Result<std::vector<StageReport>> last_report(MovingScene& scene) {
    if (!impl_of(scene).ready)
        return Error{ErrorCode::invalid_argument, "last_report before reset"};
    return impl_of(scene).report();
}

std::uint32_t MovingScene::size() const {
    return impl_->n;
}

double MovingScene::build_cost() const {
    return impl_->base_cost;
}

const Buffer& helper_nodes(const MovingScene& scene) {
    return impl_of(scene).nodes;
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
