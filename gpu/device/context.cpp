// Vulkan context: instance (with the Khronos validation layer on request), device selection
// (discrete, integrated, virtual, then CPU; or by index/name), one compute queue, buffers,
// staging copies and a submit-and-wait helper. Or the same over a caller's handles. The
// Context owns the compiled kernels (gpu/device/kernels.cpp) and the pipeline cache
// (gpu/device/pipeline_cache.cpp).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "device/buffer_sizing.hpp"
#include "device/context_impl.hpp"
#include "device/traversal_budget.hpp"

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
                 what + " failed: " + vk_result_name(result)};
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

// The sort path a Context runs (SortPath): the option, else the device's rule: onesweep on the
// GPUs whose started workgroups are known to progress while others wait on them (NVIDIA, AMD
// and Intel), reduce_then_scan elsewhere (other GPUs; CPU devices, where a waiting workgroup
// takes a core from the one it waits for).
SortPath resolve_sort_path(SortPath wanted, const DeviceInfo& info) {
    if (wanted != SortPath::automatic) return wanted;
    constexpr std::uint32_t kNvidia = 0x10de, kAmd = 0x1002, kIntel = 0x8086;
    const bool known_vendor =
        info.vendor_id == kNvidia || info.vendor_id == kAmd || info.vendor_id == kIntel;
    const bool gpu = info.type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                     info.type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
    if (known_vendor && gpu) return SortPath::onesweep;
    return SortPath::reduce_then_scan;
}

// The onesweep look-back's window (DeviceInfo::sort_window): the option, else kOnesweepWindow.
Result<std::uint32_t> resolve_sort_window(std::uint32_t wanted) {
    if (wanted > gpu_layout::kOnesweepWindow)
        return Error{ErrorCode::invalid_argument,
                     "the sort window is " + std::to_string(wanted) + ": it must be 1 to " +
                         std::to_string(gpu_layout::kOnesweepWindow) + " tiles"};
    return wanted != 0 ? wanted : gpu_layout::kOnesweepWindow;
}

// How the radix sort ranks its tiles (DeviceInfo::sort_subgroup_rank): the option, else
// subgroup ballots on GPUs that have them and shared memory on CPU devices.
Result<bool> resolve_sort_rank(SortRank wanted, const DeviceInfo& info) {
    switch (wanted) {
        case SortRank::shared:
            return false;
        case SortRank::subgroup:
            if (!info.subgroup_ballot)
                return Error{ErrorCode::unsupported,
                             "the sort rank is subgroup, but the device has no subgroup ballot "
                             "in compute shaders"};
            return true;
        case SortRank::automatic:
            break;
    }
    return info.subgroup_ballot && info.type != VK_PHYSICAL_DEVICE_TYPE_CPU;
}

// The bounded traversals' budget (DeviceInfo::traversal_budget): the option, else
// kTraversalBudget on CPU devices and kGpuTraversalBudget on the others.
Result<std::uint32_t> resolve_traversal_budget(std::uint32_t wanted, const DeviceInfo& info) {
    if (wanted > gpu_layout::kTraversalBudget)
        return Error{ErrorCode::invalid_argument,
                     "the traversal budget is " + std::to_string(wanted) + ": it must be 1 to " +
                         std::to_string(gpu_layout::kTraversalBudget) + " nodes"};
    if (wanted != 0) return wanted;
    return info.type == VK_PHYSICAL_DEVICE_TYPE_CPU ? gpu_layout::kTraversalBudget
                                                    : gpu_layout::kGpuTraversalBudget;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                void* user) {
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        bool error = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        if (error) ++static_cast<ContextImpl*>(user)->validation_errors;
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

std::string version_text(std::uint32_t version) {
    return std::to_string(VK_API_VERSION_MAJOR(version)) + "." +
           std::to_string(VK_API_VERSION_MINOR(version));
}

bool contains(const std::vector<std::string>& names, const char* name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// Everything a Vulkan two-call query returns: query(&count, nullptr) for the count, then
// query(&count, data) for the items (layers, extensions, queue families, devices).
template <class T, class Query>
std::vector<T> vk_all(Query&& query) {
    std::uint32_t count = 0;
    query(&count, static_cast<T*>(nullptr));
    std::vector<T> all(count);
    query(&count, all.data());
    return all;
}

const char* name_of(const VkLayerProperties& p) {
    return p.layerName;
}
const char* name_of(const VkExtensionProperties& p) {
    return p.extensionName;
}
// Whether a list of layers or extensions holds `name`.
template <class Properties>
bool holds(const std::vector<Properties>& list, const char* name) {
    return std::any_of(list.begin(), list.end(),
                       [name](const Properties& p) { return std::strcmp(name_of(p), name) == 0; });
}

std::vector<VkQueueFamilyProperties> queue_families(VkPhysicalDevice physical) {
    return vk_all<VkQueueFamilyProperties>([physical](std::uint32_t* count, auto* data) {
        vkGetPhysicalDeviceQueueFamilyProperties(physical, count, data);
    });
}

std::optional<std::uint32_t> compute_family(VkPhysicalDevice physical) {
    const std::vector<VkQueueFamilyProperties> families = queue_families(physical);
    // Prefer a family with timestamps; the first compute-capable one otherwise.
    std::optional<std::uint32_t> any;
    for (std::uint32_t i = 0; i < families.size(); ++i) {
        if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (families[i].timestampValidBits > 0) return i;
        if (!any) any = i;
    }
    return any;
}

}  // namespace

std::span<const char* const> required_device_extensions() {
    static const char* const extensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    return extensions;
}

DeviceFacts device_facts(VkPhysicalDevice physical, std::uint32_t instance_version) {
    DeviceFacts facts;
    facts.instance_version = instance_version;
    vkGetPhysicalDeviceProperties(physical, &facts.properties);
    facts.families = queue_families(physical);
    const auto extensions =
        vk_all<VkExtensionProperties>([physical](std::uint32_t* count, auto* data) {
            return vkEnumerateDeviceExtensionProperties(physical, nullptr, count, data);
        });
    for (const VkExtensionProperties& e : extensions)
        facts.supported_extensions.emplace_back(e.extensionName);
    if (instance_version >= VK_API_VERSION_1_2 &&
        facts.properties.apiVersion >= VK_API_VERSION_1_2) {
        VkPhysicalDeviceVulkan12Features features12{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
        VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
        features.pNext = &features12;
        vkGetPhysicalDeviceFeatures2(physical, &features);
        facts.memory_model_supported = features12.vulkanMemoryModel == VK_TRUE &&
                                       features12.vulkanMemoryModelDeviceScope == VK_TRUE;
    }
    return facts;
}

std::vector<std::string> missing_requirements(const DeviceFacts& facts) {
    std::vector<std::string> missing;
    constexpr std::uint32_t kNeeded = VK_API_VERSION_1_2;
    if (facts.instance_version == 0)
        missing.push_back(
            "the instance's API version is unknown: set ExternalDevice::api_version to the "
            "VkApplicationInfo::apiVersion the instance was created with (1.2 or later)");
    else if (facts.instance_version < kNeeded)
        missing.push_back("the instance was created for Vulkan " +
                          version_text(facts.instance_version) +
                          " (VkApplicationInfo::apiVersion); Vulkan 1.2 is needed");
    if (facts.properties.apiVersion < kNeeded)
        missing.push_back("the device supports Vulkan " +
                          version_text(facts.properties.apiVersion) +
                          " only; Vulkan 1.2 is needed");
    for (const char* name : required_device_extensions()) {
        const bool supported = contains(facts.supported_extensions, name);
        if (facts.enabled_extensions && !contains(*facts.enabled_extensions, name))
            missing.push_back(std::string(name) +
                              " is not enabled on the device (list it in "
                              "VkDeviceCreateInfo::ppEnabledExtensionNames and in "
                              "ExternalDevice::enabled_extensions)" +
                              (supported ? "" : ", and the device does not support it"));
        else if (!supported)
            missing.push_back(std::string(name) + " is not supported by the device");
    }
    // The bottom-up climbs of the build and the refit order their memory with the Vulkan memory
    // model (shaders/lbvh/lbvh_build.glsl). Unknown versions are reported above instead.
    const bool versions_known =
        facts.instance_version >= kNeeded && facts.properties.apiVersion >= kNeeded;
    if (versions_known && !facts.memory_model_supported)
        missing.push_back(
            "the device does not support vulkanMemoryModel and vulkanMemoryModelDeviceScope "
            "(Vulkan 1.2 features)");
    else if (versions_known && facts.memory_model_enabled && !*facts.memory_model_enabled)
        missing.push_back(
            "vulkanMemoryModel and vulkanMemoryModelDeviceScope are not enabled on the device "
            "(set both in the VkPhysicalDeviceVulkan12Features given to vkCreateDevice, and "
            "ExternalDevice::vulkan_memory_model)");
    // Every kernel runs kWorkgroupSize invocations; radix_onesweep.glsl holds the most shared
    // memory: radix_rank.glsl's 16 counting cells per invocation (the sorted tile between the
    // splits) and a pad word per 16 cells, its two per-digit arrays and the scan's two rows, the
    // digit bases and two words.
    const VkPhysicalDeviceLimits& limits = facts.properties.limits;
    constexpr std::uint32_t kSharedBytes =
        (17 * gpu_layout::kWorkgroupSize + 3 * gpu_layout::kSortBuckets +
         2 * gpu_layout::kWorkgroupSize + 2) *
        4;
    if (limits.maxComputeWorkGroupInvocations < gpu_layout::kWorkgroupSize ||
        limits.maxComputeWorkGroupSize[0] < gpu_layout::kWorkgroupSize)
        missing.push_back("compute workgroups of " + std::to_string(gpu_layout::kWorkgroupSize) +
                          " invocations are needed (maxComputeWorkGroupInvocations " +
                          std::to_string(limits.maxComputeWorkGroupInvocations) +
                          ", maxComputeWorkGroupSize[0] " +
                          std::to_string(limits.maxComputeWorkGroupSize[0]) + ")");
    if (limits.maxComputeSharedMemorySize < kSharedBytes)
        missing.push_back(
            std::to_string(kSharedBytes) +
            " bytes of compute shared memory are needed (maxComputeSharedMemorySize " +
            std::to_string(limits.maxComputeSharedMemorySize) + ")");
    const auto families = static_cast<std::uint32_t>(facts.families.size());
    if (facts.queue_family) {
        const std::uint32_t family = *facts.queue_family;
        if (family >= families)
            missing.push_back("queue family " + std::to_string(family) +
                              " does not exist (the device has " + std::to_string(families) + ")");
        else if (!(facts.families[family].queueFlags & VK_QUEUE_COMPUTE_BIT))
            missing.push_back("queue family " + std::to_string(family) +
                              " has no compute (VK_QUEUE_COMPUTE_BIT)");
    } else if (std::none_of(facts.families.begin(), facts.families.end(),
                            [](const VkQueueFamilyProperties& f) {
                                return (f.queueFlags & VK_QUEUE_COMPUTE_BIT) != 0;
                            })) {
        missing.push_back("no queue family has compute (VK_QUEUE_COMPUTE_BIT)");
    }
    return missing;
}

namespace {

// Reads the device's properties into `info`.
void fill_info(ContextImpl& impl) {
    VkPhysicalDeviceSubgroupProperties subgroup{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    subgroup.pNext = &driver;
    VkPhysicalDeviceMaintenance3Properties maintenance3{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    driver.pNext = &maintenance3;
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props.pNext = &subgroup;
    vkGetPhysicalDeviceProperties2(impl.physical, &props);
    impl.info.max_memory_allocation_size = maintenance3.maxMemoryAllocationSize;
    if (props.properties.apiVersion >= VK_API_VERSION_1_3) {
        // maxBufferSize is a Vulkan 1.3 (maintenance4) limit; asked only of 1.3 devices.
        VkPhysicalDeviceMaintenance4Properties maintenance4{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
        VkPhysicalDeviceProperties2 props4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
        props4.pNext = &maintenance4;
        vkGetPhysicalDeviceProperties2(impl.physical, &props4);
        impl.info.max_buffer_size = maintenance4.maxBufferSize;
    }
    DeviceInfo& info = impl.info;
    info.name = props.properties.deviceName;
    info.driver = std::string(driver.driverName) + " " + driver.driverInfo;
    info.type = props.properties.deviceType;
    info.vendor_id = props.properties.vendorID;
    info.api_version = props.properties.apiVersion;
    info.subgroup_size = subgroup.subgroupSize;
    const VkSubgroupFeatureFlags ballot =
        VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_BALLOT_BIT;
    info.subgroup_ballot = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                           (subgroup.supportedOperations & ballot) == ballot;
    info.max_storage_buffer_range = props.properties.limits.maxStorageBufferRange;
    info.min_storage_buffer_offset_alignment =
        props.properties.limits.minStorageBufferOffsetAlignment;
    info.range_alignment = std::max<VkDeviceSize>(info.min_storage_buffer_offset_alignment, 4);
    info.max_workgroup_count_x = props.properties.limits.maxComputeWorkGroupCount[0];
    const std::vector<VkQueueFamilyProperties> families = queue_families(impl.physical);
    bool timestamps =
        impl.queue_family < families.size() && families[impl.queue_family].timestampValidBits > 0;
    info.timestamp_period_ns = timestamps ? props.properties.limits.timestampPeriod : 0.0f;
    vkGetPhysicalDeviceMemoryProperties(impl.physical, &impl.memory);
}

// Creates the command pool and fence used by submit_and_wait, and loads extension entry points.
Status finish_setup(ContextImpl& impl) {
    fill_info(impl);
    impl.push_descriptor = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
        vkGetDeviceProcAddr(impl.device, "vkCmdPushDescriptorSetKHR"));
    if (!impl.push_descriptor)
        return Error{ErrorCode::unsupported,
                     "device '" + impl.info.name +
                         "' lacks VK_KHR_push_descriptor (enable it on the device)"};
    return create_pool_and_fence(impl.device, impl.queue_family, impl.pool, impl.fence);
}

}  // namespace

Status create_pool_and_fence(VkDevice device, std::uint32_t queue_family, VkCommandPool& pool,
                             VkFence& fence) {
    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = queue_family;
    BP_VK_TRY(vkCreateCommandPool(device, &pool_info, nullptr, &pool), "vkCreateCommandPool");
    VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    BP_VK_TRY(vkCreateFence(device, &fence_info, nullptr, &fence), "vkCreateFence");
    return {};
}

Status allocate_command_buffer(VkDevice device, VkCommandPool pool, VkCommandBuffer& cmd) {
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = pool;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    BP_VK_TRY(vkAllocateCommandBuffers(device, &alloc, &cmd), "vkAllocateCommandBuffers");
    return {};
}

Context::Impl::~Impl() {
    if (device) {
        vkDeviceWaitIdle(device);
        upload_staging = Buffer();
        readback_staging = Buffer();
        if (owns_pipeline_cache) {
            if (pipelines_created > 0) {
                const Status saved = save_pipeline_cache(true);
                if (!saved && validation)
                    std::fprintf(stderr, "broadphase: the pipeline cache was not saved: %s\n",
                                 saved.error().message.c_str());
            }
            vkDestroyPipelineCache(device, pipeline_cache, nullptr);
        }
        for (auto& [spirv, k] : kernels) destroy_kernel(device, k);
        if (fence) vkDestroyFence(device, fence, nullptr);
        if (pool) vkDestroyCommandPool(device, pool, nullptr);
    }
    if (owns) destroy_owned_device(instance, messenger, device);
}

void destroy_owned_device(VkInstance instance, VkDebugUtilsMessengerEXT messenger,
                          VkDevice device) {
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

namespace {

constexpr std::uint32_t kApiVersion = VK_API_VERSION_1_2;

// The instance, with the validation layer and its debug messenger (counting into `impl`) when
// `impl.validation`.
Status create_instance(ContextImpl& impl) {
    std::vector<const char*> layers;
    std::vector<const char*> extensions;
    if (impl.validation) {
        if (!holds(vk_all<VkLayerProperties>(vkEnumerateInstanceLayerProperties), kValidationLayer))
            return Error{ErrorCode::unsupported,
                         "validation requested but VK_LAYER_KHRONOS_validation is not installed "
                         "(Debian package vulkan-validationlayers)"};
        layers.push_back(kValidationLayer);
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        // Synchronization validation beside the core checks: it reports the barriers a real
        // GPU needs that lavapipe's in-order execution would hide (read-after-write hazards
        // between dispatches, transfers and host access).
        const auto layer_extensions =
            vk_all<VkExtensionProperties>([](std::uint32_t* count, auto* data) {
                return vkEnumerateInstanceExtensionProperties(kValidationLayer, count, data);
            });
        if (!holds(layer_extensions, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME))
            return Error{ErrorCode::unsupported,
                         "validation requested but the validation layer lacks "
                         "VK_EXT_validation_features (synchronization validation)"};
        extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    }

    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "broadphase";
    app.pEngineName = "broadphase";
    app.apiVersion = kApiVersion;
    VkDebugUtilsMessengerCreateInfoEXT messenger_info{
        VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                     VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger_info.pfnUserCallback = on_debug_message;
    messenger_info.pUserData = &impl;

    VkInstanceCreateInfo instance_info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    instance_info.pApplicationInfo = &app;
    instance_info.enabledLayerCount = static_cast<std::uint32_t>(layers.size());
    instance_info.ppEnabledLayerNames = layers.data();
    instance_info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
    instance_info.ppEnabledExtensionNames = extensions.data();
    const VkValidationFeatureEnableEXT enables[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = enables;
    features.pNext = &messenger_info;
    if (impl.validation) instance_info.pNext = &features;  // then messenger_info
    BP_VK_TRY(vkCreateInstance(&instance_info, nullptr, &impl.instance), "vkCreateInstance");
    if (impl.validation) {
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(impl.instance, "vkCreateDebugUtilsMessengerEXT"));
        if (create) create(impl.instance, &messenger_info, nullptr, &impl.messenger);
    }
    return {};
}

// The physical device: the one `wanted` names (an index in enumeration order or a
// case-insensitive name substring), else the usable one of the best type (discrete, then
// integrated, virtual, CPU). Only devices that can run us qualify (missing_requirements:
// Vulkan 1.2, push descriptors, the compute limits, a compute queue); an error says why each
// other one cannot.
Result<VkPhysicalDevice> choose_device(VkInstance instance, const std::string& wanted) {
    const auto physicals = vk_all<VkPhysicalDevice>([instance](std::uint32_t* count, auto* data) {
        return vkEnumeratePhysicalDevices(instance, count, data);
    });
    if (physicals.empty())
        return Error{ErrorCode::unsupported,
                     "no Vulkan device found (install mesa-vulkan-drivers for lavapipe)"};
    std::vector<std::string> names;
    std::vector<std::string> lacks;
    for (VkPhysicalDevice p : physicals) {
        const DeviceFacts facts = device_facts(p, kApiVersion);
        names.push_back(facts.properties.deviceName);
        std::string text;
        for (const std::string& m : missing_requirements(facts))
            text += (text.empty() ? "" : "; ") + m;
        lacks.push_back(text);
    }
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
                         "no Vulkan device matches '" + wanted + "' (devices: " + list + ")"};
        if (!lacks[*chosen].empty())
            return Error{ErrorCode::unsupported,
                         "device '" + names[*chosen] + "' cannot be used: " + lacks[*chosen]};
        return physicals[*chosen];
    }
    int best = 1 << 30;
    for (std::size_t i = 0; i < physicals.size(); ++i) {
        if (!lacks[i].empty()) continue;
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(physicals[i], &props);
        int rank = type_rank(props.deviceType);
        if (rank < best) best = rank, chosen = i;
    }
    if (!chosen) {
        std::string report;
        for (std::size_t i = 0; i < names.size(); ++i)
            report += (i ? "; " : "") + names[i] + ": " + lacks[i];
        return Error{ErrorCode::unsupported, "no usable Vulkan device (" + report + ")"};
    }
    return physicals[*chosen];
}

// DeviceInfo::tree_parts and the part shifts, once max_storage_buffer_range (capped or not) is
// final: split when `allowed` (the option), with room for the cross pass's 4 x 4 + 5 storage
// descriptors per stage, set and push (maxPushDescriptors is at least 32 on every device, the
// per-stage limit only 4), and parts whose offsets keep the 256-byte alignment.
void resolve_tree_parts(ContextImpl& impl, bool allowed) {
    VkPhysicalDevicePushDescriptorPropertiesKHR push{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR};
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props.pNext = &push;
    vkGetPhysicalDeviceProperties2(impl.physical, &props);
    const VkPhysicalDeviceLimits& limits = props.properties.limits;
    constexpr std::uint32_t kMostDescriptors = 4 * gpu_layout::kTreeParts + 5;
    const VkDeviceSize range = impl.info.max_storage_buffer_range;
    impl.node_shift = part_shift(range, sizeof(gpu_layout::LbvhNode));
    impl.wide_shift = part_shift(range, sizeof(gpu_layout::LbvhWideNode));
    const bool can = allowed && limits.maxPerStageDescriptorStorageBuffers >= kMostDescriptors &&
                     limits.maxDescriptorSetStorageBuffers >= kMostDescriptors &&
                     push.maxPushDescriptors >= kMostDescriptors &&
                     std::min(impl.node_shift, impl.wide_shift) >= kMinPartShift;
    impl.info.tree_parts = can ? gpu_layout::kTreeParts : 1;
}

// The caller's choices that depend on the device, once its limits are final (Context::create
// and Context::adopt): tree splitting, the sort path (its look-back window, its ranking) and the
// traversal budget, each resolved against impl.info; an error names a choice the device cannot
// honour.
Status apply_choices(ContextImpl& impl, const Tuning& tuning) {
    resolve_tree_parts(impl, tuning.split_tree_bindings);
    impl.info.sort_path = resolve_sort_path(tuning.sort_path, impl.info);
    auto window = resolve_sort_window(tuning.sort_window);
    if (!window) return window.error();
    impl.info.sort_window = window.value();
    auto rank = resolve_sort_rank(tuning.sort_rank, impl.info);
    if (!rank) return rank.error();
    impl.info.sort_subgroup_rank = rank.value();
    auto budget = resolve_traversal_budget(tuning.traversal_budget, impl.info);
    if (!budget) return budget.error();
    impl.info.traversal_budget = budget.value();
    impl.info.pair_first_round = first_round_budget(budget.value(), gpu_layout::kPairGroup);
    impl.info.query_first_round = first_round_budget(budget.value(), gpu_layout::kQueryFirstRound);
    return Status::success();
}

// The logical device on impl.physical: one compute queue, the required extensions.
Status create_device(ContextImpl& impl) {
    impl.queue_family = *compute_family(impl.physical);
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue_info.queueFamilyIndex = impl.queue_family;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    const std::span<const char* const> device_extensions = required_device_extensions();
    VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    device_info.enabledExtensionCount = static_cast<std::uint32_t>(device_extensions.size());
    device_info.ppEnabledExtensionNames = device_extensions.data();
    VkPhysicalDeviceVulkan12Features features12{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    // Checked by choose_device (missing_requirements). Device scope: with the memory model
    // on, every kernel's atomics of device scope (GLSL's plain atomicAdd) need it.
    features12.vulkanMemoryModel = VK_TRUE;
    features12.vulkanMemoryModelDeviceScope = VK_TRUE;
    device_info.pNext = &features12;
    BP_VK_TRY(vkCreateDevice(impl.physical, &device_info, nullptr, &impl.device), "vkCreateDevice");
    vkGetDeviceQueue(impl.device, impl.queue_family, 0, &impl.queue);
    return {};
}

}  // namespace

Result<std::unique_ptr<Context>> Context::create(const ContextOptions& options) {
    auto impl = std::make_unique<Impl>();
    impl->owns = true;
    impl->validation = options.validation || env_flag("BROADPHASE_VALIDATION");
    if (Status s = create_instance(*impl); !s) return s.error();
    std::string wanted = options.device;
    if (wanted.empty() && std::getenv("BROADPHASE_DEVICE"))
        wanted = std::getenv("BROADPHASE_DEVICE");
    auto physical = choose_device(impl->instance, wanted);
    if (!physical) return physical.error();
    impl->physical = physical.value();
    if (Status s = create_device(*impl); !s) return s.error();
    if (Status s = finish_setup(*impl); !s) return s.error();
    if (options.max_storage_buffer_range > 0)
        impl->info.max_storage_buffer_range =
            std::min(impl->info.max_storage_buffer_range, options.max_storage_buffer_range);
    if (Status s = apply_choices(*impl, options.tuning); !s) return s.error();
    impl->open_pipeline_cache(options.pipeline_cache, VK_NULL_HANDLE);
    return std::unique_ptr<Context>(new Context(std::move(impl)));
}

Result<std::unique_ptr<Context>> Context::adopt(const ExternalDevice& external) {
    if (!external.instance || !external.physical_device || !external.device || !external.queue)
        return Error{ErrorCode::invalid_argument,
                     "ExternalDevice needs instance, physical_device, device and queue"};
    // Checked with Vulkan 1.0 calls before anything newer is called on the caller's handles.
    DeviceFacts facts = device_facts(external.physical_device, external.api_version);
    facts.queue_family = external.queue_family;
    facts.enabled_extensions.emplace();
    for (const char* name : external.enabled_extensions)
        if (name) facts.enabled_extensions->emplace_back(name);
    facts.memory_model_enabled = external.vulkan_memory_model;
    const std::vector<std::string> missing = missing_requirements(facts);
    if (!missing.empty()) {
        std::string message = "Context::adopt: device '" +
                              std::string(facts.properties.deviceName) + "' cannot be adopted: ";
        for (std::size_t i = 0; i < missing.size(); ++i) message += (i ? "; " : "") + missing[i];
        const bool caller_input = external.api_version == 0;
        return Error{caller_input ? ErrorCode::invalid_argument : ErrorCode::unsupported, message};
    }
    auto impl = std::make_unique<Impl>();
    impl->owns = false;
    impl->instance = external.instance;
    impl->physical = external.physical_device;
    impl->device = external.device;
    impl->queue_family = external.queue_family;
    impl->queue = external.queue;
    if (Status s = finish_setup(*impl); !s) return s.error();
    if (Status s = apply_choices(*impl, external.tuning); !s) return s.error();
    impl->open_pipeline_cache(external.pipeline_cache, external.caller_pipeline_cache);
    return std::unique_ptr<Context>(new Context(std::move(impl)));
}

const char* sort_path_name(SortPath path) {
    switch (path) {
        case SortPath::onesweep:
            return "onesweep";
        case SortPath::reduce_then_scan:
            return "reduce_then_scan";
        case SortPath::automatic:
            break;
    }
    return "automatic";
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
const PipelineCacheInfo& Context::pipeline_cache_info() const {
    return impl_->pipeline_cache_info;
}
Status Context::save_pipeline_cache() {
    return impl_->save_pipeline_cache(false);
}
std::uint32_t Context::pipelines_created() const {
    return impl_->pipelines_created.load();
}

Status Context::submit_and_wait_impl(void (*record)(VkCommandBuffer, void*), void* user) {
    Impl& impl = *impl_;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    if (Status s = allocate_command_buffer(impl.device, impl.pool, cmd); !s) return s;
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
