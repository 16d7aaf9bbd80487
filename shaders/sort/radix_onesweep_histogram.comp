// LSD radix sort (one-sweep path), step 1: the global counts of every 8-bit digit pass at once,
// from one read of the keys (Adinets & Merrill, "Onesweep: A Faster Least Significant Digit
// Radix Sort for GPUs", 2022). Each workgroup counts one tile of kSortTile keys per pass in
// shared memory, then adds its counts to the global ones (one atomicAdd per pass and digit,
// zero counts included, so that the traffic does not depend on the keys).
// pc.shift = key_bits: passes = ceil(key_bits / 8); pass p's digit is bits [8p, 8p + 8) of the
// key (the last one masked to key_bits). state (RadixSort's one-sweep region, zeroed by the
// host): state[kOnesweepHist + p * kSortBuckets + d] receives pass p's count of digit d.
// With kSortDynamicCount the count is min(pc.count, a count in a buffer), as in
// radix_histogram.comp.
#version 450
#include "device/common.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer Keys {
    uint keys[];
};
layout(std430, binding = 1) buffer State {
    uint state[];
};
layout(std430, binding = 2) readonly buffer Count {
    uint dynamic_count;
};  // read only with kSortDynamicCount

shared uint s_count[kSortMaxPasses * kSortBuckets];  // 8 KiB

void main() {
    uint tile = linear_group();
    if (tile >= pc.tiles) return;
    uint t = gl_LocalInvocationID.x;
    uint count = (pc.flags & kSortDynamicCount) != 0u ? min(pc.count, dynamic_count) : pc.count;
    uint base = tile * kSortTile;
    if (base >= count) return;  // past a dynamic count (uniform per workgroup)
    uint key_bits = pc.shift;
    uint passes = (key_bits + kSortDigitBits - 1u) / kSortDigitBits;
    for (uint p = 0u; p < kSortMaxPasses; ++p) s_count[p * kSortBuckets + t] = 0u;
    barrier();
    // Strided (coalesced) reads, kept in registers; then one uniform loop per pass, with the
    // atomics under a branch inside it (no invocation leaves a loop early: see
    // radix_onesweep.comp on lavapipe).
    uint lo[kSortItemsPerThread];
    uint hi[kSortItemsPerThread];
    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint i = base + k * kWorkgroupSize + t;
        lo[k] = i < count ? keys[i * pc.key_words] : 0u;
        hi[k] = i < count && pc.key_words == 2u ? keys[i * 2u + 1u] : 0u;
    }
    for (uint p = 0u; p < passes; ++p) {
        uint bit = p * kSortDigitBits;
        uint width = min(kSortDigitBits, key_bits - bit);
        uint mask = (1u << width) - 1u;
        for (uint k = 0u; k < kSortItemsPerThread; ++k) {
            uint digit = ((bit < 32u ? lo[k] : hi[k]) >> (bit & 31u)) & mask;
            if (base + k * kWorkgroupSize + t < count)
                atomicAdd(s_count[p * kSortBuckets + digit], 1u);
        }
    }
    barrier();
    for (uint p = 0u; p < passes; ++p)
        atomicAdd(state[kOnesweepHist + p * kSortBuckets + t], s_count[p * kSortBuckets + t]);
}
