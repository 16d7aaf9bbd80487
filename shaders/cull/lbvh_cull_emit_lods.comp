// Last step of the cull with per-instance meshes and levels of detail (gpu::CullLods): one
// VkDrawIndexedIndirectCommand per visible instance with the index range of its mesh's LOD for
// this view. The LOD is the largest k whose switch key (CullMesh) is <= the eye-to-box
// distance key of the instance's box (cull_distance.glsl, the key of the exact order).
// Flat (no kCullFlagGrouped): command i draws the i-th instance in the cull's order, as
// lbvh_cull_emit.comp, draw_count = (min(total, capacity), total). An instance whose mesh id is
// not below the mesh count gets a no-op command (instanceCount 0, firstInstance its id).
// Grouped (kCullFlagGrouped, after lbvh_cull_group.comp, the stable sort by mesh and
// lbvh_cull_group_bounds.comp): mesh m's r-th instance (in the cull's order) goes to command
// info.y + r of its group when r < info.z (the group's capacity); group_counts[m] = the
// commands stored for mesh m (a countBuffer for vkCmdDrawIndexedIndirectCount),
// group_counts[M + m] = mesh m's exact visible total, group_counts[2M] = visible instances
// with a mesh id >= M (drawn in no group); draw_count = (commands stored, total visible),
// draw_count[0] summed with one atomicAdd per mesh onto the zero the recorder filled in.
// With kCullFlagDrawLods each stored command's LOD also goes to draw_lods (kNoLod: none).
// Elements: sorted positions (approx: the id and box from the leaf node) or, with
// kCullFlagSortedKeys (exact), indices into the sorted (id, distance key) pairs, no node read.
// pc.count = n (leaves), pc.tiles = chunks, pc.capacity = command capacity, pc.offset = M.
// CPU twin: lbvh::cull_draws (cpu_reference/lbvh_cull.hpp).
#version 450
#include "device/common.glsl"

#include "cull/cull_distance.glsl"

#include "broadphase/gpu/layout/cull.h"
#include "lbvh/tree_parts.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Params {
    CullParams params;
};
layout(std430, binding = 1) readonly buffer Offsets {
    uint offsets[];
};  // offsets[pc.tiles] is the number of visible boxes
TREE_ARRAY(readonly, 2, Nodes, LbvhNode, nodes, NODE_SHIFT)
layout(std430, binding = 3) readonly buffer Ordered {
    uint ordered[];
};  // sorted positions: in the cull's order (flat) or grouped by mesh
layout(std430, binding = 4) readonly buffer GroupKeys {
    uint group_keys[];
};  // grouped: the mesh key of each element of `ordered`
layout(std430, binding = 5) readonly buffer MeshIds {
    uint mesh_ids[];
};
layout(std430, binding = 6) readonly buffer Table {
    CullMesh meshes[];
};
layout(std430, binding = 7) readonly buffer Bounds {
    uint bounds[];
};  // grouped: (first, one past last) index of each mesh key's run
layout(std430, binding = 8) writeonly buffer Visible {
    uint visible_ids[];
};
layout(std430, binding = 9) writeonly buffer Commands {
    uint commands[];
};
layout(std430, binding = 10) buffer DrawCount {
    uint draw_count[2];
};
layout(std430, binding = 11) writeonly buffer GroupCounts {
    uint group_counts[];
};
layout(std430, binding = 12) writeonly buffer DrawLods {
    uint draw_lods[];
};
layout(std430, binding = 13) readonly buffer SortedKeys {
    uint sorted_keys[];
};  // kCullFlagSortedKeys: the exact order's 64-bit keys (cull_order_key, pc.key_words id bits)

// The LOD of mesh m for a box with distance key `key` (twin: lbvh::select_lod).
uint select_lod(uint m, uint key) {
    uint count = min(meshes[m].info.x, kMaxMeshLods);
    uint lod = 0u;
    for (uint k = 1u; k < count; ++k) {
        if (key >= meshes[m].lods[k].w) lod = k;
    }
    return lod;
}

// Commands group m can store: its capacity, cut at the output's capacity.
uint group_room(uint m) {
    uint first = meshes[m].info.y;
    return first >= pc.capacity ? 0u : min(meshes[m].info.z, pc.capacity - first);
}

// Element e of the order: an index into the sorted keys (kCullFlagSortedKeys) or a sorted
// position (its leaf node holds the id and box).
uint element_id(uint e) {
    if ((pc.flags & kCullFlagSortedKeys) != 0u)
        return cull_order_id(uvec2(sorted_keys[2u * e], sorted_keys[2u * e + 1u]), pc.key_words);
    return NODE(pc.count - 1u + e).link.x;
}

uint element_key(uint e) {
    if ((pc.flags & kCullFlagSortedKeys) != 0u)
        return cull_order_distance(uvec2(sorted_keys[2u * e], sorted_keys[2u * e + 1u]),
                                   pc.key_words);
    uint leaf = pc.count - 1u + e;
    return cull_distance_key(params.eye.xyz, NODE(leaf).lo.xyz, NODE(leaf).hi.xyz);
}

void write_draw(uint slot, uint e, uint id, uint m) {
    visible_ids[slot] = id;
    uint w = slot * kDrawCommandWords;
    uint lod = kNoLod;
    if (m < pc.offset) {
        lod = select_lod(m, element_key(e));
        uvec4 l = meshes[m].lods[lod];
        commands[w + 0u] = l.x;
        commands[w + 1u] = 1u;
        commands[w + 2u] = l.y;
        commands[w + 3u] = l.z;
    } else {
        commands[w + 0u] = 0u;
        commands[w + 1u] = 0u;
        commands[w + 2u] = 0u;
        commands[w + 3u] = 0u;
    }
    commands[w + 4u] = id;
    if ((pc.flags & kCullFlagDrawLods) != 0u) draw_lods[slot] = lod;
}

void main() {
    uint i = linear_thread();
    uint total = pc.count == 0u ? 0u : offsets[pc.tiles];
    uint mesh_count = pc.offset;
    if ((pc.flags & kCullFlagGrouped) == 0u) {
        uint stored = min(total, pc.capacity);
        if (i == 0u) {
            draw_count[0] = stored;
            draw_count[1] = total;
        }
        if (i >= stored) return;
        uint e = (pc.flags & kCullFlagSortedKeys) != 0u ? i : ordered[i];
        uint id = element_id(e);
        write_draw(i, e, id, mesh_ids[id]);
        return;
    }
    if (i == 0u) draw_count[1] = total;
    if (i < total) {
        uint k = group_keys[i];
        if (k < mesh_count) {
            uint r = i - bounds[2u * k];
            if (r < group_room(k)) {
                uint e = ordered[i];
                write_draw(meshes[k].info.y + r, e, element_id(e), k);
            }
        }
    }
    if (i <= mesh_count) {
        uint run = bounds[2u * i + 1u] - bounds[2u * i];
        if (i == mesh_count) {
            group_counts[2u * mesh_count] = run;
        } else {
            uint stored = min(run, group_room(i));
            group_counts[i] = stored;
            group_counts[mesh_count + i] = run;
            atomicAdd(draw_count[0], stored);
        }
    }
}
