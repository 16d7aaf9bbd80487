// docs/recording.md's block: the Lbvh build recorded into the application's command buffer, on
// ranges of one buffer of its own. What the application has before the block:
//   context, lbvh   a gpu::Context (with a device: lavapipe in CI) and a gpu::Lbvh on it
//   n               the number of boxes, uploaded as GpuBox at the start of `buffer`
//   buffer          one device buffer, large enough for the block's three ranges
//   cmd             a begun command buffer, submitted after the block
// The program fails on any validation error (tests run with BROADPHASE_VALIDATION=1).
// doc-test link: broadphase::gpu
#include <broadphase/gpu.hpp>
#include <broadphase/scene.hpp>

#include "commands.hpp"

#include <cstdio>
#include <vector>
// @top
using namespace broadphase;

int main() {
    auto made = gpu::Context::create();
    if (!made) return std::puts(made.error().message.c_str()), 1;
    gpu::Context& context = **made;
    std::unique_ptr<gpu::Lbvh> made_lbvh = gpu::Lbvh::create(context).value();
    gpu::Lbvh& lbvh = *made_lbvh;
    const std::uint32_t n = 5000;
    const std::vector<gpu_layout::GpuBox> packed =
        gpu::to_gpu_boxes(generate_scene("uniform", n).value().boxes);
    const gpu::LbvhRequirements needs = lbvh.requirements(n);
    const VkDeviceSize slack = 3 * context.info().range_alignment;
    gpu::Buffer storage = context
                              .create_buffer(needs.boxes + needs.nodes + needs.scratch + slack,
                                             gpu::MemoryKind::device)
                              .value();
    if (!context.upload(storage, packed.data(), packed.size() * sizeof(packed[0])))
        return std::puts("upload failed"), 1;
    const VkBuffer buffer = storage.handle();
    Commands commands(context);
    VkCommandBuffer cmd = commands.cmd;
    {
        // @body
        // what the block recorded runs before its objects go
        if (!commands.submit()) return std::puts("submit failed"), 1;
    }
    if (context.validation_errors() != 0) return std::puts("validation errors"), 1;
    return 0;
}
