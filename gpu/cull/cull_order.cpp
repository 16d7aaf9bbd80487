// The order of a cull's visible boxes (Culler::record, CullOrder): approximate, a radix sort of
// the near-child-first ranks the traversal carries down (lbvh_cull.comp, kCullFlagRank); exact,
// a radix sort of (distance key, id) packed in 32 + bit_width(n - 1) bits
// (shaders/cull/cull_distance.glsl), of the visible keys only, compacted to the front
// (lbvh_cull_compact.comp), the sort's dispatches sized on the GPU by their count.
#include <algorithm>
#include <bit>
#include <utility>

#include "cull/culler_impl.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::gpu {

namespace {

// Whether the order sort takes an odd number of passes: then the compaction writes its keys
// and values into keys_tmp / values_tmp, and the sort, its ping-pong buffers swapped, ends in
// keys / values with no copy back of all n elements (SortBuffers::copy_back).
bool order_sort_odd(std::uint32_t n, bool exact) {
    return n > 1 && (RadixSort::passes(order_key_bits(n, exact)) & 1) != 0;
}

}  // namespace

namespace culling {

std::uint32_t id_bits(std::uint32_t n) {
    return std::max<std::uint32_t>(1, std::bit_width(n - 1));
}

std::uint32_t order_key_bits(std::uint32_t n, bool exact) {
    return exact ? 32 + id_bits(n) : id_bits(n);
}

std::pair<BufferRange, BufferRange> compacted(const CullScratch& s, std::uint32_t n, bool exact) {
    if (order_sort_odd(n, exact)) return {s.keys_tmp, s.values_tmp};
    return {s.keys, s.values};
}

void record_compaction(CullerImpl& im, VkCommandBuffer cmd, const CullScratch& s,
                       const BufferRange& nodes, const BufferRange& params,
                       const BufferRange& slots, const BufferRange& offsets, std::uint32_t n,
                       bool exact, std::uint32_t flags, PushConstants& pc) {
    im.sort.record_scan(cmd, offsets, chunk_count(n) + 1, s.work);
    compute_barrier(cmd);
    pc.flags = flags;
    pc.key_words = id_bits(n);  // the exact keys' id bits
    const auto [keys, values] = compacted(s, n, exact);
    im.compact.dispatch(cmd, {nodes, params, slots, offsets, keys, values, s.ranks}, pc,
                        workgroups(n));
    compute_barrier(cmd);
    pc.flags = 0;
}

void record_visible_sort(const RadixSort& sort, VkCommandBuffer cmd, const CullScratch& s,
                         const BufferRange& offsets, std::uint32_t chunks, std::uint32_t n,
                         bool exact) {
    const VkBufferCopy total{offsets.offset + chunks * 4ull, s.visible.offset, 4};
    vkCmdCopyBuffer(cmd, offsets.buffer, s.visible.buffer, 1, &total);
    compute_barrier(cmd);
    sort.record_count_args(cmd, s.visible, n, s.args);
    // Exact keys hold the id (cull_order_id): the sort moves them alone.
    const BufferRange values = exact ? BufferRange{} : s.values;
    const BufferRange values_tmp = exact ? BufferRange{} : s.values_tmp;
    SortBuffers buffers = order_sort_odd(n, exact)
                              ? SortBuffers{s.keys_tmp, values_tmp, s.keys, values, s.work}
                              : SortBuffers{s.keys, values, s.keys_tmp, values_tmp, s.work};
    buffers.count = s.visible;
    buffers.args = s.args;
    buffers.copy_back = false;
    sort.record(cmd, buffers, n, exact ? 2 : 1, order_key_bits(n, exact));
    compute_barrier(cmd);
}

BufferRange emit_order(const CullScratch& s, std::uint32_t n, bool exact, PushConstants& pc) {
    pc.flags = exact ? kCullFlagSortedKeys : 0u;
    pc.key_words = id_bits(n);
    return exact ? s.keys : s.values;
}

}  // namespace culling

}  // namespace broadphase::gpu
