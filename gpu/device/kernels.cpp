// Compute kernel plumbing: the Context's pipelines from embedded SPIR-V, compiled once each with
// its pipeline cache; push descriptors; folded dispatch.
#include "device/kernels.hpp"

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "device/buffer_sizing.hpp"

namespace broadphase::gpu {

void destroy_kernel(VkDevice device, CompiledKernel& k) {
    if (k.pipeline) vkDestroyPipeline(device, k.pipeline, nullptr);
    if (k.layout) vkDestroyPipelineLayout(device, k.layout, nullptr);
    if (k.set_layout) vkDestroyDescriptorSetLayout(device, k.set_layout, nullptr);
    k = {};
}

Result<CompiledKernel> compile_kernel(const ContextImpl& context,
                                      std::span<const std::uint32_t> spirv, std::uint32_t bindings,
                                      const char* name, std::uint32_t arrayed) {
    const VkDevice device = context.device;
    // Built in a local and destroyed by it unless complete, so that a failed compile leaves
    // nothing behind (the next request tries again).
    struct Building {
        VkDevice device;
        CompiledKernel k;
        ~Building() { destroy_kernel(device, k); }
    } b{device, {}};
    b.k.bindings = bindings;
    const std::string what = std::string(" for kernel ") + name;

    std::vector<VkDescriptorSetLayoutBinding> layout_bindings(bindings);
    for (std::uint32_t i = 0; i < bindings; ++i) {
        layout_bindings[i] = {};
        layout_bindings[i].binding = i;
        layout_bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        layout_bindings[i].descriptorCount = (arrayed >> i & 1u) ? gpu_layout::kTreeParts : 1;
        layout_bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    set_info.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    set_info.bindingCount = bindings;
    set_info.pBindings = layout_bindings.data();
    BP_VK_TRY(vkCreateDescriptorSetLayout(device, &set_info, nullptr, &b.k.set_layout),
              "vkCreateDescriptorSetLayout" + what);

    VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(gpu_layout::PushConstants)};
    VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &b.k.set_layout;
    layout_info.pushConstantRangeCount = 1;
    layout_info.pPushConstantRanges = &push;
    BP_VK_TRY(vkCreatePipelineLayout(device, &layout_info, nullptr, &b.k.layout),
              "vkCreatePipelineLayout" + what);

    VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    module_info.codeSize = spirv.size_bytes();
    module_info.pCode = spirv.data();
    VkShaderModule module = VK_NULL_HANDLE;
    BP_VK_TRY(vkCreateShaderModule(device, &module_info, nullptr, &module),
              "vkCreateShaderModule" + what);
    VkComputePipelineCreateInfo pipeline_info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pipeline_info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pipeline_info.stage.module = module;
    pipeline_info.stage.pName = "main";
    pipeline_info.layout = b.k.layout;
    VkResult r = vkCreateComputePipelines(device, context.pipeline_cache, 1, &pipeline_info,
                                          nullptr, &b.k.pipeline);
    vkDestroyShaderModule(device, module, nullptr);
    if (r != VK_SUCCESS) {
        b.k.pipeline = VK_NULL_HANDLE;
        return vk_error(r, "vkCreateComputePipelines" + what);
    }
    return std::exchange(b.k, {});
}

Result<const CompiledKernel*> Context::Impl::kernel(std::span<const std::uint32_t> spirv,
                                                    std::uint32_t bindings, const char* name,
                                                    std::uint32_t arrayed) {
    std::lock_guard lock(kernels_mutex);
    if (auto it = kernels.find(spirv.data()); it != kernels.end()) {
        assert(it->second.bindings == bindings && "one SPIR-V module, one binding count");
        return &it->second;
    }
    auto compiled = compile_kernel(*this, spirv, bindings, name, arrayed);
    if (!compiled) return compiled.error();
    ++pipelines_created;
    const CompiledKernel* stored = &kernels.emplace(spirv.data(), compiled.value()).first->second;
    return stored;
}

Kernel::Kernel(Context& context, std::span<const std::uint32_t> spirv, std::uint32_t bindings,
               const char* name, const TreeSplit& split)
    : context_(&impl_of(context)), spirv_(spirv), bindings_(bindings), name_(name), split_(split) {}

Result<Kernel> Kernel::create(Context& context, std::span<const std::uint32_t> spirv,
                              std::uint32_t bindings, const char* name) {
    Kernel k(context, spirv, bindings, name);
    if (Status s = k.ready(); !s) return s.error();
    return k;
}

Status Kernel::ready() const {
    if (compiled_) return {};
    if (!context_) return Error{ErrorCode::invalid_argument, "a kernel of no Context was used"};
    auto k = context_->kernel(spirv_, bindings_, name_);
    if (!k) return k.error();
    compiled_ = k.value();
    return {};
}

bool Kernel::needs_split(std::uint64_t tree_boxes) const {
    if (split_.spirv.empty() || !context_ || context_->info.tree_parts <= 1) return false;
    const VkDeviceSize range = context_->info.max_storage_buffer_range;
    return lbvh_nodes_bytes(tree_boxes) > range || lbvh_wide_bytes(tree_boxes) > range;
}

Status Kernel::ready_for_tree(std::uint64_t tree_boxes) const {
    if (Status s = ready(); !s) return s;
    if (compiled_split_ || !needs_split(tree_boxes)) return {};
    auto k = context_->kernel(split_.spirv, bindings_, name_,
                              split_.node_bindings | split_.wide_bindings);
    if (!k) return k.error();
    compiled_split_ = k.value();
    return {};
}

Status ready(std::initializer_list<const Kernel*> kernels) {
    for (const Kernel* k : kernels)
        if (Status s = k->ready(); !s) return s;
    return {};
}

Status ready_for_tree(std::uint64_t tree_boxes, std::initializer_list<const Kernel*> kernels) {
    for (const Kernel* k : kernels)
        if (Status s = k->ready_for_tree(tree_boxes); !s) return s;
    return {};
}

void Kernel::bind(VkCommandBuffer cmd, std::initializer_list<BufferRange> buffers,
                  const gpu_layout::PushConstants& push) const {
    // A kernel bound with other than its layout's buffers would read unbound descriptors: a
    // bug in the library, stopped here in every build, naming the kernel.
    if (buffers.size() != bindings_) {
        std::fprintf(stderr, "broadphase: kernel %s bound with %zu buffers, its layout has %u\n",
                     name_, buffers.size(), bindings_);
        std::abort();
    }
    // A tree array larger than one descriptor may bind runs the split variant (the recorder
    // readied it: ready_for_tree), its arrays bound as kTreeParts descriptors each.
    const VkDeviceSize range = context_->info.max_storage_buffer_range;
    const std::uint32_t arrayed = split_.node_bindings | split_.wide_bindings;
    bool split = false;
    for (std::uint32_t i = 0; i < bindings_; ++i)
        split = split || ((arrayed >> i & 1u) && buffers.begin()[i].size > range);
    const CompiledKernel* compiled = split ? compiled_split_ : compiled_;
    if (!compiled) {
        std::fprintf(stderr, "broadphase: kernel %s recorded before ready%s()\n", name_,
                     split ? "_for_tree" : "");
        std::abort();
    }
    std::vector<VkDescriptorBufferInfo> infos;
    std::vector<VkWriteDescriptorSet> writes;
    infos.reserve(buffers.size() * gpu_layout::kTreeParts);
    for (std::uint32_t i = 0; i < bindings_; ++i) {
        const BufferRange& b = buffers.begin()[i];
        VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        w.dstBinding = i;
        w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w.pBufferInfo = infos.data() + infos.size();
        if (split && (arrayed >> i & 1u)) {
            const bool node = (split_.node_bindings >> i & 1u) != 0;
            const VkDeviceSize part =
                VkDeviceSize(node ? sizeof(gpu_layout::LbvhNode) : sizeof(gpu_layout::LbvhWideNode))
                << (node ? context_->node_shift : context_->wide_shift);
            for (std::uint32_t k = 0; k < gpu_layout::kTreeParts; ++k) {
                const VkDeviceSize begin = k * part;
                if (begin < b.size)
                    infos.push_back({b.buffer, b.offset + begin, std::min(part, b.size - begin)});
                else
                    infos.push_back(infos[infos.size() - k]);  // past the end: part 0 again
            }
            w.descriptorCount = gpu_layout::kTreeParts;
        } else {
            infos.push_back({b.buffer, b.offset, b.size});
            w.descriptorCount = 1;
        }
        writes.push_back(w);
    }
    if (split) ++context_->split_dispatches;
    gpu_layout::PushConstants constants = push;
    constants.node_shift = context_->node_shift;
    constants.wide_shift = context_->wide_shift;
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, compiled->pipeline);
    context_->push_descriptor(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, compiled->layout, 0,
                              static_cast<std::uint32_t>(writes.size()), writes.data());
    vkCmdPushConstants(cmd, compiled->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(constants),
                       &constants);
}

void Kernel::dispatch(VkCommandBuffer cmd, std::initializer_list<BufferRange> buffers,
                      const gpu_layout::PushConstants& push, std::uint32_t groups,
                      DispatchGate* gate) const {
    if (groups == 0) return;
    bind(cmd, buffers, push);
    ++context_->dispatches_recorded;
    // At most 2^24 groups (a uint count of invocations): y <= 257 when x is 65,535, within
    // the y limit every device has (gpu/device/buffer_sizing.hpp, fold_groups).
    const auto [x, y] = fold_groups(groups, context_->info.max_workgroup_count_x);
    if (gate && gate->mode == DispatchGate::Mode::indirect) {
        assert(gate->next < gate->counts.size() && "more gated dispatches than were captured");
        vkCmdDispatchIndirect(cmd, gate->args, gate->next++ * sizeof(VkDispatchIndirectCommand));
        return;
    }
    if (gate) gate->counts.push_back({x, y, 1});
    vkCmdDispatch(cmd, x, y, 1);
}

void Kernel::dispatch_indirect(VkCommandBuffer cmd, std::initializer_list<BufferRange> buffers,
                               const gpu_layout::PushConstants& push,
                               const BufferRange& args) const {
    bind(cmd, buffers, push);
    ++context_->dispatches_recorded;
    vkCmdDispatchIndirect(cmd, args.buffer, args.offset);
}

void fill(VkCommandBuffer cmd, const BufferRange& range, std::uint32_t value) {
    vkCmdFillBuffer(cmd, range.buffer, range.offset, align_up(range.size, 4), value);
}

}  // namespace broadphase::gpu
