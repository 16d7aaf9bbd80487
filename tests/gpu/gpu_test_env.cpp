// main() of the GPU tests: creates the Vulkan context with the Khronos validation layer on.
// No device is not a skip: the tests fail, since CI runs them on lavapipe.
#include <cstdio>
#include <cstdlib>

#include "environment.hpp"
#include "gpu_test_env.hpp"

namespace broadphase::testing {

namespace {
std::unique_ptr<gpu::Context> g_context;
}

gpu::Context& gpu_context() {
    return *g_context;
}

std::unique_ptr<gpu::Context> own_context(gpu::ContextOptions options) {
    options.validation = true;
    auto tuning = tool::tuning_from_environment(options.tuning);
    EXPECT_TRUE(tuning) << (tuning ? "" : tuning.error().message);
    if (!tuning) return nullptr;
    options.tuning = tuning.value();
    auto context = gpu::Context::create(options);
    EXPECT_TRUE(context) << (context ? "" : context.error().message);
    return context ? std::move(context.value()) : nullptr;
}

std::unique_ptr<gpu::Context> capped_context(VkDeviceSize range, bool split_tree_bindings) {
    gpu::ContextOptions options;
    options.max_storage_buffer_range = range;
    options.tuning.split_tree_bindings = split_tree_bindings;
    return own_context(options);
}

}  // namespace broadphase::testing

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    // The tests' contexts keep no pipeline cache in the user's cache folder (unless the caller
    // chose one); pipeline_cache_test gives its own contexts temporary folders.
    ::setenv("BROADPHASE_PIPELINE_CACHE", "off", 0);
    broadphase::gpu::ContextOptions options;
    options.validation = true;
    // BROADPHASE_SORT_PATH, BROADPHASE_SORT_WINDOW, BROADPHASE_SORT_RANK and
    // BROADPHASE_TRAVERSAL_BUDGET reach the tests' contexts as the tool passes them: as the
    // options (own_context does the same).
    auto tuning = broadphase::tool::tuning_from_environment(options.tuning);
    if (!tuning) {
        std::fprintf(stderr, "%s\n", tuning.error().message.c_str());
        return 1;
    }
    options.tuning = tuning.value();
    auto context = broadphase::gpu::Context::create(options);
    if (!context) {
        std::fprintf(stderr, "cannot create a Vulkan context: %s\n",
                     context.error().message.c_str());
        return 1;
    }
    const auto& info = context.value()->info();
    std::printf(
        "GPU tests on '%s' (%s), subgroup size %u, maxStorageBufferRange %llu, buffer ranges "
        "aligned to %llu bytes\n",
        info.name.c_str(), info.driver.c_str(), info.subgroup_size,
        static_cast<unsigned long long>(info.max_storage_buffer_range),
        static_cast<unsigned long long>(info.range_alignment));
    broadphase::testing::g_context = std::move(context.value());
    int result = RUN_ALL_TESTS();
    broadphase::testing::g_context.reset();
    return result;
}
