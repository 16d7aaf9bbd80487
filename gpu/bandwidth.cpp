// gpu::measure_copy_bandwidth: shaders/bandwidth_copy.comp over two device buffers, timed with
// timestamp queries (see include/broadphase/gpu.hpp).
#include <algorithm>

#include "broadphase/gpu.hpp"
#include "kernels.hpp"
#include "shaders.hpp"
#include "timestamps.hpp"

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
    const auto groups = static_cast<std::uint32_t>(div_up(pc.count, kWorkgroupSize));
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

}  // namespace broadphase::gpu
