// Recording of bounded traversals (layout/common.h, "Bounded traversal"): round 0 dispatched
// directly over the queries, then each later round sized on the GPU by traversal_args.comp and
// dispatched indirectly over the queued items, then the finishing status words. Shared by the
// all-pairs pass (gpu/lbvh/lbvh.cpp), region queries and ray casts (gpu/lbvh/lbvh_queries.cpp).
#pragma once

#include <algorithm>
#include <utility>

#include "broadphase/gpu.hpp"
#include "device/kernels.hpp"
#include "device/traversal_budget.hpp"

namespace broadphase::gpu {

/// The traversal_args.comp pipeline and the recording of a traversal's rounds.
class TraversalRounds {
public:
    TraversalRounds() = default;
    /// Rounds of `context`, their kernel compiled by ready() (see Kernel).
    explicit TraversalRounds(Context& context);
    /// Rounds with their kernel compiled now.
    static Result<TraversalRounds> create(Context& context);
    /// Compiles (or finds) traversal_args.comp; record's precondition.
    Status ready() const { return args_.ready(); }

    /// Records a whole traversal. `status` is the 64-byte TraversalStatus, already zeroed and
    /// visible to compute shaders. round(cmd, r, args) records round r: r == 0 a direct
    /// dispatch over the queries (args unused), r >= 1 Kernel::dispatch_indirect at `args`.
    /// Ends with the finish dispatch and a compute barrier (status and outputs visible to later
    /// compute and transfer reads). With first_round > 0, a continuation: the status and queue
    /// of a traversal recorded (and run) with first_round rounds, which left items queued, go
    /// on with rounds first_round .. t.rounds - 1 (a host helper submits it only when the
    /// status says kTraversalIncomplete, so that a traversal whose first round finishes costs
    /// two dispatches).
    template <class Round>
    void record(VkCommandBuffer cmd, const BufferRange& status, const TraversalBuffers& t,
                Round&& round, std::uint32_t first_round = 0) const {
        const std::uint32_t rounds =
            std::clamp<std::uint32_t>(t.rounds, 1, gpu_layout::kTraversalMaxRounds);
        const BufferRange args{status.buffer, status.offset + 32, 12};
        if (first_round == 0) {
            round(cmd, 0u, args);
            compute_barrier(cmd);
        }
        for (std::uint32_t r = std::max(first_round, 1u); r < rounds; ++r) {
            record_args(cmd, status, t.capacity, r, false);
            indirect_barrier(cmd);
            round(cmd, r, args);
            compute_barrier(cmd);
        }
        record_args(cmd, status, t.capacity, rounds, true);
        compute_barrier(cmd);
    }

    /// record() with one kernel for every round: `kernel` over `bindings` with push constants
    /// `pc` (pc.shift set to the round; left at the last one), round 0 in `groups` workgroups
    /// (none when first_round > 0: a continuation, see record), or from the indirect arguments
    /// `first_args` when given (visible to indirect reads). Round 0 runs with budget(t), later
    /// rounds with `later_budget` (0: budget(t) too).
    void record_kernel(VkCommandBuffer cmd, const BufferRange& status, const TraversalBuffers& t,
                       const Kernel& kernel, std::initializer_list<BufferRange> bindings,
                       gpu_layout::PushConstants& pc, std::uint32_t groups,
                       std::uint32_t first_round = 0, std::uint32_t later_budget = 0,
                       const BufferRange& first_args = {}) const {
        record(
            cmd, status, t,
            [&](VkCommandBuffer c, std::uint32_t round, const BufferRange& args) {
                pc.shift = round;
                pc.budget = round == 0 || later_budget == 0
                                ? budget(t)
                                : std::min(later_budget, gpu_layout::kTraversalBudget);
                if (round == 0 && first_args.buffer != VK_NULL_HANDLE)
                    kernel.dispatch_indirect(c, bindings, pc, first_args);
                else if (round == 0)
                    kernel.dispatch(c, bindings, pc, groups);
                else
                    kernel.dispatch_indirect(c, bindings, pc, args);
            },
            first_round);
    }

    /// A pass whose first round takes more steps than its later ones (the pairs pass, region
    /// queries, ray casts): unless the caller set t.budget, round 0 takes `first` steps (0:
    /// `scale` times the device's budget, at most kTraversalBudget) and later rounds, which
    /// run only for walks round 0 left unfinished, the device's. Returns the buffers to record
    /// with and the later rounds' budget for record_kernel (0: every round takes t.budget).
    std::pair<TraversalBuffers, std::uint32_t> with_first_round(TraversalBuffers t,
                                                                std::uint32_t first,
                                                                std::uint32_t scale) const {
        std::uint32_t later = 0;
        if (t.budget == 0) {
            later = budget(t);
            t.budget = first != 0 ? first : first_round_budget(later, scale);
        }
        return {t, later};
    }
    /// The budget a traversal with buffers `t` runs with: t.budget, else the device's.
    std::uint32_t budget(const TraversalBuffers& t) const {
        return std::min(t.budget != 0 ? t.budget : default_budget_, gpu_layout::kTraversalBudget);
    }

private:
    void record_args(VkCommandBuffer cmd, const BufferRange& status, std::uint32_t capacity,
                     std::uint32_t round, bool finish) const;

    Kernel args_;
    std::uint32_t max_workgroup_count_x_ = 0;
    std::uint32_t default_budget_ = gpu_layout::kTraversalBudget;
};

/// After a host helper's traversal (Lbvh::find_pairs' pairs pass, LbvhQueries' batches) with
/// `statuses`: false when every one finished; else true after growing one thing for the run
/// again, kept for later runs: a work queue that overflowed (its items or a ray cast's
/// candidates) grows 4x up to the most one binding holds (`work` reallocated, its contents
/// lost), else the rounds become kTraversalMaxRounds, which always finish. When neither can
/// grow, traversal_outcome's error for the first status that has one.
Result<bool> grow_traversal(Context& context, Buffer& work, std::uint32_t& work_capacity,
                            std::uint32_t& rounds,
                            std::span<const gpu_layout::TraversalStatus> statuses,
                            const char* what);

/// Whether a traversal with this status queued work past round 0: items left after its last
/// round, or items its later rounds resumed.
inline bool traversal_queued(const gpu_layout::TraversalStatus& st) {
    return (st.flags & gpu_layout::kTraversalIncomplete) != 0 || st.resumed != 0;
}

/// Bytes of `t.work` a traversal binds (at least 4).
inline VkDeviceSize work_range_bytes(const TraversalBuffers& t) {
    return std::max<VkDeviceSize>(traversal_work_bytes(t.capacity), 4);
}

}  // namespace broadphase::gpu
