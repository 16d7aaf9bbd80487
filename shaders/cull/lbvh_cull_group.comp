// Grouping of the ordered visible list per mesh (gpu::Culler with CullLods::grouped), step 1:
// for each ordered element i (below the visible count offsets[pc.tiles]), its mesh as the key
// of a stable radix sort (mesh ids at or past the mesh count all become the key mesh_count, a
// group of their own after the last mesh) and as the value its sorted position (approx) or,
// with kCullFlagSortedKeys (exact), i itself, the id read from the sorted keys (cull_order_id). The
// stable sort then leaves each mesh's elements contiguous and in the cull's order. CPU twin:
// lbvh::cull_draws (cpu_reference/lbvh_cull.hpp).
#version 450
#include "device/common.glsl"

#include "cull/cull_distance.glsl"

#include "broadphase/gpu/layout/cull.h"
#include "lbvh/tree_parts.glsl"

layout(local_size_x = kWorkgroupSize) in;
TREE_ARRAY(readonly, 0, Nodes, LbvhNode, nodes, NODE_SHIFT)
layout(std430, binding = 1) readonly buffer Offsets {
    uint offsets[];
};  // offsets[pc.tiles] is the number of visible boxes
layout(std430, binding = 2) readonly buffer Ordered {
    uint ordered[];
};  // sorted positions in the cull's order
layout(std430, binding = 3) readonly buffer MeshIds {
    uint mesh_ids[];
};
layout(std430, binding = 4) writeonly buffer Keys {
    uint keys[];
};
layout(std430, binding = 5) writeonly buffer Values {
    uint values[];
};
layout(std430, binding = 6) readonly buffer SortedKeys {
    uint sorted_keys[];
};  // exact: the order's 64-bit keys (cull_order_key, pc.key_words id bits)

void main() {
    uint i = linear_thread();
    uint n = pc.count;
    if (n == 0u || i >= offsets[pc.tiles]) return;
    bool sorted = (pc.flags & kCullFlagSortedKeys) != 0u;
    uint e = sorted ? i : ordered[i];
    uint id =
        sorted ? cull_order_id(uvec2(sorted_keys[2u * i], sorted_keys[2u * i + 1u]), pc.key_words)
               : NODE(n - 1u + e).link.x;
    keys[i] = min(mesh_ids[id], pc.offset);  // pc.offset: the mesh count
    values[i] = e;
}
