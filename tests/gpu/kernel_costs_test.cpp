// The kernel registry and gpu::measure_kernel_costs (gpu/instruments/kernel_costs.cpp; issue "Light
// to start and to test", item 2). Test 1: every embedded kernel's bindings are read from its
// SPIR-V, each NAME_split has the bindings of NAME with some of them arrays of kTreeParts, and NAME
// none. Test 2: hostile modules (empty, not SPIR-V, truncated, an id bound past the module) are
// refused with an error naming the kernel, not read past their end. Test 3 (device): one cheap
// kernel measured, with times, under validation; a filter that matches nothing gives no kernel.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "broadphase/gpu/instruments.hpp"
#include "gpu_test_env.hpp"
#include "instruments/kernel_costs.hpp"
#include "shaders.hpp"

namespace broadphase::testing {
namespace {

TEST(KernelCosts, EveryKernelsBindingsAreReadFromItsSpirv) {
    std::set<std::string> names;
    for (const shaders::EmbeddedKernel& k : shaders::all_kernels) {
        SCOPED_TRACE(k.name);
        EXPECT_TRUE(names.insert(k.name).second) << "registered twice";
        auto b = gpu::read_kernel_bindings(k.spirv, k.name);
        ASSERT_TRUE(b) << b.error().message;
        EXPECT_GE(b->count, 1u);
        EXPECT_EQ(b->arrayed >> b->count, 0u);
        const std::string name = k.name;
        const bool split = name.size() > 6 && name.ends_with("_split");
        if (!split) {
            EXPECT_EQ(b->arrayed, 0u);
            continue;
        }
        const std::string base = name.substr(0, name.size() - 6);
        ASSERT_TRUE(names.count(base)) << "no " << base << " before its split variant";
        EXPECT_NE(b->arrayed, 0u);
        for (const shaders::EmbeddedKernel& other : shaders::all_kernels) {
            if (other.name != base) continue;
            auto whole = gpu::read_kernel_bindings(other.spirv, other.name);
            ASSERT_TRUE(whole);
            EXPECT_EQ(whole->count, b->count);
        }
    }
    EXPECT_TRUE(names.count("lbvh_build"));
    EXPECT_TRUE(names.count("lbvh_pairs_split"));
}

TEST(KernelCosts, HostileModulesAreRefused) {
    const std::span<const std::uint32_t> real = shaders::count_args;
    std::vector<std::uint32_t> words(real.begin(), real.end());
    auto refused = [](std::span<const std::uint32_t> spirv) {
        auto b = gpu::read_kernel_bindings(spirv, "hostile");
        return !b && b.error().message.find("kernel hostile: ") == 0;
    };
    EXPECT_TRUE(refused({}));
    EXPECT_TRUE(refused(std::span(words).first(4)));
    std::vector<std::uint32_t> not_spirv = words;
    not_spirv[0] = 0x12345678u;
    EXPECT_TRUE(refused(not_spirv));
    std::vector<std::uint32_t> huge_bound = words;
    huge_bound[3] = 0xffffffffu;
    EXPECT_TRUE(refused(huge_bound));
    // The first instruction claims more words than the module has.
    std::vector<std::uint32_t> truncated(words.begin(), words.begin() + 6);
    truncated[5] = (100u << 16) | (truncated[5] & 0xffffu);
    EXPECT_TRUE(refused(truncated));
    // An instruction of zero words would never advance.
    std::vector<std::uint32_t> stuck = words;
    stuck[5] &= 0xffffu;
    EXPECT_TRUE(refused(stuck));
}

class KernelCostsOnDevice : public GpuTest {};

TEST_F(KernelCostsOnDevice, OneCheapKernelIsMeasured) {
    auto costs = gpu::measure_kernel_costs(gpu_context(), "count_args");
    ASSERT_TRUE(costs) << costs.error().message;
    ASSERT_EQ(costs->size(), 1u);
    EXPECT_EQ(costs->front().name, "count_args");
    EXPECT_GE(costs->front().create_ms, 0.0);
    EXPECT_GT(costs->front().dispatch_ms, 0.0);
    EXPECT_DOUBLE_EQ(costs->front().total_ms(),
                     costs->front().create_ms + costs->front().dispatch_ms);

    auto none = gpu::measure_kernel_costs(gpu_context(), "no_such_kernel");
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace broadphase::testing
