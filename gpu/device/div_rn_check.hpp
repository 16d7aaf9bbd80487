// Test hook of the occlusion shader's correctly rounded division (shaders/cull/occlusion.glsl
// div_rn, through shaders/device/div_rn_check.comp): not part of the public API; the GPU tests use
// it to compare the shader's quotients with the CPU's IEEE division bit for bit.
#pragma once

#include <span>
#include <vector>

#include "broadphase/gpu.hpp"

namespace broadphase::gpu {

/// div_rn(x[i], w[i]) for every i, computed on the GPU (x.size() == w.size(); each w[i] finite
/// and > 0, each x[i] finite).
Result<std::vector<float>> divide_on_gpu(Context& context, std::span<const float> x,
                                         std::span<const float> w);

}  // namespace broadphase::gpu
