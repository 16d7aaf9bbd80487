// LSD radix sort (reduce-then-scan path), pass step 2: stable scatter of one tile by one 8-bit
// digit. The tile is ranked (radix_rank.glsl: in shared memory by two stable 4-bit splits, or
// with subgroup ballots), then written in sorted order, so that consecutive invocations write
// consecutive addresses within each digit. Global position of the element at sorted tile
// position p with digit d = scanned hist[d * tiles + tile] + p - (first sorted position of d in
// the tile). With kSortDynamicCount (an indirect launch over the tiles of min(pc.count, a count
// in a buffer)), tiles past that count exit at once.
// Included by radix_scatter.comp (the tile ranked in shared memory) and
// radix_scatter_subgroup.comp (SORT_SUBGROUP_RANK: ranked with subgroup ballots where the
// subgroups allow it, radix_rank.glsl), after their #version and extensions.
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
layout(std430, binding = 4) readonly buffer Hist {
    uint hist[];
};  // scanned
layout(std430, binding = 5) readonly buffer Count {
    uint dynamic_count;
};  // read only with kSortDynamicCount

shared uint s_base[kSortBuckets];

void main() {
    uint tile = linear_group();
    if (tile >= pc.tiles) return;
    uint count = (pc.flags & kSortDynamicCount) != 0u ? min(pc.count, dynamic_count) : pc.count;
    uint first = tile * kSortTile;
    if (first >= count) return;  // past a dynamic count (uniform per workgroup)
    uint t = gl_LocalInvocationID.x;
    uint valid = min(count - first, kSortTile);

    uint digit[kSortItemsPerThread];
    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint q = rank_position(k);
        digit[k] = q < valid ? (keys_in[(first + q) * pc.key_words + pc.key_word] >> pc.shift) &
                                   pc.capacity
                             : 255u;
    }
    rank_tile(digit, valid);
    s_base[t] = hist[t * pc.tiles + tile] - s_tile_start[t];
    barrier();

    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint p = k * kWorkgroupSize + t;
        if (p < valid) {
            uint e = s_rank[rank_cell(p)];
            uint src = first + (e & 0xffffu);
            uint dst = s_base[e >> 16] + p;
            for (uint w = 0u; w < pc.key_words; ++w)
                keys_out[dst * pc.key_words + w] = keys_in[src * pc.key_words + w];
            if ((pc.flags & kSortKeysOnly) == 0u) values_out[dst] = values_in[src];
        }
    }
}
