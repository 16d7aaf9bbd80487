// Private state of gpu::Context and the small Vulkan helpers the recorders share:
// a check macro, compute barriers and the result-to-Error conversion.
#pragma once

#include <atomic>
#include <string>

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
