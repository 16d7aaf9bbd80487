// GPU radix sort and multi-level scan: host-side recording (see radix_sort.hpp).
#include "sort/radix_sort.hpp"

#include <algorithm>
#include <cassert>
#include <vector>

#include "shaders.hpp"

namespace broadphase::gpu {

using namespace gpu_layout;

namespace {

// Sizes of the scan levels above `count`: level k+1 holds one sum per tile of level k, until
// a level fits in one tile (that level's sum array still exists: it receives the grand total).
std::vector<std::uint32_t> scan_levels(std::uint32_t count) {
    std::vector<std::uint32_t> levels;
    std::uint32_t size = count;
    do {
        size = static_cast<std::uint32_t>(div_up(size, kScanTile));
        levels.push_back(size);
    } while (size > 1);
    return levels;
}

std::uint32_t sort_tiles(std::uint32_t n) {
    return static_cast<std::uint32_t>(div_up(n, kSortTile));
}

std::uint32_t sort_passes(std::uint32_t key_bits) {
    return static_cast<std::uint32_t>(div_up(key_bits, kSortDigitBits));
}

// Digit mask of pass `pass` of a sort on the low key_bits bits (the last digit may be partial).
std::uint32_t digit_mask(std::uint32_t pass, std::uint32_t key_bits) {
    const std::uint32_t width = std::min(kSortDigitBits, key_bits - pass * kSortDigitBits);
    return (1u << width) - 1;
}

// Uints of the one-sweep state of `passes` passes over `tiles` tiles (layout/common.h).
std::uint64_t onesweep_state_words(std::uint32_t passes, std::uint32_t tiles) {
    return kOnesweepLookback + std::uint64_t(passes) * tiles * kSortBuckets;
}

static_assert(kSortBuckets == kWorkgroupSize, "the sort kernels give each digit an invocation");
static_assert(kSortTile == 16 * kWorkgroupSize, "radix_rank.glsl's cells hold one tile");
static_assert(kSortTile <= 0x10000, "radix_rank.glsl packs a tile position in 16 bits");
static_assert(kSortMaxPasses * kSortDigitBits == 64 && kSortMaxPasses <= kOnesweepHist);

}  // namespace

Traffic RadixSort::scan_traffic(std::uint32_t n) {
    Traffic t;
    if (n == 0) return t;
    std::uint64_t below = n;
    for (std::uint32_t size : scan_levels(n)) {
        t += {4 * below, 4 * below + 4ull * size};                // scan_local
        if (size > 1) t += {4 * below + 4ull * size, 4 * below};  // scan_add
        below = size;
    }
    return t;
}

Traffic RadixSort::traffic(std::uint32_t n, std::uint32_t key_words, std::uint32_t key_bits,
                           bool keys_only, SortPath path, std::uint32_t* passes_out,
                           bool copy_back) {
    const std::uint32_t passes = sort_passes(key_bits);
    if (passes_out) *passes_out = n > 1 ? passes : 0;
    Traffic t;
    if (n <= 1 || passes == 0) return t;
    const std::uint64_t tiles = sort_tiles(n), counts = kSortBuckets * tiles;
    const std::uint64_t element = 4ull * (key_words + (keys_only ? 0 : 1));
    if (path == SortPath::onesweep) {
        const std::uint64_t row = 4ull * kSortBuckets;
        t += {0, 4 * onesweep_state_words(passes, static_cast<std::uint32_t>(tiles))};  // fill
        t += {4ull * key_words * n + row * passes * tiles, row * passes * tiles};       // histogram
        for (std::uint32_t pass = 0; pass < passes; ++pass) {
            t += {4 * tiles, 4 * tiles};                                        // tile numbers
            t += {element * n + row * tiles + row * (tiles - 1), element * n};  // ranks, elements
            t += {0, row * (2 * tiles - 1)};                                    // look-back rows
        }
    } else {
        for (std::uint32_t pass = 0; pass < passes; ++pass) {
            t += {4ull * n, 4 * counts};                            // radix_histogram
            t += scan_traffic(static_cast<std::uint32_t>(counts));  // scan of the counts
            t += {element * n + 4 * counts, element * n};           // radix_scatter
        }
    }
    if ((passes & 1) && copy_back) t += {element * n, element * n};  // the copy back
    return t;
}

Traffic RadixSort::empty_traffic(std::uint32_t n, std::uint32_t key_bits, SortPath path) {
    const std::uint32_t passes = sort_passes(key_bits);
    Traffic t;
    if (n <= 1 || passes == 0) return t;
    const std::uint32_t tiles = sort_tiles(n);
    if (path == SortPath::onesweep) return {0, 4 * onesweep_state_words(passes, tiles)};
    for (std::uint32_t pass = 0; pass < passes; ++pass) t += scan_traffic(kSortBuckets * tiles);
    return t;
}

Traffic RadixSort::count_traffic(std::uint32_t n, std::uint32_t count, std::uint32_t key_words,
                                 std::uint32_t key_bits, bool keys_only, SortPath path,
                                 std::uint32_t* passes_out, bool copy_back) {
    const std::uint32_t passes = sort_passes(key_bits);
    if (passes_out) *passes_out = n > 1 ? passes : 0;
    Traffic t;
    if (n <= 1 || passes == 0) return t;
    count = std::min(count, n);
    const std::uint64_t tiles = sort_tiles(n), launched = sort_tiles(count);
    const std::uint64_t element = 4ull * (key_words + (keys_only ? 0 : 1));
    if (path == SortPath::onesweep) {
        const std::uint64_t row = 4ull * kSortBuckets;
        t += {0, 4 * onesweep_state_words(passes, static_cast<std::uint32_t>(tiles))};  // fill
        t += {4ull * key_words * count + row * passes * launched, row * passes * launched};
        for (std::uint32_t pass = 0; pass < passes; ++pass) {
            if (launched == 0) break;
            t += {4 * launched, 4 * launched};  // tile numbers
            t += {element * count + row * launched + row * (launched - 1), element * count};
            t += {0, row * (2 * launched - 1)};  // look-back rows
        }
    } else {
        const std::uint64_t counts = kSortBuckets * tiles, written = kSortBuckets * launched;
        for (std::uint32_t pass = 0; pass < passes; ++pass) {
            t += {0, 4 * counts};                                   // the histograms' fill
            t += {4ull * count, 4 * written};                       // radix_histogram
            t += scan_traffic(static_cast<std::uint32_t>(counts));  // scan of every count
            t += {element * count + 4 * written, element * count};  // radix_scatter
        }
    }
    if ((passes & 1) && copy_back) t += {element * n, element * n};  // of the capacity
    return t;
}

namespace {

bool wants_subgroup_rank(const Context& context, SortRank rank) {
    if (rank == SortRank::automatic) return context.info().sort_subgroup_rank;
    return rank == SortRank::subgroup && context.info().subgroup_ballot;
}

}  // namespace

RadixSort::RadixSort(Context& context, SortPath path, SortRank rank)
    : RadixSort(context, path, wants_subgroup_rank(context, rank)) {}

RadixSort::RadixSort(Context& context, SortPath path, bool subgroup_rank)
    : histogram_(context, shaders::radix_histogram, 3, "radix_histogram"),
      scatter_(context, subgroup_rank ? shaders::radix_scatter_subgroup : shaders::radix_scatter, 6,
               subgroup_rank ? "radix_scatter_subgroup" : "radix_scatter"),
      scan_local_(context, shaders::scan_local, 2, "scan_local"),
      scan_add_(context, shaders::scan_add, 2, "scan_add"),
      count_args_(context, shaders::count_args, 2, "count_args"),
      onesweep_histogram_(context, shaders::radix_onesweep_histogram, 3,
                          "radix_onesweep_histogram"),
      onesweep_(context, subgroup_rank ? shaders::radix_onesweep_subgroup : shaders::radix_onesweep,
                6, subgroup_rank ? "radix_onesweep_subgroup" : "radix_onesweep"),
      path_(path == SortPath::automatic ? context.info().sort_path : path),
      subgroup_rank_(subgroup_rank),
      window_(context.info().sort_window),
      max_workgroup_count_x_(std::max<std::uint32_t>(context.info().max_workgroup_count_x, 1)) {
    if (path_ == SortPath::automatic) path_ = SortPath::reduce_then_scan;
}

Result<RadixSort> RadixSort::create(Context& context, SortPath path, SortRank rank) {
    if (rank == SortRank::subgroup && !context.info().subgroup_ballot)
        return Error{ErrorCode::unsupported,
                     "a radix sort ranked with subgroup ballots: the device has none"};
    RadixSort s(context, path, rank);
    if (Status st = s.ready_sort(); !st) return st.error();
    if (Status st = s.ready_scan(); !st) return st.error();
    if (Status st = s.ready_count_args(); !st) return st.error();
    return s;
}

Status RadixSort::ready_sort() const {
    if (path_ == SortPath::onesweep) return ready({&onesweep_histogram_, &onesweep_});
    return ready({&histogram_, &scatter_, &scan_local_, &scan_add_});
}

Status RadixSort::ready_scan() const {
    return ready({&scan_local_, &scan_add_});
}

Status RadixSort::ready_count_args() const {
    return count_args_.ready();
}

VkDeviceSize RadixSort::scan_scratch_size(std::uint32_t n) {
    Arena arena;
    for (std::uint32_t size : scan_levels(n)) arena.take(size * 4ull);
    return arena.used();
}

VkDeviceSize RadixSort::scratch_size(std::uint32_t n) {
    const std::uint32_t tiles = std::max<std::uint32_t>(sort_tiles(n), 1);
    const std::uint32_t hist = kSortBuckets * tiles;
    Arena arena;
    arena.take(hist * 4ull);
    arena.take(scan_scratch_size(hist));
    Arena onesweep;
    onesweep.take(4 * onesweep_state_words(kSortMaxPasses, tiles));
    return std::max(arena.used(), onesweep.used());
}

void RadixSort::record_count_args(VkCommandBuffer cmd, const BufferRange& count,
                                  std::uint32_t capacity, const BufferRange& args) const {
    PushConstants pc{};
    pc.capacity = capacity;
    pc.offset = max_workgroup_count_x_;
    count_args_.dispatch(cmd, {count, args}, pc, 1);
    indirect_barrier(cmd);
}

void RadixSort::record_scan(VkCommandBuffer cmd, const BufferRange& data, std::uint32_t count,
                            const BufferRange& scratch, DispatchGate* gate) const {
    if (count == 0) return;
    Arena arena(scratch.buffer);
    std::vector<BufferRange> level_ranges{data};
    std::vector<std::uint32_t> counts{count};
    for (std::uint32_t size : scan_levels(count)) {
        BufferRange r = arena.take(size * 4ull);
        r.offset += scratch.offset;
        level_ranges.push_back(r);
        counts.push_back(size);
    }
    // Up: scan each level's tiles, writing tile totals to the next level.
    for (std::size_t k = 0; k + 1 < level_ranges.size(); ++k) {
        PushConstants pc{};
        pc.count = counts[k];
        pc.tiles = counts[k + 1];
        scan_local_.dispatch(cmd, {level_ranges[k], level_ranges[k + 1]}, pc, pc.tiles, gate);
        compute_barrier(cmd);
    }
    // Down: add each tile's scanned offset (the top level is one tile: already complete).
    for (std::size_t k = level_ranges.size() - 2; k-- > 0;) {
        PushConstants pc{};
        pc.count = counts[k];
        scan_add_.dispatch(cmd, {level_ranges[k], level_ranges[k + 1]}, pc, workgroups(counts[k]),
                           gate);
        compute_barrier(cmd);
    }
}

std::uint32_t RadixSort::passes(std::uint32_t key_bits) {
    return sort_passes(key_bits);
}

void RadixSort::record(VkCommandBuffer cmd, const SortBuffers& b, std::uint32_t n,
                       std::uint32_t key_words, std::uint32_t key_bits, DispatchGate* gate) const {
    const std::uint32_t passes = sort_passes(key_bits);
    if (n <= 1 || passes == 0) return;
    assert(key_words >= 1 && key_words <= 2 && key_bits <= 32 * key_words);
    // The copy back is not gated: a gated sort must take an even number of passes, or none.
    assert(!gate || passes % 2 == 0 || !b.copy_back);
    assert(n < (1u << 30));  // n keys in one storage range (see path())
    if (path_ == SortPath::onesweep)
        record_onesweep(cmd, b, n, key_words, key_bits, gate);
    else
        record_reduce_then_scan(cmd, b, n, key_words, key_bits, gate);
    if ((passes & 1) && b.copy_back) {  // not gated: gated recordings take even passes
        const bool keys_only = b.values.buffer == VK_NULL_HANDLE;
        VkBufferCopy key_copy{b.keys_tmp.offset, b.keys.offset, n * 4ull * key_words};
        vkCmdCopyBuffer(cmd, b.keys_tmp.buffer, b.keys.buffer, 1, &key_copy);
        if (!keys_only) {
            VkBufferCopy value_copy{b.values_tmp.offset, b.values.offset, n * 4ull};
            vkCmdCopyBuffer(cmd, b.values_tmp.buffer, b.values.buffer, 1, &value_copy);
        }
        compute_barrier(cmd);
    }
}

namespace {

// What both paths bind: the ping-pong ranges (keys only: the value bindings are unused, bound
// to the keys as placeholders), the count (without a dynamic count any valid range will do)
// and the indirect arguments of the sort's tiles.
struct SortBindings {
    const BufferRange* keys[2];
    const BufferRange* values[2];
    bool keys_only, dynamic, indirect;
    BufferRange count, tile_args;

    SortBindings(const SortBuffers& b, const BufferRange& placeholder) {
        keys_only = b.values.buffer == VK_NULL_HANDLE;
        keys[0] = &b.keys;
        keys[1] = &b.keys_tmp;
        values[0] = keys_only ? &b.keys : &b.values;
        values[1] = keys_only ? &b.keys_tmp : &b.values_tmp;
        dynamic = b.count.buffer != VK_NULL_HANDLE;
        indirect = dynamic && b.args.buffer != VK_NULL_HANDLE;
        count = dynamic ? b.count : placeholder;
        tile_args = b.args;
        tile_args.offset += kArgsSortTiles * sizeof(VkDispatchIndirectCommand);
    }
    std::uint32_t flags() const {
        return (dynamic ? kSortDynamicCount : 0u) | (keys_only ? kSortKeysOnly : 0u);
    }
    // One workgroup per tile: indirect, only the tiles the GPU-side count fills (tile_args);
    // else all `tiles`.
    void dispatch_tiles(const Kernel& kernel, VkCommandBuffer cmd,
                        std::initializer_list<BufferRange> buffers, const PushConstants& pc,
                        std::uint32_t tiles, DispatchGate* gate) const {
        if (indirect)
            kernel.dispatch_indirect(cmd, buffers, pc, tile_args);
        else
            kernel.dispatch(cmd, buffers, pc, tiles, gate);
    }
};

}  // namespace

void RadixSort::record_reduce_then_scan(VkCommandBuffer cmd, const SortBuffers& b, std::uint32_t n,
                                        std::uint32_t key_words, std::uint32_t key_bits,
                                        DispatchGate* gate) const {
    const std::uint32_t tiles = sort_tiles(n);
    const std::uint32_t hist_count = kSortBuckets * tiles;
    Arena arena(b.scratch.buffer);
    BufferRange hist = arena.take(hist_count * 4ull);
    hist.offset += b.scratch.offset;
    BufferRange scan_scratch = arena.take(scan_scratch_size(hist_count));
    scan_scratch.offset += b.scratch.offset;
    const SortBindings s(b, hist);
    // A dynamic count without `args` launches every tile directly; the tiles past the count
    // write zero histogram entries and scatter nothing.
    for (std::uint32_t pass = 0; pass < sort_passes(key_bits); ++pass) {
        const std::uint32_t bit = pass * kSortDigitBits;
        PushConstants pc{};
        pc.count = n;
        pc.capacity = digit_mask(pass, key_bits);
        pc.shift = bit % 32;
        pc.key_word = bit / 32;
        pc.key_words = key_words;
        pc.tiles = tiles;
        pc.flags = s.flags();
        const int src = pass & 1, dst = src ^ 1;
        // Only the tiles the count fills run: the others' histogram entries stay zero.
        if (s.indirect && !b.all_or_nothing) {
            fill(cmd, hist, 0u);
            compute_barrier(cmd);
        }
        s.dispatch_tiles(histogram_, cmd, {*s.keys[src], hist, s.count}, pc, tiles, gate);
        compute_barrier(cmd);
        record_scan(cmd, hist, hist_count, scan_scratch, gate);
        s.dispatch_tiles(
            scatter_, cmd,
            {*s.keys[src], *s.values[src], *s.keys[dst], *s.values[dst], hist, s.count}, pc, tiles,
            gate);
        compute_barrier(cmd);
    }
}

void RadixSort::record_onesweep(VkCommandBuffer cmd, const SortBuffers& b, std::uint32_t n,
                                std::uint32_t key_words, std::uint32_t key_bits,
                                DispatchGate* gate) const {
    const std::uint32_t tiles = sort_tiles(n);
    const std::uint32_t passes = sort_passes(key_bits);
    BufferRange state{b.scratch.buffer, b.scratch.offset, 4 * onesweep_state_words(passes, tiles)};
    // Counters, histograms and look-back rows start at zero (flag "nothing published").
    fill(cmd, state, 0u);
    compute_barrier(cmd);
    const SortBindings s(b, state);
    PushConstants pc{};
    pc.count = n;
    pc.shift = key_bits;
    pc.key_words = key_words;
    pc.tiles = tiles;
    pc.flags = s.flags();
    pc.budget = window_;  // the look-back window
    s.dispatch_tiles(onesweep_histogram_, cmd, {*s.keys[0], state, s.count}, pc, tiles, gate);
    compute_barrier(cmd);
    for (std::uint32_t pass = 0; pass < passes; ++pass) {
        const std::uint32_t bit = pass * kSortDigitBits;
        pc.capacity = digit_mask(pass, key_bits);
        pc.shift = bit % 32;
        pc.key_word = bit / 32;
        pc.offset = pass;
        pc.flags = s.flags() | (fallback_only_ ? kSortFallbackOnly : 0u) |
                   (lookback_stress_ ? kSortLookbackStress : 0u);
        const int src = pass & 1, dst = src ^ 1;
        s.dispatch_tiles(
            onesweep_, cmd,
            {*s.keys[src], *s.values[src], *s.keys[dst], *s.values[dst], state, s.count}, pc, tiles,
            gate);
        compute_barrier(cmd);
    }
}

}  // namespace broadphase::gpu
