// Test hook of the occlusion shader's correctly rounded division; see div_rn_check.hpp.
#include "device/div_rn_check.hpp"

#include "device/kernels.hpp"
#include "shaders.hpp"

namespace broadphase::gpu {

using gpu_layout::kWorkgroupSize;
using gpu_layout::PushConstants;

Result<std::vector<float>> divide_on_gpu(Context& context, std::span<const float> x,
                                         std::span<const float> w) {
    if (x.size() != w.size() || x.size() >= (1ull << 31))
        return Error{ErrorCode::invalid_argument, "divide_on_gpu: mismatched or too many operands"};
    const auto n = static_cast<std::uint32_t>(x.size());
    std::vector<float> quotients(n);
    if (n == 0) return quotients;
    const VkDeviceSize bytes = n * 4ull;
    Kernel kernel(context, shaders::div_rn_check, 4, "div_rn_check");
    if (Status s = kernel.ready(); !s) return s.error();
    Buffer buffers[3];
    for (Buffer& b : buffers) {
        auto made = context.create_buffer(bytes, MemoryKind::device);
        if (!made) return made.error();
        b = std::move(made.value());
    }
    if (Status s = context.upload(buffers[0], x.data(), bytes); !s) return s.error();
    if (Status s = context.upload(buffers[1], w.data(), bytes); !s) return s.error();
    Status s = context.submit_and_wait([&](VkCommandBuffer cmd) {
        compute_barrier(cmd);  // make the staged uploads visible to the shader
        PushConstants pc{};
        pc.count = n;
        kernel.dispatch(
            cmd, {whole(buffers[0]), whole(buffers[1]), whole(buffers[2]), whole(buffers[0])}, pc,
            workgroups(n));
        compute_barrier(cmd);
    });
    if (!s) return s.error();
    if (Status d = context.download(buffers[2], quotients.data(), bytes); !d) return d.error();
    return quotients;
}

}  // namespace broadphase::gpu
