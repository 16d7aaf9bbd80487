// A page's block that records into the application's own command buffer (docs/moving-scenes.md,
// docs/renderer.md, docs/recording.md), with what such an application already has:
//   context             Result<std::unique_ptr<gpu::Context>>, with a device (lavapipe in CI)
//   n, first_frame_boxes  a uniform scene of n boxes
//   boxes_buffer, offset  a device buffer holding them as GpuBox from byte `offset`
//   instance_boxes      the same, as a BufferRange
//   frustum             a camera's view of the scene
//   cmd, submit(cmd)    a begun command buffer; submit ends it, submits it, waits, begins again
// At the end of the block, whatever it recorded is submitted too, and the program fails on any
// validation error (tests run with BROADPHASE_VALIDATION=1).
// doc-test link: broadphase::gpu
#include <broadphase/gpu.hpp>
#include <broadphase/scene.hpp>

#include "commands.hpp"

#include <cstdio>
#include <vector>
// @top
using namespace broadphase;

int main() {
    auto context = gpu::Context::create();
    if (!context) return std::puts(context.error().message.c_str()), 1;
    const std::uint32_t n = 5000;
    const std::vector<Box> first_frame_boxes = generate_scene("uniform", n).value().boxes;
    const std::vector<gpu_layout::GpuBox> packed = gpu::to_gpu_boxes(first_frame_boxes);
    const VkDeviceSize offset = 0;
    gpu::Buffer boxes =
        (*context)->create_buffer(n * sizeof(gpu_layout::GpuBox), gpu::MemoryKind::device).value();
    if (!(*context)->upload(boxes, packed.data(), n * sizeof(gpu_layout::GpuBox)))
        return std::puts("upload failed"), 1;
    const VkBuffer boxes_buffer = boxes.handle();
    const gpu::BufferRange instance_boxes{boxes_buffer, offset, n * sizeof(gpu_layout::GpuBox)};
    const Frustum frustum =
        Frustum::from_camera(Camera{{2, 2, 2}, {0.5f, 0.5f, 0.5f}, {0, 1, 0}, 60, 1.5f, 0.01f, 10})
            .value();
    Commands application(**context);
    VkCommandBuffer cmd = application.cmd;
    auto submit = [&application](VkCommandBuffer) { return application.submit(); };
    {
        // @body
        // what the block recorded runs before its objects go
        if (!submit(cmd)) return std::puts("submit failed"), 1;
    }
    if ((*context)->validation_errors() != 0) return std::puts("validation errors"), 1;
    return 0;
}
