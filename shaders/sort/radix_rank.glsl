// Stable ranking of one tile of kSortTile elements by an 8-bit digit, two ways.
//
// In shared memory, without subgroup operations (correct for any subgroup size; rank_tile's
// only way unless SORT_SUBGROUP_RANK): two local 4-bit split passes
// (low nibble, then high nibble), each a counting sort whose counters are per invocation and
// digit (16 x 256 cells, scanned once in digit-major order), as in Satish, Harris & Garland,
// "Designing Efficient Sorting Algorithms for Manycore GPUs" (2009). Invocation t owns the
// kSortItemsPerThread consecutive tile positions [t * kSortItemsPerThread, ...) in each pass, so
// each pass is stable and the two together order the tile by (digit, position).
//
// With subgroup ballots (SORT_SUBGROUP_RANK, radix_*_subgroup.comp), where the workgroup's
// subgroups are all full and of 8 invocations or more (else the shared-memory way): the
// warp-level multisplit of Ashkiani et al., "GPU Multisplit" (PPoPP 2016), as the one-sweep
// sort of Adinets & Merrill ranks its tiles. Subgroup g owns the 16 * S consecutive tile
// positions from g * 16 * S (S invocations), item k of lane l at g * 16 * S + k * S + l, so
// that its loads are consecutive. Per item, eight ballots (one per digit bit) give the lanes
// with the same digit; its rank among them is the bit count of those below it, and the lowest
// adds their number to the subgroup's counter of that digit (16-bit counters, two per word, in
// s_rank: at most 32 subgroups x 256 digits). Items are taken in position order, so each
// subgroup's ranks are stable; one scan of the counters in (digit, subgroup) order then gives
// every digit's start and every subgroup's offset within it. About 15 workgroup barriers
// instead of 33, and no strided shared-memory walks.
// Callers load item k of invocation t from tile position rank_position(k).
// Used by radix_scatter.glsl (reduce-then-scan) and radix_onesweep.glsl.
// Shared memory: s_rank 17 KiB, s_tile_count / s_tile_start 2 KiB, plus workgroup_scan.glsl's
// 2 KiB (context.cpp checks the total against maxComputeSharedMemorySize).
//
// Bank conflicts. Shared memory is banked (32 banks of 4 bytes on NVIDIA and AMD): the accesses
// of one subgroup to distinct words of one bank serialise. Invocation t walks its 16 cells or
// tile positions t * 16 + k, a stride of 16 words, so without padding a subgroup of 32 hits 2
// banks (a 16-way conflict) on every such access. rank_cell(c) inserts one word after every 16
// (c + c / 16): the stride becomes 17 and the 32 invocations of a subgroup hit 32 banks, while
// the accesses by consecutive t (cell d * 256 + t, sorted position k * 256 + t) stay
// consecutive but for one skipped word per 16. Every access to s_rank goes through it.
#ifndef BROADPHASE_RADIX_RANK_GLSL
#define BROADPHASE_RADIX_RANK_GLSL

#include "sort/workgroup_scan.glsl"

const uint kRankCells = 16u * kWorkgroupSize;  // 4096 = kSortTile
// Counting cells [nibble][invocation] during a split pass; between and after them, the tile in
// sorted order: (digit << 16 | tile position) per sorted position. Cell c is s_rank[rank_cell(c)]
// (one pad word per 16 cells).
shared uint s_rank[kRankCells + kRankCells / 16u];

uint rank_cell(uint c) {
    return c + (c >> 4u);
}
// Per digit: elements of the tile with that digit, and the first sorted position holding it.
shared uint s_tile_count[kSortBuckets];
shared uint s_tile_start[kSortBuckets];

// One stable 4-bit split: item k of invocation t has nibble nib[k]; returns in pos[k] its
// position in the tile ordered by (nibble, t, k). s_rank is free on entry and on return.
// The walks over an invocation's 16 cells stay loops ([[dont_unroll]]): unrolled, they made
// most of the code lavapipe's LLVM compiles at a kernel's first dispatch (issue "Light to start
// and to test": 2 s at most cold); the loops over items index per-item arrays and
// stay unrollable, so that a GPU keeps the items in registers.
void split_pass(uint nib[kSortItemsPerThread], out uint pos[kSortItemsPerThread]) {
    uint t = gl_LocalInvocationID.x;
    [[dont_unroll]] for (uint d = 0u; d < 16u; ++d) s_rank[rank_cell(d * kWorkgroupSize + t)] = 0u;
    barrier();
    for (uint k = 0u; k < kSortItemsPerThread; ++k)
        s_rank[rank_cell(nib[k] * kWorkgroupSize + t)] += 1u;
    barrier();
    // Exclusive scan of the 4096 cells in digit-major order: invocation t owns cells
    // [t * 16, t * 16 + 16).
    uint sum = 0u;
    [[dont_unroll]] for (uint k = 0u; k < 16u; ++k) sum += s_rank[rank_cell(t * 16u + k)];
    uint total;
    uint prefix = workgroup_exclusive_scan(sum, total);
    [[dont_unroll]] for (uint k = 0u; k < 16u; ++k) {
        uint c = s_rank[rank_cell(t * 16u + k)];
        s_rank[rank_cell(t * 16u + k)] = prefix;
        prefix += c;
    }
    barrier();
    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint cell = nib[k] * kWorkgroupSize + t;
        pos[k] = s_rank[rank_cell(cell)];
        s_rank[rank_cell(cell)] += 1u;
    }
    barrier();
}

#ifdef SORT_SUBGROUP_RANK
// Subgroups the ballot ranking can use: full (S x subgroups = the workgroup) and S >= 8, so
// that 16-bit counters of every subgroup and digit fit s_rank. Uniform in the workgroup.
bool subgroup_rank_usable() {
    return gl_SubgroupSize >= 8u && gl_NumSubgroups * gl_SubgroupSize == kWorkgroupSize;
}

uint bit_count4(uvec4 v) {
    return uint(bitCount(v.x) + bitCount(v.y) + bitCount(v.z) + bitCount(v.w));
}

#endif

// Tile position of item k of this invocation: t * kSortItemsPerThread + k in shared memory, and
// g * 16 * S + k * S + l for lane l of subgroup g when subgroup ballots rank the tile.
uint rank_position(uint k) {
#ifdef SORT_SUBGROUP_RANK
    if (subgroup_rank_usable())
        return (gl_SubgroupID * kSortItemsPerThread + k) * gl_SubgroupSize +
               gl_SubgroupInvocationID;
#endif
    return gl_LocalInvocationID.x * kSortItemsPerThread + k;
}

#ifdef SORT_SUBGROUP_RANK
// rank_tile with subgroup ballots (the header comment).
void rank_tile_subgroup(uint digit[kSortItemsPerThread], uint valid) {
    uint t = gl_LocalInvocationID.x;
    const uint row_words = kSortBuckets / 2u;  // a subgroup's 256 16-bit counters
    uint row = gl_SubgroupID * row_words;
    for (uint k = 0u; k < kSortItemsPerThread; ++k) s_rank[k * kWorkgroupSize + t] = 0u;
    barrier();
    // Per item in position order: its rank among the subgroup's earlier items of its digit.
    uint local_rank[kSortItemsPerThread];
    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint d = digit[k];
        uvec4 peers = subgroupBallot(true);
        [[unroll]] for (uint b = 0u; b < kSortDigitBits; ++b) {
            bool set = ((d >> b) & 1u) != 0u;
            uvec4 ballot = subgroupBallot(set);
            peers &= set ? ballot : ~ballot;
        }
        uint below = bit_count4(peers & gl_SubgroupLtMask);
        uint word = row + (d >> 1u), shift = (d & 1u) * 16u;
        uint before = (s_rank[word] >> shift) & 0xffffu;
        subgroupMemoryBarrierShared();
        subgroupBarrier();  // every lane has read the counter before its digit's lowest adds
        if (below == 0u) atomicAdd(s_rank[word], bit_count4(peers) << shift);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        local_rank[k] = before + below;
    }
    barrier();
    // Invocation t < 128 owns word column t (digits 2t and 2t + 1 of every subgroup): each
    // digit's total, their scan, then every subgroup's offset of both digits in its place.
    uint lo_total = 0u, hi_total = 0u;
    if (t < row_words) {
        for (uint g = 0u; g < gl_NumSubgroups; ++g) {
            uint c = s_rank[g * row_words + t];
            lo_total += c & 0xffffu;
            hi_total += c >> 16u;
        }
    }
    uint total;
    uint start = workgroup_exclusive_scan(lo_total + hi_total, total);
    if (t < row_words) {
        uint lo_at = start, hi_at = start + lo_total;
        for (uint g = 0u; g < gl_NumSubgroups; ++g) {
            uint c = s_rank[g * row_words + t];
            s_rank[g * row_words + t] = lo_at | (hi_at << 16u);  // positions < 4096
            lo_at += c & 0xffffu;
            hi_at += c >> 16u;
        }
        // Positions at or past `valid` hold digit 255, last in the tile: not counted.
        uint invalid = t == row_words - 1u ? kSortTile - valid : 0u;
        s_tile_start[2u * t] = start;
        s_tile_count[2u * t] = lo_total;
        s_tile_start[2u * t + 1u] = start + lo_total;
        s_tile_count[2u * t + 1u] = hi_total - invalid;
    }
    barrier();
    uint pos[kSortItemsPerThread];
    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint d = digit[k];
        pos[k] = ((s_rank[row + (d >> 1u)] >> ((d & 1u) * 16u)) & 0xffffu) + local_rank[k];
    }
    barrier();
    for (uint k = 0u; k < kSortItemsPerThread; ++k)
        s_rank[rank_cell(pos[k])] = digit[k] << 16 | rank_position(k);
    barrier();
}
#endif

// Ranks the tile: digit[k] is the digit of tile position rank_position(k) (positions at or past
// `valid` must hold 255u: being last in the tile they sort after every valid element). On
// return cell p of s_rank = digit << 16 | tile position of the element at sorted position p,
// and for every digit d, s_tile_count[d] and s_tile_start[d] describe the valid elements only
// (s_tile_start of a digit absent from the tile is unspecified). All invocations must call it
// (barriers).
void rank_tile(uint digit[kSortItemsPerThread], uint valid) {
#ifdef SORT_SUBGROUP_RANK
    if (subgroup_rank_usable()) {  // uniform
        rank_tile_subgroup(digit, valid);
        return;
    }
#endif
    uint t = gl_LocalInvocationID.x;
    s_tile_count[t] = 0u;  // kSortBuckets == kWorkgroupSize: one digit per invocation
    s_tile_start[t] = 0u;
    uint item[kSortItemsPerThread];
    for (uint k = 0u; k < kSortItemsPerThread; ++k)
        item[k] = digit[k] << 16 | (t * kSortItemsPerThread + k);
    // Low nibble, then high nibble: one loop, not two inlined copies of the split (lavapipe's
    // LLVM compiles it once; a GPU runs the same instructions and barriers).
    [[dont_unroll]] for (uint shift = 16u; shift < 24u; shift += 4u) {
        if (shift != 16u) {  // uniform: the tile as the first split ordered it
            for (uint k = 0u; k < kSortItemsPerThread; ++k)
                item[k] = s_rank[rank_cell(t * kSortItemsPerThread + k)];
            barrier();
        }
        uint nib[kSortItemsPerThread];
        uint pos[kSortItemsPerThread];
        for (uint k = 0u; k < kSortItemsPerThread; ++k) nib[k] = (item[k] >> shift) & 15u;
        split_pass(nib, pos);
        for (uint k = 0u; k < kSortItemsPerThread; ++k) s_rank[rank_cell(pos[k])] = item[k];
        barrier();
    }
    // Digit boundaries among the valid sorted positions give each digit's start and count.
    [[dont_unroll]] for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint p = t * kSortItemsPerThread + k;
        if (p < valid) {
            uint d = s_rank[rank_cell(p)] >> 16;
            if (p == 0u || (s_rank[rank_cell(p - 1u)] >> 16) != d) s_tile_start[d] = p;
            if (p + 1u == valid || (s_rank[rank_cell(p + 1u)] >> 16) != d) s_tile_count[d] = p + 1u;
        }
    }
    barrier();
    // s_tile_count held each present digit's end; make it a count.
    if (s_tile_count[t] != 0u) s_tile_count[t] -= s_tile_start[t];
    barrier();
}

#endif
