// Private state of gpu::Context and the small Vulkan helpers the recorders share:
// a check macro, compute barriers and the result-to-Error conversion.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "broadphase/gpu.hpp"
#include "device/impl_access.hpp"

namespace broadphase::gpu {

/// A compiled compute kernel: its push-descriptor set layout, pipeline layout and pipeline.
struct CompiledKernel {
    std::uint32_t bindings = 0;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
};

struct Context::Impl {
    bool owns = false;  // created the instance and device (destroy them on exit)
    bool validation = false;
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    std::uint32_t queue_family = 0;
    VkQueue queue = VK_NULL_HANDLE;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    DeviceInfo info;
    // log2 of the LbvhNode and the LbvhWideNode per part of a split tree array (part_shift of
    // info.max_storage_buffer_range; layout/common.h, "Split tree bindings").
    std::uint32_t node_shift = 0, wide_shift = 0;
    VkPhysicalDeviceMemoryProperties memory{};
    PFN_vkCmdPushDescriptorSetKHR push_descriptor = nullptr;
    std::atomic<std::uint64_t> validation_errors{0};

    // The pipeline cache every pipeline is created with (VK_NULL_HANDLE when off), and whether
    // the Context destroys it (not the caller's).
    VkPipelineCache pipeline_cache = VK_NULL_HANDLE;
    bool owns_pipeline_cache = false;
    PipelineCacheInfo pipeline_cache_info;
    // Size and hash of the data last loaded from or saved to the file: the destructor writes
    // only data that differs.
    std::size_t stored_size = 0;
    std::uint64_t stored_hash = 0;

    // Every kernel compiled so far, by the address of its SPIR-V (gpu/device/kernels.cpp).
    // Node-based: the entries stay where they are while others are added.
    std::mutex kernels_mutex;
    std::unordered_map<const std::uint32_t*, CompiledKernel> kernels;
    std::atomic<std::uint32_t> pipelines_created{0};
    // Compute dispatches recorded through Kernel (direct ones with work, and every indirect
    // one), for the instruments' per-stage dispatch counts.
    std::atomic<std::uint64_t> dispatches_recorded{0};
    // Of those, the dispatches of split kernels (a tree's arrays over several descriptors).
    std::atomic<std::uint64_t> split_dispatches{0};
    // Context::upload's and download's staging buffers, kept and grown to the largest transfer
    // so far: a host-visible allocation per transfer (pinned pages on a discrete GPU) cost
    // more than the copy. Released before the device in ~Impl.
    Buffer upload_staging, readback_staging;

    /// The kernel of `spirv` with `bindings` storage buffers, compiled on the first request with
    /// the pipeline cache (thread-safe). `name` is for error messages. The bindings in the
    /// `arrayed` mask (bit i: binding i) are arrays of kTreeParts descriptors (a split kernel).
    Result<const CompiledKernel*> kernel(std::span<const std::uint32_t> spirv,
                                         std::uint32_t bindings, const char* name,
                                         std::uint32_t arrayed = 0);
    /// Opens the pipeline cache as `options` say (or adopts the caller's `external`); never
    /// fails: a file that cannot be used is a cold start (PipelineCacheInfo::ignored).
    void open_pipeline_cache(const PipelineCacheOptions& options, VkPipelineCache external);
    /// Writes the cache file (see Context::save_pipeline_cache); `only_if_changed` skips data
    /// equal to what was last loaded or saved.
    Status save_pipeline_cache(bool only_if_changed);

    ~Impl();
};

/// Creates the push-descriptor set layout (`bindings` storage buffers, those in the `arrayed`
/// mask kTreeParts descriptors each), the pipeline layout (one PushConstants block) and the
/// pipeline of `spirv` with the context's pipeline cache: what Context::Impl::kernel keeps.
/// Leaves nothing behind on failure; otherwise the caller owns the handles (destroy_kernel).
Result<CompiledKernel> compile_kernel(const ContextImpl& context,
                                      std::span<const std::uint32_t> spirv, std::uint32_t bindings,
                                      const char* name, std::uint32_t arrayed = 0);
/// Destroys the handles of `k` that exist and empties it.
void destroy_kernel(VkDevice device, CompiledKernel& k);

/// What the library needs of a device, as Context::create and Context::adopt check it: the
/// device's properties and queue families, its supported extensions, and for adopt what the
/// caller says the instance and device were created with.
struct DeviceFacts {
    /// VkApplicationInfo::apiVersion of the instance; 0 when unknown.
    std::uint32_t instance_version = 0;
    VkPhysicalDeviceProperties properties{};
    std::vector<VkQueueFamilyProperties> families;
    std::vector<std::string> supported_extensions;
    /// adopt: the extensions the device was created with (create enables them itself).
    std::optional<std::vector<std::string>> enabled_extensions;
    /// adopt: the caller's queue family (create picks any family with compute).
    std::optional<std::uint32_t> queue_family;
    /// The device supports VkPhysicalDeviceVulkan12Features::vulkanMemoryModel and
    /// vulkanMemoryModelDeviceScope (read only when both the instance and the device are Vulkan
    /// 1.2 or later).
    bool memory_model_supported = false;
    /// adopt: whether the caller enabled both (create enables them itself).
    std::optional<bool> memory_model_enabled;
};

/// The device extensions the library needs (VK_KHR_push_descriptor).
std::span<const char* const> required_device_extensions();

/// Reads a physical device's facts with Vulkan 1.0 calls, and its Vulkan 1.2 features only when
/// the instance and the device are 1.2 or later (safe on any instance).
DeviceFacts device_facts(VkPhysicalDevice physical, std::uint32_t instance_version);

/// Everything the facts lack, one line each (empty when the device can be used): Vulkan 1.2
/// for the instance and the device, the extensions (supported, and enabled when adopting), the
/// compute limits the kernels rely on, and a compute queue family. Timestamps are optional.
std::vector<std::string> missing_requirements(const DeviceFacts& facts);

/// Destroys what a context that owns its device created last: the device, the debug messenger
/// (through its extension function) and the instance, each only if it exists (the caller's
/// objects on the device must be gone).
void destroy_owned_device(VkInstance instance, VkDebugUtilsMessengerEXT messenger, VkDevice device);

/// What a submission the host waits for needs: a command pool on `queue_family` whose buffers
/// can be reset, and an unsignalled fence. The caller destroys both (the pool frees its buffers).
Status create_pool_and_fence(VkDevice device, std::uint32_t queue_family, VkCommandPool& pool,
                             VkFence& fence);

/// One primary command buffer from `pool`.
Status allocate_command_buffer(VkDevice device, VkCommandPool pool, VkCommandBuffer& cmd);

/// Text for a VkResult ("VK_ERROR_OUT_OF_DEVICE_MEMORY").
const char* vk_result_name(VkResult result);

/// An Error for a failed Vulkan call: out_of_memory for the OOM results, else vulkan_error.
Error vk_error(VkResult result, const std::string& what);

#define BP_VK_TRY(call, what)                                            \
    do {                                                                 \
        VkResult bp_result_ = (call);                                    \
        if (bp_result_ != VK_SUCCESS) return vk_error(bp_result_, what); \
    } while (0)

/// Context::upload with the `size` bytes written by write(destination) straight into dst's
/// mapped memory or the context's kept staging buffer, so that data converted on the way (boxes
/// to the GPU layout) is not first built in a vector and then copied.
Status upload_by(Context& context, const Buffer& dst, VkDeviceSize size, VkDeviceSize offset,
                 const std::function<void(void*)>& write);

/// Context::download with the `size` bytes handed to read(source) where they lie, in src's
/// mapped memory or the context's kept readback buffer, so that data converted on the way
/// (pair keys to pairs) is not first copied into a vector.
Status download_by(Context& context, const Buffer& src, VkDeviceSize size, VkDeviceSize offset,
                   const std::function<void(const void*)>& read);

/// Uploads `boxes` in the GPU layout (write_gpu_boxes) to the start of dst.
Status upload_boxes(Context& context, const Buffer& dst, std::span<const Box> boxes);

/// Writes `boxes` in the GPU layout (w = 0) to out[0 .. boxes.size()).
void write_gpu_boxes(std::span<const Box> boxes, gpu_layout::GpuBox* out);

/// Full barrier between compute (and transfer) writes and later compute/transfer access.
void compute_barrier(VkCommandBuffer cmd);

/// Transfer writes made visible to host reads (before reading a readback buffer).
void host_barrier(VkCommandBuffer cmd);

/// compute_barrier, and compute writes made visible to later indirect dispatches' argument
/// reads (DRAW_INDIRECT stage, INDIRECT_COMMAND_READ).
void indirect_barrier(VkCommandBuffer cmd);

}  // namespace broadphase::gpu
