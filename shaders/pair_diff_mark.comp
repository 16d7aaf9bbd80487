// Overlap events, step 2: difference A \ B of two sorted lists of 64-bit pair keys
// (low word first). One invocation per slot of A's buffer: an element of A binary-searches
// itself in B and is marked 1 when absent; every slot at or past |A| (up to and including the
// capacity of A) is marked 0, so that an exclusive scan of capacity + 1 marks ends with the
// exact size of the difference. |A| and |B| are read on the GPU (the pair counters, clamped to
// the capacities pc.count of A and pc.capacity of B). The search loop holds no atomics.
// CPU twin: lbvh::diff_sorted_keys.
#version 450
#include "common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A {
    uint a[];
};
layout(std430, binding = 1) readonly buffer B {
    uint b[];
};
layout(std430, binding = 2) writeonly buffer Marks {
    uint marks[];
};
layout(std430, binding = 3) readonly buffer CountA {
    uint count_a;
};
layout(std430, binding = 4) readonly buffer CountB {
    uint count_b;
};

// true when key (hi, lo) of B at position k is less than (hi, lo).
bool less_at(uint k, uint hi, uint lo) {
    uint bh = b[2u * k + 1u], bl = b[2u * k];
    return bh < hi || (bh == hi && bl < lo);
}

void main() {
    uint i = linear_thread();
    if (i > pc.count) return;
    uint m = min(count_a, pc.count);
    if (i >= m) {
        marks[i] = 0u;
        return;
    }
    uint mb = min(count_b, pc.capacity);
    uint hi = a[2u * i + 1u], lo = a[2u * i];
    uint first = 0u, len = mb;  // lower bound of (hi, lo) in B
    while (len > 0u) {
        uint half_len = len / 2u;
        if (less_at(first + half_len, hi, lo)) {
            first += half_len + 1u;
            len -= half_len + 1u;
        } else {
            len = half_len;
        }
    }
    bool found = first < mb && b[2u * first + 1u] == hi && b[2u * first] == lo;
    marks[i] = found ? 0u : 1u;
}
