// LSD radix sort (reduce-then-scan path), pass step 1: per-tile counts of one 8-bit digit,
// written digit-major (hist[digit * tiles + tile]) so that one exclusive scan of hist gives every
// tile's starting position for every digit. Keys are `key_words` uints each (low word first);
// the digit is (key word pc.key_word >> pc.shift) & pc.capacity (the digit mask: fewer bits on a
// last, partial digit). With kSortDynamicCount the element count is min(pc.count, a count in a
// buffer) and the launch is indirect, over the tiles that count fills (count_args.comp); tiles
// past it (the extra workgroups of a folded launch) write zero counts and exit. Algorithm: the
// classic reduce-then-scan radix sort (Merrill & Grimshaw 2011, without decoupled look-back, so
// no forward-progress assumption).
#version 450
#include "device/common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Keys {
    uint keys[];
};
layout(std430, binding = 1) writeonly buffer Hist {
    uint hist[];
};
layout(std430, binding = 2) readonly buffer Count {
    uint dynamic_count;
};  // read only with kSortDynamicCount

shared uint s_count[kSortBuckets];  // kSortBuckets == kWorkgroupSize: one per invocation

void main() {
    uint tile = linear_group();
    if (tile >= pc.tiles) return;
    uint t = gl_LocalInvocationID.x;
    uint count = (pc.flags & kSortDynamicCount) != 0u ? min(pc.count, dynamic_count) : pc.count;
    uint base = tile * kSortTile;
    if (base >= count) {  // past a dynamic count: an empty tile (uniform per workgroup)
        hist[t * pc.tiles + tile] = 0u;
        return;
    }
    s_count[t] = 0u;
    barrier();
    // Strided (coalesced) reads; the order of the counts does not matter.
    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint i = base + k * kWorkgroupSize + t;
        if (i < count) {
            uint digit = (keys[i * pc.key_words + pc.key_word] >> pc.shift) & pc.capacity;
            atomicAdd(s_count[digit], 1u);
        }
    }
    barrier();
    hist[t * pc.tiles + tile] = s_count[t];
}
