// Culler's implementation, shared by the files of gpu/cull/ (the core recorder culler.cpp, the
// features cull_order.cpp, cull_views.cpp, cull_lods.cpp and cull_occlusion.cpp, the host helper
// culler_helper.cpp) and by its instruments (gpu/instruments/cull_report.cpp): the layout of a
// cull's scratch, what the host helper's last cull was, and Culler::Impl. Private to the library.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/layout/cull.h"
#include "device/buffer_sizing.hpp"
#include "device/grow.hpp"
#include "device/impl_access.hpp"
#include "device/timestamps.hpp"
#include "lbvh/lbvh_build.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::gpu {

namespace culling {

using namespace gpu_layout;

inline std::uint32_t chunk_count(std::uint32_t n) {
    return static_cast<std::uint32_t>(div_up(n, kCullChunk));
}

// Words of a traversal's Counts array past its chunk counts: the exclusive scan's total, then
// the 64-bit count of internal nodes expanded (low word, carries; lbvh_cull.glsl).
constexpr std::uint32_t kCountsExtra = 3;
// Byte offset of the visit count in a Counts array of `chunks` chunks.
inline VkDeviceSize visits_offset(std::uint32_t chunks) {
    return (chunks + 1ull) * 4;
}

// Where each array of a cull lives inside the scratch buffer.
struct CullScratch {
    // offsets: the traversal's Counts array, chunks + kCountsExtra uints (the chunk counts,
    // scanned in place into offsets, the total, the visit count).
    BufferRange params, slots, ranks, offsets, keys, values, keys_tmp, values_tmp, work;
    BufferRange visible;    // the visible count, copied from offsets[chunks] (aligned for binding)
    BufferRange args;       // the sort's indirect dispatch arguments for that count
    BufferRange bounds;     // grouped LODs: (first, end) of each mesh key's run, 2 (M + 1) uints
    BufferRange occlusion;  // CullOcclusionParams of an occlusion cull
    VkDeviceSize size = 0;
};

// Strides of the per-view arrays of a several-view cull (record_views), in bytes: each view's
// params, slots and chunk counts start aligned for binding.
constexpr VkDeviceSize kViewParamsStride = 256;
inline VkDeviceSize view_slots_stride(std::uint32_t n) {
    return align_up(std::max<VkDeviceSize>(n * 4ull, 4), Arena::kAlignment);
}
inline VkDeviceSize view_counts_stride(std::uint32_t n) {
    return align_up((chunk_count(n) + kCountsExtra) * 4ull, Arena::kAlignment);
}

// `views` > 1 (record_views): params, slots and offsets hold one array per view at the strides
// above; view 0's are where the one-view cull's are.
CullScratch cull_scratch_layout(const BufferRange& scratch, std::uint32_t n,
                                std::uint32_t mesh_count = 0, std::uint32_t views = 1);

// The host helper's queries: the build's, the cull's, then one after the depth pyramid that
// cull_occluded's first submission builds after the tree (its span from the build's end).
constexpr std::uint32_t kPyramidQuery = kBuildQueries + kCullQueries;
constexpr std::uint32_t kHelperQueries = kPyramidQuery + 1;

// What the host helper's last cull was, for Culler::last_report's traffic model.
struct LastCull {
    enum class Kind { none, plain, lods, occluded, views } kind = Kind::none;
    std::uint32_t n = 0;
    std::uint32_t views = 1;  // Kind::views: the views culled together
    bool exact = false;
    std::vector<std::uint32_t> visible;  // per view, the exact visible total
    std::uint32_t capacity = 0;          // the output's capacity in the last submission
    // LODs: meshes, grouping, the commands stored (draw_count[0]) and, grouped, the mesh keys
    // present among the visible instances (the runs lbvh_cull_group_bounds writes).
    std::uint32_t mesh_count = 0, stored = 0, runs = 0;
    bool grouped = false;
    std::uint32_t pyramid_width = 0, pyramid_height = 0;  // Kind::occluded
};

// The order (cull_order.cpp).

// Bits of a box id among n (at least 1): the approximate order's rank bits, and the id bits
// under the distance key of the exact order's keys (cull_distance.glsl, cull_order_key).
std::uint32_t id_bits(std::uint32_t n);
// The order sort's key bits: exact, the distance key above the id's bits (32 + id_bits(n): 7
// passes of 8 bits up to 2^24 boxes, not 8); approximate, the ranks' bits.
std::uint32_t order_key_bits(std::uint32_t n, bool exact);
// Where the compaction writes the keys and values the order sort reads.
std::pair<BufferRange, BufferRange> compacted(const CullScratch& s, std::uint32_t n, bool exact);
// The compaction of a traversal's visible boxes (lbvh_cull_compact.comp), n > 0: the chunk
// counts in `offsets` scanned in place, then the compaction with push-constant `flags` into
// compacted(s, n, exact). Leaves pc.flags 0 and pc.key_words the exact keys' id bits. Ends with
// a compute barrier.
void record_compaction(CullerImpl& im, VkCommandBuffer cmd, const CullScratch& s,
                       const BufferRange& nodes, const BufferRange& params,
                       const BufferRange& slots, const BufferRange& offsets, std::uint32_t n,
                       bool exact, std::uint32_t flags, PushConstants& pc);
// The order sort of the visible keys only, compacted to the front of compacted(s, n, exact):
// their count (offsets[chunks], the compaction's total) is copied where the sort reads its
// dynamic count, and only the tiles it fills are launched; the result ends in s.keys (exact:
// the keys alone, each holding its id) or s.keys / s.values (approx: ranks and ids). Ends with
// a compute barrier.
void record_visible_sort(const RadixSort& sort, VkCommandBuffer cmd, const CullScratch& s,
                         const BufferRange& offsets, std::uint32_t chunks, std::uint32_t n,
                         bool exact);
// What the plain emit (lbvh_cull_emit.comp) reads the ordered ids from after
// record_visible_sort: exact, the sorted keys (kCullFlagSortedKeys, pc.key_words their id
// bits), else the sorted values. Sets pc's flags and key_words.
BufferRange emit_order(const CullScratch& s, std::uint32_t n, bool exact, PushConstants& pc);

// The core recorder (culler.cpp).

// A frustum's planes and eye and the options' draw fields as the cull shaders read them.
CullParams cull_params(const Frustum& frustum, const CullOptions& options);
// The bytes of an output's visible ids and draw commands at its capacity (at least 4 each).
std::pair<VkDeviceSize, VkDeviceSize> cull_output_bytes(const CullOutput& out);
// Culler::record, with LODs when `lods` is given, against a depth pyramid when `occlusion` is.
// The traversal's visit count starts from zero unless `add_visits` (record_views' later views
// of the approximate order add theirs to the first's).
Status record_cull(const Culler& self, CullerImpl& im, VkCommandBuffer cmd, const LbvhTree& tree,
                   const Frustum& frustum, CullOrder order, const BufferRange& scratch,
                   const CullOutput& out, const CullLods* lods, const CullOcclusion* occlusion,
                   VkQueryPool pool, std::uint32_t first_query, bool add_visits = false);

// LODs (cull_lods.cpp).

// The LOD emit of record_cull (after the order sort): grouping per mesh when asked, then
// lbvh_cull_emit_lods.comp.
void record_lods(CullerImpl& im, VkCommandBuffer cmd, const LbvhTree& tree, const CullScratch& s,
                 const CullOutput& out, const CullLods& lods, bool exact, PushConstants pc);

// Occlusion (cull_occlusion.cpp).

// Bytes of a pyramid (depth_pyramid_levels of a size within 1..kMaxDepthImageSize).
VkDeviceSize pyramid_bytes(std::span<const DepthLevel> levels);
// The occlusion arguments of record() other than its ranges (record_cull checks those with
// the others): phase, pyramid size and frame.
Status check_occlusion(const CullOcclusion& o);

}  // namespace culling

// The helpers above, for the struct below and the files that include this header.
using namespace culling;

struct Culler::Impl {
    Context* context = nullptr;
    CullOptions options;
    RadixSort sort;
    Kernel traverse, traverse_views, traverse_occlusion, compact, emit, emit_lods, group,
        group_bounds, build_pyramid;
    std::unique_ptr<Lbvh> lbvh;
    // Working buffers of the host helper, grown on demand.
    Buffer boxes, nodes, build_scratch, scratch, ids, commands, count;
    Buffer mesh_table, mesh_ids, group_counts, draw_lods;  // cull_lods
    Buffer view_out;  // cull_views of several views: each view's ids, commands and count
    Buffer pyramid;   // cull_occluded: the depth pyramid
    std::uint32_t capacity = 0;
    Timestamps stamps;  // kHelperQueries: the build's stage boundaries, the cull's, the pyramid's
    CullTimes times;
    // Instruments of the host helper's last cull (Culler::last_report): while `marking` (the
    // helper's own recordings), record_cull and record_views keep Context::Impl::
    // dispatches_recorded at each of their timestamps; the first submission's build and
    // pyramid dispatches; what the traffic model needs of the last cull.
    bool marking = false;
    std::array<std::uint64_t, kCullQueries> marks{};
    std::uint64_t build_dispatches = 0, pyramid_dispatches = 0;
    LastCull last;

    std::uint64_t dispatches() const { return impl_of(*context).dispatches_recorded; }

    // A cull stage boundary k (record_cull, record_views): its timestamp and, for the host
    // helper's report, the dispatches recorded so far.
    void mark(VkCommandBuffer cmd, VkQueryPool pool, std::uint32_t first_query, std::uint32_t k) {
        write_timestamp(cmd, pool, first_query + k);
        if (marking) marks[k] = dispatches();
    }

    Status ensure(Buffer& buffer, VkDeviceSize size) { return grow_buffer(*context, buffer, size); }

    // The host helper (culler_helper.cpp): reading the timestamps, sizing and uploading,
    // one submission, the grow-and-retry loops of one view and of several.
    void read_times(bool build, bool with_pyramid);
    Result<std::uint32_t> prepare(std::span<const Box> input, std::uint32_t mesh_count);
    Status submit_cull(std::uint32_t n, bool& first,
                       const std::function<Status(VkCommandBuffer)>& first_extra,
                       const std::function<Status(VkCommandBuffer)>& cull);
    Result<std::vector<std::vector<std::uint32_t>>> cull_views_together(
        Culler& culler, std::uint32_t n, std::span<const Frustum> frusta, CullOrder order);
    Result<std::vector<std::uint32_t>> cull_until_fits(
        std::uint32_t n, const std::function<Status(VkCommandBuffer)>& first_extra,
        const std::function<Status(VkCommandBuffer, const CullOutput&)>& cull);
    Status ensure_output(std::uint32_t wanted);
};

}  // namespace broadphase::gpu
