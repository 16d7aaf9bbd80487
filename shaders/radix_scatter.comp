// LSD radix sort, pass step 2: stable scatter of one tile. Each invocation owns
// kSortItemsPerThread consecutive elements; per-invocation digit counts laid out digit-major
// in shared memory are scanned once, which ranks every element by (digit, position in tile):
// a stable local sort without subgroup operations. Global position = scanned histogram of
// (digit, tile) + rank within the tile's digit. With kSortDynamicCount (an indirect launch over
// the tiles of min(pc.count, a count in a buffer)), tiles past that count exit at once.
#version 450
#include "common.glsl"
#include "workgroup_scan.glsl"

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

const uint kCells = kSortBuckets * kWorkgroupSize;     // 4096 counters
const uint kCellsPerThread = kCells / kWorkgroupSize;  // 16
shared uint s_cells[kCells];                           // [digit][invocation]
shared uint s_digit_base[kSortBuckets];

uint g_count;  // elements to sort: pc.count, or min(pc.count, dynamic_count)

uint digit_of(uint i) {
    return (keys_in[i * pc.key_words + pc.key_word] >> pc.shift) & (kSortBuckets - 1u);
}

void main() {
    uint tile = linear_group();
    if (tile >= pc.tiles) return;
    g_count = (pc.flags & kSortDynamicCount) != 0u ? min(pc.count, dynamic_count) : pc.count;
    if (tile * kSortTile >= g_count) return;  // past a dynamic count (uniform per workgroup)
    uint t = gl_LocalInvocationID.x;
    uint first = tile * kSortTile + t * kSortItemsPerThread;

    for (uint d = 0u; d < kSortBuckets; ++d) s_cells[d * kWorkgroupSize + t] = 0u;
    barrier();
    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint i = first + k;
        if (i < g_count) s_cells[digit_of(i) * kWorkgroupSize + t] += 1u;
    }
    barrier();

    // Exclusive scan of all 4096 cells in digit-major order: invocation t owns cells
    // [t * 16, t * 16 + 16).
    uint local_sum = 0u;
    for (uint k = 0u; k < kCellsPerThread; ++k) local_sum += s_cells[t * kCellsPerThread + k];
    uint total;
    uint prefix = workgroup_exclusive_scan(local_sum, total);
    barrier();
    for (uint k = 0u; k < kCellsPerThread; ++k) {
        uint c = s_cells[t * kCellsPerThread + k];
        s_cells[t * kCellsPerThread + k] = prefix;
        prefix += c;
    }
    barrier();
    if (t < kSortBuckets) {
        // Global start of digit t for this tile, minus where digit t starts inside the tile.
        s_digit_base[t] = hist[t * pc.tiles + tile] - s_cells[t * kWorkgroupSize];
    }
    barrier();

    for (uint k = 0u; k < kSortItemsPerThread; ++k) {
        uint i = first + k;
        if (i >= g_count) break;
        uint d = digit_of(i);
        uint cell = d * kWorkgroupSize + t;
        uint dst = s_digit_base[d] + s_cells[cell];
        s_cells[cell] += 1u;
        for (uint w = 0u; w < pc.key_words; ++w)
            keys_out[dst * pc.key_words + w] = keys_in[i * pc.key_words + w];
        if ((pc.flags & kSortKeysOnly) == 0u) values_out[dst] = values_in[i];
    }
}
