// Overlap events, step 2: difference A \ B of two sorted lists of 64-bit pair keys
// (low word first). One invocation per element of A binary-searches it in B and marks it 1
// when absent; marks[|A|] = 0 so that an exclusive scan of |A| + 1 marks ends with the exact
// size of the difference. pc.count = |A|, pc.capacity = |B|. The search loop holds no atomics.
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

// true when key (hi, lo) of B at position k is less than (hi, lo).
bool less_at(uint k, uint hi, uint lo) {
    uint bh = b[2u * k + 1u], bl = b[2u * k];
    return bh < hi || (bh == hi && bl < lo);
}

void main() {
    uint i = linear_thread();
    uint m = pc.count;
    if (i > m) return;
    if (i == m) {
        marks[m] = 0u;
        return;
    }
    uint hi = a[2u * i + 1u], lo = a[2u * i];
    uint first = 0u, len = pc.capacity;  // lower bound of (hi, lo) in B
    while (len > 0u) {
        uint half_len = len / 2u;
        if (less_at(first + half_len, hi, lo)) {
            first += half_len + 1u;
            len -= half_len + 1u;
        } else {
            len = half_len;
        }
    }
    bool found = first < pc.capacity && b[2u * first + 1u] == hi && b[2u * first] == lo;
    marks[i] = found ? 0u : 1u;
}
