// Indirect dispatch arguments from a count written on the GPU, so that kernels over a
// GPU-side count (the pairs a traversal found, the events a difference kept) launch only the
// workgroups that count needs, with no host read: slot kArgsElements covers
// max(min(count, pc.capacity), 1) elements at kWorkgroupSize per workgroup (at least one
// workgroup, so that invocation 0 can report the count), slot kArgsSortTiles covers the
// radix sort's tiles of kSortTile elements (none for an empty count). Workgroup counts are
// folded into x * y with x <= pc.offset (maxComputeWorkGroupCount[0]), as Kernel::dispatch
// folds them; shaders unfold with linear_group().
#version 450
#include "device/common.glsl"

layout(local_size_x = 1) in;
layout(std430, binding = 0) readonly buffer Count {
    uint count;
};
layout(std430, binding = 1) writeonly buffer Args {
    uint args[];
};

void write_slot(uint slot, uint groups) {
    uint x = min(groups, pc.offset);
    args[3u * slot] = x;
    args[3u * slot + 1u] = x == 0u ? 0u : (groups + x - 1u) / x;
    args[3u * slot + 2u] = 1u;
}

void main() {
    uint m = min(count, pc.capacity);
    write_slot(kArgsElements, max((m + kWorkgroupSize - 1u) / kWorkgroupSize, 1u));
    write_slot(kArgsSortTiles, (m + kSortTile - 1u) / kSortTile);
}
