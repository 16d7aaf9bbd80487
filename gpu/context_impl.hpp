// Private state of gpu::Context and the small Vulkan helpers the recorders share:
// a check macro, compute barriers and the result-to-Error conversion.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "broadphase/gpu.hpp"

namespace broadphase::gpu {

struct Context::Impl {
    bool owns = false;  // created the instance and device (destroy them on exit)
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    std::uint32_t queue_family = 0;
    VkQueue queue = VK_NULL_HANDLE;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    DeviceInfo info;
    VkPhysicalDeviceMemoryProperties memory{};
    PFN_vkCmdPushDescriptorSetKHR push_descriptor = nullptr;
    std::atomic<std::uint64_t> validation_errors{0};

    ~Impl();
};

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
};

/// The device extensions the library needs (VK_KHR_push_descriptor).
std::span<const char* const> required_device_extensions();

/// Reads a physical device's facts with Vulkan 1.0 calls only (safe on any instance).
DeviceFacts device_facts(VkPhysicalDevice physical, std::uint32_t instance_version);

/// Everything the facts lack, one line each (empty when the device can be used): Vulkan 1.2
/// for the instance and the device, the extensions (supported, and enabled when adopting), the
/// compute limits the kernels rely on, and a compute queue family. Timestamps are optional.
std::vector<std::string> missing_requirements(const DeviceFacts& facts);

/// Text for a VkResult ("VK_ERROR_OUT_OF_DEVICE_MEMORY").
const char* vk_result_name(VkResult result);

/// An Error for a failed Vulkan call: out_of_memory for the OOM results, else vulkan_error.
Error vk_error(VkResult result, const std::string& what);

#define BP_VK_TRY(call, what)                                            \
    do {                                                                 \
        VkResult bp_result_ = (call);                                    \
        if (bp_result_ != VK_SUCCESS) return vk_error(bp_result_, what); \
    } while (0)

/// Full barrier between compute (and transfer) writes and later compute/transfer access.
void compute_barrier(VkCommandBuffer cmd);

/// Transfer writes made visible to host reads (before reading a readback buffer).
void host_barrier(VkCommandBuffer cmd);

/// compute_barrier, and compute writes made visible to later indirect dispatches' argument
/// reads (DRAW_INDIRECT stage, INDIRECT_COMMAND_READ).
void indirect_barrier(VkCommandBuffer cmd);

}  // namespace broadphase::gpu
