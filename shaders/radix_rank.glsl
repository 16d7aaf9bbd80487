// Stable ranking of one tile of kSortTile elements by an 8-bit digit, in shared memory and
// without subgroup operations (correct for any subgroup size): two local 4-bit split passes
// (low nibble, then high nibble), each a counting sort whose counters are per invocation and
// digit (16 x 256 cells, scanned once in digit-major order), as in Satish, Harris & Garland,
// "Designing Efficient Sorting Algorithms for Manycore GPUs" (2009). Invocation t owns the
// kSortItemsPerThread consecutive tile positions [t * kSortItemsPerThread, ...) in each pass, so
// each pass is stable and the two together order the tile by (digit, position).
// Used by radix_scatter.comp (reduce-then-scan) and radix_onesweep.comp.
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

#include "workgroup_scan.glsl"

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
void split_pass(uint nib[kSortItemsPerThread], out uint pos[kSortItemsPerThread]) {
    uint t = gl_LocalInvocationID.x;
    for (uint d = 0u; d < 16u; ++d) s_rank[rank_cell(d * kWorkgroupSize + t)] = 0u;
    barrier();
    for (uint k = 0u; k < kSortItemsPerThread; ++k)
        s_rank[rank_cell(nib[k] * kWorkgroupSize + t)] += 1u;
    barrier();
    // Exclusive scan of the 4096 cells in digit-major order: invocation t owns cells
    // [t * 16, t * 16 + 16).
    uint sum = 0u;
    for (uint k = 0u; k < 16u; ++k) sum += s_rank[rank_cell(t * 16u + k)];
    uint total;
    uint prefix = workgroup_exclusive_scan(sum, total);
    for (uint k = 0u; k < 16u; ++k) {
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

// Ranks the tile: digit[k] is the digit of tile position t * kSortItemsPerThread + k (positions
// at or past `valid` must hold 255u: being last in the tile they sort after every valid
// element). On return cell p of s_rank = digit << 16 | tile position of the element at sorted
// position p, and for every digit d, s_tile_count[d] and s_tile_start[d] describe the valid
// elements only. All invocations must call it (barriers).
void rank_tile(uint digit[kSortItemsPerThread], uint valid) {
    uint t = gl_LocalInvocationID.x;
    uint nib[kSortItemsPerThread];
    uint pos[kSortItemsPerThread];
    for (uint k = 0u; k < kSortItemsPerThread; ++k) nib[k] = digit[k] & 15u;
    split_pass(nib, pos);
    for (uint k = 0u; k < kSortItemsPerThread; ++k)
        s_rank[rank_cell(pos[k])] = digit[k] << 16 | (t * kSortItemsPerThread + k);
    barrier();
    uint item[kSortItemsPerThread];
    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        item[k] = s_rank[rank_cell(t * kSortItemsPerThread + k)];
        nib[k] = item[k] >> 20;
    }
    barrier();
    split_pass(nib, pos);
    for (uint k = 0u; k < kSortItemsPerThread; ++k) s_rank[rank_cell(pos[k])] = item[k];
    s_tile_count[t] = 0u;  // kSortBuckets == kWorkgroupSize: one digit per invocation
    s_tile_start[t] = 0u;
    barrier();
    // Digit boundaries among the valid sorted positions give each digit's start and count.
    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
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
