// The instruments' yardstick (gpu::measure_copy_bandwidth): a plain copy of pc.count uvec4
// (16 B each), one per invocation, so that the bytes it moves per second (read + written)
// measure what this device's memory gives a streaming kernel. Every stage's achieved
// bandwidth is reported as a fraction of it.
#version 450
#include "device/common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Source {
    uvec4 source[];
};
layout(std430, binding = 1) writeonly buffer Destination {
    uvec4 destination[];
};

void main() {
    uint i = linear_thread();
    if (i >= pc.count) return;
    destination[i] = source[i];
}
