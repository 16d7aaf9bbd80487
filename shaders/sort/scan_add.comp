// Exclusive scan, step 2: adds the scanned total of all earlier tiles to every element.
#version 450
#include "device/common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) buffer Data {
    uint data[];
};
layout(std430, binding = 1) readonly buffer Sums {
    uint sums[];
};

void main() {
    uint i = linear_thread();
    if (i >= pc.count) return;
    data[i] += sums[i / kScanTile];
}
