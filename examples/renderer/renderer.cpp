// Headless Vulkan renderer (see renderer.hpp): an offscreen RGBA8 + D32 render pass, meshes with
// levels of detail instanced over a box storage buffer (each stretched over its box), and draw
// commands grouped per mesh either from the library's GPU frustum cull (LBVH traversal, exact
// front-to-back order, LOD by distance) or from a CPU-filled buffer (the LOD chosen by the
// cull's CPU twin), both consumed by the same vkCmdDrawIndexedIndirectCount per mesh. Two-phase
// occlusion (Haar & Aaltonen, "GPU-Driven Rendering Pipelines", SIGGRAPH 2015) splits the frame
// into two passes over one framebuffer with the depth copied into a pyramid between them.
#include "renderer.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/scene.hpp"
#include "lbvh_cull.hpp"

namespace broadphase::renderer {

namespace {

const std::uint32_t kMeshVert[] = {
#include "mesh.vert.spv.inc"
};
const std::uint32_t kMeshFrag[] = {
#include "mesh.frag.spv.inc"
};

constexpr VkFormat kColorFormat = VK_FORMAT_R8G8B8A8_UNORM;
constexpr VkFormat kDepthFormat = VK_FORMAT_D32_SFLOAT;
constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

// Timestamps of a frame: its start, after the tree update, the main (or phase 1) cull's
// kCullQueries, the extra views' kCullQueries, after the extra view's pass, after phase 1's
// pass, after the depth copy and pyramid, phase 2's cull's kCullQueries, after the last pass.
// Stages a frame does not run get back-to-back timestamps (0 ms).
constexpr std::uint32_t kQueryStart = 0, kQueryTree = 1, kQueryCull = 2,
                        kQueryViews = kQueryCull + gpu::kCullQueries,
                        kQueryExtraDraw = kQueryViews + gpu::kCullQueries,
                        kQueryEarlyDraw = kQueryExtraDraw + 1, kQueryPyramid = kQueryEarlyDraw + 1,
                        kQueryLate = kQueryPyramid + 1, kQueryDraw = kQueryLate + gpu::kCullQueries,
                        kFrameQueries = kQueryDraw + 1;

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
    if (!features12.vulkanMemoryModel || !features12.vulkanMemoryModelDeviceScope)
        return "the vulkanMemoryModel and vulkanMemoryModelDeviceScope features";
    VkFormatProperties color, depth;
    vkGetPhysicalDeviceFormatProperties(physical, kColorFormat, &color);
    vkGetPhysicalDeviceFormatProperties(physical, kDepthFormat, &depth);
    if (!(color.optimalTilingFeatures & VK_FORMAT_FEATURE_COLOR_ATTACHMENT_BIT) ||
        !(color.optimalTilingFeatures & VK_FORMAT_FEATURE_TRANSFER_SRC_BIT))
        return "R8G8B8A8_UNORM colour attachments";
    if (!(depth.optimalTilingFeatures & VK_FORMAT_FEATURE_DEPTH_STENCIL_ATTACHMENT_BIT) ||
        !(depth.optimalTilingFeatures & VK_FORMAT_FEATURE_TRANSFER_SRC_BIT))
        return "D32_SFLOAT depth attachments that can be copied";
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
    VkRenderPass render_pass = VK_NULL_HANDLE;                               // a whole frame
    VkRenderPass first_pass = VK_NULL_HANDLE, second_pass = VK_NULL_HANDLE;  // two-phase
    VkFramebuffer framebuffer = VK_NULL_HANDLE;
    // Every mesh LOD's vertices (vec3, 12 bytes each) and uint32 indices, one buffer each; the
    // unit cube first (vertex 0, index 0), which record_views' draws of extra views use.
    VkBuffer vertex_buffer = VK_NULL_HANDLE, index_buffer = VK_NULL_HANDLE;
    VkDeviceMemory vertex_memory = VK_NULL_HANDLE, index_memory = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkQueryPool queries = VK_NULL_HANDLE;  // kFrameQueries timestamps per frame

    // The library over the renderer's device, and the scene's buffers.
    std::unique_ptr<gpu::Context> context;
    std::unique_ptr<gpu::MovingScene> moving;  // the boxes' tree (pairs = false)
    std::unique_ptr<gpu::Culler> culler;
    std::vector<gpu::Mesh> meshes;            // index ranges and switch distances
    std::vector<gpu_layout::CullMesh> table;  // pack_mesh_table(meshes), no groups
    std::vector<std::array<float, 4>> tints;
    std::vector<Box> boxes;
    std::vector<std::uint32_t> mesh_ids;
    std::vector<std::uint32_t> group_capacity, group_first;  // per mesh: its instance count
    bool moved = false;  // boxes changed since the tree was last updated
    gpu::Buffer box_buffer, mesh_id_buffer, tint_buffer, grouped_table, cull_scratch;
    // A cull's grouped output (gpu::CullOutput and CullLods' group_counts, draw_lods).
    struct CullSet {
        gpu::Buffer ids, commands, count, groups, lods;
    };
    CullSet main_set;        // the frustum cull, or two-phase occlusion's phase 1
    CullSet late_set;        // two-phase occlusion's phase 2
    gpu::Buffer pyramid;     // depth pyramid: level 0 copied from the depth image, then built
    gpu::Buffer visibility;  // per box: the last occlusion frame that found it visible
    std::uint32_t occlusion_frame = 1;
    gpu::Buffer all_commands, all_counts;  // the unculled path, CPU-filled (counts per mesh)
    gpu::Buffer views_scratch;             // record_views: scratch, then per view its outputs
    std::vector<gpu::Buffer> view_ids, view_commands, view_counts;
    gpu::Buffer readback;        // the colour image
    gpu::Buffer extra_readback;  // extra view 0's depth image (floats)

    ~Impl();
    Status create_instance();
    Status create_device();
    Result<VkDeviceMemory> allocate(const VkMemoryRequirements& req, VkMemoryPropertyFlags want);
    Status create_targets();
    Status create_pipeline();
    Status upload_meshes(std::span<const RenderMesh> render_meshes);
    void begin_pass(VkRenderPass pass, const std::array<float, 16>& view_projection);
    void copy_color(const gpu::Buffer& dst);
    void draw_groups(VkBuffer commands, VkBuffer counts);
    Status record_frame(const Camera& camera, const Frustum& frustum, CullMode mode,
                        std::span<const Frustum> view_frusta, std::span<const ExtraView> extra);
    // Appends a cull set's draws, group by group, to the frame.
    Status read_set(const CullSet& set, Frame& frame);
};

Renderer::Impl::~Impl() {
    if (device) vkDeviceWaitIdle(device);
    // Library objects first: they hold the device.
    box_buffer = {}, mesh_id_buffer = {}, tint_buffer = {}, grouped_table = {}, cull_scratch = {};
    main_set = {}, late_set = {}, pyramid = {}, visibility = {};
    all_commands = {}, all_counts = {}, views_scratch = {};
    view_ids.clear(), view_commands.clear(), view_counts.clear();
    readback = {}, extra_readback = {};
    culler.reset();
    moving.reset();
    context.reset();
    if (device) {
        if (queries) vkDestroyQueryPool(device, queries, nullptr);
        if (fence) vkDestroyFence(device, fence, nullptr);
        if (pool) vkDestroyCommandPool(device, pool, nullptr);
        if (pipeline) vkDestroyPipeline(device, pipeline, nullptr);
        if (pipeline_layout) vkDestroyPipelineLayout(device, pipeline_layout, nullptr);
        if (set_layout) vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
        if (vertex_buffer) vkDestroyBuffer(device, vertex_buffer, nullptr);
        if (index_buffer) vkDestroyBuffer(device, index_buffer, nullptr);
        if (vertex_memory) vkFreeMemory(device, vertex_memory, nullptr);
        if (index_memory) vkFreeMemory(device, index_memory, nullptr);
        if (framebuffer) vkDestroyFramebuffer(device, framebuffer, nullptr);
        for (VkRenderPass pass : {render_pass, first_pass, second_pass})
            if (pass) vkDestroyRenderPass(device, pass, nullptr);
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
    features12.vulkanMemoryModel = VK_TRUE;  // the library's LBVH build needs both
    features12.vulkanMemoryModelDeviceScope = VK_TRUE;
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
    // adopt checks the version, extensions and features against what it needs.
    gpu::ExternalDevice external{instance, physical,           device,    family,
                                 queue,    VK_API_VERSION_1_2, extensions};
    external.vulkan_memory_model = true;
    auto adopted = gpu::Context::adopt(external);
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
    if (Status s =
            make(kDepthFormat,
                 VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                 VK_IMAGE_ASPECT_DEPTH_BIT, depth_image, depth_memory, depth_view);
        !s)
        return s;

    // Three compatible passes over one framebuffer: a whole frame (clear, colour left for the
    // readback copy); two-phase occlusion's first pass (clear, colour kept, depth left for the
    // copy into the depth pyramid) and its second (both loaded, colour left for the readback).
    // Wide external dependencies: every earlier attachment, transfer and draw access before the
    // pass, every attachment access of the pass before later transfers and passes.
    auto make_pass = [&](bool load, VkImageLayout color_initial, VkImageLayout color_final,
                         VkImageLayout depth_initial, VkImageLayout depth_final, bool store_depth,
                         VkRenderPass& pass) -> Status {
        VkAttachmentDescription attachments[2]{};
        for (VkAttachmentDescription& a : attachments) {
            a.samples = VK_SAMPLE_COUNT_1_BIT;
            a.loadOp = load ? VK_ATTACHMENT_LOAD_OP_LOAD : VK_ATTACHMENT_LOAD_OP_CLEAR;
            a.stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
            a.stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
        }
        attachments[0].format = kColorFormat;
        attachments[0].storeOp = VK_ATTACHMENT_STORE_OP_STORE;
        attachments[0].initialLayout = color_initial;
        attachments[0].finalLayout = color_final;
        attachments[1].format = kDepthFormat;
        attachments[1].storeOp =
            store_depth ? VK_ATTACHMENT_STORE_OP_STORE : VK_ATTACHMENT_STORE_OP_DONT_CARE;
        attachments[1].initialLayout = depth_initial;
        attachments[1].finalLayout = depth_final;
        VkAttachmentReference color_ref{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
        VkAttachmentReference depth_ref{1, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL};
        VkSubpassDescription subpass{};
        subpass.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
        subpass.colorAttachmentCount = 1;
        subpass.pColorAttachments = &color_ref;
        subpass.pDepthStencilAttachment = &depth_ref;
        const VkPipelineStageFlags attachment_stages =
            VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT |
            VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT | VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT;
        const VkAccessFlags attachment_access = VK_ACCESS_COLOR_ATTACHMENT_READ_BIT |
                                                VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT |
                                                VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT |
                                                VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;
        VkSubpassDependency deps[2]{};
        deps[0].srcSubpass = VK_SUBPASS_EXTERNAL;
        deps[0].dstSubpass = 0;
        deps[0].srcStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT | attachment_stages;
        deps[0].srcAccessMask =
            VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;
        deps[0].dstStageMask = attachment_stages;
        deps[0].dstAccessMask = attachment_access;
        deps[1].srcSubpass = 0;
        deps[1].dstSubpass = VK_SUBPASS_EXTERNAL;
        deps[1].srcStageMask = attachment_stages;
        deps[1].srcAccessMask =
            VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;
        deps[1].dstStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT | attachment_stages;
        deps[1].dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | attachment_access;
        VkRenderPassCreateInfo pass_info{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
        pass_info.attachmentCount = 2;
        pass_info.pAttachments = attachments;
        pass_info.subpassCount = 1;
        pass_info.pSubpasses = &subpass;
        pass_info.dependencyCount = 2;
        pass_info.pDependencies = deps;
        RENDERER_VK_TRY(vkCreateRenderPass(device, &pass_info, nullptr, &pass),
                        "vkCreateRenderPass");
        return {};
    };
    const VkImageLayout undefined = VK_IMAGE_LAYOUT_UNDEFINED,
                        attachment = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                        depth_attachment = VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
                        transfer = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    if (Status s =
            make_pass(false, undefined, transfer, undefined, depth_attachment, false, render_pass);
        !s)
        return s;
    if (Status s = make_pass(false, undefined, attachment, undefined, transfer, true, first_pass);
        !s)
        return s;
    if (Status s =
            make_pass(true, attachment, transfer, transfer, depth_attachment, false, second_pass);
        !s)
        return s;
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

    const std::vector<DepthLevel> levels = depth_pyramid_levels(options.width, options.height);
    if (levels.empty())
        return fail(ErrorCode::invalid_argument, "image size past the depth pyramid's limit");
    auto pyramid_buffer = context->create_buffer(
        (VkDeviceSize(levels.back().offset) + 1) * sizeof(float), gpu::MemoryKind::device);
    if (!pyramid_buffer) return pyramid_buffer.error();
    pyramid = std::move(*pyramid_buffer);
    for (gpu::Buffer* target : {&readback, &extra_readback}) {
        auto rb = context->create_buffer(VkDeviceSize(options.width) * options.height * 4,
                                         gpu::MemoryKind::readback);
        if (!rb) return rb.error();
        *target = std::move(*rb);
    }
    return {};
}

Status Renderer::Impl::upload_meshes(std::span<const RenderMesh> render_meshes) {
    if (render_meshes.empty())
        return fail(ErrorCode::invalid_argument, "set_meshes needs at least one mesh");
    // The unit cube first, then every mesh's LODs.
    const MeshData cube = cube_mesh();
    std::vector<float> positions = cube.positions;
    std::vector<std::uint32_t> indices = cube.indices;
    std::vector<gpu::Mesh> new_meshes;
    std::vector<std::array<float, 4>> new_tints;
    for (std::size_t m = 0; m < render_meshes.size(); ++m) {
        const RenderMesh& rm = render_meshes[m];
        gpu::Mesh mesh;
        for (std::size_t k = 0; k < rm.lods.size(); ++k) {
            const MeshData& data = rm.lods[k].mesh;
            const std::string where =
                "mesh " + std::to_string(m) + " (" + rm.name + ") LOD " + std::to_string(k);
            if (data.indices.empty() || data.indices.size() % 3 != 0 ||
                data.positions.size() % 3 != 0)
                return fail(ErrorCode::invalid_argument,
                            where + ": needs whole triangles and whole vertices");
            for (std::uint32_t i : data.indices)
                if (i >= data.vertex_count())
                    return fail(ErrorCode::invalid_argument,
                                where + ": index " + std::to_string(i) + " past its " +
                                    std::to_string(data.vertex_count()) + " vertices");
            for (float v : data.positions)
                if (!(v >= 0.0f && v <= 1.0f))
                    return fail(ErrorCode::invalid_argument,
                                where + ": a position outside the unit cube");
            if (positions.size() / 3 + data.vertex_count() > (1u << 30) ||
                indices.size() + data.indices.size() > (1u << 30))
                return fail(ErrorCode::limit_exceeded, "meshes past 2^30 vertices or indices");
            mesh.lods.push_back({std::uint32_t(data.indices.size()), std::uint32_t(indices.size()),
                                 std::int32_t(positions.size() / 3), rm.lods[k].switch_distance});
            positions.insert(positions.end(), data.positions.begin(), data.positions.end());
            indices.insert(indices.end(), data.indices.begin(), data.indices.end());
        }
        new_meshes.push_back(std::move(mesh));
        new_tints.push_back(rm.tint);
    }
    auto packed = gpu::pack_mesh_table(new_meshes);
    if (!packed) return packed.error();

    vkDeviceWaitIdle(device);
    boxes.clear(), mesh_ids.clear();
    moving.reset();
    for (auto [buffer, memory_] :
         {std::pair{&vertex_buffer, &vertex_memory}, std::pair{&index_buffer, &index_memory}}) {
        if (*buffer) vkDestroyBuffer(device, *buffer, nullptr);
        if (*memory_) vkFreeMemory(device, *memory_, nullptr);
        *buffer = VK_NULL_HANDLE, *memory_ = VK_NULL_HANDLE;
    }
    auto make = [&](const void* data, VkDeviceSize size, VkBufferUsageFlags usage, VkBuffer& buffer,
                    VkDeviceMemory& mem) -> Status {
        VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        info.size = size;
        info.usage = usage;
        info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
        RENDERER_VK_TRY(vkCreateBuffer(device, &info, nullptr, &buffer), "vkCreateBuffer");
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(device, buffer, &req);
        auto m = allocate(
            req, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
        if (!m) return m.error();
        mem = *m;
        RENDERER_VK_TRY(vkBindBufferMemory(device, buffer, mem, 0), "vkBindBufferMemory");
        void* mapped = nullptr;
        RENDERER_VK_TRY(vkMapMemory(device, mem, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
        std::memcpy(mapped, data, size);
        vkUnmapMemory(device, mem);
        return {};
    };
    if (Status s = make(positions.data(), positions.size() * 4, VK_BUFFER_USAGE_VERTEX_BUFFER_BIT,
                        vertex_buffer, vertex_memory);
        !s)
        return s;
    if (Status s = make(indices.data(), indices.size() * 4, VK_BUFFER_USAGE_INDEX_BUFFER_BIT,
                        index_buffer, index_memory);
        !s)
        return s;
    auto tb = context->create_buffer(new_tints.size() * 16, gpu::MemoryKind::device);
    if (!tb) return tb.error();
    tint_buffer = std::move(*tb);
    if (Status s = context->upload(tint_buffer, new_tints.data(), new_tints.size() * 16); !s)
        return s;
    meshes = std::move(new_meshes);
    table = std::move(*packed);
    tints = std::move(new_tints);
    return {};
}

Status Renderer::Impl::create_pipeline() {
    // Boxes, mesh ids, mesh tints (mesh.vert).
    VkDescriptorSetLayoutBinding bindings[3]{};
    for (std::uint32_t i = 0; i < 3; ++i) {
        bindings[i].binding = i;
        bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        bindings[i].descriptorCount = 1;
        bindings[i].stageFlags = VK_SHADER_STAGE_VERTEX_BIT;
    }
    VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    set_info.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    set_info.bindingCount = 3;
    set_info.pBindings = bindings;
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
    std::span<const std::uint32_t> codes[2] = {kMeshVert, kMeshFrag};
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
    if (context->info().timestamp_period_ns > 0) {
        VkQueryPoolCreateInfo query_info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        query_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
        query_info.queryCount = kFrameQueries;
        RENDERER_VK_TRY(vkCreateQueryPool(device, &query_info, nullptr, &queries),
                        "vkCreateQueryPool");
    }
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

void Renderer::Impl::begin_pass(VkRenderPass pass, const std::array<float, 16>& view_projection) {
    VkClearValue clears[2];
    clears[0].color = {{kClearColor[0] / 255.0f, kClearColor[1] / 255.0f, kClearColor[2] / 255.0f,
                        kClearColor[3] / 255.0f}};
    clears[1].depthStencil = {1.0f, 0};
    VkRenderPassBeginInfo begin{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
    begin.renderPass = pass;
    begin.framebuffer = framebuffer;
    begin.renderArea = {{0, 0}, {options.width, options.height}};
    begin.clearValueCount = 2;
    begin.pClearValues = clears;
    vkCmdBeginRenderPass(cmd, &begin, VK_SUBPASS_CONTENTS_INLINE);
    if (boxes.empty()) return;
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline);
    VkDescriptorBufferInfo infos[3] = {{box_buffer.handle(), 0, VK_WHOLE_SIZE},
                                       {mesh_id_buffer.handle(), 0, VK_WHOLE_SIZE},
                                       {tint_buffer.handle(), 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet writes[3]{};
    for (std::uint32_t i = 0; i < 3; ++i) {
        writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        writes[i].dstBinding = i;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
    }
    push_descriptor(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline_layout, 0, 3, writes);
    vkCmdPushConstants(cmd, pipeline_layout, VK_SHADER_STAGE_VERTEX_BIT, 0, 64,
                       view_projection.data());
    // Both at offset 0: Mesa 22.3 lavapipe ignores the index buffer offset of indirect indexed
    // draws; the draw commands' firstIndex and vertexOffset select each LOD.
    VkDeviceSize zero = 0;
    vkCmdBindVertexBuffers(cmd, 0, 1, &vertex_buffer, &zero);
    vkCmdBindIndexBuffer(cmd, index_buffer, 0, VK_INDEX_TYPE_UINT32);
}

void Renderer::Impl::copy_color(const gpu::Buffer& dst) {
    VkBufferImageCopy copy{};
    copy.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    copy.imageExtent = {options.width, options.height, 1};
    vkCmdCopyImageToBuffer(cmd, color_image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, dst.handle(), 1,
                           &copy);
}

void Renderer::Impl::draw_groups(VkBuffer commands, VkBuffer counts) {
    if (boxes.empty()) return;
    for (std::uint32_t m = 0; m < meshes.size(); ++m)
        if (group_capacity[m] > 0)
            vkCmdDrawIndexedIndirectCount(
                cmd, commands, VkDeviceSize(group_first[m]) * sizeof(VkDrawIndexedIndirectCommand),
                counts, VkDeviceSize(m) * 4, group_capacity[m],
                sizeof(VkDrawIndexedIndirectCommand));
}

Status Renderer::Impl::record_frame(const Camera& camera, const Frustum& frustum, CullMode mode,
                                    std::span<const Frustum> view_frusta,
                                    std::span<const ExtraView> extra) {
    const auto n = std::uint32_t(boxes.size());
    const auto mesh_count = std::uint32_t(meshes.size());
    auto stamp = [&](std::uint32_t first, std::uint32_t count = 1) {
        if (queries)
            for (std::uint32_t q = first; q < first + count; ++q)
                vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, q);
    };
    auto compute_barrier = [&] {
        barrier(
            cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    };
    if (queries) vkCmdResetQueryPool(cmd, queries, 0, kFrameQueries);
    stamp(kQueryStart);
    // Uploads of earlier submissions (boxes, the CPU-filled commands).
    compute_barrier();
    const bool culling = mode != CullMode::none && n > 0;
    const bool two_phase = mode == CullMode::occlusion && n > 0;
    if (culling && moved) {
        // The moved boxes' tree: refit, SAH cost, the GPU's refit-or-rebuild choice.
        if (Status s = moving->record_step(cmd, gpu::whole(box_buffer)); !s) return s;
        compute_barrier();
    }
    stamp(kQueryTree);
    const std::array<float, 16> view_projection = camera.view_projection();
    gpu::CullOcclusion occlusion{gpu::OcclusionPhase::early,
                                 {},
                                 options.width,
                                 options.height,
                                 view_projection,
                                 gpu::whole(visibility),
                                 occlusion_frame};
    auto cull_into = [&](const CullSet& set, const gpu::CullOcclusion* occ,
                         std::uint32_t first_query) -> Status {
        gpu::CullOutput out{gpu::whole(set.ids), gpu::whole(set.commands), gpu::whole(set.count),
                            n};
        gpu::CullLods lods{gpu::whole(grouped_table), gpu::whole(mesh_id_buffer), mesh_count, true,
                           gpu::whole(set.groups),    gpu::whole(set.lods)};
        if (occ)
            return culler->record(cmd, moving->tree(), frustum, CullOrder::exact,
                                  gpu::whole(cull_scratch), out, &lods, *occ, queries, first_query);
        return culler->record(cmd, moving->tree(), frustum, CullOrder::exact,
                              gpu::whole(cull_scratch), out, lods, queries, first_query);
    };
    VkBuffer commands = all_commands.handle(), counts = all_counts.handle();
    if (culling) {
        if (Status s = cull_into(main_set, two_phase ? &occlusion : nullptr, kQueryCull); !s)
            return s;
        commands = main_set.commands.handle();
        counts = main_set.groups.handle();
    } else {
        stamp(kQueryCull, gpu::kCullQueries);
    }
    if (culling && !view_frusta.empty()) {
        // The Culler writes each cull's parameters with vkCmdUpdateBuffer: after the last
        // cull's reads.
        compute_barrier();
        std::vector<gpu::CullOutput> outs;
        for (std::size_t v = 0; v < view_frusta.size(); ++v)
            outs.push_back({gpu::whole(view_ids[v]), gpu::whole(view_commands[v]),
                            gpu::whole(view_counts[v]), n});
        if (Status s = culler->record_views(cmd, moving->tree(), view_frusta, CullOrder::exact,
                                            gpu::whole(views_scratch), outs, queries, kQueryViews);
            !s)
            return s;
    } else {
        stamp(kQueryViews, gpu::kCullQueries);
    }
    barrier(cmd, VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_VERTEX_SHADER_BIT,
            VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_SHADER_READ_BIT);

    if (culling && !extra.empty()) {
        // Extra view 0's visible boxes as cubes (record_views' commands draw index range 0, the
        // unit cube): its depth (a shadow map) is read back before the main pass reuses the
        // targets (first_pass stores the depth for the copy).
        begin_pass(first_pass, extra[0].view_projection);
        vkCmdDrawIndexedIndirectCount(cmd, view_commands[1].handle(), 0, view_counts[1].handle(), 0,
                                      n, sizeof(VkDrawIndexedIndirectCommand));
        vkCmdEndRenderPass(cmd);
        VkBufferImageCopy copy{};
        copy.imageSubresource = {VK_IMAGE_ASPECT_DEPTH_BIT, 0, 0, 1};
        copy.imageExtent = {options.width, options.height, 1};
        vkCmdCopyImageToBuffer(cmd, depth_image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                               extra_readback.handle(), 1, &copy);
    }
    stamp(kQueryExtraDraw);
    if (two_phase) {
        // Phase 1 drew what was visible last frame; its depth, copied into level 0 of the
        // pyramid (W * H floats, row 0 the top), is what phase 2 culls the rest against.
        begin_pass(first_pass, view_projection);
        draw_groups(commands, counts);
        vkCmdEndRenderPass(cmd);
        stamp(kQueryEarlyDraw);
        VkBufferImageCopy copy{};
        copy.imageSubresource = {VK_IMAGE_ASPECT_DEPTH_BIT, 0, 0, 1};
        copy.imageExtent = {options.width, options.height, 1};
        vkCmdCopyImageToBuffer(cmd, depth_image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                               pyramid.handle(), 1, &copy);
        compute_barrier();
        if (Status s = culler->record_depth_pyramid(cmd, gpu::whole(pyramid), options.width,
                                                    options.height);
            !s)
            return s;
        compute_barrier();
        stamp(kQueryPyramid);
        occlusion.phase = gpu::OcclusionPhase::late;
        occlusion.pyramid = gpu::whole(pyramid);
        if (Status s = cull_into(late_set, &occlusion, kQueryLate); !s) return s;
        barrier(cmd, VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_VERTEX_SHADER_BIT,
                VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_SHADER_READ_BIT);
        begin_pass(second_pass, view_projection);
        draw_groups(late_set.commands.handle(), late_set.groups.handle());
    } else {
        stamp(kQueryEarlyDraw);
        stamp(kQueryPyramid);
        stamp(kQueryLate, gpu::kCullQueries);
        begin_pass(render_pass, view_projection);
        draw_groups(commands, counts);
    }
    vkCmdEndRenderPass(cmd);
    stamp(kQueryDraw);
    copy_color(readback);
    VkMemoryBarrier host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &host, 0, nullptr, 0, nullptr);
    return {};
}

Status Renderer::Impl::read_set(const CullSet& set, Frame& frame) {
    const auto n = std::uint32_t(boxes.size());
    const auto mesh_count = std::uint32_t(meshes.size());
    std::uint32_t counts[2] = {};
    std::vector<std::uint32_t> groups(2 * std::size_t(mesh_count) + 1), ids(n), lods(n);
    for (Status s : {context->download(set.count, counts, sizeof(counts)),
                     context->download(set.groups, groups.data(), groups.size() * 4),
                     context->download(set.ids, ids.data(), ids.size() * 4),
                     context->download(set.lods, lods.data(), lods.size() * 4)})
        if (!s) return s;
    frame.visible_count += counts[1];
    for (std::uint32_t m = 0; m < mesh_count; ++m) {
        // Every group holds all its mesh's instances: no overflow is possible.
        const std::uint32_t stored = std::min(groups[m], group_capacity[m]);
        frame.mesh_draws[m] += stored;
        for (std::uint32_t k = 0; k < stored; ++k) {
            frame.drawn_ids.push_back(ids[group_first[m] + k]);
            frame.drawn_lods.push_back(lods[group_first[m] + k]);
        }
    }
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
    if (Status s = impl->create_pipeline(); !s) return s.error();
    auto culler = gpu::Culler::create(*impl->context);
    if (!culler) return culler.error();
    impl->culler = std::move(*culler);
    RenderMesh cube{"cube", {{cube_mesh(), 0.0f}}, {0, 0, 0, 0}};
    if (Status s = impl->upload_meshes(std::span<const RenderMesh>(&cube, 1)); !s) return s.error();
    return std::unique_ptr<Renderer>(new Renderer(std::move(impl)));
}

gpu::Context& Renderer::context() {
    return *impl_->context;
}

std::uint64_t Renderer::validation_errors() const {
    return impl_->validation_errors.load();
}

const std::vector<gpu_layout::CullMesh>& Renderer::mesh_table() const {
    return impl_->table;
}

Status Renderer::set_meshes(std::span<const RenderMesh> meshes) {
    return impl_->upload_meshes(meshes);
}

Status Renderer::set_scene(std::span<const Box> boxes, std::span<const std::uint32_t> mesh_ids) {
    Impl& impl = *impl_;
    if (Status s = validate_boxes(boxes); !s) return s;
    if (boxes.size() > impl.max_draw_indirect_count)
        return fail(ErrorCode::limit_exceeded,
                    std::to_string(boxes.size()) +
                        " boxes exceed the device's maxDrawIndirectCount (" +
                        std::to_string(impl.max_draw_indirect_count) + ")");
    if (boxes.size() >= (std::size_t(1) << 31))
        return fail(ErrorCode::limit_exceeded, "too many boxes");
    const auto mesh_count = std::uint32_t(impl.meshes.size());
    if (!mesh_ids.empty() && mesh_ids.size() != boxes.size())
        return fail(ErrorCode::invalid_argument, std::to_string(mesh_ids.size()) +
                                                     " mesh ids for " +
                                                     std::to_string(boxes.size()) + " boxes");
    for (std::size_t i = 0; i < mesh_ids.size(); ++i)
        if (mesh_ids[i] >= mesh_count)
            return Error{ErrorCode::invalid_argument,
                         "box " + std::to_string(i) + " has mesh " + std::to_string(mesh_ids[i]) +
                             ", past the " + std::to_string(mesh_count) + " meshes",
                         i};
    impl.boxes.clear();
    impl.moved = false;
    impl.occlusion_frame = 1;
    impl.view_ids.clear(), impl.view_commands.clear(), impl.view_counts.clear();
    impl.views_scratch = {};
    auto n = std::uint32_t(boxes.size());
    std::vector<std::uint32_t> ids(mesh_ids.begin(), mesh_ids.end());
    if (ids.empty()) ids.assign(n, 0);
    impl.group_capacity.assign(mesh_count, 0);
    for (std::uint32_t id : ids) ++impl.group_capacity[id];
    impl.group_first = gpu::group_first(impl.group_capacity);
    auto grouped = gpu::pack_mesh_table(impl.meshes, impl.group_capacity);
    if (!grouped) return grouped.error();

    gpu::Context& context = *impl.context;
    auto make = [&](gpu::Buffer& buffer, VkDeviceSize size) -> Status {
        auto b = context.create_buffer(std::max<VkDeviceSize>(size, 16), gpu::MemoryKind::device);
        if (!b) return b.error();
        buffer = std::move(*b);
        return {};
    };
    const VkDeviceSize command_bytes = VkDeviceSize(n) * sizeof(VkDrawIndexedIndirectCommand);
    for (Status s :
         {make(impl.box_buffer, VkDeviceSize(n) * sizeof(gpu_layout::GpuBox)),
          make(impl.mesh_id_buffer, VkDeviceSize(n) * 4),
          make(impl.grouped_table, grouped->size() * sizeof(gpu_layout::CullMesh)),
          make(impl.cull_scratch, impl.culler->scratch_size(n, mesh_count)),
          make(impl.visibility, VkDeviceSize(n) * 4), make(impl.all_commands, command_bytes),
          make(impl.all_counts, VkDeviceSize(mesh_count) * 4)})
        if (!s) return s;
    for (Impl::CullSet* set : {&impl.main_set, &impl.late_set})
        for (Status s :
             {make(set->ids, VkDeviceSize(n) * 4), make(set->commands, command_bytes),
              make(set->count, 8), make(set->groups, (2 * VkDeviceSize(mesh_count) + 1) * 4),
              make(set->lods, VkDeviceSize(n) * 4)})
            if (!s) return s;
    if (n == 0) return {};
    std::vector<gpu_layout::GpuBox> gpu_boxes = gpu::to_gpu_boxes(boxes);
    for (Status s : {context.upload(impl.box_buffer, gpu_boxes.data(),
                                    gpu_boxes.size() * sizeof(gpu_layout::GpuBox)),
                     context.upload(impl.mesh_id_buffer, ids.data(), ids.size() * 4),
                     // Two-phase occlusion: no box seen yet (frames count from 1).
                     context.upload(impl.visibility, std::vector<std::uint32_t>(n, 0).data(),
                                    VkDeviceSize(n) * 4),
                     context.upload(impl.grouped_table, grouped->data(),
                                    grouped->size() * sizeof(gpu_layout::CullMesh))})
        if (!s) return s;
    if (!impl.moving) {
        gpu::MovingSceneOptions moving_options;
        moving_options.pairs = false;
        auto moving = gpu::MovingScene::create(context, moving_options);
        if (!moving) return moving.error();
        impl.moving = std::move(*moving);
    }
    if (Status s = impl.moving->reset(boxes); !s) return s;
    impl.boxes.assign(boxes.begin(), boxes.end());
    impl.mesh_ids = std::move(ids);
    return {};
}

Status Renderer::move_boxes(std::span<const Box> boxes) {
    Impl& impl = *impl_;
    if (boxes.size() != impl.boxes.size())
        return fail(ErrorCode::invalid_argument, "move_boxes got " + std::to_string(boxes.size()) +
                                                     " boxes, the scene has " +
                                                     std::to_string(impl.boxes.size()));
    if (Status s = validate_boxes(boxes); !s) return s;
    if (boxes.empty()) return {};
    std::vector<gpu_layout::GpuBox> gpu_boxes = gpu::to_gpu_boxes(boxes);
    if (Status s = impl.context->upload(impl.box_buffer, gpu_boxes.data(),
                                        gpu_boxes.size() * sizeof(gpu_layout::GpuBox));
        !s)
        return s;
    impl.boxes.assign(boxes.begin(), boxes.end());
    impl.moved = true;
    return {};
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

std::uint32_t lod_for(const gpu_layout::CullMesh& mesh, const Vec3& eye, const Box& box) {
    return lbvh::select_lod(mesh, lbvh::cull_distance_key(eye, box.min, box.max));
}

Result<Frame> Renderer::render(const Camera& camera, bool cull, std::span<const ExtraView> extra) {
    return render(camera, cull ? CullMode::frustum : CullMode::none, extra);
}

Result<Frame> Renderer::render(const Camera& camera, CullMode mode,
                               std::span<const ExtraView> extra) {
    Impl& impl = *impl_;
    const bool cull = mode != CullMode::none;
    auto frustum = Frustum::from_camera(camera);
    if (!frustum) return frustum.error();
    if (extra.size() + 1 > gpu::kMaxCullViews)
        return fail(ErrorCode::invalid_argument, std::to_string(extra.size()) +
                                                     " extra views, at most " +
                                                     std::to_string(gpu::kMaxCullViews - 1));
    const auto n = std::uint32_t(impl.boxes.size());
    const auto mesh_count = std::uint32_t(impl.meshes.size());
    const bool culling = cull && n > 0;
    Frame frame;
    frame.width = impl.options.width;
    frame.height = impl.options.height;
    frame.mesh_draws.assign(mesh_count, 0);
    gpu::Context& context = *impl.context;
    if (!cull && n > 0) {
        // Every box, grouped by mesh as the cull groups them, front to back in each group.
        std::vector<VkDrawIndexedIndirectCommand> commands(n);
        std::vector<std::uint32_t> filled(mesh_count, 0);
        for (std::uint32_t id : front_to_back(camera.eye, impl.boxes)) {
            const std::uint32_t m = impl.mesh_ids[id];
            const std::uint32_t lod = lod_for(impl.table[m], frustum->eye, impl.boxes[id]);
            const gpu::MeshLod& l = impl.meshes[m].lods[lod];
            commands[impl.group_first[m] + filled[m]++] = {l.index_count, 1, l.first_index,
                                                           l.vertex_offset, id};
        }
        for (std::uint32_t m = 0; m < mesh_count; ++m)
            for (std::uint32_t k = 0; k < filled[m]; ++k) {
                const VkDrawIndexedIndirectCommand& c = commands[impl.group_first[m] + k];
                frame.drawn_ids.push_back(c.firstInstance);
                frame.drawn_lods.push_back(
                    lod_for(impl.table[m], frustum->eye, impl.boxes[c.firstInstance]));
            }
        for (Status s : {context.upload(impl.all_commands, commands.data(),
                                        commands.size() * sizeof(commands[0])),
                         context.upload(impl.all_counts, filled.data(), filled.size() * 4)})
            if (!s) return s.error();
        frame.visible_count = n;
        frame.mesh_draws = filled;
    }
    // The views culled in one shared traversal: the camera's, then the extra ones.
    std::vector<Frustum> view_frusta;
    if (culling && !extra.empty()) {
        view_frusta.push_back(*frustum);
        for (const ExtraView& v : extra)
            view_frusta.push_back(Frustum::from_view_projection(v.view_projection, v.eye));
        const auto views = std::uint32_t(view_frusta.size());
        auto make = [&](VkDeviceSize size) -> Result<gpu::Buffer> {
            return context.create_buffer(std::max<VkDeviceSize>(size, 16), gpu::MemoryKind::device);
        };
        const VkDeviceSize scratch = impl.culler->views_scratch_size(n, views);
        if (impl.views_scratch.size() < scratch) {
            auto b = make(scratch);
            if (!b) return b.error();
            impl.views_scratch = std::move(*b);
        }
        while (impl.view_ids.size() < views) {
            auto ids = make(VkDeviceSize(n) * 4);
            auto commands = make(VkDeviceSize(n) * sizeof(VkDrawIndexedIndirectCommand));
            auto count = make(8);
            if (!ids || !commands || !count)
                return !ids ? ids.error() : !commands ? commands.error() : count.error();
            impl.view_ids.push_back(std::move(*ids));
            impl.view_commands.push_back(std::move(*commands));
            impl.view_counts.push_back(std::move(*count));
        }
    }

    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    RENDERER_VK_TRY(vkResetCommandBuffer(impl.cmd, 0), "vkResetCommandBuffer");
    RENDERER_VK_TRY(vkBeginCommandBuffer(impl.cmd, &begin), "vkBeginCommandBuffer");
    Status recorded = impl.record_frame(camera, *frustum, mode, view_frusta, extra);
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
    if (culling && impl.moved) {
        auto stepped = impl.moving->read_step();
        if (!stepped) return stepped.error();
        frame.tree_updated = true;
        frame.tree_rebuilt = stepped->path == gpu::FramePath::rebuild;
        impl.moved = false;
    }
    if (culling) {
        if (Status s = impl.read_set(impl.main_set, frame); !s) return s.error();
        if (mode == CullMode::occlusion) {
            frame.early_drawn = std::uint32_t(frame.drawn_ids.size());
            frame.occlusion_frame = impl.occlusion_frame;
            if (Status s = impl.read_set(impl.late_set, frame); !s) return s.error();
            if (++impl.occlusion_frame == 0xffffffffu) {
                // Frame numbers must not wrap: forget every stamp and count from 1 again.
                if (Status s =
                        context.upload(impl.visibility, std::vector<std::uint32_t>(n, 0).data(),
                                       VkDeviceSize(n) * 4);
                    !s)
                    return s.error();
                impl.occlusion_frame = 1;
            }
        }
        for (std::size_t v = 0; v < view_frusta.size(); ++v) {
            std::uint32_t view_count[2] = {};
            if (Status s = context.download(impl.view_counts[v], view_count, 8); !s)
                return s.error();
            std::vector<std::uint32_t> view(std::min(view_count[0], n));
            if (!view.empty())
                if (Status s = context.download(impl.view_ids[v], view.data(), view.size() * 4); !s)
                    return s.error();
            frame.view_ids.push_back(std::move(view));
        }
        if (!extra.empty()) {
            frame.extra_depth.resize(std::size_t(frame.width) * frame.height);
            std::memcpy(frame.extra_depth.data(), impl.extra_readback.mapped(),
                        frame.extra_depth.size() * sizeof(float));
        }
    }
    if (impl.queries) {
        std::array<std::uint64_t, kFrameQueries> t{};
        RENDERER_VK_TRY(
            vkGetQueryPoolResults(impl.device, impl.queries, 0, kFrameQueries, sizeof(t), t.data(),
                                  8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
            "vkGetQueryPoolResults");
        const double period = context.info().timestamp_period_ns;
        auto ms = [&](std::uint32_t a, std::uint32_t b) {
            return t[b] > t[a] ? double(t[b] - t[a]) * period * 1e-6 : 0.0;
        };
        FrameTimes& times = frame.times;
        times.tree = ms(kQueryStart, kQueryTree);
        times.cull = ms(kQueryCull, kQueryCull + 1);
        times.compact = ms(kQueryCull + 1, kQueryCull + 2);
        times.sort = ms(kQueryCull + 2, kQueryCull + 3);
        times.emit = ms(kQueryCull + 3, kQueryCull + 4);
        times.views = ms(kQueryViews, kQueryViews + gpu::kCullQueries - 1);
        times.extra_draw = ms(kQueryViews + gpu::kCullQueries - 1, kQueryExtraDraw);
        times.early_draw = ms(kQueryExtraDraw, kQueryEarlyDraw);
        times.pyramid = ms(kQueryEarlyDraw, kQueryPyramid);
        times.late_cull = ms(kQueryLate, kQueryLate + gpu::kCullQueries - 1);
        times.draw = ms(kQueryLate + gpu::kCullQueries - 1, kQueryDraw);
    }
    return frame;
}

tool::Image depth_image(std::span<const float> depth, std::uint32_t width, std::uint32_t height) {
    tool::Image image(int(width), int(height), {kClearColor[0], kClearColor[1], kClearColor[2]});
    float lo = 1.0f, hi = 0.0f;
    for (float d : depth)
        if (d < 1.0f) lo = std::min(lo, d), hi = std::max(hi, d);
    const float range = hi > lo ? hi - lo : 1.0f;
    for (std::size_t i = 0; i < image.pixels.size() && i < depth.size(); ++i)
        if (depth[i] < 1.0f) {
            auto g = std::uint8_t(40.0f + 215.0f * (depth[i] - lo) / range);
            image.pixels[i] = {g, g, g};
        }
    return image;
}

tool::Image frame_image(const Frame& frame) {
    tool::Image image(int(frame.width), int(frame.height));
    for (std::size_t i = 0; i < image.pixels.size(); ++i)
        image.pixels[i] = {frame.rgba[4 * i], frame.rgba[4 * i + 1], frame.rgba[4 * i + 2]};
    return image;
}

}  // namespace broadphase::renderer
