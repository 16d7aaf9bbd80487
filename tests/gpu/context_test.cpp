// Context: device selection, buffers, staged copies, errors for bad requests.
#include <numeric>
#include <vector>

#include "context_impl.hpp"
#include "gpu_test_env.hpp"

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
    gpu::ExternalDevice external{
        VK_NULL_HANDLE, owner.physical_device(), owner.device(), owner.queue_family(),
        owner.queue(),  VK_API_VERSION_1_2,      extensions};
    auto missing = gpu::Context::adopt(external);
    EXPECT_FALSE(missing);  // instance missing
    external.instance = owner.impl().instance;
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

}  // namespace
}  // namespace broadphase::testing
