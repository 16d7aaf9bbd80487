// GPU LSD radix sort of (key, value) pairs or keys alone, with 32- or 64-bit keys, 8-bit digits
// and only the digits of the bits used (ceil(key_bits / 8) passes), and the multi-level
// exclusive scan it is built on. Two paths (SortPath, chosen per Context):
//   reduce_then_scan: per pass a histogram per tile, a scan of those counts and a scatter
//     (Merrill & Grimshaw, "High Performance and Scalable Radix Sorting", 2011); no workgroup
//     ever waits on another, so no forward-progress assumption.
//   onesweep: one kernel counts every pass's digits from one read of the keys, then one kernel
//     per pass whose tiles, numbered by an atomic in the order they start, take their offsets by
//     decoupled look-back (Adinets & Merrill, "Onesweep", 2022): a tile waits only on tiles
//     that started before it, and only for a while: then it counts the silent tile's keys
//     itself (decoupled fallback, Smith, Levien & Owens 2025).
// Both rank each tile (shaders/sort/radix_rank.glsl) in shared memory without subgroup operations,
// or by subgroup ballots (SortRank, DeviceInfo::sort_subgroup_rank) where the subgroups are full
// and of 8 lanes or more, else in shared memory again: correct for any subgroup size. Stable:
// equal keys keep their input order.
#pragma once

#include "device/kernels.hpp"
#include "instruments/traffic.hpp"

namespace broadphase::gpu {

/// Buffers of a sort. keys/keys_tmp: n * key_words uints (low word first); values/values_tmp:
/// n uints; scratch: RadixSort::scratch_size(n) bytes. The result ends in keys/values.
/// Without `values` (a null buffer) the sort moves keys only. `count` (optional, one uint) makes
/// the element count dynamic: the sort then orders the first min(count, n) elements, read on
/// the GPU (elements past them end unspecified), launching only the tiles they fill through
/// `args`, the indirect arguments record_count_args wrote for that count, so that a count
/// written by an earlier kernel needs no host read and costs no work past it. With `count` and
/// no `args` every tile is launched (gated like any dispatch), and those past the count exit.
struct SortBuffers {
    BufferRange keys, values, keys_tmp, values_tmp, scratch;
    BufferRange count{};
    BufferRange args{};
    /// The dynamic count is either 0 or n: every tile runs or none does, so the histograms
    /// need no clearing before each pass (saves a fill and a barrier per pass).
    bool all_or_nothing = false;
    /// False: an odd number of passes leaves the result in keys_tmp / values_tmp instead of
    /// copying all n elements back (the caller binds those; the Culler's order sort).
    bool copy_back = true;
};

class RadixSort {
public:
    RadixSort() = default;
    /// A sort of `context` whose kernels are compiled by the ready_* calls (see Kernel), on
    /// `path` (automatic: the Context's, DeviceInfo::sort_path), ranking as `rank` says.
    explicit RadixSort(Context& context, SortPath path = SortPath::automatic,
                       SortRank rank = SortRank::automatic);
    /// A sort with every kernel of its path, the scan and count_args compiled now; an error
    /// when `rank` is subgroup on a device without subgroup ballot.
    static Result<RadixSort> create(Context& context, SortPath path = SortPath::automatic,
                                    SortRank rank = SortRank::automatic);

    /// The path this sort records (never automatic). The one-sweep look-back packs counts in
    /// 30 bits, which holds every sort: n keys of 4 bytes or more fit one storage range, and
    /// maxStorageBufferRange is a uint32_t, so n < 2^30.
    SortPath path() const { return path_; }
    /// Whether the tiles are ranked with subgroup ballots (never automatic once resolved).
    bool subgroup_rank() const { return subgroup_rank_; }

    /// Tests: the one-sweep look-back counts every preceding tile from its keys (the fallback
    /// it takes after waiting kOnesweepSpins rounds) instead of reading what the tile published.
    void set_fallback_only(bool on) { fallback_only_ = on; }
    /// The onesweep look-back's window (DeviceInfo::sort_window unless set_window changed it).
    std::uint32_t window() const { return window_; }
    /// Tests: the look-back window (1 to kOnesweepWindow).
    void set_window(std::uint32_t tiles) { window_ = tiles; }
    /// Tests: most tiles leave their aggregates where they would publish inclusive prefixes,
    /// and a few publish nothing for a digit (kSortLookbackStress), so that look-backs walk
    /// several windows, stop short of a digit's prefix and count silent tiles.
    void set_lookback_stress(bool on) { lookback_stress_ = on; }

    /// Compiles (or finds) what record needs: on reduce_then_scan the histogram, scatter and
    /// the scan; on onesweep its histogram and pass kernels.
    Status ready_sort() const;
    /// What record_scan needs.
    Status ready_scan() const;
    /// What record_count_args needs.
    Status ready_count_args() const;

    /// Memory traffic of a sort of n elements on `path` (gpu/instruments/traffic.hpp), from the
    /// kernels' access patterns (bytes of each buffer a kernel touches, counted once per kernel).
    /// An element is key_words key words and, unless keys_only, a value; tiles = ceil(n / 4096).
    /// reduce_then_scan, per digit pass: radix_histogram reads one key word per element and
    ///   writes kSortBuckets counts per tile; the scan of those counts (scan_traffic);
    ///   radix_scatter reads the elements and its tile's scanned counts, and writes the elements.
    /// onesweep: the fill zeroes the state (counters, histograms, the passes' look-back rows);
    ///   radix_onesweep_histogram reads the keys and adds kSortBuckets counts per pass per tile
    ///   (an atomic: 4 bytes read and written each); per pass radix_onesweep takes a tile
    ///   number (an atomic), reads the elements and the pass's kSortBuckets global counts, writes
    ///   its tile's look-back row (the aggregate, then the inclusive prefix: twice, tile 0 once)
    ///   and reads one preceding row once per tile after the first (the least look-back: its
    ///   first round reads its predecessor's row; deeper look-backs, reading up to
    ///   kOnesweepWindow rows a round, waits and a waiting tile's count of a silent
    ///   predecessor's keys read more, by a timing-dependent amount not counted), and writes
    ///   the elements.
    /// On both, an odd number of passes adds a copy of the elements back unless `copy_back` is
    /// false (SortBuffers::copy_back). `passes` receives the digit passes
    /// (ceil(key_bits / kSortDigitBits); 0 when n <= 1).
    static Traffic traffic(std::uint32_t n, std::uint32_t key_words, std::uint32_t key_bits,
                           bool keys_only, SortPath path, std::uint32_t* passes = nullptr,
                           bool copy_back = true);
    /// Memory traffic of a sort of capacity n recorded with a dynamic count that is 0 at run
    /// time, launched through `args` with all_or_nothing (the refined LBVH build's second sort
    /// when nothing is refined): on reduce_then_scan each pass's scan of the (zero) counts, which
    /// runs directly; on onesweep the fill of its state. The kernels launched from `args` run no
    /// workgroup.
    static Traffic empty_traffic(std::uint32_t n, std::uint32_t key_bits, SortPath path);
    /// Memory traffic of a sort of capacity n recorded with a dynamic `count` (<= n) and its
    /// indirect arguments (SortBuffers::count and args, not all_or_nothing: the Culler's order
    /// sort): only the count's tiles are launched, as traffic(count) models them, but the
    /// parts recorded for the capacity touch all of its tiles: on reduce_then_scan each pass's
    /// fill of the histograms (4 B per count of n's tiles) and the scan of all of them
    /// (scan_traffic); on onesweep the fill of the state of n's tiles; and an odd number of
    /// passes copies n elements back unless `copy_back` is false (SortBuffers::copy_back).
    /// `passes` as traffic(n)'s.
    static Traffic count_traffic(std::uint32_t n, std::uint32_t count, std::uint32_t key_words,
                                 std::uint32_t key_bits, bool keys_only, SortPath path,
                                 std::uint32_t* passes = nullptr, bool copy_back = true);
    /// Digit passes of a sort on key_bits bits (ceil(key_bits / kSortDigitBits)).
    static std::uint32_t passes(std::uint32_t key_bits);
    /// Memory traffic of an exclusive scan of n uints: each level's scan_local reads and
    /// writes its elements and writes one sum per tile; scan_add reads and writes the elements
    /// of every level below the top one and reads their tile sums.
    static Traffic scan_traffic(std::uint32_t n);

    /// Scratch bytes a sort of n elements needs on either path (the larger of the histograms
    /// and scan levels, and the one-sweep state of up to kSortMaxPasses passes).
    static VkDeviceSize scratch_size(std::uint32_t n);
    /// Scratch bytes an exclusive scan of n uints needs.
    static VkDeviceSize scan_scratch_size(std::uint32_t n);

    /// Records the sort on the low `key_bits` bits of each key (key_words = 1 or 2; bits above
    /// key_bits do not order the keys and move with them), on this sort's path.
    /// Precondition: inputs visible to compute reads. Postcondition: last command is a compute
    /// dispatch or a transfer; a compute_barrier makes the result visible.
    /// With a gate, every dispatch is captured or made indirect (DispatchGate); the copy back
    /// of an odd number of passes is not, so a gated sort takes an even number or no copy back
    /// (SortBuffers::copy_back false). Precondition:
    /// ready_sort() succeeded (as for the other recorders and their ready_* call).
    void record(VkCommandBuffer cmd, const SortBuffers& buffers, std::uint32_t n,
                std::uint32_t key_words, std::uint32_t key_bits,
                DispatchGate* gate = nullptr) const;

    /// Records the indirect dispatch arguments (kArgsSlots VkDispatchIndirectCommand into
    /// `args`) of min(count, capacity) elements, `count` being a uint written on the GPU.
    /// Preconditions: `count` visible to compute reads. Postcondition: ends with
    /// indirect_barrier, so later dispatches may read `args` as indirect arguments.
    void record_count_args(VkCommandBuffer cmd, const BufferRange& count, std::uint32_t capacity,
                           const BufferRange& args) const;

    /// Records an in-place exclusive scan of `count` uints in `data`.
    void record_scan(VkCommandBuffer cmd, const BufferRange& data, std::uint32_t count,
                     const BufferRange& scratch, DispatchGate* gate = nullptr) const;

private:
    RadixSort(Context& context, SortPath path, bool subgroup_rank);

    void record_reduce_then_scan(VkCommandBuffer cmd, const SortBuffers& buffers, std::uint32_t n,
                                 std::uint32_t key_words, std::uint32_t key_bits,
                                 DispatchGate* gate) const;
    void record_onesweep(VkCommandBuffer cmd, const SortBuffers& buffers, std::uint32_t n,
                         std::uint32_t key_words, std::uint32_t key_bits, DispatchGate* gate) const;

    Kernel histogram_, scatter_, scan_local_, scan_add_, count_args_;
    Kernel onesweep_histogram_, onesweep_;
    SortPath path_ = SortPath::reduce_then_scan;
    bool subgroup_rank_ = false;
    bool fallback_only_ = false;
    bool lookback_stress_ = false;
    std::uint32_t window_ = gpu_layout::kOnesweepWindow;
    std::uint32_t max_workgroup_count_x_ = 1;
};

}  // namespace broadphase::gpu
