// LSD radix sort (one-sweep path), step 2: one 8-bit digit pass in a single kernel (Adinets &
// Merrill, "Onesweep", 2022; decoupled look-back from Merrill & Garland, "Single-pass Parallel
// Prefix Scan with Decoupled Look-back", 2016). Each workgroup:
//   1. takes its tile number from an atomic counter (state[pass]), so tiles are numbered in the
//      order their workgroups started, and a tile only ever waits on tiles that started before
//      it: the only forward-progress assumption is that started workgroups progress;
//   2. ranks its tile by the digit (radix_rank.glsl: stable, any subgroup size; in shared
//      memory, or by subgroup ballots in radix_onesweep_subgroup.comp) and publishes its digit
//      counts (flag kOnesweepAggregate; tile 0 publishes them as its inclusive prefix,
//      kOnesweepPrefix);
//   3. looks back over the preceding tiles, per digit (invocation d for digit d), summing
//      aggregates until it meets an inclusive prefix, then publishes its own inclusive prefix.
//      After its first round (the predecessor's entries alone, which usually hold its prefix)
//      each round reads a window of up to kOnesweepWindow preceding tiles' entries at once (8,
//      pc.budget), so a look-back over w tiles waits about 1 + w / 8 memory latencies, not w.
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
// preceding tile (the window's loops are unrolled), under that bound for sorts of up to about
// 500 tiles (2 million keys).
// With kSortFallbackOnly (tests) every predecessor is counted from its keys; with
// kSortLookbackStress (tests) most tiles publish no inclusive prefix and a few publish nothing
// for a digit (layout/common.h).
// pc.offset = the pass (its counter, histogram and look-back rows), pc.shift / pc.key_word /
// pc.capacity = the digit's shift, key word and mask, pc.budget = the look-back window after the
// first round (1 to kOnesweepWindow: DeviceInfo::sort_window); state layout in layout/common.h.
// Included by radix_onesweep.comp (the tile ranked in shared memory) and
// radix_onesweep_subgroup.comp (SORT_SUBGROUP_RANK: ranked with subgroup ballots where the
// subgroups allow it, radix_rank.glsl), after their #version and extensions.
#include "device/common.glsl"
#include "sort/radix_tile.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 4) coherent buffer State {
    uint state[];
};
layout(std430, binding = 5) readonly buffer Count {
    uint dynamic_count;
};  // read only with kSortDynamicCount

shared uint s_tile_id;
shared uint s_pending;
shared uint s_step;

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
    load_tile_digits(first, valid, digit);
    rank_tile(digit, valid);
    uint rows = kOnesweepLookback + pass * pc.tiles * kSortBuckets;
    uint mine = s_tile_count[t];
    const bool stress = (pc.flags & kSortLookbackStress) != 0u;  // tests
    const bool silent = stress && (tile * kSortBuckets + t) % kStressSilentEvery == 0u;
    if (!silent)
        atomicExchange(state[rows + tile * kSortBuckets + t],
                       (tile == 0u ? kOnesweepPrefix : kOnesweepAggregate) | mine);
    uint total;
    uint global_start =
        workgroup_exclusive_scan(state[kOnesweepHist + pass * kSortBuckets + t], total);

    uint exclusive = 0u;
    if (tile > 0u) {  // uniform
        // All digits step back together (j, the nearest tile not yet added, is uniform). Each
        // round every digit still summing reads the entries of up to kOnesweepWindow tiles
        // (j, j - 1, ...) at once, one memory latency for the window (the first round reads
        // tile j only: usually its prefix is there already), and the workgroup adds
        // the leading entries that every such digit can use: those with a flag, up to its first
        // inclusive prefix (a digit that meets its prefix there is done). When tile j itself
        // has published nothing for some digit, the workgroup waits, and after kOnesweepSpins
        // rounds counts tile j's digits from its keys instead (a full tile: j < tile) and steps
        // on.
        const bool always_count = (pc.flags & kSortFallbackOnly) != 0u;
        uint j = tile - 1u;
        bool done = false;
        uint waits = 0u, width = 1u;  // the first round reads the predecessor only
        for (;;) {
            uint window = min(width, j + 1u);
            width = clamp(pc.budget, 1u, kOnesweepWindow);
            uint v[kOnesweepWindow];
            [[unroll]] for (uint w = 0u; w < kOnesweepWindow; ++w) {
                v[w] = 0u;
                if (!done && !always_count && w < window)
                    v[w] = atomicAdd(state[rows + (j - w) * kSortBuckets + t], 0u);
            }
            // usable: the leading entries with a flag, through the first inclusive prefix.
            uint usable = 0u;
            bool open = true, meets_prefix = false;
            [[unroll]] for (uint w = 0u; w < kOnesweepWindow; ++w) {
                uint flag = v[w] & ~kOnesweepValueMask;
                bool take = open && w < window && flag != 0u;
                usable += take ? 1u : 0u;
                meets_prefix = meets_prefix || (take && flag == kOnesweepPrefix);
                open = take && flag != kOnesweepPrefix;
            }
            // The round's step: the fewest usable entries of the digits that need more.
            if (t == 0u) s_step = window;
            barrier();
            if (!done && !meets_prefix) atomicMin(s_step, usable);
            barrier();
            uint step = s_step;
            barrier();
            // (A silent tile of the stress test never publishes: wait only a little.)
            uint spins = stress ? 2u : kOnesweepSpins;
            bool count_it = step == 0u && (always_count || waits >= spins);
            if (step > 0u) {
                if (!done) {
                    uint added = min(step, usable);
                    [[unroll]] for (uint w = 0u; w < kOnesweepWindow; ++w) if (w < added)
                        exclusive += v[w] & kOnesweepValueMask;
                    done = meets_prefix && usable <= step;
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
            if (step == 0u && !count_it) {
                waits += 1u;
            } else {
                waits = 0u;
                uint back = max(step, 1u);
                j = j >= back ? j - back : 0u;
            }
            if (t == 0u) s_pending = 0u;
            barrier();
            if (!done) s_pending = 1u;
            barrier();
            bool finished = s_pending == 0u;
            barrier();
            if (finished) break;
        }
        if (!stress || (!silent && (tile + t) % kStressPrefixEvery == 0u))
            atomicExchange(state[rows + tile * kSortBuckets + t],
                           kOnesweepPrefix | (exclusive + mine));
    }
    s_base[t] = global_start + exclusive - s_tile_start[t];
    barrier();
    scatter_tile(first, valid);
}
