// Standalone repro: does a bottom-up tree climb (one invocation per leaf, an atomic per
// internal node, the second arrival merges the children and climbs on) lose stores on Mesa's
// lavapipe when written as a loop? Builds a few tree shapes on the host, runs each kernel
// variant (*.spv, see build.sh) several times, and counts the nodes whose value is wrong.
//
// Usage: ./lavapipe_climb [-n LEAVES] [-r RUNS] [-w WG,WG..] [-s SHAPE,SHAPE..] [VARIANT..]
//   shapes: balanced, random, skew, karras (default all); workgroup sizes default 64,256.
//   CLIMB_DEVICE=i picks the physical device (default 0). MESA_SHADER_CACHE_DISABLE is set to
//   true unless the environment sets it, so the compile timings are cold.
#include <vulkan/vulkan.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#define CHECK(x)                                                                  \
    do {                                                                          \
        VkResult r_ = (x);                                                        \
        if (r_ != VK_SUCCESS) {                                                   \
            std::fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, r_); \
            std::exit(1);                                                         \
        }                                                                         \
    } while (0)

using Clock = std::chrono::steady_clock;
static double secs(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}
static constexpr uint32_t kNone = 0xffffffffu;

struct Variant {
    const char* name;
    uint32_t flag_end;  // every internal node's flag after a correct run
    bool vmm = false;
    bool subgroup = false;
};
static const Variant kVariants[] = {
    {"a0_return", 2},
    {"a_while_add", 2},
    {"a_while_xor", 0},
    {"a_while_xchg", 1},
    {"b_vmm", 2, true},
    {"b_vmm_xor", 0, true},
    {"b_vmm_xchg", 1, true},
    {"b_vmm_coherent", 2, true},
    {"c_subgroup_any", 2, false, true},
    {"d_store_first", 2},
    {"e_unrolled64", 2},
    {"f_fixed96", 2},
    {"f_runtime96", 2},
    {"g_no_sync", 2},
    {"m_plain", 2},
    {"m_cohval", 2},
    {"m_cohflags", 2},
    {"m_barrier", 2},
    {"m_all", 2},
    {"p_probe0", 0},
    {"p_probe1", 0},
    {"p_probe2", 0},
    {"p_probe3", 0, true},
    {"p_probe4", 0},
};

// A binary tree over n leaves: internal node s (0..n-2) splits its leaf range between s and
// s+1 (Apetrei's numbering); leaf i is node n-1+i.
struct Tree {
    uint32_t n = 0;
    std::vector<uint32_t> parent;  // 2n-1, kNone at the root
    std::vector<uint32_t> child;   // 2(n-1)
    int depth = 0;
};

static Tree make_tree(const std::string& shape, uint32_t n, std::mt19937& rng) {
    Tree t;
    t.n = n;
    t.parent.assign(2 * n - 1, kNone);
    t.child.assign(2 * (n - 1), 0);
    std::vector<uint32_t> keys;
    if (shape == "karras") {  // sorted random 30-bit keys, equal keys split by index
        keys.resize(n);
        for (auto& k : keys) k = rng() & 0x3fffffffu;
        std::sort(keys.begin(), keys.end());
    }
    auto split_of = [&](uint32_t l, uint32_t r, int depth) -> uint32_t {
        if (shape == "balanced") return (l + r) / 2;
        if (shape == "random") {
            if (depth >= 40) return (l + r) / 2;
            return l + uint32_t(rng() % (r - l));
        }
        if (shape == "skew") return l + std::max<uint32_t>(1, (r - l) / 4) - 1;
        // karras: the highest bit where the (key, index) pairs of l and r differ
        uint64_t a = (uint64_t(keys[l]) << 32) | l, b = (uint64_t(keys[r]) << 32) | r;
        int prefix = __builtin_clzll(a ^ b);
        uint32_t s = l;  // last position sharing more than `prefix` bits with l
        for (uint32_t step = r - l; step > 1;) {
            step = (step + 1) / 2;
            uint32_t m = s + step;
            if (m < r) {
                uint64_t c = (uint64_t(keys[m]) << 32) | m;
                if (__builtin_clzll(a ^ c) > prefix) s = m;
            }
        }
        return s;
    };
    // explicit stack: (l, r, parent id, depth)
    struct Item {
        uint32_t l, r, up;
        int depth;
    };
    std::vector<Item> stack{{0, n - 1, kNone, 0}};
    while (!stack.empty()) {
        Item it = stack.back();
        stack.pop_back();
        t.depth = std::max(t.depth, it.depth);
        if (it.l == it.r) {
            t.parent[n - 1 + it.l] = it.up;
            continue;
        }
        uint32_t s = split_of(it.l, it.r, it.depth);
        t.parent[s] = it.up;
        t.child[2 * s] = s == it.l ? n - 1 + s : 0;  // fixed below for internal children
        t.child[2 * s + 1] = s + 1 == it.r ? n + s : 0;
        stack.push_back({it.l, s, s, it.depth + 1});
        stack.push_back({s + 1, it.r, s, it.depth + 1});
    }
    for (uint32_t v = 0; v + 1 < n; ++v) {  // internal children from the parent array
        uint32_t p = t.parent[v];
        if (p == kNone) continue;
        // v covers a range that ends at or starts after split p: left child iff v <= p
        t.child[2 * p + (v <= p ? 0 : 1)] = v;
    }
    return t;
}

// Expected uvec2(sum, count) per node.
static std::vector<uint32_t> expected_values(const Tree& t, const std::vector<uint32_t>& leaf) {
    uint32_t n = t.n;
    std::vector<uint32_t> v(2 * (2 * n - 1), 0);
    for (uint32_t i = 0; i < n; ++i) {  // add each leaf to all its ancestors
        uint32_t node = n - 1 + i;
        while (node != kNone) {
            v[2 * node] += leaf[i];
            v[2 * node + 1] += 1;
            node = t.parent[node];
        }
    }
    return v;
}

static std::vector<uint32_t> read_spv(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) return {};
    size_t size = f.tellg();
    std::vector<uint32_t> code(size / 4);
    f.seekg(0);
    f.read(reinterpret_cast<char*>(code.data()), code.size() * 4);
    return code;
}

struct Buffer {
    VkBuffer buf = VK_NULL_HANDLE;
    VkDeviceMemory mem = VK_NULL_HANDLE;
    void* map = nullptr;
    VkDeviceSize size = 0;
};

// The climb kernels' descriptor set layout: bindings 0 .. count-1, each one storage buffer.
static VkDescriptorSetLayout storage_set_layout(VkDevice dev, uint32_t count) {
    std::vector<VkDescriptorSetLayoutBinding> bind(count);
    for (uint32_t i = 0; i < count; ++i)
        bind[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo dslci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dslci.bindingCount = count;
    dslci.pBindings = bind.data();
    VkDescriptorSetLayout dsl;
    CHECK(vkCreateDescriptorSetLayout(dev, &dslci, nullptr, &dsl));
    return dsl;
}

// A descriptor set of `dsl` (from a pool of its own, kept until exit) binding the whole of
// bufs[i] at binding i.
static VkDescriptorSet storage_set(VkDevice dev, VkDescriptorSetLayout dsl,
                                   const std::vector<const Buffer*>& bufs) {
    const auto count = static_cast<uint32_t>(bufs.size());
    VkDescriptorPoolSize dps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, count};
    VkDescriptorPoolCreateInfo dpci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpci.maxSets = 1;
    dpci.poolSizeCount = 1;
    dpci.pPoolSizes = &dps;
    VkDescriptorPool pool;
    CHECK(vkCreateDescriptorPool(dev, &dpci, nullptr, &pool));
    VkDescriptorSetAllocateInfo dsai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    dsai.descriptorPool = pool;
    dsai.descriptorSetCount = 1;
    dsai.pSetLayouts = &dsl;
    VkDescriptorSet set;
    CHECK(vkAllocateDescriptorSets(dev, &dsai, &set));
    std::vector<VkDescriptorBufferInfo> dbi(count);
    std::vector<VkWriteDescriptorSet> wds(count);
    for (uint32_t i = 0; i < count; ++i) {
        dbi[i] = {bufs[i]->buf, 0, VK_WHOLE_SIZE};
        wds[i] = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                  .dstSet = set,
                  .dstBinding = i,
                  .descriptorCount = 1,
                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                  .pBufferInfo = &dbi[i]};
    }
    vkUpdateDescriptorSets(dev, count, wds.data(), 0, nullptr);
    return set;
}

int main(int argc, char** argv) {
    setenv("MESA_SHADER_CACHE_DISABLE", "true", 0);
    uint32_t n = 200000, runs = 20;
    std::vector<uint32_t> wgs{64, 256};
    std::vector<std::string> shapes{"balanced", "random", "skew", "karras"};
    std::vector<std::string> only;
    auto split_list = [](const char* s) {
        std::vector<std::string> out;
        std::string cur;
        for (const char* p = s;; ++p) {
            if (*p == ',' || *p == 0) {
                if (!cur.empty()) out.push_back(cur);
                cur.clear();
                if (*p == 0) break;
            } else {
                cur += *p;
            }
        }
        return out;
    };
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "-n" && i + 1 < argc)
            n = std::stoul(argv[++i]);
        else if (a == "-r" && i + 1 < argc)
            runs = std::stoul(argv[++i]);
        else if (a == "-w" && i + 1 < argc) {
            wgs.clear();
            for (auto& s : split_list(argv[++i])) wgs.push_back(std::stoul(s));
        } else if (a == "-s" && i + 1 < argc)
            shapes = split_list(argv[++i]);
        else
            only.push_back(a);
    }

    // Instance and device.
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "lavapipe_climb";
    app.apiVersion = VK_API_VERSION_1_3;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    VkInstance inst;
    CHECK(vkCreateInstance(&ici, nullptr, &inst));
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(inst, &count, nullptr);
    std::vector<VkPhysicalDevice> pds(count);
    vkEnumeratePhysicalDevices(inst, &count, pds.data());
    uint32_t pick = getenv("CLIMB_DEVICE") ? std::atoi(getenv("CLIMB_DEVICE")) : 0;
    if (pick >= count) {
        std::fprintf(stderr, "no device %u (%u found)\n", pick, count);
        return 1;
    }
    VkPhysicalDevice pd = pds[pick];
    // Each pNext chain written head last: a struct points at the one declared before it.
    VkPhysicalDeviceVulkan12Properties p12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES};
    VkPhysicalDeviceVulkan11Properties p11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES,
                                           &p12};
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &p11};
    vkGetPhysicalDeviceProperties2(pd, &props);
    VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                         &f13};
    VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f12};
    vkGetPhysicalDeviceFeatures2(pd, &feats);
    bool vmm = f12.vulkanMemoryModel && f12.vulkanMemoryModelDeviceScope;
    bool vote = (p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                (p11.subgroupSupportedOperations & VK_SUBGROUP_FEATURE_VOTE_BIT);
    std::printf(
        "device: %s | driver: %s %s | api %u.%u.%u | subgroup %u | "
        "vulkanMemoryModel %d deviceScope %d | vote %d\n",
        props.properties.deviceName, p12.driverName, p12.driverInfo,
        VK_API_VERSION_MAJOR(props.properties.apiVersion),
        VK_API_VERSION_MINOR(props.properties.apiVersion),
        VK_API_VERSION_PATCH(props.properties.apiVersion), p11.subgroupSize, f12.vulkanMemoryModel,
        f12.vulkanMemoryModelDeviceScope, vote);
    std::printf("MESA_SHADER_CACHE_DISABLE=%s LP_NUM_THREADS=%s\n",
                getenv("MESA_SHADER_CACHE_DISABLE"),
                getenv("LP_NUM_THREADS") ? getenv("LP_NUM_THREADS") : "(default)");

    uint32_t qcount = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &qcount, nullptr);
    std::vector<VkQueueFamilyProperties> qf(qcount);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &qcount, qf.data());
    uint32_t family = 0;
    while (family < qcount && !(qf[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    VkPhysicalDeviceVulkan12Features en12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    en12.vulkanMemoryModel = vmm;
    en12.vulkanMemoryModelDeviceScope = vmm;
    // glslc --target-env=vulkan1.3 writes local_size_x_id as LocalSizeId: needs maintenance4
    VkPhysicalDeviceVulkan13Features en13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    en13.maintenance4 = f13.maintenance4;
    en12.pNext = &en13;
    if (!f13.maintenance4) std::printf("warning: no maintenance4 (LocalSizeId)\n");
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &en12;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    VkDevice dev;
    CHECK(vkCreateDevice(pd, &dci, nullptr, &dev));
    VkQueue queue;
    vkGetDeviceQueue(dev, family, 0, &queue);

    // Buffers: host-visible, coherent (lavapipe's only kind; on a GPU this is slow but simple).
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    auto make_buffer = [&](VkDeviceSize size) {
        Buffer b;
        b.size = size;
        VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        bci.size = size;
        bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
        CHECK(vkCreateBuffer(dev, &bci, nullptr, &b.buf));
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(dev, b.buf, &req);
        uint32_t want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        uint32_t type = 0;
        while (type < mp.memoryTypeCount && !((req.memoryTypeBits >> type & 1) &&
                                              (mp.memoryTypes[type].propertyFlags & want) == want))
            ++type;
        VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
        mai.allocationSize = req.size;
        mai.memoryTypeIndex = type;
        CHECK(vkAllocateMemory(dev, &mai, nullptr, &b.mem));
        CHECK(vkBindBufferMemory(dev, b.buf, b.mem, 0));
        CHECK(vkMapMemory(dev, b.mem, 0, VK_WHOLE_SIZE, 0, &b.map));
        return b;
    };
    Buffer parent = make_buffer(4ull * (2 * n - 1)), child = make_buffer(8ull * (n - 1)),
           flags = make_buffer(4ull * (n - 1)), vals = make_buffer(8ull * (2 * n - 1)),
           leaf = make_buffer(4ull * n);

    VkDescriptorSetLayout dsl = storage_set_layout(dev, 5);
    const VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, 8};
    const VkPipelineLayoutCreateInfo plci{.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                          .setLayoutCount = 1,
                                          .pSetLayouts = &dsl,
                                          .pushConstantRangeCount = 1,
                                          .pPushConstantRanges = &pcr};
    VkPipelineLayout layout;
    CHECK(vkCreatePipelineLayout(dev, &plci, nullptr, &layout));
    VkDescriptorSet set = storage_set(dev, dsl, {&parent, &child, &flags, &vals, &leaf});

    VkCommandPoolCreateInfo cpci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    cpci.queueFamilyIndex = family;
    VkCommandPool cpool;
    CHECK(vkCreateCommandPool(dev, &cpci, nullptr, &cpool));
    VkCommandBufferAllocateInfo cbai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cbai.commandPool = cpool;
    cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cbai.commandBufferCount = 1;
    VkCommandBuffer cmd;
    CHECK(vkAllocateCommandBuffers(dev, &cbai, &cmd));
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    CHECK(vkCreateFence(dev, &fci, nullptr, &fence));

    // One run: clear flags and values, dispatch, wait. Returns the wall seconds.
    auto run_once = [&](VkPipeline pipe, uint32_t leaves, uint32_t wg) {
        auto t0 = Clock::now();
        VkCommandBufferBeginInfo cbbi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        cbbi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        CHECK(vkBeginCommandBuffer(cmd, &cbbi));
        vkCmdFillBuffer(cmd, flags.buf, 0, VK_WHOLE_SIZE, 0);
        vkCmdFillBuffer(cmd, vals.buf, 0, VK_WHOLE_SIZE, 0xffffffffu);
        VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr, 0,
                             nullptr);
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
        vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0,
                                nullptr);
        uint32_t push[2] = {leaves, 96};
        vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, push);
        vkCmdDispatch(cmd, (leaves + wg - 1) / wg, 1, 1);
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                             0, 1, &mb, 0, nullptr, 0, nullptr);
        CHECK(vkEndCommandBuffer(cmd));
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cmd;
        CHECK(vkQueueSubmit(queue, 1, &si, fence));
        CHECK(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX));
        CHECK(vkResetFences(dev, 1, &fence));
        return secs(t0, Clock::now());
    };

    // Trees and their expected values.
    std::mt19937 rng(12345);
    struct Case {
        std::string shape;
        Tree tree;
        std::vector<uint32_t> leaf, expect;
    };
    std::vector<Case> cases;
    for (auto& s : shapes) {
        Case c;
        c.shape = s;
        c.tree = make_tree(s, n, rng);
        c.leaf.resize(n);
        for (auto& v : c.leaf) v = rng();
        c.expect = expected_values(c.tree, c.leaf);
        if (c.expect[2 * 0 + 1] == 0) {
        }  // (root is wherever the first split is)
        std::printf("tree %-8s n=%u depth=%d\n", s.c_str(), n, c.tree.depth);
        cases.push_back(std::move(c));
    }
    auto load_case = [&](const Case& c) {
        std::memcpy(parent.map, c.tree.parent.data(), 4ull * c.tree.parent.size());
        std::memcpy(child.map, c.tree.child.data(), 4ull * c.tree.child.size());
        std::memcpy(leaf.map, c.leaf.data(), 4ull * c.leaf.size());
    };

    std::printf("\n%-16s %5s %-8s %5s %9s %9s %9s %9s %8s %8s %8s\n", "variant", "wg", "shape",
                "runs", "bad_runs", "unwritten", "wrongval", "badflags", "create_s", "first_s",
                "run_s");
    // Named variants, or any other NAME.spv given on the command line (an atomicAdd kernel:
    // flags end 2).
    std::vector<Variant> variants;
    for (const Variant& var : kVariants)
        if (only.empty() || std::find(only.begin(), only.end(), var.name) != only.end())
            variants.push_back(var);
    for (const std::string& o : only)
        if (o.size() > 4 && o.substr(o.size() - 4) == ".spv" &&
            std::none_of(variants.begin(), variants.end(),
                         [&](const Variant& v) { return o == std::string(v.name) + ".spv"; }))
            variants.push_back({strdup(o.substr(0, o.size() - 4).c_str()), 2});
    for (const Variant& var : variants) {
        if ((var.vmm && !vmm) || (var.subgroup && !vote)) {
            std::printf("%-16s skipped (device lacks the feature)\n", var.name);
            continue;
        }
        auto code = read_spv(std::string(var.name) + ".spv");
        if (code.empty()) {
            std::printf("%-16s skipped (no %s.spv; run build.sh)\n", var.name, var.name);
            continue;
        }
        for (uint32_t wg : wgs) {
            auto t0 = Clock::now();
            VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
            smci.codeSize = code.size() * 4;
            smci.pCode = code.data();
            VkShaderModule mod;
            CHECK(vkCreateShaderModule(dev, &smci, nullptr, &mod));
            VkSpecializationMapEntry sme{0, 0, 4};
            VkSpecializationInfo spec{1, &sme, 4, &wg};
            VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
            cpi.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
            cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
            cpi.stage.module = mod;
            cpi.stage.pName = "main";
            cpi.stage.pSpecializationInfo = &spec;
            cpi.layout = layout;
            VkPipeline pipe;
            CHECK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, nullptr, &pipe));
            double create_s = secs(t0, Clock::now());
            // First dispatch (llvmpipe compiles here): a 2-leaf tree.
            {
                uint32_t p2[3] = {2, 2, kNone}, c2[2] = {1, 2}, l2[2] = {1, 2};
                std::memcpy(parent.map, p2, 12);
                std::memcpy(child.map, c2, 8);
                std::memcpy(leaf.map, l2, 8);
            }
            double first_s = run_once(pipe, 2, wg);
            if (std::string(var.name).rfind("p_probe", 0) ==
                0) {  // one workgroup, see p_probe.comp
                run_once(pipe, wg, wg);
                const uint32_t* v = static_cast<const uint32_t*>(vals.map);
                uint32_t lo = ~0u, hi = 0;
                for (uint32_t i = 0; i < wg; ++i)
                    lo = std::min(lo, v[2 * i]), hi = std::max(hi, v[2 * i]);
                std::printf("%-16s %5u probe: counts seen after the barrier %u..%u (%s)\n",
                            var.name, wg, lo, hi,
                            lo == wg ? "execution barrier" : "no execution barrier");
                vkDestroyPipeline(dev, pipe, nullptr);
                vkDestroyShaderModule(dev, mod, nullptr);
                continue;
            }
            for (auto& c : cases) {
                load_case(c);
                uint64_t unwritten = 0, wrong = 0, badflags = 0;
                uint32_t bad_runs = 0;
                std::vector<double> times;
                for (uint32_t r = 0; r < runs; ++r) {
                    times.push_back(run_once(pipe, n, wg));
                    const uint32_t* v = static_cast<const uint32_t*>(vals.map);
                    const uint32_t* f = static_cast<const uint32_t*>(flags.map);
                    uint64_t bad = 0;
                    for (uint32_t i = 0; i < 2 * n - 1; ++i) {
                        if (v[2 * i] == c.expect[2 * i] && v[2 * i + 1] == c.expect[2 * i + 1])
                            continue;
                        ++bad;
                        if (v[2 * i] == 0xffffffffu && v[2 * i + 1] == 0xffffffffu)
                            ++unwritten;
                        else
                            ++wrong;
                    }
                    for (uint32_t i = 0; i + 1 < n; ++i)
                        if (f[i] != var.flag_end) ++badflags, ++bad;
                    if (bad) ++bad_runs;
                    if (getenv("CLIMB_DUMP") && r == 0) {  // small trees: every node
                        for (uint32_t i = 0; i < 2 * n - 1; ++i)
                            std::printf("  node %u parent %d val (%d,%d) want (%u,%u) flag %d\n", i,
                                        int(c.tree.parent[i]), int(v[2 * i]), int(v[2 * i + 1]),
                                        c.expect[2 * i], c.expect[2 * i + 1],
                                        i + 1 < n ? int(f[i]) : -1);
                    }
                }
                std::sort(times.begin(), times.end());
                std::printf("%-16s %5u %-8s %5u %9u %9llu %9llu %9llu %8.3f %8.3f %8.4f\n",
                            var.name, wg, c.shape.c_str(), runs, bad_runs,
                            (unsigned long long)unwritten, (unsigned long long)wrong,
                            (unsigned long long)badflags, create_s, first_s,
                            times[times.size() / 2]);
                std::fflush(stdout);
            }
            vkDestroyPipeline(dev, pipe, nullptr);
            vkDestroyShaderModule(dev, mod, nullptr);
        }
    }
    vkDeviceWaitIdle(dev);
    return 0;
}
