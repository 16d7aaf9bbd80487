// Overlap events, step 3: compaction of the marked keys of A after an exclusive scan of the
// marks (capacity of A + 1 of them): element i < |A| is kept when scan[i + 1] != scan[i] and
// unpacked into the pair (i, j) at position scan[i]; invocation 0 writes the exact count
// scan[capacity] into the frame status (began or ended, by pc.flags). pc.count = capacity of
// A; |A| is read on the GPU. The output holds the capacity of A, so nothing can be dropped.
// CPU twin: lbvh::diff_sorted_keys.
#version 450
#include "common.glsl"
#include "gpu_layout_frames.h"

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
layout(std430, binding = 3) readonly buffer CountA {
    uint count_a;
};
layout(std430, binding = 4) buffer Status {
    FrameStatus status;
};

void main() {
    uint i = linear_thread();
    if (i == 0u) {
        if (pc.flags == kDiffBegan) {
            status.began = scan[pc.count];
        } else {
            status.ended = scan[pc.count];
        }
    }
    if (i >= min(count_a, pc.count)) return;
    uint slot = scan[i];
    if (scan[i + 1u] == slot) return;
    // Key i << b | j (pair_keys.comp), b = pc.shift in 1..31.
    uint lo = a[2u * i], hi = a[2u * i + 1u], b = pc.shift;
    out_pairs[2u * slot] = (lo >> b) | (hi << (32u - b));
    out_pairs[2u * slot + 1u] = lo & ((1u << b) - 1u);
}
