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
#include "device/common.glsl"
#include "sort/radix_tile.glsl"

layout(local_size_x = kWorkgroupSize) in;
layout(std430, binding = 4) readonly buffer Hist {
    uint hist[];
};  // scanned
layout(std430, binding = 5) readonly buffer Count {
    uint dynamic_count;
};  // read only with kSortDynamicCount

void main() {
    uint tile = linear_group();
    if (tile >= pc.tiles) return;
    uint count = (pc.flags & kSortDynamicCount) != 0u ? min(pc.count, dynamic_count) : pc.count;
    uint first = tile * kSortTile;
    if (first >= count) return;  // past a dynamic count (uniform per workgroup)
    uint t = gl_LocalInvocationID.x;
    uint valid = min(count - first, kSortTile);

    uint digit[kSortItemsPerThread];
    load_tile_digits(first, valid, digit);
    rank_tile(digit, valid);
    s_base[t] = hist[t * pc.tiles + tile] - s_tile_start[t];
    barrier();
    scatter_tile(first, valid);
}
