// LBVH refit, step 1 (refit without rebuild for moving boxes, Karras 2012 sec. 6 / the
// "refit" of PhysX-style trees): every leaf takes the new bounds of its box (leaves keep their
// box id in link.x, so the topology is unchanged); lbvh_bounds.comp then redoes the internal
// nodes bottom-up. CPU twin: lbvh::compute_bounds (leaf part).
#version 450
#include "common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Boxes {
    GpuBox boxes[];
};
layout(std430, binding = 1) buffer Nodes {
    LbvhNode nodes[];
};

void main() {
    uint p = linear_thread();
    uint n = pc.count;
    if (p >= n) return;
    uint leaf = n - 1u + p;  // n == 1: the single leaf is node 0
    uint id = nodes[leaf].link.x;
    nodes[leaf].lo = vec4(boxes[id].lo.xyz, 0.0);
    nodes[leaf].hi = vec4(boxes[id].hi.xyz, 0.0);
}
