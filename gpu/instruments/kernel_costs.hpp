// What a kernel's SPIR-V says of its descriptor bindings, read for gpu::measure_kernel_costs
// (gpu/instruments/kernel_costs.cpp), which builds each embedded kernel's layout from its module
// alone.
#pragma once

#include <cstdint>
#include <span>

#include "broadphase/gpu/context.hpp"
#include "broadphase/gpu/instruments.hpp"

namespace broadphase::gpu {

/// The bindings of a kernel's descriptor set 0 as the library lays them out
/// (gpu/device/kernels.cpp): storage buffers 0 .. count - 1, those in `arrayed` (bit i: binding i)
/// arrays of gpu_layout::kTreeParts descriptors (a split kernel's TREE_ARRAY,
/// shaders/lbvh/tree_parts.glsl).
struct KernelBindings {
    std::uint32_t count = 0;
    std::uint32_t arrayed = 0;
};

/// Reads the Binding and DescriptorSet decorations of `spirv`'s variables and the array length
/// of each. An error, naming the kernel `name`, for a module that is not SPIR-V, a binding that
/// is not a storage buffer of set 0 below 32, or an array of other than kTreeParts blocks.
Result<KernelBindings> read_kernel_bindings(std::span<const std::uint32_t> spirv, const char* name);

}  // namespace broadphase::gpu
