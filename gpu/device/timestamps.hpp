// GPU stage timing with a Vulkan timestamp query pool (vkCmdWriteTimestamp at stage
// boundaries, read back with VK_QUERY_RESULT_WAIT_BIT after the submit has completed).
#pragma once

#include <cstdint>

#include "device/context_impl.hpp"

namespace broadphase::gpu {

/// Records a timestamp into query `query` of `pool` once all earlier commands have completed;
/// nothing without a pool (the recorders' optional caller pools).
inline void write_timestamp(VkCommandBuffer cmd, VkQueryPool pool, std::uint32_t query) {
    if (pool) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, query);
}

/// A move-only timestamp query pool of `count` queries; inert when the queue has no timestamps.
class Timestamps {
public:
    Timestamps() = default;
    Timestamps(Timestamps&& other) noexcept { *this = std::move(other); }
    Timestamps& operator=(Timestamps&& other) noexcept {
        if (this != &other) {
            destroy();
            context_ = std::exchange(other.context_, nullptr);
            pool_ = std::exchange(other.pool_, VK_NULL_HANDLE);
        }
        return *this;
    }
    Timestamps(const Timestamps&) = delete;
    Timestamps& operator=(const Timestamps&) = delete;
    ~Timestamps() { destroy(); }

    /// Creates the pool (none when timestamp_period_ns is 0: then every call does nothing).
    static Result<Timestamps> create(Context& context, std::uint32_t count) {
        Timestamps t;
        t.context_ = &context;
        if (context.info().timestamp_period_ns <= 0) return t;
        VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        info.queryType = VK_QUERY_TYPE_TIMESTAMP;
        info.queryCount = count;
        BP_VK_TRY(vkCreateQueryPool(context.device(), &info, nullptr, &t.pool_),
                  "vkCreateQueryPool");
        return t;
    }

    /// Records a reset of queries [first, first + count) (outside any render pass).
    void reset(VkCommandBuffer cmd, std::uint32_t first, std::uint32_t count) const {
        if (pool_) vkCmdResetQueryPool(cmd, pool_, first, count);
    }
    /// Records a timestamp into `query` once all earlier commands have completed.
    void write(VkCommandBuffer cmd, std::uint32_t query) const {
        write_timestamp(cmd, pool_, query);
    }
    /// Milliseconds between queries a and b, both written by a completed submit (0 without a
    /// pool or when the results cannot be read).
    double ms(std::uint32_t a, std::uint32_t b) const {
        std::uint64_t ta = 0, tb = 0;
        if (!read(a, 1, &ta) || !read(b, 1, &tb)) return 0;
        return tb >= ta ? double(tb - ta) * context_->info().timestamp_period_ns * 1e-6 : 0.0;
    }
    /// The milliseconds between consecutive queries of [first, first + count + 1): out[k] is
    /// the span from query first + k to first + k + 1. False (out untouched) without a pool or
    /// when the results cannot be read.
    bool spans(std::uint32_t first, std::uint32_t count, double* out) const {
        std::uint64_t ticks[64];
        if (count + 1 > 64 || !read(first, count + 1, ticks)) return false;
        const double scale = context_->info().timestamp_period_ns * 1e-6;
        for (std::uint32_t k = 0; k < count; ++k)
            out[k] = ticks[k + 1] >= ticks[k] ? double(ticks[k + 1] - ticks[k]) * scale : 0.0;
        return true;
    }
    /// The pool, for recorders that take one (VK_NULL_HANDLE without timestamps).
    VkQueryPool handle() const { return pool_; }

private:
    bool read(std::uint32_t first, std::uint32_t count, std::uint64_t* ticks) const {
        if (!pool_) return false;
        return vkGetQueryPoolResults(context_->device(), pool_, first, count,
                                     count * sizeof(std::uint64_t), ticks, sizeof(std::uint64_t),
                                     VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) ==
               VK_SUCCESS;
    }
    void destroy() {
        if (pool_) vkDestroyQueryPool(context_->device(), pool_, nullptr);
        pool_ = VK_NULL_HANDLE;
    }
    Context* context_ = nullptr;
    VkQueryPool pool_ = VK_NULL_HANDLE;
};

}  // namespace broadphase::gpu
