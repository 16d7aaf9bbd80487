// Context: device selection, buffers, staged copies, errors for bad requests, and adoption of
// the caller's handles checked against what the library needs.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

#include "device/context_impl.hpp"
#include "environment.hpp"
#include "gpu_test_env.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::testing {
namespace {

class ContextTest : public GpuTest {};

// Test 1: the device reports sane limits.
TEST_F(ContextTest, ReportsDeviceInfo) {
    const gpu::DeviceInfo& info = gpu_context().info();
    EXPECT_FALSE(info.name.empty());
    EXPECT_GE(info.subgroup_size, 1u);
    EXPECT_GE(info.max_storage_buffer_range, 1u << 27);
    EXPECT_GE(info.api_version, static_cast<std::uint32_t>(VK_API_VERSION_1_2));
    EXPECT_GE(info.min_storage_buffer_offset_alignment, 1u);
    EXPECT_EQ(info.range_alignment,
              std::max<VkDeviceSize>(info.min_storage_buffer_offset_alignment, 4));
    EXPECT_EQ(info.range_alignment & (info.range_alignment - 1), 0u);  // a power of two
}

// Test 2: bytes survive an upload / download round trip at an offset.
TEST_F(ContextTest, UploadDownloadRoundTrip) {
    auto buffer = gpu_context().create_buffer(4096, gpu::MemoryKind::device);
    ASSERT_TRUE(buffer) << buffer.error().message;
    std::vector<std::uint32_t> data(256);
    std::iota(data.begin(), data.end(), 7u);
    ASSERT_TRUE(gpu_context().upload(*buffer, data.data(), 1024, 512));
    std::vector<std::uint32_t> back(256, 0);
    ASSERT_TRUE(gpu_context().download(*buffer, back.data(), 1024, 512));
    EXPECT_EQ(back, data);
}

// Test 2a: validation includes synchronization validation. Two fills of one range with no
// barrier between them are a write-after-write hazard: lavapipe runs them in order, a GPU need
// not, and only synchronization validation reports it.
TEST_F(ContextTest, SynchronizationValidationReportsAMissingBarrier) {
    gpu::ContextOptions options;
    options.validation = true;
    auto context = gpu::Context::create(options);
    ASSERT_TRUE(context) << context.error().message;
    auto buffer = (*context)->create_buffer(4096, gpu::MemoryKind::device);
    ASSERT_TRUE(buffer) << buffer.error().message;
    const VkBuffer handle = buffer->handle();
    std::fprintf(stderr, "(a WRITE_AFTER_WRITE hazard report is expected below)\n");
    ASSERT_TRUE((*context)->submit_and_wait([&](VkCommandBuffer cmd) {
        vkCmdFillBuffer(cmd, handle, 0, 4096, 1u);
        vkCmdFillBuffer(cmd, handle, 0, 4096, 2u);
    }));
    EXPECT_GE((*context)->validation_errors(), 1u);
}

// Test 2b: transfers reuse the Context's staging buffers: a smaller transfer keeps the buffer a
// larger one grew, a larger one grows it; the bytes still round-trip.
TEST_F(ContextTest, TransfersReuseTheStagingBuffers) {
    gpu::Context& ctx = gpu_context();
    auto buffer = ctx.create_buffer(1 << 16, gpu::MemoryKind::device);
    ASSERT_TRUE(buffer);
    std::vector<std::uint32_t> data(1 << 14);
    std::iota(data.begin(), data.end(), 3u);
    ASSERT_TRUE(ctx.upload(*buffer, data.data(), 1 << 16));
    std::vector<std::uint32_t> back(1 << 14, 0);
    ASSERT_TRUE(ctx.download(*buffer, back.data(), 1 << 16));
    EXPECT_EQ(back, data);
    const VkBuffer up = impl_of(ctx).upload_staging.handle();
    const VkBuffer down = impl_of(ctx).readback_staging.handle();
    ASSERT_NE(up, VK_NULL_HANDLE);
    ASSERT_NE(down, VK_NULL_HANDLE);
    EXPECT_GE(impl_of(ctx).upload_staging.size(), VkDeviceSize(1 << 16));
    ASSERT_TRUE(ctx.upload(*buffer, data.data() + 8, 256, 1024));
    std::uint32_t word = 0;
    ASSERT_TRUE(ctx.download(*buffer, &word, 4, 1024));
    EXPECT_EQ(word, data[8]);
    EXPECT_EQ(impl_of(ctx).upload_staging.handle(), up);
    EXPECT_EQ(impl_of(ctx).readback_staging.handle(), down);
    const VkDeviceSize grown = impl_of(ctx).upload_staging.size() + 4096;
    auto larger = ctx.create_buffer(grown, gpu::MemoryKind::device);
    ASSERT_TRUE(larger);
    std::vector<std::uint8_t> bytes(grown, 0x5a);
    ASSERT_TRUE(ctx.upload(*larger, bytes.data(), grown));
    EXPECT_GE(impl_of(ctx).upload_staging.size(), grown);
}

// Test 3: copies past the end are refused, not performed.
TEST_F(ContextTest, RejectsOutOfRangeCopies) {
    auto buffer = gpu_context().create_buffer(64, gpu::MemoryKind::device);
    ASSERT_TRUE(buffer);
    std::vector<char> data(128);
    Status s = gpu_context().upload(*buffer, data.data(), 128);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
}

// Test 4: an unknown device name is an error that lists the devices.
TEST_F(ContextTest, UnknownDeviceNameIsAnError) {
    gpu::ContextOptions options;
    options.device = "no-such-device-xyz";
    auto context = gpu::Context::create(options);
    ASSERT_FALSE(context);
    EXPECT_EQ(context.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(context.error().message.find("devices:"), std::string::npos);
}

// Test 5: adopting the caller's handles works and leaves them alive.
TEST_F(ContextTest, AdoptsCallersDevice) {
    gpu::Context& owner = gpu_context();
    const char* const extensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    gpu::ExternalDevice external{VK_NULL_HANDLE,       owner.physical_device(), owner.device(),
                                 owner.queue_family(), owner.queue(),           VK_API_VERSION_1_2,
                                 extensions,           VK_NULL_HANDLE,          {}};
    external.vulkan_memory_model = true;
    auto missing = gpu::Context::adopt(external);
    EXPECT_FALSE(missing);  // instance missing
    external.instance = impl_of(owner).instance;
    {
        auto adopted = gpu::Context::adopt(external);
        ASSERT_TRUE(adopted) << adopted.error().message;
        auto buffer = adopted.value()->create_buffer(16, gpu::MemoryKind::device);
        ASSERT_TRUE(buffer);
        std::uint32_t v[4] = {1, 2, 3, 4}, back[4] = {};
        ASSERT_TRUE(adopted.value()->upload(*buffer, v, 16));
        ASSERT_TRUE(adopted.value()->download(*buffer, back, 16));
        EXPECT_EQ(back[3], 4u);
    }
    // The owner's device still works after the adopting context is gone.
    auto buffer = owner.create_buffer(16, gpu::MemoryKind::device);
    EXPECT_TRUE(buffer);
}

// The test context's handles as a caller would describe them (its instance was created for
// Vulkan 1.2 with VK_KHR_push_descriptor enabled on the device).
const char* const kExtensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
gpu::ExternalDevice described() {
    gpu::Context& owner = gpu_context();
    gpu::ExternalDevice external{impl_of(owner).instance,
                                 owner.physical_device(),
                                 owner.device(),
                                 owner.queue_family(),
                                 owner.queue(),
                                 VK_API_VERSION_1_2,
                                 kExtensions,
                                 VK_NULL_HANDLE,
                                 {}};
    external.vulkan_memory_model = true;  // Context::create enables it
    return external;
}

std::string adopt_error(const gpu::ExternalDevice& external, ErrorCode code) {
    auto adopted = gpu::Context::adopt(external);
    EXPECT_FALSE(adopted);
    if (adopted) return "";
    EXPECT_EQ(adopted.error().code, code) << adopted.error().message;
    return adopted.error().message;
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Restores an environment variable as it was (set or not) when the scope ends.
class SavedEnv {
public:
    explicit SavedEnv(const char* name) : name_(name) {
        const char* v = std::getenv(name);
        was_set_ = v != nullptr;
        if (v) value_ = v;
    }
    ~SavedEnv() {
        if (was_set_)
            ::setenv(name_, value_.c_str(), 1);
        else
            ::unsetenv(name_);
    }
    SavedEnv(const SavedEnv&) = delete;
    SavedEnv& operator=(const SavedEnv&) = delete;

private:
    const char* name_;
    bool was_set_ = false;
    std::string value_;
};

// What the test context's handles adopted with `tuning` report (a failed expectation and the
// defaults when refused); the adopted Context's sorts run as it reports.
gpu::DeviceInfo info_with(const gpu::Tuning& tuning) {
    gpu::ExternalDevice external = described();
    external.tuning = tuning;
    auto adopted = gpu::Context::adopt(external);
    EXPECT_TRUE(adopted) << adopted.error().message;
    if (!adopted) return {};
    const gpu::DeviceInfo& info = adopted.value()->info();
    const gpu::RadixSort sort(*adopted.value());
    EXPECT_EQ(sort.path(), info.sort_path);
    EXPECT_EQ(sort.window(), info.sort_window);
    EXPECT_EQ(sort.subgroup_rank(), info.sort_subgroup_rank);
    return info;
}

// The error of adopting the test context's handles with `tuning`, refused with `code`.
std::string tuning_error(const gpu::Tuning& tuning, ErrorCode code) {
    gpu::ExternalDevice external = described();
    external.tuning = tuning;
    return adopt_error(external, code);
}

// Test 5b: the sort path (SortPath): the option wins, and is the path the Context's sorts run;
// automatic takes the device's rule (onesweep on NVIDIA, AMD and Intel GPUs only: lavapipe, a
// CPU device, runs reduce_then_scan).
TEST_F(ContextTest, SortPathOptionAndRule) {
    const gpu::DeviceInfo& info = gpu_context().info();
    const bool rule_onesweep =
        (info.vendor_id == 0x10de || info.vendor_id == 0x1002 || info.vendor_id == 0x8086) &&
        (info.type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
         info.type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU);
    const gpu::SortPath rule =
        rule_onesweep ? gpu::SortPath::onesweep : gpu::SortPath::reduce_then_scan;
    if (info.type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
        EXPECT_EQ(rule, gpu::SortPath::reduce_then_scan);
    }
    gpu::Tuning tuning;
    EXPECT_EQ(info_with(tuning).sort_path, rule);
    tuning.sort_path = gpu::SortPath::onesweep;
    EXPECT_EQ(info_with(tuning).sort_path, gpu::SortPath::onesweep);
    tuning.sort_path = gpu::SortPath::reduce_then_scan;
    EXPECT_EQ(info_with(tuning).sort_path, gpu::SortPath::reduce_then_scan);
    EXPECT_STREQ(gpu::sort_path_name(gpu::SortPath::onesweep), "onesweep");
    EXPECT_STREQ(gpu::sort_path_name(gpu::SortPath::reduce_then_scan), "reduce_then_scan");
}

// Test 5b': the onesweep look-back window (DeviceInfo::sort_window): Tuning::sort_window when it
// gives 1 to kOnesweepWindow tiles, else kOnesweepWindow; a larger one is refused. The sorts of
// the Context take it.
TEST_F(ContextTest, SortWindowOption) {
    gpu::Tuning tuning;
    EXPECT_EQ(info_with(tuning).sort_window, gpu_layout::kOnesweepWindow);
    for (std::uint32_t window : {1u, 5u, gpu_layout::kOnesweepWindow}) {
        tuning.sort_window = window;
        EXPECT_EQ(info_with(tuning).sort_window, window);
    }
    tuning.sort_window = gpu_layout::kOnesweepWindow + 1;
    const std::string m = tuning_error(tuning, ErrorCode::invalid_argument);
    EXPECT_TRUE(has(m, "sort window")) << m;
}

// Test 5b'': how the sort ranks its tiles (DeviceInfo::sort_subgroup_rank): subgroup ballots on
// GPUs that have them, shared memory on CPU devices (lavapipe); Tuning::sort_rank subgroup or
// shared overrides the rule (subgroup is refused on a device without ballot). The Context's
// sorts take it, and a sort asked for either way ranks that way.
TEST_F(ContextTest, SortRankOptionAndRule) {
    const gpu::DeviceInfo& info = gpu_context().info();
    const bool rule = info.subgroup_ballot && info.type != VK_PHYSICAL_DEVICE_TYPE_CPU;
    gpu::Tuning tuning;
    EXPECT_EQ(info_with(tuning).sort_subgroup_rank, rule);
    tuning.sort_rank = gpu::SortRank::shared;
    EXPECT_FALSE(info_with(tuning).sort_subgroup_rank);
    tuning.sort_rank = gpu::SortRank::subgroup;
    if (info.subgroup_ballot) {
        EXPECT_TRUE(info_with(tuning).sort_subgroup_rank);
    } else {
        const std::string m = tuning_error(tuning, ErrorCode::unsupported);
        EXPECT_TRUE(has(m, "subgroup ballot")) << m;
    }
    EXPECT_FALSE(gpu::RadixSort(gpu_context(), gpu::SortPath::onesweep, gpu::SortRank::shared)
                     .subgroup_rank());
    EXPECT_EQ(gpu::RadixSort(gpu_context(), gpu::SortPath::onesweep, gpu::SortRank::subgroup)
                  .subgroup_rank(),
              info.subgroup_ballot);
}

// Test 5c: the traversal budget (DeviceInfo::traversal_budget): the option wins; 0 takes the
// device's rule (kTraversalBudget on CPU devices such as lavapipe, kGpuTraversalBudget on GPUs);
// the first rounds' budgets (pair_first_round, query_first_round) are reported resolved; a
// value outside 1..kTraversalBudget is refused.
TEST_F(ContextTest, TraversalBudgetOptionAndRule) {
    const bool cpu = gpu_context().info().type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    const std::uint32_t rule = cpu ? gpu_layout::kTraversalBudget : gpu_layout::kGpuTraversalBudget;
    gpu::Tuning tuning;
    EXPECT_EQ(info_with(tuning).traversal_budget, rule);
    tuning.traversal_budget = 1;
    EXPECT_EQ(info_with(tuning).traversal_budget, 1u);
    tuning.traversal_budget = 4;
    const gpu::DeviceInfo four = info_with(tuning);
    EXPECT_EQ(four.traversal_budget, 4u);
    EXPECT_EQ(four.pair_first_round, 4 * gpu_layout::kPairGroup);
    EXPECT_EQ(four.query_first_round, 4 * gpu_layout::kQueryFirstRound);
    tuning.traversal_budget = gpu_layout::kTraversalBudget;
    const gpu::DeviceInfo full = info_with(tuning);
    EXPECT_EQ(full.traversal_budget, gpu_layout::kTraversalBudget);
    EXPECT_EQ(full.pair_first_round, gpu_layout::kTraversalBudget);
    EXPECT_EQ(full.query_first_round, gpu_layout::kTraversalBudget);
    tuning.traversal_budget = gpu_layout::kTraversalBudget + 1;
    const std::string m = tuning_error(tuning, ErrorCode::invalid_argument);
    EXPECT_TRUE(has(m, "traversal budget")) << m;
}

// Test 5c': the library reads no environment: with each tuning variable set, to values the tool
// takes or refuses, a Context whose Tuning leaves every choice open resolves as with none set
// (the tool and the tests read them: tools/environment.hpp, tests/cli/environment_test.cpp).
TEST_F(ContextTest, TuningIgnoresTheEnvironment) {
    constexpr const char* kNames[] = {"BROADPHASE_SORT_PATH", "BROADPHASE_SORT_WINDOW",
                                      "BROADPHASE_SORT_RANK", "BROADPHASE_TRAVERSAL_BUDGET"};
    const SavedEnv path(kNames[0]), window(kNames[1]), rank(kNames[2]), budget(kNames[3]);
    for (const char* name : kNames) ::unsetenv(name);
    const gpu::DeviceInfo plain = info_with({});
    const char* const kValues[][4] = {{"onesweep", "1", "subgroup", "64"},
                                      {"reduce_then_scan", "3", "shared", "1"},
                                      {"fastest", "wide", "ballots", "lots"}};
    for (const auto& values : kValues) {
        SCOPED_TRACE(values[0]);
        for (int i = 0; i < 4; ++i) ::setenv(kNames[i], values[i], 1);
        const gpu::DeviceInfo info = info_with({});
        EXPECT_EQ(info.sort_path, plain.sort_path);
        EXPECT_EQ(info.sort_window, plain.sort_window);
        EXPECT_EQ(info.sort_subgroup_rank, plain.sort_subgroup_rank);
        EXPECT_EQ(info.traversal_budget, plain.traversal_budget);
    }
}

// Test 5d: the tests' contexts take their tuning from the environment as the tool does
// (tool::tuning_from_environment): what BROADPHASE_SORT_PATH, BROADPHASE_SORT_WINDOW,
// BROADPHASE_SORT_RANK and BROADPHASE_TRAVERSAL_BUDGET say is what the shared context and
// own_context's run, so that the ctest entries that set them (onesweep, gpu_budget, which run
// this case too) run their suites that way; an option own_context is given wins over its
// variable.
TEST_F(ContextTest, TestContextsTakeTheEnvironment) {
    auto from_env = tool::tuning_from_environment({});
    ASSERT_TRUE(from_env) << from_env.error().message;
    const gpu::Tuning wanted = from_env.value();
    auto expect_tuned = [&wanted](const gpu::Context& context) {
        const gpu::DeviceInfo& info = context.info();
        if (wanted.sort_path != gpu::SortPath::automatic) {
            EXPECT_EQ(info.sort_path, wanted.sort_path);
        }
        if (wanted.sort_window != 0) {
            EXPECT_EQ(info.sort_window, wanted.sort_window);
        }
        if (wanted.sort_rank != gpu::SortRank::automatic) {
            EXPECT_EQ(info.sort_subgroup_rank, wanted.sort_rank == gpu::SortRank::subgroup);
        }
        if (wanted.traversal_budget != 0) {
            EXPECT_EQ(info.traversal_budget, wanted.traversal_budget);
        }
    };
    expect_tuned(gpu_context());
    auto own = own_context({});
    ASSERT_TRUE(own);
    expect_tuned(*own);

    const SavedEnv path("BROADPHASE_SORT_PATH"), window("BROADPHASE_SORT_WINDOW"),
        rank("BROADPHASE_SORT_RANK");
    ::setenv("BROADPHASE_SORT_PATH", "onesweep", 1);
    ::setenv("BROADPHASE_SORT_WINDOW", "3", 1);
    ::setenv("BROADPHASE_SORT_RANK", "shared", 1);
    auto tuned = own_context({});
    ASSERT_TRUE(tuned);
    EXPECT_EQ(tuned->info().sort_path, gpu::SortPath::onesweep);
    EXPECT_EQ(tuned->info().sort_window, 3u);
    EXPECT_FALSE(tuned->info().sort_subgroup_rank);
    gpu::ContextOptions options;
    options.tuning.sort_path = gpu::SortPath::reduce_then_scan;
    options.tuning.sort_window = 2;
    auto chosen = own_context(options);
    ASSERT_TRUE(chosen);
    EXPECT_EQ(chosen->info().sort_path, gpu::SortPath::reduce_then_scan);
    EXPECT_EQ(chosen->info().sort_window, 2u);
    EXPECT_FALSE(chosen->info().sort_subgroup_rank);
}

// Test 6: an instance whose API version the caller did not give is refused, asking for it,
// before any Vulkan 1.1 call is made on it (the fixture fails on a validation error).
TEST_F(ContextTest, AdoptWithoutApiVersionAsksForIt) {
    gpu::ExternalDevice external = described();
    external.api_version = 0;
    const std::string m = adopt_error(external, ErrorCode::invalid_argument);
    EXPECT_TRUE(has(m, "ExternalDevice::api_version")) << m;
    EXPECT_TRUE(has(m, "1.2 or later")) << m;
}

// Test 7: an instance created for Vulkan 1.0 is refused, naming both versions.
TEST_F(ContextTest, AdoptOfAVulkan10InstanceIsRefused) {
    gpu::ExternalDevice external = described();
    external.api_version = VK_API_VERSION_1_0;
    const std::string m = adopt_error(external, ErrorCode::unsupported);
    EXPECT_TRUE(has(m, "the instance was created for Vulkan 1.0")) << m;
    EXPECT_TRUE(has(m, "Vulkan 1.2 is needed")) << m;
    external.api_version = VK_API_VERSION_1_1;
    EXPECT_TRUE(has(adopt_error(external, ErrorCode::unsupported), "for Vulkan 1.1"));
}

// Test 8: a device whose enabled extensions lack VK_KHR_push_descriptor is refused, saying
// where to enable it.
TEST_F(ContextTest, AdoptWithoutPushDescriptorIsRefused) {
    gpu::ExternalDevice external = described();
    external.enabled_extensions = {};
    const std::string m = adopt_error(external, ErrorCode::unsupported);
    EXPECT_TRUE(has(m, "VK_KHR_push_descriptor is not enabled on the device")) << m;
    EXPECT_TRUE(has(m, "ExternalDevice::enabled_extensions")) << m;
    EXPECT_FALSE(has(m, "does not support")) << m;  // lavapipe supports it
    const char* const others[] = {"VK_KHR_swapchain"};
    external.enabled_extensions = others;
    EXPECT_TRUE(has(adopt_error(external, ErrorCode::unsupported), "VK_KHR_push_descriptor"));
}

// Test 8b: a device on which the caller did not enable vulkanMemoryModel is refused, saying
// where to enable it; a device that does not support it is described too.
TEST_F(ContextTest, AdoptWithoutTheMemoryModelIsRefused) {
    gpu::ExternalDevice external = described();
    external.vulkan_memory_model = false;
    const std::string m = adopt_error(external, ErrorCode::unsupported);
    EXPECT_TRUE(has(m, "vulkanMemoryModel and vulkanMemoryModelDeviceScope are not enabled")) << m;
    EXPECT_TRUE(has(m, "ExternalDevice::vulkan_memory_model")) << m;

    gpu::DeviceFacts facts = gpu::device_facts(gpu_context().physical_device(), VK_API_VERSION_1_2);
    EXPECT_TRUE(facts.memory_model_supported);  // Context::create chose this device
    facts.memory_model_supported = false;
    EXPECT_EQ(gpu::missing_requirements(facts),
              std::vector<std::string>{"the device does not support vulkanMemoryModel and "
                                       "vulkanMemoryModelDeviceScope (Vulkan 1.2 features)"});
}

// Test 9: a queue family the device does not have, or one without compute, is refused. The
// second case is checked on the device's facts with its families replaced by a transfer-only
// one (lavapipe's single family has compute).
TEST_F(ContextTest, AdoptOfAQueueWithoutComputeIsRefused) {
    gpu::ExternalDevice external = described();
    external.queue_family = 7;
    std::string m = adopt_error(external, ErrorCode::unsupported);
    EXPECT_TRUE(has(m, "queue family 7 does not exist (the device has ")) << m;

    gpu::DeviceFacts facts = gpu::device_facts(gpu_context().physical_device(), VK_API_VERSION_1_2);
    facts.enabled_extensions = std::vector<std::string>{VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    facts.queue_family = 0;
    EXPECT_TRUE(gpu::missing_requirements(facts).empty());
    facts.families.assign(1, VkQueueFamilyProperties{});
    facts.families[0].queueFlags = VK_QUEUE_TRANSFER_BIT;
    facts.families[0].queueCount = 1;
    const std::vector<std::string> missing = gpu::missing_requirements(facts);
    ASSERT_EQ(missing.size(), 1u);
    EXPECT_EQ(missing[0], "queue family 0 has no compute (VK_QUEUE_COMPUTE_BIT)");
    facts.queue_family.reset();  // Context::create's view: any family with compute
    EXPECT_EQ(gpu::missing_requirements(facts),
              std::vector<std::string>{"no queue family has compute (VK_QUEUE_COMPUTE_BIT)"});
}

// Test 10: everything missing is named in one error; a device short of Vulkan 1.2 or of the
// kernels' compute limits is described too.
TEST_F(ContextTest, AdoptNamesEverythingMissingAtOnce) {
    gpu::ExternalDevice external = described();
    external.api_version = VK_API_VERSION_1_0;
    external.enabled_extensions = {};
    external.queue_family = 9;
    const std::string m = adopt_error(external, ErrorCode::unsupported);
    EXPECT_TRUE(has(m, "Context::adopt: device '" + gpu_context().info().name + "'")) << m;
    EXPECT_TRUE(has(m, "for Vulkan 1.0")) << m;
    EXPECT_TRUE(has(m, "VK_KHR_push_descriptor is not enabled")) << m;
    EXPECT_TRUE(has(m, "queue family 9 does not exist")) << m;

    gpu::DeviceFacts facts = gpu::device_facts(gpu_context().physical_device(), VK_API_VERSION_1_2);
    facts.properties.apiVersion = VK_API_VERSION_1_1;
    facts.properties.limits.maxComputeWorkGroupInvocations = 128;
    facts.properties.limits.maxComputeSharedMemorySize = 16384;
    facts.supported_extensions.clear();
    const std::vector<std::string> missing = gpu::missing_requirements(facts);
    ASSERT_EQ(missing.size(), 4u);
    EXPECT_EQ(missing[0], "the device supports Vulkan 1.1 only; Vulkan 1.2 is needed");
    EXPECT_EQ(missing[1], "VK_KHR_push_descriptor is not supported by the device");
    EXPECT_TRUE(has(missing[2], "maxComputeWorkGroupInvocations 128")) << missing[2];
    EXPECT_TRUE(has(missing[3], "maxComputeSharedMemorySize 16384")) << missing[3];
}

// A caller's own instance (for `api_version`, with the validation layer and a messenger that
// counts its errors) and device (compute queue family 0, `extensions` enabled).
struct OwnDevice {
    std::atomic<std::uint64_t> errors{0};
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;

    static VKAPI_ATTR VkBool32 VKAPI_CALL
    on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
               const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
        if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
            ++*static_cast<std::atomic<std::uint64_t>*>(user);
            std::fprintf(stderr, "[vulkan error] %s\n", data->pMessage ? data->pMessage : "");
        }
        return VK_FALSE;
    }

    OwnDevice(std::uint32_t api_version, std::span<const char* const> extensions) {
        const char* layers[] = {"VK_LAYER_KHRONOS_validation"};
        // VK_KHR_push_descriptor needs VK_KHR_get_physical_device_properties2 on a 1.0
        // instance (core from 1.1).
        const char* instance_extensions[] = {
            VK_EXT_DEBUG_UTILS_EXTENSION_NAME,
            VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME};
        VkApplicationInfo app{};
        app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
        app.apiVersion = api_version;
        VkDebugUtilsMessengerCreateInfoEXT messenger_info{};
        messenger_info.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
        messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
        messenger_info.pfnUserCallback = on_message;
        messenger_info.pUserData = &errors;
        VkInstanceCreateInfo info{};
        info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
        info.pNext = &messenger_info;
        info.pApplicationInfo = &app;
        info.enabledLayerCount = 1;
        info.ppEnabledLayerNames = layers;
        info.enabledExtensionCount = 2;
        info.ppEnabledExtensionNames = instance_extensions;
        if (vkCreateInstance(&info, nullptr, &instance) != VK_SUCCESS) return;
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
        if (create) create(instance, &messenger_info, nullptr, &messenger);
        // The test context's device, as this instance enumerates it.
        std::uint32_t count = 0;
        vkEnumeratePhysicalDevices(instance, &count, nullptr);
        std::vector<VkPhysicalDevice> physicals(count);
        vkEnumeratePhysicalDevices(instance, &count, physicals.data());
        for (VkPhysicalDevice p : physicals) {
            VkPhysicalDeviceProperties props;
            vkGetPhysicalDeviceProperties(p, &props);
            if (gpu_context().info().name == props.deviceName) physical = p;
        }
        if (!physical) return;
        float priority = 1;
        VkDeviceQueueCreateInfo queue_info{};
        queue_info.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
        queue_info.queueFamilyIndex = 0;
        queue_info.queueCount = 1;
        queue_info.pQueuePriorities = &priority;
        VkDeviceCreateInfo device_info{};
        device_info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
        device_info.queueCreateInfoCount = 1;
        device_info.pQueueCreateInfos = &queue_info;
        device_info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
        device_info.ppEnabledExtensionNames = extensions.data();
        VkPhysicalDeviceVulkan12Features features12{};
        features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
        features12.vulkanMemoryModel = VK_TRUE;
        features12.vulkanMemoryModelDeviceScope = VK_TRUE;
        if (api_version >= VK_API_VERSION_1_2) device_info.pNext = &features12;
        if (vkCreateDevice(physical, &device_info, nullptr, &device) != VK_SUCCESS) return;
        vkGetDeviceQueue(device, 0, 0, &queue);
    }
    ~OwnDevice() { gpu::destroy_owned_device(instance, messenger, device); }
    gpu::ExternalDevice external(std::uint32_t api_version,
                                 std::span<const char* const> extensions) const {
        gpu::ExternalDevice external{instance,    physical,   device,         0, queue,
                                     api_version, extensions, VK_NULL_HANDLE, {}};
        external.vulkan_memory_model = api_version >= VK_API_VERSION_1_2;
        return external;
    }
};

// Test 11: a real Vulkan 1.0 instance, adopted as the caller describes it (version 1.0, or not
// given), is refused before the library calls anything its instance version lacks: no
// validation error on that instance. The same instance created for 1.2 is adopted and works;
// a device created without VK_KHR_push_descriptor is refused even when the caller says it is
// enabled (the loader gives no vkCmdPushDescriptorSetKHR).
TEST_F(ContextTest, AdoptionOfRealInstancesAndDevices) {
    {
        OwnDevice own(VK_API_VERSION_1_0, kExtensions);
        ASSERT_TRUE(own.device);
        EXPECT_TRUE(
            has(adopt_error(own.external(VK_API_VERSION_1_0, kExtensions), ErrorCode::unsupported),
                "the instance was created for Vulkan 1.0"));
        EXPECT_TRUE(has(adopt_error(own.external(0, kExtensions), ErrorCode::invalid_argument),
                        "ExternalDevice::api_version"));
        EXPECT_EQ(own.errors.load(), 0u);
    }
    {
        OwnDevice own(VK_API_VERSION_1_2, kExtensions);
        ASSERT_TRUE(own.device);
        auto adopted = gpu::Context::adopt(own.external(VK_API_VERSION_1_2, kExtensions));
        ASSERT_TRUE(adopted) << adopted.error().message;
        auto lbvh = gpu::Lbvh::create(**adopted);
        ASSERT_TRUE(lbvh);
        std::vector<Box> boxes{{{0, 0, 0}, {1, 1, 1}}, {{0.5f, 0.5f, 0.5f}, {2, 2, 2}}};
        auto pairs = (*lbvh)->find_pairs(boxes);
        ASSERT_TRUE(pairs) << pairs.error().message;
        EXPECT_EQ(pairs.value(), (std::vector<Pair>{{0, 1}}));
        lbvh.value().reset();
        adopted.value().reset();
        EXPECT_EQ(own.errors.load(), 0u);
    }
    {
        OwnDevice own(VK_API_VERSION_1_2, {});
        ASSERT_TRUE(own.device);
        EXPECT_TRUE(has(adopt_error(own.external(VK_API_VERSION_1_2, {}), ErrorCode::unsupported),
                        "VK_KHR_push_descriptor is not enabled"));
        const std::string m =
            adopt_error(own.external(VK_API_VERSION_1_2, kExtensions), ErrorCode::unsupported);
        EXPECT_TRUE(has(m, "VK_KHR_push_descriptor")) << m;
        EXPECT_EQ(own.errors.load(), 0u);
    }
}

}  // namespace
}  // namespace broadphase::testing
