// LBVH hierarchy and node bounds in one bottom-up pass: the agglomerative build of C. Apetrei,
// "Fast and Simple Agglomerative LBVH Construction" (Computer Graphics & Visual Computing
// 2014), producing exactly the tree and node numbering of T. Karras, "Maximizing Parallelism
// in the Construction of BVHs, Octrees, and k-d Trees" (HPG 2012).
//
// One invocation per sorted position p writes leaf n-1+p (box id, p, -, p; bounds), then
// climbs. Equal keys are made distinct by the index (delta = 64 + clz(i ^ j)), so the tree is
// the radix tree of distinct keys: a node covering [l, r] is its parent's left child (the
// parent splits at r) when delta(r, r+1) > delta(l-1, l), else its right child (split at
// l-1); delta is -1 beyond the ends. Karras numbers an internal node by the end of its range
// at its parent's split (a left child by r, a right child by l), a leaf by n-1+position, the
// root 0. At split s each child leaves its far end (left child: l, right child: r) in flags[s]
// by an atomic exchange; the first arrival stops, the second learns the parent's range,
// numbers it, writes its link (left, right, -, r), both children's parent fields and the
// union of their bounds (left first, as lbvh::compute_bounds), and the parent's LbvhWideNode
// (both children's bounds and links, from the two boxes it holds), and climbs on. No invocation
// waits for another, so there is no forward-progress assumption.
//
// Memory order (the Vulkan memory model, GL_KHR_memory_scope_semantics; the device enables
// vulkanMemoryModel): the exchange is an acquire-release atomic at queue-family scope that
// makes the buffers' writes available and visible. The first arrival's node bounds, written
// before its exchange, are thus visible to the second arrival, which reads them after its own;
// the node arrays are `nonprivate` so that those plain accesses take part. There is no
// memoryBarrier*() call: Mesa 22.3's llvmpipe runs a memory barrier of workgroup or device
// scope as a full workgroup barrier, which inside this loop, where invocations leave after
// different numbers of steps, dropped the work of the subgroups left waiting at it (the
// "lost stores" that once made this climb 96 unrolled steps and 95 s of LLVM compile on
// lavapipe; repro/lavapipe_climb/ shows it in a few lines). Device scope is avoided for the same
// reason (llvmpipe turns it into a barrier too); queue-family scope is the whole device's for
// one queue.
// Precondition: flags[0, n-1) zeroed (slots hold far end + 1). CPU twin:
// lbvh::build_bottom_up (equal to build_hierarchy + compute_bounds; 1-word keys are read as
// hi word 0).
//
// Two kernels share this source (gpu/lbvh/lbvh.cpp picks one per tree):
//   - lbvh_build.comp writes the tree's LbvhNode and LbvhWideNode arrays, each bound whole;
//   - lbvh_build_soa.comp (BUILD_SOA), for a tree whose arrays are larger than one descriptor
//     may bind, writes each node's link, lo and hi into three arrays of 16 B per node, each of
//     which one descriptor binds (they are half a box's 32 B per node), and no wide record;
//     lbvh_assemble.comp then copies them into the split tree and writes the wide records.
//     A climb that reads and writes no split array keeps each step one plain access (each
//     split access would be a switch over the parts).
#include "device/common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Keys {
    uint keys[];
};  // sorted codes
layout(std430, binding = 1) readonly buffer Ids {
    uint ids[];
};  // box id per position
layout(std430, binding = 2) readonly buffer Boxes {
    GpuBox boxes[];
};
layout(std430, binding = 4) buffer Flags {
    uint flags[];
};
#ifdef BUILD_SOA
// node i's link, lo and hi of its LbvhNode (2n - 1 each)
layout(std430, binding = 3) nonprivate buffer NodeLo {
    vec4 node_lo[];
};
layout(std430, binding = 5) nonprivate buffer NodeHi {
    vec4 node_hi[];
};
layout(std430, binding = 6) nonprivate buffer NodeLink {
    uvec4 node_link[];
};
#define NODE_LO(i) node_lo[i]
#define NODE_HI(i) node_hi[i]
#define NODE_LINK(i) node_link[i]
#define WRITE_WIDE(i, record)
#else
layout(std430, binding = 3) nonprivate buffer Nodes {
    LbvhNode nodes[];
};
// internal node i's children (layout/common.h), written with node i
layout(std430, binding = 5) buffer Wide {
    LbvhWideNode wide[];
};
#define NODE_LO(i) nodes[i].lo
#define NODE_HI(i) nodes[i].hi
#define NODE_LINK(i) nodes[i].link
#define WRITE_WIDE(i, record) wide[i] = record;
#endif

// Adaptive codes (pc.flags & kBuildRefinable; lbvh::refine_codes): binding 0 spans the first
// codes (one word each) and, pc.offset words on, the refined sort's keys run_start << 30 |
// second (2 words, low first; refine_codes.comp), whose second code makes the low word of the
// twin's key code << 32 | second and the first code beside it (in place: the refined sort moves
// boxes within their runs only) the high word. The refine word, non-zero when the refinement
// re-coded and sorted the keys again, picks which the hierarchy reads. Chosen once per
// invocation, so each key read is the same two loads either way (no branch in the climb).
#ifdef BUILD_SOA
#define REFINE_BINDING 7
#else
#define REFINE_BINDING 6
#endif
layout(std430, binding = REFINE_BINDING) readonly buffer Refine {
    uint refine;
};
// Where key i's low and high words are: keys[base + stride * i] & mask for each. 1-word keys
// read their word twice and take hi word 0; morton63 its two words; refined keys the second
// code (masked out of the sorted key) and the first code at position i.
uint g_lo_base = 0u, g_lo_stride = 1u, g_lo_mask = 0xffffffffu;
uint g_hi_base = 0u, g_hi_stride = 1u, g_hi_mask = 0u;

// Branch-free (selects, clamped indices).
uvec2 key_at(int i) {
    uint lo = keys[g_lo_base + g_lo_stride * uint(i)] & g_lo_mask;
    uint hi = keys[g_hi_base + g_hi_stride * uint(i)] & g_hi_mask;
    return uvec2(lo, hi);
}

int delta(int i, int j) {
    int n = int(pc.count);
    uvec2 a = key_at(i), b = key_at(clamp(j, 0, n - 1));
    uint high = a.y ^ b.y, low = a.x ^ b.x;
    int d = high != 0u ? clz32(high) : low != 0u ? 32 + clz32(low) : 64 + clz32(uint(i) ^ uint(j));
    return j < 0 || j >= n ? -1 : d;
}

void main() {
    uint p = linear_thread();
    uint n = pc.count;
    if (p >= n) return;
    if (pc.key_words == 2u) {  // morton63: (lo, hi) at 2i, 2i + 1
        g_lo_stride = 2u;
        g_hi_base = 1u;
        g_hi_stride = 2u;
        g_hi_mask = 0xffffffffu;
    } else if ((pc.flags & kBuildRefinable) != 0u && refine != 0u) {
        g_lo_base = pc.offset;
        g_lo_stride = 2u;
        g_lo_mask = (1u << kRefineSecondBits) - 1u;
        g_hi_mask = 0xffffffffu;
    }

    // Leaf of sorted position p; its parent field is written by whoever completes the parent.
    uint leaf = n - 1u + p;
    uint id = ids[p];
    vec3 lo = boxes[id].lo.xyz, hi = boxes[id].hi.xyz;
    NODE_LINK(leaf).x = id;
    NODE_LINK(leaf).y = p;
    NODE_LINK(leaf).w = p;
    NODE_LO(leaf) = vec4(lo, 0.0);
    NODE_HI(leaf) = vec4(hi, 0.0);
    if (n == 1u) {
        NODE_LINK(leaf).z = kInvalidNode;
        return;
    }
    int l = int(p), r = int(p);
    int below = delta(l, l - 1), above = delta(r, r + 1);  // delta checks its 2nd index
    bool climbing = true;
    uint aux = id;  // the current node's aux in its parent's LbvhWideNode (layout/common.h)
    // Each step climbs from the node [l, r] (bounds lo, hi; below = delta(l, l-1), above =
    // delta(r, r+1)): publish the far end at the parent's split; the second arrival completes
    // the parent and makes it the current node. A climb passes at most kTraversalStack = 96
    // internal nodes (each level lengthens the common prefix of the (64-bit key, 32-bit index)
    // keys); the bound keeps the loop finite whatever the input.
    for (uint step = 0u; climbing && step < kTraversalStack; ++step) {
        bool left_child = above > below;
        int split = left_child ? r : l - 1;
        uint other = atomicExchange(
            flags[split], uint(left_child ? l : r) + 1u, gl_ScopeQueueFamily,
            gl_StorageSemanticsBuffer,
            gl_SemanticsAcquireRelease | gl_SemanticsMakeAvailable | gl_SemanticsMakeVisible);
        climbing = other != 0u;
        if (climbing) {
            int end = int(other) - 1;
            int d = delta(end, left_child ? end + 1 : end - 1);
            r = left_child ? end : r;
            l = left_child ? l : end;
            above = left_child ? d : above;
            below = left_child ? below : d;
            uint left = l == split ? n - 1u + uint(split) : uint(split);
            uint right = r == split + 1 ? n + uint(split) : uint(split + 1);
            bool root = l == 0 && r == int(n) - 1;
            uint parent = root ? 0u : uint(above > below ? r : l);
            uint sibling = left_child ? right : left;
            vec3 slo = NODE_LO(sibling).xyz, shi = NODE_HI(sibling).xyz;
            bool sibling_leaf = left_child ? end == split + 1 : end == split;
            uint sibling_aux = sibling_leaf ? ids[end] : uint(left_child ? end : split);
            uvec4 link = left_child ? uvec4(left, right, aux, sibling_aux)
                                    : uvec4(left, right, sibling_aux, aux);
            WRITE_WIDE(parent, wide_record(left_child ? lo : slo, left_child ? hi : shi,
                                           left_child ? slo : lo, left_child ? shi : hi, link))
            aux = uint(r);
            lo = left_child ? min(lo, slo) : min(slo, lo);
            hi = left_child ? max(hi, shi) : max(shi, hi);
            NODE_LINK(parent).x = left;
            NODE_LINK(parent).y = right;
            NODE_LINK(parent).w = uint(r);
            NODE_LO(parent) = vec4(lo, 0.0);
            NODE_HI(parent) = vec4(hi, 0.0);
            NODE_LINK(left).z = parent;
            NODE_LINK(right).z = parent;
            if (root) NODE_LINK(0u).z = kInvalidNode;
            climbing = !root;
        }
    }
}
