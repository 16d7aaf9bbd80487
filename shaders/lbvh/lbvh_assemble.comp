// Copies a tree built or refitted into three arrays of 16 B per node (lbvh_build_soa.comp: link,
// lo and hi; lbvh_refit_soa.comp: lo and hi) into the tree's LbvhNode array, and writes each
// internal node's LbvhWideNode from its children's, bit for bit what lbvh_build.comp and
// lbvh_refit.comp write into a tree bound whole (lbvh_build.glsl, lbvh_refit.glsl). Run as its
// split variant, for a tree whose arrays are larger than one descriptor may bind: one split
// access per array per node, no climb, so llvmpipe compiles it in seconds.
// One invocation per node i < 2n - 1 (pc.count = n):
//   - build (pc.flags bit 0 clear): node i = (link, lo, hi) of the arrays; internal node i's
//     wide record holds its children's bounds and links (left, right, aux of each: a leaf's
//     box id, link.x; an internal node's last position, link.w);
//   - refit (pc.flags bit 0 set): node i's lo and hi, and the bounds of internal node i's
//     wide record (a, b, c); the links stay the build's, so node_link is not read.
#version 450
#include "device/common.glsl"
#include "lbvh/tree_parts.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer NodeLo {
    vec4 node_lo[];
};
layout(std430, binding = 1) readonly buffer NodeHi {
    vec4 node_hi[];
};
layout(std430, binding = 2) readonly buffer NodeLink {
    uvec4 node_link[];
};  // build only (a refit binds node_lo here)
TREE_ARRAY(, 3, Nodes, LbvhNode, nodes, NODE_SHIFT)
TREE_ARRAY(writeonly, 4, Wide, LbvhWideNode, wide, WIDE_SHIFT)

void main() {
    uint i = linear_thread();
    uint n = pc.count;
    if (n == 0u || i >= 2u * n - 1u) return;
    bool refit = (pc.flags & 1u) != 0u;
    vec4 lo = node_lo[i], hi = node_hi[i];
    uvec4 link;
    if (refit) {
        AT_NODE(i, link = PART_REF(nodes).link; PART_REF(nodes).lo = lo; PART_REF(nodes).hi = hi);
    } else {
        link = node_link[i];
        AT_NODE(i, PART_REF(nodes).link = link; PART_REF(nodes).lo = lo; PART_REF(nodes).hi = hi);
    }
    if (i >= n - 1u) return;  // a leaf
    uint l = link.x, r = link.y;
    vec3 llo = node_lo[l].xyz, lhi = node_hi[l].xyz, rlo = node_lo[r].xyz, rhi = node_hi[r].xyz;
    if (refit) {
        AT_WIDE(i, PART_REF(wide).a = vec4(llo, lhi.x); PART_REF(wide).b = vec4(lhi.yz, rlo.xy);
                PART_REF(wide).c = vec4(rlo.z, rhi));
    } else {
        uvec4 ll = node_link[l], rl = node_link[r];
        uint aux_l = l >= n - 1u ? ll.x : ll.w, aux_r = r >= n - 1u ? rl.x : rl.w;
        AT_WIDE(i, PART_REF(wide) = wide_record(llo, lhi, rlo, rhi, uvec4(l, r, aux_l, aux_r)));
    }
}
