// Overlap events, step 3: compaction of the marked keys of A after an exclusive scan of the
// marks (|A| + 1 of them): element i is kept when scan[i + 1] != scan[i] and written as the
// pair (i, j) at position scan[i]; invocation 0 writes the exact count scan[|A|].
// pc.count = |A|. The output holds at least |A| pairs, so nothing can be dropped.
// CPU twin: lbvh::diff_sorted_keys.
#version 450
#include "common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A {
    uint a[];
};
layout(std430, binding = 1) readonly buffer Scan {
    uint scan[];
};
layout(std430, binding = 2) writeonly buffer Out {
    uint out_pairs[];
};
layout(std430, binding = 3) writeonly buffer Count {
    uint out_count;
};

void main() {
    uint i = linear_thread();
    uint m = pc.count;
    if (i == 0u) out_count = scan[m];
    if (i >= m) return;
    uint slot = scan[i];
    if (scan[i + 1u] == slot) return;
    out_pairs[2u * slot] = a[2u * i + 1u];
    out_pairs[2u * slot + 1u] = a[2u * i];
}
