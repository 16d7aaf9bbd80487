// gpu::measure_kernel_costs: the cost of each embedded kernel's first use (issue "Light to
// start and to test"). Each kernel is laid out from its own SPIR-V (its bindings' decorations
// and array lengths), compiled as Context::Impl::kernel compiles (compile_kernel, timed), then
// dispatched once, one workgroup over zero-filled buffers with zero push constants, timed until
// its fence signals: drivers that compile lazily (Mesa's lavapipe: LLVM at the first dispatch)
// pay there. The pipelines are not the Context's: each is destroyed after its dispatch.
#include "instruments/kernel_costs.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "device/kernels.hpp"
#include "shaders.hpp"

namespace broadphase::gpu {

namespace {

// The SPIR-V words read here (SPIR-V specification, sections 3.14, 3.20 and 3.32).
constexpr std::uint32_t kSpirvMagic = 0x07230203u;
constexpr std::uint32_t kOpTypeArray = 28, kOpTypeRuntimeArray = 29, kOpTypePointer = 32,
                        kOpConstant = 43, kOpVariable = 59, kOpDecorate = 71;
constexpr std::uint32_t kDecorationBinding = 33, kDecorationDescriptorSet = 34;
constexpr std::uint32_t kStorageClassStorageBuffer = 12;
constexpr std::uint32_t kNoId = 0xffffffffu;

// The bytes each binding of a measured kernel sees (its own range of one zero-filled buffer, so
// that no binding aliases another: a multiple of every minStorageBufferOffsetAlignment).
constexpr VkDeviceSize kCostSliceBytes = 64 << 10;

double elapsed_ms(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
}

// What one measurement holds on the device. Destroyed at the end, except after a dispatch that
// did not finish: the device still uses its handles, so they are left alone (and the buffer's
// memory is never freed) rather than destroyed under it.
struct CostRun {
    VkDevice device = VK_NULL_HANDLE;
    Buffer zeros;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    CompiledKernel kernel;
    bool in_flight = false;

    ~CostRun() {
        if (in_flight) {
            static_cast<void>(std::make_unique<Buffer>(std::move(zeros)).release());
            return;
        }
        destroy_kernel(device, kernel);
        if (fence) vkDestroyFence(device, fence, nullptr);
        if (pool) vkDestroyCommandPool(device, pool, nullptr);  // frees cmd
    }
};

}  // namespace

Result<KernelBindings> read_kernel_bindings(std::span<const std::uint32_t> spirv,
                                            const char* name) {
    const std::string kernel = std::string("kernel ") + name + ": ";
    auto bad = [&](const std::string& what) {
        return Error{ErrorCode::invalid_argument, kernel + what};
    };
    if (spirv.size() < 5 || spirv[0] != kSpirvMagic) return bad("not a SPIR-V module");
    const std::uint32_t bound = spirv[3];
    if (bound > spirv.size()) return bad("its id bound exceeds the module");
    std::vector<std::uint32_t> binding(bound, kNoId), set(bound, 0), variable_type(bound, kNoId),
        pointer_class(bound, kNoId), pointee(bound, kNoId), array_length(bound, kNoId),
        constant(bound, 0);
    std::vector<bool> runtime_array(bound, false);
    for (std::size_t at = 5; at < spirv.size();) {
        const std::uint32_t words = spirv[at] >> 16, op = spirv[at] & 0xffffu;
        if (words == 0 || at + words > spirv.size()) return bad("truncated SPIR-V");
        const std::uint32_t* w = spirv.data() + at;
        auto id = [&](std::uint32_t k) { return k < words && w[k] < bound ? w[k] : kNoId; };
        if (op == kOpDecorate && words >= 4 && id(1) != kNoId) {
            if (w[2] == kDecorationBinding) binding[w[1]] = w[3];
            if (w[2] == kDecorationDescriptorSet) set[w[1]] = w[3];
        } else if (op == kOpVariable && id(2) != kNoId) {
            variable_type[w[2]] = w[1];
        } else if (op == kOpTypePointer && words >= 4 && id(1) != kNoId) {
            pointer_class[w[1]] = w[2];
            pointee[w[1]] = w[3];
        } else if (op == kOpTypeArray && words >= 4 && id(1) != kNoId) {
            array_length[w[1]] = w[3];
        } else if (op == kOpTypeRuntimeArray && id(1) != kNoId) {
            runtime_array[w[1]] = true;
        } else if (op == kOpConstant && words >= 4 && id(2) != kNoId) {
            constant[w[2]] = w[3];
        }
        at += words;
    }
    KernelBindings result;
    for (std::uint32_t v = 0; v < bound; ++v) {
        if (binding[v] == kNoId) continue;
        const std::uint32_t b = binding[v];
        const std::string where = "binding " + std::to_string(b) + " ";
        const std::uint32_t pointer = variable_type[v];
        if (pointer >= bound || pointer_class[pointer] != kStorageClassStorageBuffer)
            return bad(where + "is not a storage buffer");
        if (set[v] != 0) return bad(where + "is in descriptor set " + std::to_string(set[v]));
        if (b >= 32) return bad(where + "is past the 32 the library lays out");
        const std::uint32_t type = pointee[pointer];
        if (type < bound && runtime_array[type]) return bad(where + "is a runtime array");
        if (type < bound && array_length[type] != kNoId) {
            const std::uint32_t length =
                array_length[type] < bound ? constant[array_length[type]] : 0;
            if (length != gpu_layout::kTreeParts)
                return bad(where + "is an array of " + std::to_string(length) +
                           " blocks, not kTreeParts");
            result.arrayed |= 1u << b;
        }
        result.count = std::max(result.count, b + 1);
    }
    return result;
}

Result<std::vector<KernelCost>> measure_kernel_costs(Context& context, std::string_view filter,
                                                     double timeout_s) {
    ContextImpl& impl = impl_of(context);
    struct Selected {
        const shaders::EmbeddedKernel* kernel;
        KernelBindings bindings;
    };
    std::vector<Selected> selected;
    std::uint32_t slices = 1;
    for (const shaders::EmbeddedKernel& k : shaders::all_kernels) {
        if (std::string_view(k.name).find(filter) == std::string_view::npos) continue;
        auto bindings = read_kernel_bindings(k.spirv, k.name);
        if (!bindings) return bindings.error();
        // A split variant runs only where trees may be split (and its descriptors fit).
        if (bindings->arrayed != 0 && impl.info.tree_parts <= 1) continue;
        selected.push_back({&k, bindings.value()});
        slices = std::max(slices, bindings->count);
    }
    std::vector<KernelCost> costs;
    if (selected.empty()) return costs;

    CostRun run;
    run.device = impl.device;
    auto zeros = context.create_buffer(slices * kCostSliceBytes, MemoryKind::device);
    if (!zeros) return zeros.error();
    run.zeros = std::move(zeros.value());
    if (Status s = create_pool_and_fence(impl.device, impl.queue_family, run.pool, run.fence); !s)
        return s.error();
    if (Status s = allocate_command_buffer(impl.device, run.pool, run.cmd); !s) return s.error();
    const auto timeout_ns = static_cast<std::uint64_t>(std::clamp(timeout_s, 0.0, 1e9) * 1e9);

    for (const Selected& s : selected) {
        const std::string what = std::string(" for kernel ") + s.kernel->name;
        KernelCost cost;
        cost.name = s.kernel->name;
        const auto created = std::chrono::steady_clock::now();
        auto compiled = compile_kernel(impl, s.kernel->spirv, s.bindings.count, s.kernel->name,
                                       s.bindings.arrayed);
        cost.create_ms = elapsed_ms(created);
        if (!compiled) return compiled.error();
        run.kernel = compiled.value();
        ++impl.pipelines_created;  // the destructor then saves what the pipeline cache learnt

        // Zeros again (the previous kernel may have written), then the dispatch on its own.
        Status filled =
            context.submit_and_wait([&](VkCommandBuffer cmd) { fill(cmd, whole(run.zeros), 0); });
        if (!filled) return filled.error();
        std::vector<VkDescriptorBufferInfo> infos;
        infos.reserve(std::size_t{s.bindings.count} * gpu_layout::kTreeParts);
        std::vector<VkWriteDescriptorSet> writes;
        for (std::uint32_t i = 0; i < s.bindings.count; ++i) {
            VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
            w.dstBinding = i;
            w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            w.descriptorCount = (s.bindings.arrayed >> i & 1u) ? gpu_layout::kTreeParts : 1;
            w.pBufferInfo = infos.data() + infos.size();
            for (std::uint32_t k = 0; k < w.descriptorCount; ++k)
                infos.push_back({run.zeros.handle(), i * kCostSliceBytes, kCostSliceBytes});
            writes.push_back(w);
        }
        gpu_layout::PushConstants constants{};
        constants.node_shift = impl.node_shift;
        constants.wide_shift = impl.wide_shift;
        VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        BP_VK_TRY(vkBeginCommandBuffer(run.cmd, &begin), "vkBeginCommandBuffer" + what);
        compute_barrier(run.cmd);  // the fill, submitted before, made visible
        vkCmdBindPipeline(run.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, run.kernel.pipeline);
        impl.push_descriptor(run.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, run.kernel.layout, 0,
                             static_cast<std::uint32_t>(writes.size()), writes.data());
        vkCmdPushConstants(run.cmd, run.kernel.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           sizeof(constants), &constants);
        vkCmdDispatch(run.cmd, 1, 1, 1);
        BP_VK_TRY(vkEndCommandBuffer(run.cmd), "vkEndCommandBuffer" + what);
        BP_VK_TRY(vkResetFences(impl.device, 1, &run.fence), "vkResetFences" + what);
        VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        submit.commandBufferCount = 1;
        submit.pCommandBuffers = &run.cmd;
        const auto dispatched = std::chrono::steady_clock::now();
        BP_VK_TRY(vkQueueSubmit(impl.queue, 1, &submit, run.fence), "vkQueueSubmit" + what);
        const VkResult waited = vkWaitForFences(impl.device, 1, &run.fence, VK_TRUE, timeout_ns);
        cost.dispatch_ms = elapsed_ms(dispatched);
        if (waited == VK_TIMEOUT) {
            run.in_flight = true;
            return Error{ErrorCode::vulkan_error,
                         "the first dispatch of kernel " + cost.name + " did not finish within " +
                             std::to_string(std::lround(timeout_s)) +
                             " s (one workgroup over zeros; the device still runs it)"};
        }
        if (waited != VK_SUCCESS) return vk_error(waited, "vkWaitForFences" + what);
        destroy_kernel(impl.device, run.kernel);
        costs.push_back(std::move(cost));
    }
    return costs;
}

}  // namespace broadphase::gpu
