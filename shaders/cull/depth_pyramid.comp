// One level of a max-depth pyramid (include/broadphase/occlusion.hpp, the layout of
// DepthPyramid::texels()): texel (x, y) of level k + 1 is the max of the level-k texels
// (2x, 2y), (2x + 1, 2y), (2x, 2y + 1), (2x + 1, 2y + 1) that exist (clamped at an odd edge).
// gpu::Culler::record_depth_pyramid dispatches it once per level after the first, each after
// a barrier. max is exact, so the GPU pyramid equals DepthPyramid::build bit for bit.
// Push constants: count = level k+1's texels, offset = level k's first float, key_word and
// key_words = level k's width and height, capacity = level k+1's first float, shift = level
// k+1's width.
#version 450
#include "device/common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) buffer Pyramid {
    float texels[];
};

void main() {
    uint i = linear_thread();
    if (i >= pc.count) return;
    uint width = pc.shift;
    uint x = i % width, y = i / width;
    uint src = pc.offset, src_w = pc.key_word, src_h = pc.key_words;
    uint x0 = 2u * x, y0 = 2u * y;
    uint x1 = min(x0 + 1u, src_w - 1u), y1 = min(y0 + 1u, src_h - 1u);
    float m = max(max(texels[src + y0 * src_w + x0], texels[src + y0 * src_w + x1]),
                  max(texels[src + y1 * src_w + x0], texels[src + y1 * src_w + x1]));
    texels[pc.capacity + i] = m;
}
