// Exclusive scan, step 1 of the multi-level scan (reduce-then-scan): each workgroup scans its
// tile of kScanTile uints in place and writes the tile's total to sums[tile].
// CPU twin: std::exclusive_scan. Host: gpu/sort/radix_sort.cpp record_scan.
#version 450
#include "device/common.glsl"
#include "sort/workgroup_scan.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) buffer Data {
    uint data[];
};
layout(std430, binding = 1) writeonly buffer Sums {
    uint sums[];
};

void main() {
    uint tile = linear_group();
    if (tile >= pc.tiles) return;  // uniform per workgroup: no barrier divergence
    uint base = tile * kScanTile + gl_LocalInvocationID.x * kScanItemsPerThread;
    uint v[kScanItemsPerThread];
    uint sum = 0u;
    for (uint k = 0u; k < kScanItemsPerThread; ++k) {
        uint i = base + k;
        v[k] = i < pc.count ? data[i] : 0u;
        sum += v[k];
    }
    uint total;
    uint prefix = workgroup_exclusive_scan(sum, total);
    for (uint k = 0u; k < kScanItemsPerThread; ++k) {
        uint i = base + k;
        if (i < pc.count) data[i] = prefix;
        prefix += v[k];
    }
    if (gl_LocalInvocationID.x == 0u) sums[tile] = total;
}
