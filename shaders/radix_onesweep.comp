// LSD radix sort (one-sweep path), step 2: one 8-bit digit pass in a single kernel (Adinets &
// Merrill, "Onesweep", 2022; decoupled look-back from Merrill & Garland, "Single-pass Parallel
// Prefix Scan with Decoupled Look-back", 2016). Each workgroup:
//   1. takes its tile number from an atomic counter (state[pass]), so tiles are numbered in the
//      order their workgroups started, and a tile only ever waits on tiles that started before
//      it: the only forward-progress assumption is that started workgroups progress;
//   2. ranks its tile by the digit in shared memory (radix_rank.glsl, stable, any subgroup
//      size) and publishes its digit counts (flag kOnesweepAggregate; tile 0 publishes them as
//      its inclusive prefix, kOnesweepPrefix);
//   3. looks back over the preceding tiles, per digit (invocation d for digit d), summing
//      aggregates until it meets an inclusive prefix, then publishes its own inclusive prefix.
//      A predecessor that has published nothing after kOnesweepSpins rounds is counted from its
//      keys instead (the decoupled fallback of Smith, Levien & Owens 2025), so no tile waits
//      unboundedly: the path needs no forward progress between workgroups for correctness;
//      waiting only costs time;
//   4. scatters its elements in sorted order: position = (exclusive scan of the pass's global
//      digit counts, radix_onesweep_histogram.comp) + (the digit's count in earlier tiles) +
//      (rank within the tile's digit).
// Look-back entries are one uint: flag in the top two bits, count in the low 30 (n < 2^30 for
// any keys that fit a storage range: see RadixSort::path). The look-back loop is
// workgroup-uniform (every invocation leaves it in the same iteration, after a barrier):
// lavapipe loses stores made after an atomic in a loop that other invocations have left
// (see lbvh_bounds.comp). lavapipe also ends every loop of an invocation once its loops have
// run 65,535 iterations in all: a look-back takes at most kOnesweepSpins + 1 rounds per
// preceding tile, under that bound for sorts of up to about 500 tiles (2 million keys).
// With kSortFallbackOnly (tests) every predecessor is counted from its keys.
// pc.offset = the pass (its counter, histogram and look-back rows), pc.shift / pc.key_word /
// pc.capacity = the digit's shift, key word and mask; state layout in gpu_layout.h.
#version 450
#include "common.glsl"
#include "radix_rank.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 0) readonly buffer KeysIn {
    uint keys_in[];
};
layout(std430, binding = 1) readonly buffer ValuesIn {
    uint values_in[];
};
layout(std430, binding = 2) writeonly buffer KeysOut {
    uint keys_out[];
};
layout(std430, binding = 3) writeonly buffer ValuesOut {
    uint values_out[];
};
layout(std430, binding = 4) coherent buffer State {
    uint state[];
};
layout(std430, binding = 5) readonly buffer Count {
    uint dynamic_count;
};  // read only with kSortDynamicCount

shared uint s_tile_id;
shared uint s_pending;
shared uint s_base[kSortBuckets];

void main() {
    if (linear_group() >= pc.tiles) return;  // folded launch: uniform, before taking a number
    uint t = gl_LocalInvocationID.x;
    uint pass = pc.offset;
    if (t == 0u) s_tile_id = atomicAdd(state[pass], 1u);
    barrier();
    uint tile = s_tile_id;
    uint count = (pc.flags & kSortDynamicCount) != 0u ? min(pc.count, dynamic_count) : pc.count;
    uint first = tile * kSortTile;
    // Past a dynamic count (uniform): no tile that runs waits on this one (it waits only on
    // smaller numbers, all of which are below the count's tiles).
    if (first >= count) return;
    uint valid = min(count - first, kSortTile);

    uint digit[kSortItemsPerThread];
    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint q = t * kSortItemsPerThread + k;
        digit[k] = q < valid ? (keys_in[(first + q) * pc.key_words + pc.key_word] >> pc.shift) &
                                   pc.capacity
                             : 255u;
    }
    rank_tile(digit, valid);
    uint rows = kOnesweepLookback + pass * pc.tiles * kSortBuckets;
    uint mine = s_tile_count[t];
    atomicExchange(state[rows + tile * kSortBuckets + t],
                   (tile == 0u ? kOnesweepPrefix : kOnesweepAggregate) | mine);
    uint total;
    uint global_start =
        workgroup_exclusive_scan(state[kOnesweepHist + pass * kSortBuckets + t], total);

    uint exclusive = 0u;
    if (tile > 0u) {  // uniform
        // All digits step back together (j is uniform): at tile j, every digit not done yet
        // adds tile j's published count (done at an inclusive prefix) once all of them see a
        // flag there; after kOnesweepSpins rounds without, the workgroup counts tile j's
        // digits from its keys instead (a full tile: j < tile) and steps on.
        const bool always_count = (pc.flags & kSortFallbackOnly) != 0u;
        uint j = tile - 1u;
        bool done = false;
        uint waits = 0u;
        for (;;) {
            uint v = 0u;
            if (!done && !always_count) v = atomicAdd(state[rows + j * kSortBuckets + t], 0u);
            uint flag = v & ~kOnesweepValueMask;
            if (t == 0u) s_pending = 0u;
            barrier();
            if (!done && flag == 0u) s_pending = 1u;
            barrier();
            bool wait = s_pending != 0u;
            barrier();
            bool count_it = wait && (always_count || waits >= kOnesweepSpins);
            if (!wait) {
                if (!done) {
                    exclusive += v & kOnesweepValueMask;
                    done = flag == kOnesweepPrefix;  // tile 0 publishes a prefix
                }
            } else if (count_it) {
                s_base[t] = 0u;  // s_base holds tile j's counts here
                barrier();
                for (uint k = 0u; k < kSortItemsPerThread; ++k) {
                    uint i = j * kSortTile + k * kWorkgroupSize + t;
                    atomicAdd(
                        s_base[(keys_in[i * pc.key_words + pc.key_word] >> pc.shift) & pc.capacity],
                        1u);
                }
                barrier();
                if (!done) {
                    exclusive += s_base[t];
                    done = j == 0u;  // tile 0's counts are its inclusive prefix
                }
                barrier();
            }
            if (wait && !count_it) {
                waits += 1u;
            } else {
                waits = 0u;
                if (j > 0u) j -= 1u;
            }
            if (t == 0u) s_pending = 0u;
            barrier();
            if (!done) s_pending = 1u;
            barrier();
            bool finished = s_pending == 0u;
            barrier();
            if (finished) break;
        }
        atomicExchange(state[rows + tile * kSortBuckets + t], kOnesweepPrefix | (exclusive + mine));
    }
    s_base[t] = global_start + exclusive - s_tile_start[t];
    barrier();

    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint p = k * kWorkgroupSize + t;
        if (p < valid) {
            uint e = s_rank[p];
            uint src = first + (e & 0xffffu);
            uint dst = s_base[e >> 16] + p;
            for (uint w = 0u; w < pc.key_words; ++w)
                keys_out[dst * pc.key_words + w] = keys_in[src * pc.key_words + w];
            if ((pc.flags & kSortKeysOnly) == 0u) values_out[dst] = values_in[src];
        }
    }
}
