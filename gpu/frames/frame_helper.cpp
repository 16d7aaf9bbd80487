// The host helper of a moving scene's frames (MovingScene::Impl), shared by MovingScene and
// ProxyScene: every buffer sized before it is used (and refused past the device's
// maxStorageBufferRange), the boxes staged in a persistent host buffer, one frame submitted and
// waited for (frame_recorder.cpp records it), its status and lists read back, and a frame whose
// pairs overflowed its buffers, or whose traversal did not finish, repaired: the buffers grown and
// the pair stages recorded again.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>

#include "broadphase/scene.hpp"
#include "frames/moving_scene_impl.hpp"

namespace broadphase::gpu {

using namespace gpu_layout;

// A device buffer of at least `size` bytes; one that would be bound over
// maxStorageBufferRange is refused, naming it (`name`).
Status MovingScene::Impl::ensure(Buffer& buffer, VkDeviceSize size, const char* name) {
    size = std::max<VkDeviceSize>(size, 8);
    if (buffer.handle() && buffer.size() >= size) return {};
    const BindingSize binding{name, size};
    if (Status s = check_bindings(device_limits(context->info()), "MovingScene",
                                  std::span<const BindingSize>(&binding, 1));
        !s)
        return s;
    return grow_buffer(*context, buffer, size);
}

// Refuses, before allocating anything, a scene whose per-box buffers exceed the device's
// maxStorageBufferRange (names the buffer and the limit).
Status MovingScene::Impl::check_limits(std::uint32_t count) const {
    return check_bindings(device_limits(context->info()),
                          "a moving scene of " + std::to_string(count) + " boxes",
                          build_bindings(*lbvh, count));
}

Status MovingScene::Impl::allocate(std::uint32_t count) {
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

// Sizes every pair buffer for `pairs` pairs; keys[cur ^ 1] (the previous frame's sorted
// keys, which the repair of the current frame diffs against) keeps its contents.
Status MovingScene::Impl::set_capacity(std::uint32_t pairs, bool keep_previous) {
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
        VkBufferCopy copy{
            0, 0,
            std::min<VkDeviceSize>({VkDeviceSize(old_capacity) * 8, previous.size(), kept.size()})};
        vkCmdCopyBuffer(cmd, previous.handle(), kept.handle(), 1, &copy);
        compute_barrier(cmd);
    });
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

}  // namespace broadphase::gpu
