// Vulkan context: instance (with the Khronos validation layer on request), device selection
// (discrete, integrated, virtual, then CPU; or by index/name), one compute queue, buffers,
// staging copies and a submit-and-wait helper. Or the same over a caller's handles.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "context_impl.hpp"

namespace broadphase::gpu {

const char* vk_result_name(VkResult result) {
    switch (result) {
#define BP_CASE(x) \
    case x:        \
        return #x;
        BP_CASE(VK_SUCCESS)
        BP_CASE(VK_NOT_READY)
        BP_CASE(VK_TIMEOUT)
        BP_CASE(VK_INCOMPLETE)
        BP_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
        BP_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        BP_CASE(VK_ERROR_INITIALIZATION_FAILED)
        BP_CASE(VK_ERROR_DEVICE_LOST)
        BP_CASE(VK_ERROR_MEMORY_MAP_FAILED)
        BP_CASE(VK_ERROR_LAYER_NOT_PRESENT)
        BP_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
        BP_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
        BP_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
        BP_CASE(VK_ERROR_TOO_MANY_OBJECTS)
        BP_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
        BP_CASE(VK_ERROR_FRAGMENTED_POOL)
        BP_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
        BP_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
#undef BP_CASE
        default:
            return "VK_ERROR_UNKNOWN";
    }
}

Error vk_error(VkResult result, const std::string& what) {
    bool oom = result == VK_ERROR_OUT_OF_HOST_MEMORY || result == VK_ERROR_OUT_OF_DEVICE_MEMORY;
    return Error{oom ? ErrorCode::out_of_memory : ErrorCode::vulkan_error,
                 what + " failed: " + vk_result_name(result),
                 {},
                 {}};
}

void compute_barrier(VkCommandBuffer cmd) {
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                         1, &barrier, 0, nullptr, 0, nullptr);
}

void host_barrier(VkCommandBuffer cmd) {
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &barrier, 0, nullptr, 0, nullptr);
}

void indirect_barrier(VkCommandBuffer cmd) {
    compute_barrier(cmd);
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT, 0, 1, &barrier, 0, nullptr, 0,
                         nullptr);
}

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool env_flag(const char* name) {
    const char* v = std::getenv(name);
    return v && *v && std::strcmp(v, "0") != 0;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                void* user) {
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        bool error = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        if (error) ++static_cast<Context::Impl*>(user)->validation_errors;
        std::fprintf(stderr, "[vulkan %s] %s\n", error ? "error" : "warning",
                     data->pMessage ? data->pMessage : "");
    }
    return VK_FALSE;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

int type_rank(VkPhysicalDeviceType type) {
    switch (type) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
            return 0;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
            return 1;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
            return 2;
        case VK_PHYSICAL_DEVICE_TYPE_CPU:
            return 3;
        default:
            return 4;
    }
}

bool has_extension(VkPhysicalDevice physical, const char* name) {
    std::uint32_t count = 0;
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
    std::vector<VkExtensionProperties> props(count);
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, props.data());
    return std::any_of(props.begin(), props.end(), [&](const VkExtensionProperties& p) {
        return std::strcmp(p.extensionName, name) == 0;
    });
}

std::optional<std::uint32_t> compute_family(VkPhysicalDevice physical) {
    std::uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
    // Prefer a family with timestamps; the first compute-capable one otherwise.
    std::optional<std::uint32_t> any;
    for (std::uint32_t i = 0; i < count; ++i) {
        if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (families[i].timestampValidBits > 0) return i;
        if (!any) any = i;
    }
    return any;
}

// Reads the device's properties into `info`.
void fill_info(Context::Impl& impl) {
    VkPhysicalDeviceSubgroupProperties subgroup{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    subgroup.pNext = &driver;
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props.pNext = &subgroup;
    vkGetPhysicalDeviceProperties2(impl.physical, &props);
    DeviceInfo& info = impl.info;
    info.name = props.properties.deviceName;
    info.driver = std::string(driver.driverName) + " " + driver.driverInfo;
    info.type = props.properties.deviceType;
    info.vendor_id = props.properties.vendorID;
    info.api_version = props.properties.apiVersion;
    info.subgroup_size = subgroup.subgroupSize;
    info.max_storage_buffer_range = props.properties.limits.maxStorageBufferRange;
    info.max_workgroup_count_x = props.properties.limits.maxComputeWorkGroupCount[0];
    std::uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(impl.physical, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(impl.physical, &count, families.data());
    bool timestamps =
        impl.queue_family < count && families[impl.queue_family].timestampValidBits > 0;
    info.timestamp_period_ns = timestamps ? props.properties.limits.timestampPeriod : 0.0f;
    vkGetPhysicalDeviceMemoryProperties(impl.physical, &impl.memory);
}

// Creates the command pool and fence used by submit_and_wait, and loads extension entry points.
Status finish_setup(Context::Impl& impl) {
    fill_info(impl);
    impl.push_descriptor = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
        vkGetDeviceProcAddr(impl.device, "vkCmdPushDescriptorSetKHR"));
    if (!impl.push_descriptor)
        return Error{ErrorCode::unsupported,
                     "device '" + impl.info.name +
                         "' lacks VK_KHR_push_descriptor (enable it on the device)",
                     {},
                     {}};
    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = impl.queue_family;
    BP_VK_TRY(vkCreateCommandPool(impl.device, &pool_info, nullptr, &impl.pool),
              "vkCreateCommandPool");
    VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    BP_VK_TRY(vkCreateFence(impl.device, &fence_info, nullptr, &impl.fence), "vkCreateFence");
    return {};
}

}  // namespace

Context::Impl::~Impl() {
    if (device) {
        vkDeviceWaitIdle(device);
        if (fence) vkDestroyFence(device, fence, nullptr);
        if (pool) vkDestroyCommandPool(device, pool, nullptr);
    }
    if (!owns) return;
    if (device) vkDestroyDevice(device, nullptr);
    if (messenger) {
        auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
        if (destroy) destroy(instance, messenger, nullptr);
    }
    if (instance) vkDestroyInstance(instance, nullptr);
}

Context::Context(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Context::~Context() = default;

Result<std::unique_ptr<Context>> Context::create(const ContextOptions& options) {
    auto impl = std::make_unique<Impl>();
    impl->owns = true;
    bool validation = options.validation || env_flag("BROADPHASE_VALIDATION");

    std::vector<const char*> layers;
    std::vector<const char*> extensions;
    if (validation) {
        std::uint32_t count = 0;
        vkEnumerateInstanceLayerProperties(&count, nullptr);
        std::vector<VkLayerProperties> props(count);
        vkEnumerateInstanceLayerProperties(&count, props.data());
        bool found = std::any_of(props.begin(), props.end(), [](const VkLayerProperties& p) {
            return std::strcmp(p.layerName, kValidationLayer) == 0;
        });
        if (!found)
            return Error{ErrorCode::unsupported,
                         "validation requested but VK_LAYER_KHRONOS_validation is not installed "
                         "(Debian package vulkan-validationlayers)",
                         {},
                         {}};
        layers.push_back(kValidationLayer);
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }

    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "broadphase";
    app.pEngineName = "broadphase";
    app.apiVersion = VK_API_VERSION_1_2;
    VkDebugUtilsMessengerCreateInfoEXT messenger_info{
        VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                     VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger_info.pfnUserCallback = on_debug_message;
    messenger_info.pUserData = impl.get();

    VkInstanceCreateInfo instance_info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    instance_info.pApplicationInfo = &app;
    instance_info.enabledLayerCount = static_cast<std::uint32_t>(layers.size());
    instance_info.ppEnabledLayerNames = layers.data();
    instance_info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
    instance_info.ppEnabledExtensionNames = extensions.data();
    if (validation) instance_info.pNext = &messenger_info;
    BP_VK_TRY(vkCreateInstance(&instance_info, nullptr, &impl->instance), "vkCreateInstance");
    if (validation) {
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(impl->instance, "vkCreateDebugUtilsMessengerEXT"));
        if (create) create(impl->instance, &messenger_info, nullptr, &impl->messenger);
    }

    std::uint32_t count = 0;
    vkEnumeratePhysicalDevices(impl->instance, &count, nullptr);
    std::vector<VkPhysicalDevice> physicals(count);
    vkEnumeratePhysicalDevices(impl->instance, &count, physicals.data());
    if (physicals.empty())
        return Error{ErrorCode::unsupported,
                     "no Vulkan device found (install mesa-vulkan-drivers for lavapipe)",
                     {},
                     {}};

    // Only devices that can run us: Vulkan 1.2, push descriptors, a compute queue.
    std::vector<std::string> names;
    std::vector<bool> usable;
    for (VkPhysicalDevice p : physicals) {
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(p, &props);
        names.push_back(props.deviceName);
        usable.push_back(props.apiVersion >= VK_API_VERSION_1_2 &&
                         has_extension(p, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) &&
                         compute_family(p).has_value());
    }
    std::string wanted = options.device;
    if (wanted.empty() && std::getenv("BROADPHASE_DEVICE"))
        wanted = std::getenv("BROADPHASE_DEVICE");
    std::optional<std::size_t> chosen;
    if (!wanted.empty()) {
        bool numeric = std::all_of(wanted.begin(), wanted.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c));
        });
        for (std::size_t i = 0; i < physicals.size() && !chosen; ++i) {
            bool match = numeric ? std::to_string(i) == wanted
                                 : lower(names[i]).find(lower(wanted)) != std::string::npos;
            if (match) chosen = i;
        }
        std::string list;
        for (std::size_t i = 0; i < names.size(); ++i)
            list += (i ? ", " : "") + std::to_string(i) + ": " + names[i];
        if (!chosen)
            return Error{ErrorCode::invalid_argument,
                         "no Vulkan device matches '" + wanted + "' (devices: " + list + ")",
                         {},
                         {}};
        if (!usable[*chosen])
            return Error{ErrorCode::unsupported,
                         "device '" + names[*chosen] +
                             "' lacks Vulkan 1.2, VK_KHR_push_descriptor or a compute queue",
                         {},
                         {}};
    } else {
        int best = 1 << 30;
        for (std::size_t i = 0; i < physicals.size(); ++i) {
            if (!usable[i]) continue;
            VkPhysicalDeviceProperties props;
            vkGetPhysicalDeviceProperties(physicals[i], &props);
            int rank = type_rank(props.deviceType);
            if (rank < best) best = rank, chosen = i;
        }
        if (!chosen)
            return Error{ErrorCode::unsupported,
                         "no Vulkan device with Vulkan 1.2, VK_KHR_push_descriptor and compute",
                         {},
                         {}};
    }
    impl->physical = physicals[*chosen];
    impl->queue_family = *compute_family(impl->physical);

    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue_info.queueFamilyIndex = impl->queue_family;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    const char* device_extensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    device_info.enabledExtensionCount = 1;
    device_info.ppEnabledExtensionNames = device_extensions;
    BP_VK_TRY(vkCreateDevice(impl->physical, &device_info, nullptr, &impl->device),
              "vkCreateDevice");
    vkGetDeviceQueue(impl->device, impl->queue_family, 0, &impl->queue);
    if (Status s = finish_setup(*impl); !s) return s.error();
    if (options.max_storage_buffer_range > 0)
        impl->info.max_storage_buffer_range =
            std::min(impl->info.max_storage_buffer_range, options.max_storage_buffer_range);
    return std::unique_ptr<Context>(new Context(std::move(impl)));
}

Result<std::unique_ptr<Context>> Context::adopt(const ExternalDevice& external) {
    if (!external.instance || !external.physical_device || !external.device || !external.queue)
        return Error{ErrorCode::invalid_argument,
                     "ExternalDevice needs instance, physical_device, device and queue",
                     {},
                     {}};
    auto impl = std::make_unique<Impl>();
    impl->owns = false;
    impl->instance = external.instance;
    impl->physical = external.physical_device;
    impl->device = external.device;
    impl->queue_family = external.queue_family;
    impl->queue = external.queue;
    if (Status s = finish_setup(*impl); !s) return s.error();
    return std::unique_ptr<Context>(new Context(std::move(impl)));
}

const DeviceInfo& Context::info() const {
    return impl_->info;
}
VkDevice Context::device() const {
    return impl_->device;
}
VkPhysicalDevice Context::physical_device() const {
    return impl_->physical;
}
VkQueue Context::queue() const {
    return impl_->queue;
}
std::uint32_t Context::queue_family() const {
    return impl_->queue_family;
}
std::uint64_t Context::validation_errors() const {
    return impl_->validation_errors.load();
}

Status Context::submit_and_wait_impl(void (*record)(VkCommandBuffer, void*), void* user) {
    Impl& impl = *impl_;
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = impl.pool;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    BP_VK_TRY(vkAllocateCommandBuffers(impl.device, &alloc, &cmd), "vkAllocateCommandBuffers");
    struct Free {
        Impl& impl;
        VkCommandBuffer cmd;
        ~Free() { vkFreeCommandBuffers(impl.device, impl.pool, 1, &cmd); }
    } free_cmd{impl, cmd};
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    BP_VK_TRY(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    record(cmd, user);
    BP_VK_TRY(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    BP_VK_TRY(vkResetFences(impl.device, 1, &impl.fence), "vkResetFences");
    BP_VK_TRY(vkQueueSubmit(impl.queue, 1, &submit, impl.fence), "vkQueueSubmit");
    BP_VK_TRY(vkWaitForFences(impl.device, 1, &impl.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    return {};
}

}  // namespace broadphase::gpu
