// The GPU-resident simulation (simulation.hpp): its own compute pipeline over the library's
// device, with ordinary descriptor sets, recorded frame after frame with the library's
// MovingScene::record_step in one command buffer.
#include "simulation.hpp"

#include <random>

#include "broadphase/scene.hpp"

namespace broadphase::simulation {

namespace {

const std::uint32_t kIntegrateSpirv[] = {
#include "integrate.comp.spv.inc"
};

constexpr std::uint32_t kGroupSize = 256;

struct StepConstants {
    std::uint32_t count;
    float dt;
};

Error vk_failed(VkResult r, const char* what) {
    return Error{r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
                     ? ErrorCode::out_of_memory
                     : ErrorCode::vulkan_error,
                 std::string(what) + " failed (VkResult " + std::to_string(int(r)) + ")"};
}

// Every earlier compute or transfer access before every later one (the frames reuse one box
// buffer: the integrator writes what the previous step read, the step reads what it wrote).
void full_barrier(VkCommandBuffer cmd) {
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    const VkPipelineStageFlags stages =
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

Result<std::vector<Box>> read_boxes(gpu::Context& context, const gpu::Buffer& buffer,
                                    std::uint32_t n) {
    std::vector<gpu_layout::GpuBox> raw(n);
    if (Status s = context.download(buffer, raw.data(), n * sizeof(gpu_layout::GpuBox)); !s)
        return s.error();
    std::vector<Box> out(n);
    for (std::uint32_t i = 0; i < n; ++i)
        out[i] = {{raw[i].lo.x, raw[i].lo.y, raw[i].lo.z}, {raw[i].hi.x, raw[i].hi.y, raw[i].hi.z}};
    return out;
}

}  // namespace

struct Simulation::Impl {
    SimulationOptions options;
    std::unique_ptr<gpu::Context> context;
    std::unique_ptr<gpu::MovingScene> scene;
    gpu::Buffer boxes, velocities, previous;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    VkDescriptorSet set = VK_NULL_HANDLE;

    ~Impl() {
        if (!context) return;
        VkDevice device = context->device();
        vkDeviceWaitIdle(device);
        if (pool) vkDestroyDescriptorPool(device, pool, nullptr);
        if (pipeline) vkDestroyPipeline(device, pipeline, nullptr);
        if (layout) vkDestroyPipelineLayout(device, layout, nullptr);
        if (set_layout) vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
    }

    Status create_pipeline() {
        VkDevice device = context->device();
        VkDescriptorSetLayoutBinding bindings[2] = {};
        for (std::uint32_t b = 0; b < 2; ++b) {
            bindings[b].binding = b;
            bindings[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            bindings[b].descriptorCount = 1;
            bindings[b].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
        }
        VkDescriptorSetLayoutCreateInfo set_info{
            VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
        set_info.bindingCount = 2;
        set_info.pBindings = bindings;
        if (VkResult r = vkCreateDescriptorSetLayout(device, &set_info, nullptr, &set_layout))
            return vk_failed(r, "vkCreateDescriptorSetLayout");
        VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(StepConstants)};
        VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
        layout_info.setLayoutCount = 1;
        layout_info.pSetLayouts = &set_layout;
        layout_info.pushConstantRangeCount = 1;
        layout_info.pPushConstantRanges = &push;
        if (VkResult r = vkCreatePipelineLayout(device, &layout_info, nullptr, &layout))
            return vk_failed(r, "vkCreatePipelineLayout");
        VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
        module_info.codeSize = sizeof(kIntegrateSpirv);
        module_info.pCode = kIntegrateSpirv;
        VkShaderModule module = VK_NULL_HANDLE;
        if (VkResult r = vkCreateShaderModule(device, &module_info, nullptr, &module))
            return vk_failed(r, "vkCreateShaderModule");
        VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
        info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
        info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        info.stage.module = module;
        info.stage.pName = "main";
        info.layout = layout;
        VkResult r = vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline);
        vkDestroyShaderModule(device, module, nullptr);
        if (r != VK_SUCCESS) return vk_failed(r, "vkCreateComputePipelines");

        VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
        VkDescriptorPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        pool_info.maxSets = 1;
        pool_info.poolSizeCount = 1;
        pool_info.pPoolSizes = &size;
        if (VkResult r2 = vkCreateDescriptorPool(device, &pool_info, nullptr, &pool))
            return vk_failed(r2, "vkCreateDescriptorPool");
        VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        alloc.descriptorPool = pool;
        alloc.descriptorSetCount = 1;
        alloc.pSetLayouts = &set_layout;
        if (VkResult r2 = vkAllocateDescriptorSets(device, &alloc, &set))
            return vk_failed(r2, "vkAllocateDescriptorSets");
        VkDescriptorBufferInfo infos[2] = {{boxes.handle(), 0, VK_WHOLE_SIZE},
                                           {velocities.handle(), 0, VK_WHOLE_SIZE}};
        VkWriteDescriptorSet writes[2] = {};
        for (std::uint32_t b = 0; b < 2; ++b) {
            writes[b].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
            writes[b].dstSet = set;
            writes[b].dstBinding = b;
            writes[b].descriptorCount = 1;
            writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            writes[b].pBufferInfo = &infos[b];
        }
        vkUpdateDescriptorSets(device, 2, writes, 0, nullptr);
        return {};
    }

    void record_integrate(VkCommandBuffer cmd) const {
        const StepConstants constants{options.boxes, options.dt};
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
        vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0,
                                nullptr);
        vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(constants),
                           &constants);
        vkCmdDispatch(cmd, (options.boxes + kGroupSize - 1) / kGroupSize, 1, 1);
    }
};

Result<std::unique_ptr<gpu::Context>> create_context(bool validation, const std::string& device) {
    gpu::ContextOptions options;
    options.validation = validation;
    options.device = device;
    return gpu::Context::create(options);
}

Simulation::Simulation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Simulation::~Simulation() = default;

Result<std::unique_ptr<Simulation>> Simulation::create(const SimulationOptions& options) {
    if (options.boxes == 0) return Error{ErrorCode::invalid_argument, "the simulation needs boxes"};
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    auto context = create_context(options.validation, options.device);
    if (!context) return context.error();
    impl->context = std::move(context.value());
    gpu::Context& ctx = *impl->context;

    auto scene = generate_scene("uniform", options.boxes, options.seed);
    if (!scene) return scene.error();
    std::mt19937 rng(options.seed);
    std::uniform_real_distribution<float> unit(-0.5f, 0.5f);
    std::vector<gpu_layout::vec4> velocities(options.boxes);
    for (auto& v : velocities) v = {unit(rng), unit(rng), unit(rng), 0};

    const VkDeviceSize box_bytes = options.boxes * sizeof(gpu_layout::GpuBox);
    for (auto [buffer, bytes] :
         {std::pair{&impl->boxes, box_bytes}, std::pair{&impl->previous, box_bytes},
          std::pair{&impl->velocities, options.boxes * sizeof(gpu_layout::vec4)}}) {
        auto b = ctx.create_buffer(bytes, gpu::MemoryKind::device);
        if (!b) return b.error();
        *buffer = std::move(b.value());
    }
    const auto gpu_boxes = gpu::to_gpu_boxes(scene->boxes);
    if (Status s = ctx.upload(impl->boxes, gpu_boxes.data(), box_bytes); !s) return s.error();
    if (Status s = ctx.upload(impl->velocities, velocities.data(), velocities.size() * 16); !s)
        return s.error();
    if (Status s = impl->create_pipeline(); !s) return s.error();

    auto moving = gpu::MovingScene::create(ctx);
    if (!moving) return moving.error();
    impl->scene = std::move(moving.value());
    if (Status s = impl->scene->reset(scene->boxes); !s) return s.error();
    return std::unique_ptr<Simulation>(new Simulation(std::move(impl)));
}

Result<gpu::FrameResult> Simulation::run(std::uint32_t frames) {
    Impl& im = *impl_;
    if (frames == 0) return Error{ErrorCode::invalid_argument, "run at least one frame"};
    Status recorded;
    Status s = im.context->submit_and_wait([&](VkCommandBuffer cmd) {
        for (std::uint32_t f = 0; f < frames && recorded; ++f) {
            full_barrier(cmd);
            if (f + 1 == frames) {
                const VkBufferCopy copy{0, 0, im.boxes.size()};
                vkCmdCopyBuffer(cmd, im.boxes.handle(), im.previous.handle(), 1, &copy);
                full_barrier(cmd);
            }
            im.record_integrate(cmd);
            full_barrier(cmd);
            recorded = im.scene->record_step(cmd, gpu::whole(im.boxes));
        }
    });
    if (!s) return s.error();
    if (!recorded) return recorded.error();
    return im.scene->read_step();
}

Result<std::vector<Box>> Simulation::boxes() {
    return read_boxes(*impl_->context, impl_->boxes, impl_->options.boxes);
}

Result<std::vector<Box>> Simulation::previous_boxes() {
    return read_boxes(*impl_->context, impl_->previous, impl_->options.boxes);
}

gpu::Context& Simulation::context() {
    return *impl_->context;
}

}  // namespace broadphase::simulation
