// GPU LSD radix sort of (key, value) pairs with 32- or 64-bit keys, and the multi-level
// exclusive scan it is built on. Reduce-then-scan per 4-bit digit (Merrill & Grimshaw,
// "High Performance and Scalable Radix Sorting", 2011), with no subgroup operations and no
// inter-workgroup waiting, so it is correct for any subgroup size and without forward-progress
// guarantees. Stable: equal keys keep their input order.
#pragma once

#include "kernels.hpp"
#include "traffic.hpp"

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
};

class RadixSort {
public:
    RadixSort() = default;
    /// A sort of `context` whose kernels are compiled by the ready_* calls (see Kernel).
    explicit RadixSort(Context& context);
    /// A sort with every kernel compiled now.
    static Result<RadixSort> create(Context& context);

    /// Compiles (or finds) what record needs: histogram, scatter and the scan.
    Status ready_sort() const;
    /// What record_scan needs.
    Status ready_scan() const;
    /// What record_count_args needs.
    Status ready_count_args() const;

    /// Memory traffic of a sort of n elements (gpu/traffic.hpp), per digit pass over the keys:
    /// radix_histogram reads one key word per element and writes kSortBuckets counts per tile;
    /// the scan of those counts (scan_traffic); radix_scatter reads the keys (key_words words),
    /// the values (unless keys_only) and the scanned counts, and writes keys and values. An odd
    /// number of passes adds a copy of keys and values back. `passes` receives the digit
    /// passes (ceil(key_bits / kSortDigitBits)).
    static Traffic traffic(std::uint32_t n, std::uint32_t key_words, std::uint32_t key_bits,
                           bool keys_only, std::uint32_t* passes = nullptr);
    /// Memory traffic of an exclusive scan of n uints: each level's scan_local reads and
    /// writes its elements and writes one sum per tile; scan_add reads and writes the elements
    /// of every level below the top one and reads their tile sums.
    static Traffic scan_traffic(std::uint32_t n);

    /// Scratch bytes a sort of n elements needs (histograms and scan levels).
    static VkDeviceSize scratch_size(std::uint32_t n);
    /// Scratch bytes an exclusive scan of n uints needs.
    static VkDeviceSize scan_scratch_size(std::uint32_t n);

    /// Records the sort on the low `key_bits` bits of each key (key_words = 1 or 2).
    /// Precondition: inputs visible to compute reads. Postcondition: last command is a compute
    /// dispatch or a transfer; a compute_barrier makes the result visible.
    /// With a gate, every dispatch is captured or made indirect (DispatchGate). Precondition:
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
    Kernel histogram_, scatter_, scan_local_, scan_add_, count_args_;
    std::uint32_t max_workgroup_count_x_ = 1;
};

}  // namespace broadphase::gpu
