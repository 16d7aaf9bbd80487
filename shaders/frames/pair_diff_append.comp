// Overlap events, step 1 of a difference A \ B of two sorted lists of 64-bit pair keys (low
// word first): one invocation per element of A binary-searches it in B and, when absent,
// appends it to `out` with an atomic counter (the atomic is outside the search loop). Launched
// indirectly for |A| elements (count_args.comp); |A| and |B| are the pair counters, read on the
// GPU and clamped to the capacities pc.count of A and pc.capacity of B. The appended keys are
// in no particular order: RadixSort then sorts them and pair_unpack.comp turns them into pairs.
// `out` holds the capacity of A, so nothing can be dropped.
// CPU twin: lbvh::diff_sorted_pairs.
#version 450
#include "device/common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer A {
    uint a[];
};
layout(std430, binding = 1) readonly buffer B {
    uint b[];
};
layout(std430, binding = 2) writeonly buffer Out {
    uint out_keys[];
};
layout(std430, binding = 3) readonly buffer CountA {
    uint count_a;
};
layout(std430, binding = 4) readonly buffer CountB {
    uint count_b;
};
layout(std430, binding = 5) buffer CountOut {
    uint count_out;
};

// true when key (hi, lo) of B at position k is less than (hi, lo).
bool less_at(uint k, uint hi, uint lo) {
    uint bh = b[2u * k + 1u], bl = b[2u * k];
    return bh < hi || (bh == hi && bl < lo);
}

void main() {
    uint i = linear_thread();
    if (i >= min(count_a, pc.count)) return;
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
    if (found) return;
    uint slot = atomicAdd(count_out, 1u);
    out_keys[2u * slot] = lo;
    out_keys[2u * slot + 1u] = hi;
}
