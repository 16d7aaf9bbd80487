// Headless Vulkan renderer (see renderer.hpp): an offscreen RGBA8 + D32 render pass, one cube
// mesh instanced over a box storage buffer, and draw commands either from the library's GPU
// frustum cull (LBVH traversal, exact front-to-back order) or from a CPU-filled buffer, both
// consumed by the same vkCmdDrawIndexedIndirectCount.
#include "renderer.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "broadphase/gpu_cull.hpp"
#include "broadphase/scene.hpp"

namespace broadphase::renderer {

namespace {

const std::uint32_t kCubeVert[] = {
#include "cube.vert.spv.inc"
};
const std::uint32_t kCubeFrag[] = {
#include "cube.frag.spv.inc"
};

constexpr VkFormat kColorFormat = VK_FORMAT_R8G8B8A8_UNORM;
constexpr VkFormat kDepthFormat = VK_FORMAT_D32_SFLOAT;
constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

// The unit cube: corner i has coordinates (bit 0, bit 1, bit 2) of i; 12 triangles.
constexpr float kCubeCorners[8][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0},
                                      {0, 0, 1}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}};
constexpr std::uint16_t kCubeIndices[36] = {
    0, 2, 6, 0, 6, 4,  // -x
    1, 5, 7, 1, 7, 3,  // +x
    0, 4, 5, 0, 5, 1,  // -y
    2, 3, 7, 2, 7, 6,  // +y
    0, 1, 3, 0, 3, 2,  // -z
    4, 6, 7, 4, 7, 5,  // +z
};

Error fail(ErrorCode code, const std::string& message) {
    return Error{code, message};
}

Error vk_fail(VkResult result, const std::string& what) {
    return fail(result == VK_ERROR_OUT_OF_HOST_MEMORY || result == VK_ERROR_OUT_OF_DEVICE_MEMORY
                    ? ErrorCode::out_of_memory
                    : ErrorCode::vulkan_error,
                what + " failed (VkResult " + std::to_string(int(result)) + ")");
}

#define RENDERER_VK_TRY(call, what)                                           \
    do {                                                                      \
        if (VkResult r_ = (call); r_ != VK_SUCCESS) return vk_fail(r_, what); \
    } while (0)

bool env_flag(const char* name) {
    const char* v = std::getenv(name);
    return v && *v && std::strcmp(v, "0") != 0;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                void* user) {
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        bool error = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        if (error) ++*static_cast<std::atomic<std::uint64_t>*>(user);
        std::fprintf(stderr, "[vulkan %s] %s\n", error ? "error" : "warning",
                     data->pMessage ? data->pMessage : "");
    }
    return VK_FALSE;
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

std::optional<std::uint32_t> graphics_compute_family(VkPhysicalDevice physical) {
    std::uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
    for (std::uint32_t i = 0; i < count; ++i)
        if ((families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) &&
            (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT))
            return i;
    return std::nullopt;
}

// Empty when the device can run the renderer, else what it lacks.
std::string missing_requirements(VkPhysicalDevice physical) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(physical, &props);
    if (props.apiVersion < VK_API_VERSION_1_2) return "Vulkan 1.2";
    if (!has_extension(physical, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME))
        return VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
    if (!graphics_compute_family(physical)) return "a graphics + compute queue family";
    VkPhysicalDeviceVulkan12Features features12{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &features12;
    vkGetPhysicalDeviceFeatures2(physical, &features);
    if (!features.features.drawIndirectFirstInstance)
        return "the drawIndirectFirstInstance feature";
    if (!features12.drawIndirectCount) return "the drawIndirectCount feature";
    VkFormatProperties color, depth;
    vkGetPhysicalDeviceFormatProperties(physical, kColorFormat, &color);
    vkGetPhysicalDeviceFormatProperties(physical, kDepthFormat, &depth);
    if (!(color.optimalTilingFeatures & VK_FORMAT_FEATURE_COLOR_ATTACHMENT_BIT) ||
        !(color.optimalTilingFeatures & VK_FORMAT_FEATURE_TRANSFER_SRC_BIT))
        return "R8G8B8A8_UNORM colour attachments";
    if (!(depth.optimalTilingFeatures & VK_FORMAT_FEATURE_DEPTH_STENCIL_ATTACHMENT_BIT))
        return "D32_SFLOAT depth attachments";
    return {};
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

}  // namespace

struct Renderer::Impl {
    RendererOptions options;
    std::atomic<std::uint64_t> validation_errors{0};
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkPhysicalDeviceMemoryProperties memory{};
    std::uint32_t max_draw_indirect_count = 0;
    VkDevice device = VK_NULL_HANDLE;
    std::uint32_t family = 0;
    VkQueue queue = VK_NULL_HANDLE;
    PFN_vkCmdPushDescriptorSetKHR push_descriptor = nullptr;

    // Renderer-owned Vulkan objects (the library's buffers below cannot be index/vertex/images).
    VkImage color_image = VK_NULL_HANDLE, depth_image = VK_NULL_HANDLE;
    VkDeviceMemory color_memory = VK_NULL_HANDLE, depth_memory = VK_NULL_HANDLE;
    VkImageView color_view = VK_NULL_HANDLE, depth_view = VK_NULL_HANDLE;
    VkRenderPass render_pass = VK_NULL_HANDLE;
    VkFramebuffer framebuffer = VK_NULL_HANDLE;
    VkBuffer mesh_buffer = VK_NULL_HANDLE;  // 36 uint16 indices then 8 corners (vec3)
    VkDeviceMemory mesh_memory = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;

    // The library over the renderer's device, and the scene's buffers.
    std::unique_ptr<gpu::Context> context;
    std::unique_ptr<gpu::Lbvh> lbvh;
    std::unique_ptr<gpu::Culler> culler;
    std::vector<Box> boxes;
    gpu::Buffer box_buffer, nodes, lbvh_scratch, cull_scratch;
    gpu::Buffer visible_ids, draw_commands, draw_count;  // written by the culler
    gpu::Buffer all_commands, all_count;                 // the unculled path, CPU-filled
    gpu::Buffer readback;                                // the colour image

    ~Impl();
    Status create_instance();
    Status create_device();
    Result<VkDeviceMemory> allocate(const VkMemoryRequirements& req, VkMemoryPropertyFlags want);
    Status create_targets();
    Status create_mesh();
    Status create_pipeline();
    Status record_frame(const Camera& camera, const Frustum& frustum, bool cull);
};

Renderer::Impl::~Impl() {
    if (device) vkDeviceWaitIdle(device);
    // Library objects first: they hold the device.
    box_buffer = {}, nodes = {}, lbvh_scratch = {}, cull_scratch = {};
    visible_ids = {}, draw_commands = {}, draw_count = {}, all_commands = {}, all_count = {};
    readback = {};
    culler.reset();
    lbvh.reset();
    context.reset();
    if (device) {
        if (fence) vkDestroyFence(device, fence, nullptr);
        if (pool) vkDestroyCommandPool(device, pool, nullptr);
        if (pipeline) vkDestroyPipeline(device, pipeline, nullptr);
        if (pipeline_layout) vkDestroyPipelineLayout(device, pipeline_layout, nullptr);
        if (set_layout) vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
        if (mesh_buffer) vkDestroyBuffer(device, mesh_buffer, nullptr);
        if (mesh_memory) vkFreeMemory(device, mesh_memory, nullptr);
        if (framebuffer) vkDestroyFramebuffer(device, framebuffer, nullptr);
        if (render_pass) vkDestroyRenderPass(device, render_pass, nullptr);
        if (color_view) vkDestroyImageView(device, color_view, nullptr);
        if (depth_view) vkDestroyImageView(device, depth_view, nullptr);
        if (color_image) vkDestroyImage(device, color_image, nullptr);
        if (depth_image) vkDestroyImage(device, depth_image, nullptr);
        if (color_memory) vkFreeMemory(device, color_memory, nullptr);
        if (depth_memory) vkFreeMemory(device, depth_memory, nullptr);
        vkDestroyDevice(device, nullptr);
    }
    if (messenger) {
        auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
        if (destroy) destroy(instance, messenger, nullptr);
    }
    if (instance) vkDestroyInstance(instance, nullptr);
}

Status Renderer::Impl::create_instance() {
    bool validation = options.validation || env_flag("BROADPHASE_VALIDATION");
    std::vector<const char*> layers, extensions;
    if (validation) {
        std::uint32_t count = 0;
        vkEnumerateInstanceLayerProperties(&count, nullptr);
        std::vector<VkLayerProperties> props(count);
        vkEnumerateInstanceLayerProperties(&count, props.data());
        if (std::none_of(props.begin(), props.end(), [](const VkLayerProperties& p) {
                return std::strcmp(p.layerName, kValidationLayer) == 0;
            }))
            return fail(ErrorCode::unsupported,
                        "validation requested but VK_LAYER_KHRONOS_validation is not installed "
                        "(Debian package vulkan-validationlayers)");
        layers.push_back(kValidationLayer);
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "broadphase_renderer";
    app.apiVersion = VK_API_VERSION_1_2;
    VkDebugUtilsMessengerCreateInfoEXT messenger_info{
        VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                     VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger_info.pfnUserCallback = on_debug_message;
    messenger_info.pUserData = &validation_errors;
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.pApplicationInfo = &app;
    info.enabledLayerCount = std::uint32_t(layers.size());
    info.ppEnabledLayerNames = layers.data();
    info.enabledExtensionCount = std::uint32_t(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    if (validation) info.pNext = &messenger_info;
    RENDERER_VK_TRY(vkCreateInstance(&info, nullptr, &instance), "vkCreateInstance");
    if (validation) {
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
        if (create) create(instance, &messenger_info, nullptr, &messenger);
    }
    return {};
}

Status Renderer::Impl::create_device() {
    std::uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance, &count, nullptr);
    std::vector<VkPhysicalDevice> physicals(count);
    vkEnumeratePhysicalDevices(instance, &count, physicals.data());
    if (physicals.empty())
        return fail(ErrorCode::unsupported,
                    "no Vulkan device found (install mesa-vulkan-drivers for lavapipe)");
    std::string wanted = options.device;
    if (wanted.empty() && std::getenv("BROADPHASE_DEVICE"))
        wanted = std::getenv("BROADPHASE_DEVICE");
    std::string report;
    int best = 1 << 30;
    for (std::size_t i = 0; i < physicals.size(); ++i) {
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(physicals[i], &props);
        std::string name = props.deviceName;
        if (!wanted.empty() && std::to_string(i) != wanted &&
            lower(name).find(lower(wanted)) == std::string::npos)
            continue;
        std::string missing = missing_requirements(physicals[i]);
        if (!missing.empty()) {
            report += (report.empty() ? "" : "; ") + name + " lacks " + missing;
            continue;
        }
        if (type_rank(props.deviceType) < best) {
            best = type_rank(props.deviceType);
            physical = physicals[i];
            max_draw_indirect_count = props.limits.maxDrawIndirectCount;
        }
    }
    if (!physical)
        return fail(ErrorCode::unsupported,
                    "no usable Vulkan device" +
                        (wanted.empty() ? "" : " matching '" + wanted + "'") +
                        (report.empty() ? "" : " (" + report + ")"));
    vkGetPhysicalDeviceMemoryProperties(physical, &memory);
    family = *graphics_compute_family(physical);

    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue_info.queueFamilyIndex = family;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    VkPhysicalDeviceVulkan12Features features12{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    features12.drawIndirectCount = VK_TRUE;
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &features12;
    features.features.drawIndirectFirstInstance = VK_TRUE;
    const char* extensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    info.pNext = &features;
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &queue_info;
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = extensions;
    RENDERER_VK_TRY(vkCreateDevice(physical, &info, nullptr, &device), "vkCreateDevice");
    vkGetDeviceQueue(device, family, 0, &queue);
    push_descriptor = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
        vkGetDeviceProcAddr(device, "vkCmdPushDescriptorSetKHR"));
    if (!push_descriptor)
        return fail(ErrorCode::unsupported, "vkCmdPushDescriptorSetKHR not found");

    // The library is told how the instance and device were created (Vulkan cannot be asked):
    // adopt checks the version and extensions against what it needs.
    auto adopted = gpu::Context::adopt(
        {instance, physical, device, family, queue, VK_API_VERSION_1_2, extensions});
    if (!adopted) return adopted.error();
    context = std::move(*adopted);
    return {};
}

Result<VkDeviceMemory> Renderer::Impl::allocate(const VkMemoryRequirements& req,
                                                VkMemoryPropertyFlags want) {
    for (std::uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
        if (!(req.memoryTypeBits & (1u << i)) ||
            (memory.memoryTypes[i].propertyFlags & want) != want)
            continue;
        VkMemoryAllocateInfo info{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
        info.allocationSize = req.size;
        info.memoryTypeIndex = i;
        VkDeviceMemory result = VK_NULL_HANDLE;
        RENDERER_VK_TRY(vkAllocateMemory(device, &info, nullptr, &result), "vkAllocateMemory");
        return result;
    }
    return fail(ErrorCode::unsupported, "no suitable memory type");
}

Status Renderer::Impl::create_targets() {
    auto make = [&](VkFormat format, VkImageUsageFlags usage, VkImageAspectFlags aspect,
                    VkImage& image, VkDeviceMemory& mem, VkImageView& view) -> Status {
        VkImageCreateInfo info{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
        info.imageType = VK_IMAGE_TYPE_2D;
        info.format = format;
        info.extent = {options.width, options.height, 1};
        info.mipLevels = 1;
        info.arrayLayers = 1;
        info.samples = VK_SAMPLE_COUNT_1_BIT;
        info.tiling = VK_IMAGE_TILING_OPTIMAL;
        info.usage = usage;
        info.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
        RENDERER_VK_TRY(vkCreateImage(device, &info, nullptr, &image), "vkCreateImage");
        VkMemoryRequirements req;
        vkGetImageMemoryRequirements(device, image, &req);
        auto m = allocate(req, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
        if (!m) return m.error();
        mem = *m;
        RENDERER_VK_TRY(vkBindImageMemory(device, image, mem, 0), "vkBindImageMemory");
        VkImageViewCreateInfo view_info{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
        view_info.image = image;
        view_info.viewType = VK_IMAGE_VIEW_TYPE_2D;
        view_info.format = format;
        view_info.subresourceRange = {aspect, 0, 1, 0, 1};
        RENDERER_VK_TRY(vkCreateImageView(device, &view_info, nullptr, &view), "vkCreateImageView");
        return {};
    };
    if (Status s = make(kColorFormat,
                        VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                        VK_IMAGE_ASPECT_COLOR_BIT, color_image, color_memory, color_view);
        !s)
        return s;
    if (Status s = make(kDepthFormat, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                        VK_IMAGE_ASPECT_DEPTH_BIT, depth_image, depth_memory, depth_view);
        !s)
        return s;

    VkAttachmentDescription attachments[2]{};
    attachments[0].format = kColorFormat;
    attachments[0].samples = VK_SAMPLE_COUNT_1_BIT;
    attachments[0].loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
    attachments[0].storeOp = VK_ATTACHMENT_STORE_OP_STORE;
    attachments[0].stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
    attachments[0].stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    attachments[0].initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    attachments[0].finalLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    attachments[1] = attachments[0];
    attachments[1].format = kDepthFormat;
    attachments[1].storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    attachments[1].finalLayout = VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL;
    VkAttachmentReference color_ref{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
    VkAttachmentReference depth_ref{1, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL};
    VkSubpassDescription subpass{};
    subpass.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
    subpass.colorAttachmentCount = 1;
    subpass.pColorAttachments = &color_ref;
    subpass.pDepthStencilAttachment = &depth_ref;
    // Previous frame's copy and depth use before this frame's clears; colour writes before the
    // copy to the readback buffer.
    VkSubpassDependency deps[2]{};
    deps[0].srcSubpass = VK_SUBPASS_EXTERNAL;
    deps[0].dstSubpass = 0;
    deps[0].srcStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT |
                           VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT |
                           VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT;
    deps[0].srcAccessMask = VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;
    deps[0].dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT |
                           VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT |
                           VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT;
    deps[0].dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT |
                            VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT |
                            VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;
    deps[1].srcSubpass = 0;
    deps[1].dstSubpass = VK_SUBPASS_EXTERNAL;
    deps[1].srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    deps[1].srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
    deps[1].dstStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT;
    deps[1].dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    VkRenderPassCreateInfo pass_info{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
    pass_info.attachmentCount = 2;
    pass_info.pAttachments = attachments;
    pass_info.subpassCount = 1;
    pass_info.pSubpasses = &subpass;
    pass_info.dependencyCount = 2;
    pass_info.pDependencies = deps;
    RENDERER_VK_TRY(vkCreateRenderPass(device, &pass_info, nullptr, &render_pass),
                    "vkCreateRenderPass");
    VkImageView views[2] = {color_view, depth_view};
    VkFramebufferCreateInfo fb_info{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
    fb_info.renderPass = render_pass;
    fb_info.attachmentCount = 2;
    fb_info.pAttachments = views;
    fb_info.width = options.width;
    fb_info.height = options.height;
    fb_info.layers = 1;
    RENDERER_VK_TRY(vkCreateFramebuffer(device, &fb_info, nullptr, &framebuffer),
                    "vkCreateFramebuffer");

    auto rb = context->create_buffer(VkDeviceSize(options.width) * options.height * 4,
                                     gpu::MemoryKind::readback);
    if (!rb) return rb.error();
    readback = std::move(*rb);
    return {};
}

Status Renderer::Impl::create_mesh() {
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = sizeof(kCubeCorners) + sizeof(kCubeIndices);
    info.usage = VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | VK_BUFFER_USAGE_INDEX_BUFFER_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    RENDERER_VK_TRY(vkCreateBuffer(device, &info, nullptr, &mesh_buffer), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, mesh_buffer, &req);
    auto m =
        allocate(req, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (!m) return m.error();
    mesh_memory = *m;
    RENDERER_VK_TRY(vkBindBufferMemory(device, mesh_buffer, mesh_memory, 0), "vkBindBufferMemory");
    void* mapped = nullptr;
    RENDERER_VK_TRY(vkMapMemory(device, mesh_memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
    std::memcpy(mapped, kCubeIndices, sizeof(kCubeIndices));
    std::memcpy(static_cast<char*>(mapped) + sizeof(kCubeIndices), kCubeCorners,
                sizeof(kCubeCorners));
    vkUnmapMemory(device, mesh_memory);
    return {};
}

Status Renderer::Impl::create_pipeline() {
    VkDescriptorSetLayoutBinding binding{};
    binding.binding = 0;
    binding.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    binding.descriptorCount = 1;
    binding.stageFlags = VK_SHADER_STAGE_VERTEX_BIT;
    VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    set_info.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    set_info.bindingCount = 1;
    set_info.pBindings = &binding;
    RENDERER_VK_TRY(vkCreateDescriptorSetLayout(device, &set_info, nullptr, &set_layout),
                    "vkCreateDescriptorSetLayout");
    VkPushConstantRange range{VK_SHADER_STAGE_VERTEX_BIT, 0, 64};
    VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &set_layout;
    layout_info.pushConstantRangeCount = 1;
    layout_info.pPushConstantRanges = &range;
    RENDERER_VK_TRY(vkCreatePipelineLayout(device, &layout_info, nullptr, &pipeline_layout),
                    "vkCreatePipelineLayout");

    VkShaderModule modules[2] = {};
    std::span<const std::uint32_t> codes[2] = {kCubeVert, kCubeFrag};
    for (int i = 0; i < 2; ++i) {
        VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
        info.codeSize = codes[i].size_bytes();
        info.pCode = codes[i].data();
        if (VkResult r = vkCreateShaderModule(device, &info, nullptr, &modules[i]);
            r != VK_SUCCESS) {
            if (i == 1) vkDestroyShaderModule(device, modules[0], nullptr);
            return vk_fail(r, "vkCreateShaderModule");
        }
    }
    VkPipelineShaderStageCreateInfo stages[2]{};
    for (int i = 0; i < 2; ++i) {
        stages[i].sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
        stages[i].stage = i == 0 ? VK_SHADER_STAGE_VERTEX_BIT : VK_SHADER_STAGE_FRAGMENT_BIT;
        stages[i].module = modules[i];
        stages[i].pName = "main";
    }
    VkVertexInputBindingDescription vertex_binding{0, 3 * sizeof(float),
                                                   VK_VERTEX_INPUT_RATE_VERTEX};
    VkVertexInputAttributeDescription attribute{0, 0, VK_FORMAT_R32G32B32_SFLOAT, 0};
    VkPipelineVertexInputStateCreateInfo vertex_input{
        VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
    vertex_input.vertexBindingDescriptionCount = 1;
    vertex_input.pVertexBindingDescriptions = &vertex_binding;
    vertex_input.vertexAttributeDescriptionCount = 1;
    vertex_input.pVertexAttributeDescriptions = &attribute;
    VkPipelineInputAssemblyStateCreateInfo assembly{
        VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
    assembly.topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;
    VkViewport viewport{0, 0, float(options.width), float(options.height), 0, 1};
    VkRect2D scissor{{0, 0}, {options.width, options.height}};
    VkPipelineViewportStateCreateInfo viewport_state{
        VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
    viewport_state.viewportCount = 1;
    viewport_state.pViewports = &viewport;
    viewport_state.scissorCount = 1;
    viewport_state.pScissors = &scissor;
    VkPipelineRasterizationStateCreateInfo raster{
        VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
    raster.polygonMode = VK_POLYGON_MODE_FILL;
    raster.cullMode = VK_CULL_MODE_NONE;  // the depth test alone decides; winding never matters
    raster.frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE;
    raster.lineWidth = 1.0f;
    VkPipelineMultisampleStateCreateInfo multisample{
        VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
    multisample.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
    VkPipelineDepthStencilStateCreateInfo depth{
        VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO};
    depth.depthTestEnable = VK_TRUE;
    depth.depthWriteEnable = VK_TRUE;
    depth.depthCompareOp = VK_COMPARE_OP_LESS;
    VkPipelineColorBlendAttachmentState blend_attachment{};
    blend_attachment.colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT |
                                      VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT;
    VkPipelineColorBlendStateCreateInfo blend{
        VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
    blend.attachmentCount = 1;
    blend.pAttachments = &blend_attachment;
    VkGraphicsPipelineCreateInfo info{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
    info.stageCount = 2;
    info.pStages = stages;
    info.pVertexInputState = &vertex_input;
    info.pInputAssemblyState = &assembly;
    info.pViewportState = &viewport_state;
    info.pRasterizationState = &raster;
    info.pMultisampleState = &multisample;
    info.pDepthStencilState = &depth;
    info.pColorBlendState = &blend;
    info.layout = pipeline_layout;
    info.renderPass = render_pass;
    VkResult r = vkCreateGraphicsPipelines(device, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline);
    vkDestroyShaderModule(device, modules[0], nullptr);
    vkDestroyShaderModule(device, modules[1], nullptr);
    if (r != VK_SUCCESS) return vk_fail(r, "vkCreateGraphicsPipelines");

    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = family;
    RENDERER_VK_TRY(vkCreateCommandPool(device, &pool_info, nullptr, &pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = pool;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    RENDERER_VK_TRY(vkAllocateCommandBuffers(device, &alloc, &cmd), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    RENDERER_VK_TRY(vkCreateFence(device, &fence_info, nullptr, &fence), "vkCreateFence");
    return {};
}

namespace {

// Makes earlier compute and transfer writes visible to the given later stages and accesses, and
// orders them after earlier indirect and vertex reads (the previous frame's draw).
void barrier(VkCommandBuffer cmd, VkPipelineStageFlags dst_stages, VkAccessFlags dst_access) {
    VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    b.dstAccessMask = dst_access;
    vkCmdPipelineBarrier(cmd,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                             VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT |
                             VK_PIPELINE_STAGE_VERTEX_SHADER_BIT,
                         dst_stages, 0, 1, &b, 0, nullptr, 0, nullptr);
}

}  // namespace

Status Renderer::Impl::record_frame(const Camera& camera, const Frustum& frustum, bool cull) {
    auto n = std::uint32_t(boxes.size());
    // Uploads of earlier submissions (boxes, the CPU-filled commands) and the LBVH build.
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    VkBuffer commands = all_commands.handle(), count = all_count.handle();
    if (cull && n > 0) {
        gpu::CullOutput out{gpu::whole(visible_ids), gpu::whole(draw_commands),
                            gpu::whole(draw_count), n};
        if (Status s = culler->record(cmd, {gpu::whole(nodes), n}, frustum, CullOrder::exact,
                                      gpu::whole(cull_scratch), out);
            !s)
            return s;
        commands = draw_commands.handle();
        count = draw_count.handle();
    }
    barrier(cmd, VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_VERTEX_SHADER_BIT,
            VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_SHADER_READ_BIT);

    VkClearValue clears[2];
    clears[0].color = {{kClearColor[0] / 255.0f, kClearColor[1] / 255.0f, kClearColor[2] / 255.0f,
                        kClearColor[3] / 255.0f}};
    clears[1].depthStencil = {1.0f, 0};
    VkRenderPassBeginInfo begin{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
    begin.renderPass = render_pass;
    begin.framebuffer = framebuffer;
    begin.renderArea = {{0, 0}, {options.width, options.height}};
    begin.clearValueCount = 2;
    begin.pClearValues = clears;
    vkCmdBeginRenderPass(cmd, &begin, VK_SUBPASS_CONTENTS_INLINE);
    if (n > 0) {
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline);
        VkDescriptorBufferInfo box_info{box_buffer.handle(), 0, VK_WHOLE_SIZE};
        VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        write.dstBinding = 0;
        write.descriptorCount = 1;
        write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        write.pBufferInfo = &box_info;
        push_descriptor(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline_layout, 0, 1, &write);
        std::array<float, 16> view_projection = camera.view_projection();
        vkCmdPushConstants(cmd, pipeline_layout, VK_SHADER_STAGE_VERTEX_BIT, 0, 64,
                           view_projection.data());
        // Indices at offset 0: Mesa 22.3 lavapipe ignores the index buffer offset of indirect
        // indexed draws.
        VkDeviceSize corners_offset = sizeof(kCubeIndices);
        vkCmdBindVertexBuffers(cmd, 0, 1, &mesh_buffer, &corners_offset);
        vkCmdBindIndexBuffer(cmd, mesh_buffer, 0, VK_INDEX_TYPE_UINT16);
        vkCmdDrawIndexedIndirectCount(cmd, commands, 0, count, 0, n,
                                      sizeof(VkDrawIndexedIndirectCommand));
    }
    vkCmdEndRenderPass(cmd);

    VkBufferImageCopy copy{};
    copy.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    copy.imageExtent = {options.width, options.height, 1};
    vkCmdCopyImageToBuffer(cmd, color_image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                           readback.handle(), 1, &copy);
    VkMemoryBarrier host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &host, 0, nullptr, 0, nullptr);
    return {};
}

Renderer::Renderer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Renderer::~Renderer() = default;

Result<std::unique_ptr<Renderer>> Renderer::create(const RendererOptions& options) {
    if (options.width == 0 || options.height == 0 || options.width > 16384 ||
        options.height > 16384)
        return fail(ErrorCode::invalid_argument, "image size must be 1..16384 pixels per side");
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    if (Status s = impl->create_instance(); !s) return s.error();
    if (Status s = impl->create_device(); !s) return s.error();
    if (Status s = impl->create_targets(); !s) return s.error();
    if (Status s = impl->create_mesh(); !s) return s.error();
    if (Status s = impl->create_pipeline(); !s) return s.error();
    auto lbvh = gpu::Lbvh::create(*impl->context);
    if (!lbvh) return lbvh.error();
    impl->lbvh = std::move(*lbvh);
    auto culler = gpu::Culler::create(*impl->context);
    if (!culler) return culler.error();
    impl->culler = std::move(*culler);
    return std::unique_ptr<Renderer>(new Renderer(std::move(impl)));
}

gpu::Context& Renderer::context() {
    return *impl_->context;
}

std::uint64_t Renderer::validation_errors() const {
    return impl_->validation_errors.load();
}

Status Renderer::set_scene(std::span<const Box> boxes) {
    Impl& impl = *impl_;
    if (Status s = validate_boxes(boxes); !s) return s;
    if (boxes.size() > impl.max_draw_indirect_count)
        return fail(ErrorCode::limit_exceeded,
                    std::to_string(boxes.size()) +
                        " boxes exceed the device's maxDrawIndirectCount (" +
                        std::to_string(impl.max_draw_indirect_count) + ")");
    if (boxes.size() >= (std::size_t(1) << 31))
        return fail(ErrorCode::limit_exceeded, "too many boxes");
    impl.boxes.assign(boxes.begin(), boxes.end());
    auto n = std::uint32_t(boxes.size());
    gpu::Context& context = *impl.context;
    auto make = [&](gpu::Buffer& buffer, VkDeviceSize size) -> Status {
        auto b = context.create_buffer(size, gpu::MemoryKind::device);
        if (!b) return b.error();
        buffer = std::move(*b);
        return {};
    };
    const gpu::LbvhRequirements req = impl.lbvh->requirements(n);
    for (Status s :
         {make(impl.box_buffer, VkDeviceSize(n) * sizeof(gpu_layout::GpuBox)),
          make(impl.nodes, req.nodes), make(impl.lbvh_scratch, req.scratch),
          make(impl.cull_scratch, impl.culler->scratch_size(n)),
          make(impl.visible_ids, VkDeviceSize(n) * 4),
          make(impl.draw_commands, VkDeviceSize(n) * sizeof(VkDrawIndexedIndirectCommand)),
          make(impl.draw_count, 8),
          make(impl.all_commands, VkDeviceSize(n) * sizeof(VkDrawIndexedIndirectCommand)),
          make(impl.all_count, 8)})
        if (!s) return s;
    if (n == 0) return {};
    std::vector<gpu_layout::GpuBox> gpu_boxes = gpu::to_gpu_boxes(boxes);
    if (Status s = context.upload(impl.box_buffer, gpu_boxes.data(),
                                  gpu_boxes.size() * sizeof(gpu_layout::GpuBox));
        !s)
        return s;
    std::uint32_t counts[2] = {n, n};
    if (Status s = context.upload(impl.all_count, counts, sizeof(counts)); !s) return s;
    Status recorded;
    Status submitted = context.submit_and_wait([&](VkCommandBuffer cmd) {
        barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
        recorded = impl.lbvh->record_build(
            cmd,
            {gpu::whole(impl.box_buffer), gpu::whole(impl.nodes), gpu::whole(impl.lbvh_scratch)},
            n);
    });
    return submitted ? recorded : submitted;
}

std::vector<std::uint32_t> front_to_back(const Vec3& eye, std::span<const Box> boxes) {
    std::vector<std::pair<float, std::uint32_t>> keyed(boxes.size());
    for (std::size_t i = 0; i < boxes.size(); ++i)
        keyed[i] = {point_box_distance(eye, boxes[i]), std::uint32_t(i)};
    std::sort(keyed.begin(), keyed.end());
    std::vector<std::uint32_t> ids(boxes.size());
    for (std::size_t i = 0; i < keyed.size(); ++i) ids[i] = keyed[i].second;
    return ids;
}

Result<Frame> Renderer::render(const Camera& camera, bool cull) {
    Impl& impl = *impl_;
    auto frustum = Frustum::from_camera(camera);
    if (!frustum) return frustum.error();
    auto n = std::uint32_t(impl.boxes.size());
    Frame frame;
    frame.width = impl.options.width;
    frame.height = impl.options.height;
    if (!cull && n > 0) {
        frame.drawn_ids = front_to_back(camera.eye, impl.boxes);
        std::vector<VkDrawIndexedIndirectCommand> commands(n);
        for (std::uint32_t i = 0; i < n; ++i) commands[i] = {36, 1, 0, 0, frame.drawn_ids[i]};
        if (Status s = impl.context->upload(impl.all_commands, commands.data(),
                                            commands.size() * sizeof(commands[0]));
            !s)
            return s.error();
        frame.visible_count = n;
    }

    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    RENDERER_VK_TRY(vkResetCommandBuffer(impl.cmd, 0), "vkResetCommandBuffer");
    RENDERER_VK_TRY(vkBeginCommandBuffer(impl.cmd, &begin), "vkBeginCommandBuffer");
    Status recorded = impl.record_frame(camera, *frustum, cull);
    RENDERER_VK_TRY(vkEndCommandBuffer(impl.cmd), "vkEndCommandBuffer");
    if (!recorded) return recorded.error();
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &impl.cmd;
    RENDERER_VK_TRY(vkResetFences(impl.device, 1, &impl.fence), "vkResetFences");
    RENDERER_VK_TRY(vkQueueSubmit(impl.queue, 1, &submit, impl.fence), "vkQueueSubmit");
    RENDERER_VK_TRY(vkWaitForFences(impl.device, 1, &impl.fence, VK_TRUE, UINT64_MAX),
                    "vkWaitForFences");

    frame.rgba.resize(std::size_t(frame.width) * frame.height * 4);
    std::memcpy(frame.rgba.data(), impl.readback.mapped(), frame.rgba.size());
    if (cull && n > 0) {
        std::uint32_t counts[2] = {};
        if (Status s = impl.context->download(impl.draw_count, counts, sizeof(counts)); !s)
            return s.error();
        frame.visible_count = counts[1];
        frame.drawn_ids.resize(std::min(counts[0], n));
        if (!frame.drawn_ids.empty())
            if (Status s = impl.context->download(impl.visible_ids, frame.drawn_ids.data(),
                                                  frame.drawn_ids.size() * 4);
                !s)
                return s.error();
    }
    return frame;
}

tool::Image frame_image(const Frame& frame) {
    tool::Image image(int(frame.width), int(frame.height));
    for (std::size_t i = 0; i < image.pixels.size(); ++i)
        image.pixels[i] = {frame.rgba[4 * i], frame.rgba[4 * i + 1], frame.rgba[4 * i + 2]};
    return image;
}

}  // namespace broadphase::renderer
