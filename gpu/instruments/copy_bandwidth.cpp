// gpu::measure_copy_bandwidth: shaders/instruments/bandwidth_copy.comp over two device buffers,
// timed with timestamp queries; gpu::WarmUp: the same kernel submitted without waiting, to keep the
// device busy (and its clocks up) ahead of a measurement (see
// include/broadphase/gpu/instruments.hpp).
#include <algorithm>
#include <cmath>

#include "broadphase/gpu.hpp"
#include "broadphase/gpu/instruments.hpp"
#include "device/kernels.hpp"
#include "device/timestamps.hpp"
#include "shaders.hpp"

namespace broadphase::gpu {

using namespace gpu_layout;

Result<CopyBandwidth> measure_copy_bandwidth(Context& context, VkDeviceSize bytes, int repeat) {
    const VkDeviceSize limit = context.info().max_storage_buffer_range;
    bytes = std::min(bytes, limit) / 16 * 16;
    if (bytes == 0 || repeat < 1)
        return Error{ErrorCode::invalid_argument,
                     "measure_copy_bandwidth: needs at least 16 bytes and one repeat"};
    auto kernel = Kernel::create(context, shaders::bandwidth_copy, 2, "bandwidth_copy");
    if (!kernel) return kernel.error();
    auto source = context.create_buffer(bytes, MemoryKind::device);
    if (!source) return source.error();
    auto destination = context.create_buffer(bytes, MemoryKind::device);
    if (!destination) return destination.error();
    auto timestamps = Timestamps::create(context, 2);
    if (!timestamps) return timestamps.error();
    CopyBandwidth result;
    result.bytes = bytes;
    PushConstants pc{};
    pc.count = static_cast<std::uint32_t>(bytes / 16);
    const auto groups = workgroups(pc.count);
    // The first run fills the source and warms the pipeline up; the best of the others counts.
    for (int r = 0; r <= repeat; ++r) {
        Status s = context.submit_and_wait([&](VkCommandBuffer cmd) {
            if (r == 0) fill(cmd, whole(*source), 0x5a5a5a5au);
            compute_barrier(cmd);
            timestamps->reset(cmd, 0, 2);
            timestamps->write(cmd, 0);
            kernel->dispatch(cmd, {whole(*source), whole(*destination)}, pc, groups);
            timestamps->write(cmd, 1);
        });
        if (!s) return s.error();
        const double ms = timestamps->ms(0, 1);
        if (r > 0 && ms > 0 && (result.ms == 0 || ms < result.ms)) result.ms = ms;
    }
    if (result.ms > 0) result.bytes_per_second = 2.0 * double(bytes) / (result.ms * 1e-3);
    return result;
}

struct WarmUp::State {
    Context* context = nullptr;
    Kernel kernel;
    Buffer a, b;
    PushConstants pc{};
    std::uint32_t groups = 0;
    double copy_ms = 0;
    std::uint32_t copies = 0;  // dispatches of the last start()
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    bool pending = false;  // the fence will be signalled by the last start()'s submission

    ~State() {
        VkDevice device = context ? context->device() : VK_NULL_HANDLE;
        if (device == VK_NULL_HANDLE) return;
        if (pending) vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX);
        if (fence) vkDestroyFence(device, fence, nullptr);
        if (pool) vkDestroyCommandPool(device, pool, nullptr);  // frees cmd
    }
};

WarmUp::WarmUp(std::unique_ptr<State> state) : state_(std::move(state)) {}
WarmUp::WarmUp(WarmUp&&) noexcept = default;
WarmUp& WarmUp::operator=(WarmUp&&) noexcept = default;
WarmUp::~WarmUp() = default;

double WarmUp::copy_ms() const {
    return state_->copy_ms;
}

std::uint32_t WarmUp::copies() const {
    return state_->copies;
}

bool WarmUp::finished() const {
    const State& st = *state_;
    return !st.pending || vkGetFenceStatus(st.context->device(), st.fence) == VK_SUCCESS;
}

Result<WarmUp> WarmUp::create(Context& context) {
    auto st = std::make_unique<State>();
    st->context = &context;
    const VkDeviceSize bytes =
        std::min<VkDeviceSize>(64ull << 20, context.info().max_storage_buffer_range) / 16 * 16;
    auto kernel = Kernel::create(context, shaders::bandwidth_copy, 2, "bandwidth_copy");
    if (!kernel) return kernel.error();
    st->kernel = std::move(kernel.value());
    auto a = context.create_buffer(bytes, MemoryKind::device);
    if (!a) return a.error();
    auto b = context.create_buffer(bytes, MemoryKind::device);
    if (!b) return b.error();
    st->a = std::move(a.value());
    st->b = std::move(b.value());
    st->pc.count = static_cast<std::uint32_t>(bytes / 16);
    st->groups = workgroups(st->pc.count);
    auto copy = measure_copy_bandwidth(context, bytes, 1);
    if (!copy) return copy.error();
    st->copy_ms = copy->ms;
    const VkDevice device = context.device();
    if (Status s = create_pool_and_fence(device, context.queue_family(), st->pool, st->fence); !s)
        return s.error();
    if (Status s = allocate_command_buffer(device, st->pool, st->cmd); !s) return s.error();
    return WarmUp(std::move(st));
}

Status WarmUp::start(double ms) {
    State& st = *state_;
    const VkDevice device = st.context->device();
    if (st.pending) {
        BP_VK_TRY(vkWaitForFences(device, 1, &st.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
        st.pending = false;
    }
    st.copies = 0;
    if (!(ms > 0)) return {};
    // Alternating directions, a barrier between copies: each dispatch waits for the one before,
    // so the work lasts about copies * copy_ms. Capped so that a device without timestamps (or
    // a huge `ms`) records a bounded command buffer.
    const double per_copy = st.copy_ms > 0 ? st.copy_ms : 1.0;
    const auto copies = static_cast<std::uint32_t>(std::clamp(std::ceil(ms / per_copy), 1.0, 1e5));
    BP_VK_TRY(vkResetCommandBuffer(st.cmd, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    BP_VK_TRY(vkBeginCommandBuffer(st.cmd, &begin), "vkBeginCommandBuffer");
    for (std::uint32_t k = 0; k < copies; ++k) {
        const bool forward = k % 2 == 0;
        st.kernel.dispatch(st.cmd, {whole(forward ? st.a : st.b), whole(forward ? st.b : st.a)},
                           st.pc, st.groups);
        compute_barrier(st.cmd);
    }
    BP_VK_TRY(vkEndCommandBuffer(st.cmd), "vkEndCommandBuffer");
    BP_VK_TRY(vkResetFences(device, 1, &st.fence), "vkResetFences");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &st.cmd;
    BP_VK_TRY(vkQueueSubmit(st.context->queue(), 1, &submit, st.fence), "vkQueueSubmit");
    st.pending = true;
    st.copies = copies;
    return {};
}

}  // namespace broadphase::gpu
