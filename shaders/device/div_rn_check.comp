// Test hook of shaders/cull/occlusion.glsl's div_rn (gpu/device/div_rn_check.hpp): quotient[i] =
// div_rn(x[i], w[i]) for i < pc.count, so that tests compare it bit for bit with the CPU's
// IEEE division (flushed below 2^-126 as the occlusion rule does) on chosen operands.
#version 450
#include "device/common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Numerators {
    float x[];
};
layout(std430, binding = 1) readonly buffer Denominators {
    float w[];
};
layout(std430, binding = 2) writeonly buffer Quotients {
    float quotient[];
};
// occlusion.glsl reads the pyramid only in box_occluded, which this kernel does not call.
layout(std430, binding = 3) readonly buffer Pyramid {
    float pyramid_texels[];
};
#include "cull/occlusion.glsl"

void main() {
    uint i = linear_thread();
    if (i < pc.count) quotient[i] = div_rn(x[i], w[i]);
}
