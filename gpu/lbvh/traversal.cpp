// Bounded traversal rounds (gpu/lbvh/traversal.hpp) and the public helpers of TraversalBuffers.
#include "lbvh/traversal.hpp"

#include <string>

#include "device/buffer_sizing.hpp"
#include "device/grow.hpp"
#include "shaders.hpp"

namespace broadphase::gpu {

using namespace gpu_layout;

VkDeviceSize traversal_work_bytes(std::uint32_t capacity) {
    // Two queues of (query, node) items, then as many 16-byte ray-cast candidates.
    return VkDeviceSize(capacity) * (2 * 8 + 16);
}

std::uint32_t default_traversal_capacity(std::uint64_t queries, VkDeviceSize max_range) {
    const std::uint64_t wanted = std::max<std::uint64_t>(queries, 1u << 16);
    const std::uint64_t fits = max_range / traversal_work_bytes(1);
    return static_cast<std::uint32_t>(std::min<std::uint64_t>({wanted, fits, 0xffffffffu}));
}

Result<bool> grow_traversal(Context& context, Buffer& work, std::uint32_t& work_capacity,
                            std::uint32_t& rounds, std::span<const TraversalStatus> statuses,
                            const char* what) {
    std::uint32_t flags = 0;
    for (const TraversalStatus& st : statuses) flags |= st.flags;
    if (flags == 0) return false;
    const std::uint32_t most =
        default_traversal_capacity(~0ull, context.info().max_storage_buffer_range);
    if (flags & (kTraversalQueueOverflow | kTraversalCandidateOverflow)) {
        if (work_capacity >= most) {
            for (const TraversalStatus& st : statuses)
                if (auto r = traversal_outcome(st, what); !r) return r.error();
        }
        work_capacity =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(4ull * work_capacity, most));
        work = Buffer();
        if (Status s = grow_buffer(context, work, traversal_work_bytes(work_capacity)); !s)
            return s.error();
        return true;
    }
    if (rounds >= kTraversalMaxRounds) {
        for (const TraversalStatus& st : statuses)
            if (auto r = traversal_outcome(st, what); !r) return r.error();
    }
    rounds = kTraversalMaxRounds;
    return true;
}

Result<std::uint64_t> traversal_outcome(const TraversalStatus& status, const char* what) {
    const std::uint64_t total = (std::uint64_t(status.total_hi) << 32) | status.total_lo;
    if (status.flags & kTraversalQueueOverflow)
        return Error{ErrorCode::limit_exceeded,
                     std::string(what) + ": the traversal's work queue overflowed"};
    if (status.flags & kTraversalCandidateOverflow)
        return Error{ErrorCode::limit_exceeded,
                     std::string(what) + ": the ray casts' candidate list overflowed"};
    if (status.flags & kTraversalIncomplete)
        return Error{ErrorCode::limit_exceeded, std::string(what) + ": work was left after " +
                                                    std::to_string(status.rounds) +
                                                    " traversal rounds"};
    return total;
}

TraversalRounds::TraversalRounds(Context& context)
    : args_(context, shaders::traversal_args, 1, "traversal_args"),
      max_workgroup_count_x_(context.info().max_workgroup_count_x),
      default_budget_(context.info().traversal_budget) {}

Result<TraversalRounds> TraversalRounds::create(Context& context) {
    TraversalRounds t(context);
    if (Status s = t.ready(); !s) return s.error();
    return t;
}

void TraversalRounds::record_args(VkCommandBuffer cmd, const BufferRange& status,
                                  std::uint32_t capacity, std::uint32_t round, bool finish) const {
    PushConstants pc{};
    pc.shift = round;
    pc.tiles = capacity;
    pc.offset = max_workgroup_count_x_;
    pc.flags = finish ? kTraversalFinish : 0u;
    args_.dispatch(cmd, {status}, pc, 1);
}

}  // namespace broadphase::gpu
