// Last step of the cull: copies the first min(total, capacity) ordered ids to the caller's
// visible_ids and writes one VkDrawIndexedIndirectCommand per id (instanceCount 1,
// firstInstance = id), plus the draw count min(total, capacity) and the exact total. The ordered
// ids are the sorted values, or with kCullFlagSortedKeys (exact order) the low pc.key_words bits
// of the sorted 64-bit keys (cull_order_id).
#version 450
#include "device/common.glsl"

#include "cull/cull_distance.glsl"

#include "broadphase/gpu/layout/cull.h"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Params {
    CullParams params;
};
layout(std430, binding = 1) readonly buffer Offsets {
    uint offsets[];
};  // offsets[pc.tiles] is the number of visible boxes
layout(std430, binding = 2) readonly buffer Ordered {
    uint ordered[];
};  // the sorted values (one uint each) or keys (two: low word first)
layout(std430, binding = 3) writeonly buffer Visible {
    uint visible_ids[];
};
layout(std430, binding = 4) writeonly buffer Commands {
    uint commands[];
};
layout(std430, binding = 5) writeonly buffer DrawCount {
    uint draw_count[2];
};

void main() {
    uint i = linear_thread();
    uint total = pc.count == 0u ? 0u : offsets[pc.tiles];
    uint stored = min(total, pc.capacity);
    if (i == 0u) {
        draw_count[0] = stored;
        draw_count[1] = total;
    }
    if (i >= stored) return;
    uint id = (pc.flags & kCullFlagSortedKeys) != 0u
                  ? cull_order_id(uvec2(ordered[2u * i], 0u), pc.key_words)
                  : ordered[i];
    visible_ids[i] = id;
    uint w = i * kDrawCommandWords;
    commands[w + 0u] = params.draw.x;
    commands[w + 1u] = 1u;
    commands[w + 2u] = params.draw.y;
    commands[w + 3u] = params.draw.z;
    commands[w + 4u] = id;
}
