// LBVH refit in one pass (refit without rebuild for moving boxes, Karras 2012 sec. 6 / the
// "refit" of PhysX-style trees; bottom-up bounds as in C. Apetrei, "Fast and Simple
// Agglomerative LBVH Construction", CGVC 2014): one invocation per leaf writes the leaf's new
// bounds (leaves keep their box id in link.x, so the topology is unchanged), then climbs
// towards the root; at each internal node the first arrival stops and the second merges both
// children (left first, as lbvh::compute_bounds), rewrites the children's bounds in the
// node's LbvhWideNode (its links stay the build's), and goes on. No invocation ever waits for
// another, so there is no forward-progress assumption. Memory order as in lbvh_build.glsl: an
// acquire-release atomic at queue-family scope (the Vulkan memory model) publishes the first
// arrival's bounds to the second, the bound arrays are `nonprivate`, and there is no
// memoryBarrier*() call (Mesa 22.3's llvmpipe runs one as a workgroup barrier, which inside
// this loop dropped work: repro/lavapipe_climb/).
// The arrivals flip a bit per internal node with atomicXor: the first sees 0 and leaves 1, the
// second sees 1 and leaves 0. Every internal node is reached exactly twice, so the counters
// end where they started. Precondition: flags[0, n-1) zero (once, when they are allocated);
// postcondition: flags[0, n-1) zero again, so a frame needs no fill of its own.
// CPU twin: lbvh::compute_bounds (lbvh::refit).
//
// Two kernels share this source (gpu/frames/frame_recorder.cpp picks one per tree):
//   - lbvh_refit.comp writes the bounds into the tree's LbvhNode and LbvhWideNode arrays,
//     each bound whole;
//   - lbvh_refit_soa.comp (REFIT_SOA; its split variant), for a tree whose arrays are larger
//     than one descriptor may bind, reads each node's link from the split tree (one access
//     per step) and writes the bounds into two arrays of 16 B per node (lo, hi), each bound
//     whole; lbvh_assemble.comp then writes them into the split tree and its wide records.
//     Each split access is a switch over the parts, so a climb with one split access per step
//     instead of five keeps each step short.
#include "device/common.glsl"
#include "lbvh/tree_parts.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Boxes {
    GpuBox boxes[];
};
layout(std430, binding = 2) buffer Flags {
    uint flags[];
};
#ifdef REFIT_SOA
TREE_ARRAY(readonly, 1, Nodes, LbvhNode, nodes, NODE_SHIFT)
// node i's lo and hi (2n - 1 each)
layout(std430, binding = 3) nonprivate buffer NodeLo {
    vec4 node_lo[];
};
layout(std430, binding = 4) nonprivate buffer NodeHi {
    vec4 node_hi[];
};
#define READ_BOUNDS(i, lo_, hi_) \
    lo_ = node_lo[i].xyz;        \
    hi_ = node_hi[i].xyz;
#define WRITE_BOUNDS(i, lo_, hi_, whole_) \
    node_lo[i] = vec4(lo_, 0.0);          \
    node_hi[i] = vec4(hi_, 0.0);
#else
TREE_ARRAY(nonprivate, 1, Nodes, LbvhNode, nodes, NODE_SHIFT)
// internal node i's children: their bounds rewritten with node i's (links kept)
TREE_ARRAY(, 3, Wide, LbvhWideNode, wide, WIDE_SHIFT)
#define READ_BOUNDS(i, lo_, hi_) \
    AT_NODE(i, lo_ = PART_REF(nodes).lo.xyz; hi_ = PART_REF(nodes).hi.xyz)
#define WRITE_BOUNDS(i, lo_, hi_, wide_)                                                  \
    AT_NODE(i, PART_REF(nodes).lo = vec4(lo_, 0.0); PART_REF(nodes).hi = vec4(hi_, 0.0)); \
    wide_
#endif

void main() {
    uint p = linear_thread();
    uint n = pc.count;
    if (p >= n) return;
    uint leaf = n - 1u + p;  // n == 1: the single leaf is node 0
    uint id, node;
    AT_NODE(leaf, id = PART_REF(nodes).link.x; node = PART_REF(nodes).link.z);
    WRITE_BOUNDS(leaf, boxes[id].lo.xyz, boxes[id].hi.xyz, )
    bool climbing = n >= 2u && node != kInvalidNode;
    // Each step arrives at `node`; the second arrival merges and moves to the parent. The tree is
    // at most kTraversalStack = 96 levels deep (layout/common.h); the bound keeps the loop finite
    // whatever the links say.
    for (uint step = 0u; climbing && step < kTraversalStack; ++step) {
        uint arrived = atomicXor(
            flags[node], 1u, gl_ScopeQueueFamily, gl_StorageSemanticsBuffer,
            gl_SemanticsAcquireRelease | gl_SemanticsMakeAvailable | gl_SemanticsMakeVisible);
        if (arrived == 0u) {
            climbing = false;
        } else {
            uvec4 link;
            AT_NODE(node, link = PART_REF(nodes).link);
            vec3 llo, lhi, rlo, rhi;
            READ_BOUNDS(link.x, llo, lhi)
            READ_BOUNDS(link.y, rlo, rhi)
            WRITE_BOUNDS(node, min(llo, rlo), max(lhi, rhi),
                         AT_WIDE(node, PART_REF(wide).a = vec4(llo, lhi.x);
                                 PART_REF(wide).b = vec4(lhi.yz, rlo.xy);
                                 PART_REF(wide).c = vec4(rlo.z, rhi)))
            node = link.z;
            climbing = node != kInvalidNode;
        }
    }
}
