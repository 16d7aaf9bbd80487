// Karras 2012 hierarchy ("Maximizing Parallelism in the Construction of BVHs, Octrees, and
// k-d Trees", HPG 2012), one invocation per internal node i in [0, n-1): direction from the
// neighbours' common prefixes, range end by exponential then binary search, split by binary
// search. Equal codes are made distinct by appending the index (delta = 64 + clz(i ^ j)).
// Every invocation p < n also fills leaf n-1+p (box id, sorted position, bounds).
// CPU twin: lbvh::build_hierarchy (same delta values: 1-word keys are read as hi word 0).
#version 450
#include "common.glsl"

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
layout(std430, binding = 3) buffer Nodes {
    LbvhNode nodes[];
};

uvec2 key_at(int i) {
    if (pc.key_words == 2u) return uvec2(keys[2 * i], keys[2 * i + 1]);
    return uvec2(keys[i], 0u);
}

int delta(int i, int j) {
    int n = int(pc.count);
    if (j < 0 || j >= n) return -1;
    uvec2 a = key_at(i), b = key_at(j);
    if (a.y != b.y) return clz32(a.y ^ b.y);
    if (a.x != b.x) return 32 + clz32(a.x ^ b.x);
    return 64 + clz32(uint(i) ^ uint(j));
}

void main() {
    uint p = linear_thread();
    uint n = pc.count;
    if (p >= n) return;

    // Leaf of sorted position p.
    uint leaf = n - 1u + p;
    uint id = ids[p];
    nodes[leaf].link.x = id;
    nodes[leaf].link.y = p;
    nodes[leaf].link.w = p;
    nodes[leaf].lo = vec4(boxes[id].lo.xyz, 0.0);
    nodes[leaf].hi = vec4(boxes[id].hi.xyz, 0.0);
    if (n == 1u) nodes[leaf].link.z = kInvalidNode;
    if (p >= n - 1u) return;

    // Internal node i = p.
    int i = int(p);
    int d = delta(i, i + 1) - delta(i, i - 1) >= 0 ? 1 : -1;
    int delta_min = delta(i, i - d);
    int l_max = 2;
    while (delta(i, i + l_max * d) > delta_min) l_max *= 2;
    int l = 0;
    for (int t = l_max / 2; t >= 1; t /= 2)
        if (delta(i, i + (l + t) * d) > delta_min) l += t;
    int j = i + l * d;
    int delta_node = delta(i, j);
    int s = 0;
    int t = l;
    do {
        t = (t + 1) / 2;
        if (delta(i, i + (s + t) * d) > delta_node) s += t;
    } while (t > 1);
    int gamma = i + s * d + min(d, 0);

    uint first = uint(min(i, j)), last = uint(max(i, j));
    uint left = first == uint(gamma) ? n - 1u + uint(gamma) : uint(gamma);
    uint right = last == uint(gamma + 1) ? n - 1u + uint(gamma + 1) : uint(gamma + 1);
    nodes[i].link.x = left;
    nodes[i].link.y = right;
    nodes[i].link.w = last;
    nodes[left].link.z = uint(i);
    nodes[right].link.z = uint(i);
    if (i == 0) nodes[0].link.z = kInvalidNode;
}
