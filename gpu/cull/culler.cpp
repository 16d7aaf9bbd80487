// GPU frustum cull of an LBVH (shaders/cull/lbvh_cull.comp -> scan -> lbvh_cull_compact.comp ->
// [radix sort of near-child-first ranks (approx) or of (distance key, id) packed in 32 +
// bit_width(n - 1) bits (exact)] -> lbvh_cull_emit.comp) and its host helper, which builds the
// tree, grows the output until every visible id fits and reads per-stage GPU timestamps. With
// per-instance meshes and levels of detail (CullLods), the compaction keeps sorted positions, an
// optional grouping per mesh (lbvh_cull_group.comp -> stable radix sort by mesh ->
// lbvh_cull_group_bounds.comp) follows the order sort, and lbvh_cull_emit_lods.comp writes each
// draw with its LOD.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <span>
#include <utility>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/layout/cull.h"
#include "broadphase/scene.hpp"
// The switch keys of the mesh table are the CPU twin's distance keys of the switch distances.
#include "../cpu_reference/lbvh_cull.hpp"
#include "device/buffer_sizing.hpp"
#include "device/grow.hpp"
#include "device/impl_access.hpp"
#include "device/range_check.hpp"
#include "device/timestamps.hpp"
#include "lbvh/lbvh_build.hpp"
#include "lbvh/lbvh_pairs.hpp"
#include "shaders.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::gpu {

using namespace gpu_layout;

namespace {

std::uint32_t chunk_count(std::uint32_t n) {
    return static_cast<std::uint32_t>(div_up(n, kCullChunk));
}

// Words of a traversal's Counts array past its chunk counts: the exclusive scan's total, then
// the 64-bit count of internal nodes expanded (low word, carries; lbvh_cull.glsl).
constexpr std::uint32_t kCountsExtra = 3;
// Byte offset of the visit count in a Counts array of `chunks` chunks.
VkDeviceSize visits_offset(std::uint32_t chunks) {
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
VkDeviceSize view_slots_stride(std::uint32_t n) {
    return align_up(std::max<VkDeviceSize>(n * 4ull, 4), Arena::kAlignment);
}
VkDeviceSize view_counts_stride(std::uint32_t n) {
    return align_up((chunk_count(n) + kCountsExtra) * 4ull, Arena::kAlignment);
}

// `views` > 1 (record_views): params, slots and offsets hold one array per view at the strides
// above; view 0's are where the one-view cull's are.
CullScratch cull_scratch_layout(const BufferRange& scratch, std::uint32_t n,
                                std::uint32_t mesh_count = 0, std::uint32_t views = 1) {
    Arena arena(scratch);
    CullScratch s;
    const VkDeviceSize more = views - 1;
    s.params = arena.take(more * kViewParamsStride + sizeof(CullParams));
    s.slots = arena.take(more * view_slots_stride(n) + n * 4ull);
    s.ranks = arena.take(n * 4ull);
    s.offsets = arena.take(more * view_counts_stride(n) + (chunk_count(n) + kCountsExtra) * 4ull);
    s.keys = arena.take(n * 8ull);
    s.values = arena.take(n * 4ull);
    s.keys_tmp = arena.take(n * 8ull);
    s.values_tmp = arena.take(n * 4ull);
    s.work = arena.take(
        std::max(RadixSort::scratch_size(n), RadixSort::scan_scratch_size(chunk_count(n) + 1)));
    s.visible = arena.take(4);
    s.args = arena.take(kArgsSlots * sizeof(VkDispatchIndirectCommand));
    s.occlusion = arena.take(sizeof(CullOcclusionParams));
    if (mesh_count > 0) s.bounds = arena.take(8ull * (mesh_count + 1ull));
    s.size = arena.used();
    return s;
}

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

// Bits of a box id among n (at least 1): the approximate order's rank bits, and the id bits
// under the distance key of the exact order's keys (cull_distance.glsl, cull_order_key).
std::uint32_t id_bits(std::uint32_t n) {
    return std::max<std::uint32_t>(1, std::bit_width(n - 1));
}

// The order sort's key bits: exact, the distance key above the id's bits (32 + id_bits(n): 7
// passes of 8 bits up to 2^24 boxes, not 8); approximate, the ranks' bits.
std::uint32_t order_key_bits(std::uint32_t n, bool exact) {
    return exact ? 32 + id_bits(n) : id_bits(n);
}

// Whether the order sort takes an odd number of passes: then the compaction writes its keys
// and values into keys_tmp / values_tmp, and the sort, its ping-pong buffers swapped, ends in
// keys / values with no copy back of all n elements (SortBuffers::copy_back).
bool order_sort_odd(std::uint32_t n, bool exact) {
    return n > 1 && (RadixSort::passes(order_key_bits(n, exact)) & 1) != 0;
}

// Where the compaction writes the keys and values the order sort reads.
std::pair<BufferRange, BufferRange> compacted(const CullScratch& s, std::uint32_t n, bool exact) {
    if (order_sort_odd(n, exact)) return {s.keys_tmp, s.values_tmp};
    return {s.keys, s.values};
}

// The order sort of the visible keys only, compacted to the front of compacted(s, n, exact):
// their count (offsets[chunks], the compaction's total) is copied where the sort reads its
// dynamic count, and only the tiles it fills are launched; the result ends in s.keys (exact:
// the keys alone, each holding its id) or s.keys / s.values (approx: ranks and ids). Ends with
// a compute barrier.
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

// What the plain emit (lbvh_cull_emit.comp) reads the ordered ids from after
// record_visible_sort: exact, the sorted keys (kCullFlagSortedKeys, pc.key_words their id
// bits), else the sorted values. Sets pc's flags and key_words.
BufferRange emit_order(const CullScratch& s, std::uint32_t n, bool exact, PushConstants& pc) {
    pc.flags = exact ? kCullFlagSortedKeys : 0u;
    pc.key_words = id_bits(n);
    return exact ? s.keys : s.values;
}

}  // namespace

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

    // Reads the timestamps of one submission: the build's (when `build`), the pyramid's (when
    // `with_pyramid`) and the cull's.
    void read_times(bool build, bool with_pyramid) {
        double b[kBuildQueries - 1] = {}, c[kCullQueries - 1] = {};
        if (build && stamps.spans(0, kBuildQueries - 1, b))
            times.build = {b[0], b[1], b[2], b[3], 0};
        if (build) times.pyramid = with_pyramid ? stamps.ms(kBuildQueries - 1, kPyramidQuery) : 0;
        if (!stamps.spans(kBuildQueries, kCullQueries - 1, c)) return;
        times.cull = c[0];
        times.compact = c[1];
        times.sort = c[2];
        times.emit = c[3];
    }

    Status ensure(Buffer& buffer, VkDeviceSize size) { return grow_buffer(*context, buffer, size); }

    // The host helpers' common start: validates the boxes, sizes the working buffers (the
    // scratch for mesh_count grouped meshes) and uploads the boxes. Returns n.
    Result<std::uint32_t> prepare(std::span<const Box> input, std::uint32_t mesh_count) {
        if (Status s = validate_boxes(input); !s) return s.error();
        if (input.size() >= (1ull << 31))
            return Error{ErrorCode::limit_exceeded, "at most 2^31 - 1 boxes per cull"};
        const auto n = static_cast<std::uint32_t>(input.size());
        const VkDeviceSize scratch_bytes = cull_scratch_layout({}, n, mesh_count).size;
        // The build's bindings, then the cull's own (its 64-bit order keys the largest).
        std::vector<BindingSize> bindings = build_bindings(*lbvh, n);
        bindings.push_back({"the order-key buffer", n * 8ull});
        if (Status s = check_bindings(device_limits(context->info()),
                                      "a cull of " + std::to_string(n) + " boxes", bindings);
            !s)
            return s.error();
        const LbvhRequirements req = lbvh->requirements(n);
        if (Status s = ensure(boxes, std::max<VkDeviceSize>(req.boxes, 4)); !s) return s.error();
        if (Status s = ensure(nodes, req.nodes); !s) return s.error();
        if (Status s = ensure(build_scratch, req.scratch); !s) return s.error();
        if (Status s = ensure(scratch, scratch_bytes); !s) return s.error();
        if (Status s = ensure_output(std::max(capacity, std::min<std::uint32_t>(n, 1024))); !s)
            return s.error();
        if (Status s = upload_boxes(*context, boxes, input); !s) return s.error();
        return n;
    }

    // One submission of a host helper: the first (`first` true, then cleared) also builds the
    // tree over the uploaded boxes and records `first_extra` (when given) after the build;
    // every one records `cull` between barriers and reads the stage timestamps.
    Status submit_cull(std::uint32_t n, bool& first,
                       const std::function<Status(VkCommandBuffer)>& first_extra,
                       const std::function<Status(VkCommandBuffer)>& cull) {
        const LbvhBuildBuffers build{whole(boxes), whole(nodes), whole(build_scratch)};
        Status recorded;
        Status s = context->submit_and_wait([&](VkCommandBuffer cmd) {
            compute_barrier(cmd);  // make the staged uploads visible to the shaders
            stamps.reset(cmd, 0, kHelperQueries);
            if (first) {
                const std::uint64_t before = dispatches();
                if (!(recorded = lbvh->record_build(cmd, build, n, stamps.handle(), 0))) return;
                build_dispatches = dispatches() - before;
                pyramid_dispatches = 0;
                if (first_extra) {
                    const std::uint64_t built = dispatches();
                    if (!(recorded = first_extra(cmd))) return;
                    pyramid_dispatches = dispatches() - built;
                    stamps.write(cmd, kPyramidQuery);
                }
                compute_barrier(cmd);
            }
            marking = true;
            recorded = cull(cmd);
            marking = false;
            compute_barrier(cmd);
        });
        marking = false;
        if (!s) return s;
        if (!recorded) return recorded;
        read_times(first, first && first_extra);
        first = false;
        return {};
    }

    // cull_views of several views: one submission builds the tree and records every view
    // (Culler::record_views) into per-view ranges of `view_out`, each with room for
    // `capacity` ids; grown to the largest view's count, and all views culled again, when
    // a view overflows.
    Result<std::vector<std::vector<std::uint32_t>>> cull_views_together(
        Culler& culler, std::uint32_t n, std::span<const Frustum> frusta, CullOrder order) {
        const auto views = static_cast<std::uint32_t>(frusta.size());
        if (Status s = ensure(scratch, culler.views_scratch_size(n, views)); !s) return s.error();
        bool first = true;
        std::vector<std::array<std::uint32_t, 2>> counts(views);
        while (true) {
            const VkDeviceSize ids_bytes = align_up(capacity * 4ull + 4, Arena::kAlignment);
            const VkDeviceSize commands_bytes =
                align_up(capacity * 4ull * kDrawCommandWords + 4, Arena::kAlignment);
            const VkDeviceSize view_bytes = ids_bytes + commands_bytes + Arena::kAlignment;
            if (Status s = ensure(view_out, view_bytes * views); !s) return s.error();
            std::vector<CullOutput> outs;
            for (std::uint32_t v = 0; v < views; ++v) {
                const VkDeviceSize base = v * view_bytes;
                const VkBuffer b = view_out.handle();
                outs.push_back({{b, base, ids_bytes},
                                {b, base + ids_bytes, commands_bytes},
                                {b, base + ids_bytes + commands_bytes, 8},
                                capacity});
            }
            if (Status s = submit_cull(n, first, nullptr,
                                       [&](VkCommandBuffer cmd) {
                                           return culler.record_views(cmd, {whole(nodes), n},
                                                                      frusta, order, whole(scratch),
                                                                      outs, stamps.handle(),
                                                                      kBuildQueries);
                                       });
                !s)
                return s.error();
            std::uint32_t most = 0;
            for (std::uint32_t v = 0; v < views; ++v) {
                if (Status d =
                        context->download(view_out, counts[v].data(), 8, outs[v].draw_count.offset);
                    !d)
                    return d.error();
                most = std::max(most, counts[v][1]);
            }
            if (most <= capacity) {
                last = {};
                last.kind = LastCull::Kind::views;
                last.n = n;
                last.views = views;
                last.exact = order == CullOrder::exact;
                last.capacity = capacity;
                for (std::uint32_t v = 0; v < views; ++v) last.visible.push_back(counts[v][1]);
                std::vector<std::vector<std::uint32_t>> result(views);
                for (std::uint32_t v = 0; v < views; ++v) {
                    result[v].resize(counts[v][1]);
                    if (counts[v][1] == 0) continue;
                    if (Status d =
                            context->download(view_out, result[v].data(), counts[v][1] * 4ull,
                                              outs[v].visible_ids.offset);
                        !d)
                        return d.error();
                }
                return result;
            }
            if (Status e = ensure_output(most + most / 4 > n ? n : most + most / 4); !e)
                return e.error();
        }
    }

    // The one-view host helpers' submissions: the first also builds the tree (and records
    // `first_extra`, when given, after the build); each records `cull` into the output, reads
    // the counts and, when the visible total overflowed the output, grows it (with headroom
    // for the next call, never past n or the device limit) and culls again. Returns the
    // visible ids in order.
    Result<std::vector<std::uint32_t>> cull_until_fits(
        std::uint32_t n, const std::function<Status(VkCommandBuffer)>& first_extra,
        const std::function<Status(VkCommandBuffer, const CullOutput&)>& cull) {
        bool first = true;
        std::uint32_t counts[2] = {0, 0};
        while (true) {
            const CullOutput out{whole(ids), whole(commands), whole(count), capacity};
            last.capacity = capacity;
            if (Status s = submit_cull(n, first, first_extra,
                                       [&](VkCommandBuffer cmd) { return cull(cmd, out); });
                !s)
                return s.error();
            if (Status d = context->download(count, counts, 8); !d) return d.error();
            if (counts[1] <= capacity) break;
            const VkDeviceSize max_ids =
                context->info().max_storage_buffer_range / (kDrawCommandWords * 4);
            const auto grown = static_cast<std::uint32_t>(
                std::min<VkDeviceSize>(std::min<VkDeviceSize>(counts[1] + counts[1] / 4ull, n),
                                       std::max<VkDeviceSize>(max_ids, counts[1])));
            if (Status e = ensure_output(grown); !e) return e.error();
        }
        last.visible = {counts[1]};
        std::vector<std::uint32_t> visible(counts[1]);
        if (counts[1] > 0) {
            if (Status d = context->download(ids, visible.data(), counts[1] * 4ull); !d)
                return d.error();
        }
        return visible;
    }

    Status ensure_output(std::uint32_t wanted) {
        const VkDeviceSize max_range = context->info().max_storage_buffer_range;
        const VkDeviceSize max_ids = max_range / (kDrawCommandWords * 4);
        if (wanted > max_ids)
            return Error{ErrorCode::limit_exceeded,
                         std::to_string(wanted) +
                             " visible boxes do not fit one storage buffer of draw commands "
                             "(device limit " +
                             std::to_string(max_ids) + ")"};
        if (wanted <= capacity && ids.handle()) return {};
        capacity = std::max<std::uint32_t>(wanted, 1);
        ids = Buffer();
        commands = Buffer();
        if (Status s = ensure(ids, capacity * 4ull); !s) return s;
        if (Status s = ensure(commands, capacity * 4ull * kDrawCommandWords); !s) return s;
        return ensure(count, 8);
    }
};

namespace {

// A frustum's planes and eye and the options' draw fields as the cull shaders read them.
CullParams cull_params(const Frustum& frustum, const CullOptions& options) {
    CullParams params{};
    for (int i = 0; i < 6; ++i) {
        const Plane& p = frustum.planes[i];
        params.planes[i] = {p.normal.x, p.normal.y, p.normal.z, p.d};
    }
    params.eye = {frustum.eye.x, frustum.eye.y, frustum.eye.z, 0};
    std::uint32_t vertex_offset = 0;
    std::memcpy(&vertex_offset, &options.vertex_offset, 4);
    params.draw = {options.index_count, options.first_index, vertex_offset, 0};
    return params;
}

// The LOD emit of record_cull (after the order sort): grouping per mesh when asked, then
// lbvh_cull_emit_lods.comp.
void record_lods(CullerImpl& im, VkCommandBuffer cmd, const LbvhTree& tree, const CullScratch& s,
                 const CullOutput& out, const CullLods& lods, bool exact, PushConstants pc) {
    const std::uint32_t n = tree.n;
    const std::uint32_t mesh_count = lods.mesh_count;
    const BufferRange nodes = first_bytes(tree.nodes, lbvh_nodes_bytes(n));
    const VkDeviceSize id_bytes = std::max<VkDeviceSize>(out.capacity * 4ull, 4);
    const BufferRange mesh_ids = first_bytes(lods.mesh_ids, n * 4ull);
    const BufferRange table = first_bytes(lods.mesh_table, mesh_count * sizeof(CullMesh));
    pc.offset = mesh_count;
    pc.key_words = id_bits(n);  // the exact keys' id bits
    // Exact: the sorted keys (distance key, id) give both, no leaf node is read; approx: the
    // compaction left sorted positions in values.
    pc.flags = (lods.draw_lods.buffer != VK_NULL_HANDLE ? kCullFlagDrawLods : 0u) |
               (exact ? kCullFlagSortedKeys : 0u);
    BufferRange ordered = s.values, bounds = s.args, group_counts = out.draw_count;
    std::uint32_t threads = std::max<std::uint32_t>(1, std::min(n, out.capacity));
    if (lods.grouped && n > 0) {
        // Mesh keys of the ordered list (into ranks) with the elements as values (into slots;
        // both free since the compaction), stably sorted by mesh, then the runs.
        im.group.dispatch(cmd, {nodes, s.offsets, s.values, mesh_ids, s.ranks, s.slots, s.keys}, pc,
                          workgroups(n));
        compute_barrier(cmd);
        SortBuffers sort{s.ranks, s.slots, s.keys_tmp, s.values_tmp, s.work};
        sort.count = s.visible;
        sort.args = s.args;
        im.sort.record(cmd, sort, n, 1, std::max<std::uint32_t>(1, std::bit_width(mesh_count)));
        compute_barrier(cmd);
        im.group_bounds.dispatch(cmd, {s.offsets, s.ranks, s.bounds}, pc, workgroups(n));
        compute_barrier(cmd);
        ordered = s.slots;
    }
    if (lods.grouped) {
        bounds = s.bounds;
        group_counts = first_bytes(lods.group_counts, (2ull * mesh_count + 1) * 4);
        pc.flags |= kCullFlagGrouped;
        threads = std::max(n, mesh_count + 1);
    }
    const BufferRange visible = first_bytes(out.visible_ids, id_bytes);
    im.emit_lods.dispatch(
        cmd,
        {s.params, s.offsets, nodes, ordered, s.ranks, mesh_ids, table, bounds, visible,
         first_bytes(out.draw_commands, out.capacity * 4ull * kDrawCommandWords),
         first_bytes(out.draw_count, 8), group_counts,
         lods.draw_lods.buffer != VK_NULL_HANDLE ? first_bytes(lods.draw_lods, id_bytes) : visible,
         s.keys},
        pc, workgroups(threads));
}

// Bytes of a pyramid (depth_pyramid_levels of a size within 1..kMaxDepthImageSize).
VkDeviceSize pyramid_bytes(std::span<const DepthLevel> levels) {
    return (levels.back().offset + 1ull) * 4;
}

// The occlusion arguments of record() other than its ranges (record_cull checks those with
// the others): phase, pyramid size and frame.
Status check_occlusion(const CullOcclusion& o) {
    const auto fail = [](const std::string& message) {
        return Error{ErrorCode::invalid_argument, "Culler::record: CullOcclusion " + message};
    };
    const auto phase = static_cast<std::uint32_t>(o.phase);
    if (phase > kOcclusionLate) return fail("phase " + std::to_string(phase) + " is not a phase");
    const bool pyramid = o.phase != OcclusionPhase::early;
    const bool stamps = o.phase != OcclusionPhase::single;
    if (pyramid && depth_pyramid_levels(o.width, o.height).empty())
        return fail("size " + std::to_string(o.width) + " x " + std::to_string(o.height) +
                    " is outside 1.." + std::to_string(kMaxDepthImageSize));
    if (stamps && o.frame == 0) return fail("frame must be at least 1 (0 means never seen)");
    return {};
}

// Culler::record, with LODs when `lods` is given, against a depth pyramid when `occlusion` is.
// The traversal's visit count starts from zero unless `add_visits` (record_views' later views
// of the approximate order add theirs to the first's).
// What one cull request needs besides the tree: the output sizes its capacity sets, and what
// its LODs and occlusion (when given) read.
struct CullShape {
    VkDeviceSize id_bytes = 0, command_bytes = 0;
    std::uint32_t mesh_count = 0;
    bool grouped = false;
    bool pyramid = false, stamps = false;  // the occlusion phase reads the pyramid / the stamps
    VkDeviceSize pyramid_size = 0;
};

// The bytes of an output's visible ids and draw commands at its capacity (at least 4 each).
std::pair<VkDeviceSize, VkDeviceSize> cull_output_bytes(const CullOutput& out) {
    return {std::max<VkDeviceSize>(out.capacity * 4ull, 4),
            std::max<VkDeviceSize>(out.capacity * 4ull * kDrawCommandWords, 4)};
}

CullShape cull_shape(const CullOutput& out, const CullLods* lods, const CullOcclusion* occlusion) {
    CullShape c;
    std::tie(c.id_bytes, c.command_bytes) = cull_output_bytes(out);
    c.mesh_count = lods ? lods->mesh_count : 0;
    c.grouped = lods && lods->grouped;
    // Without occlusion, or in a phase that does not read them, the pyramid and the
    // visibility stamps need 0 bytes.
    c.pyramid = occlusion && occlusion->phase != OcclusionPhase::early;
    c.stamps = occlusion && occlusion->phase != OcclusionPhase::single;
    c.pyramid_size =
        c.pyramid ? pyramid_bytes(depth_pyramid_levels(occlusion->width, occlusion->height)) : 0;
    return c;
}

// Culler::record's checks of a request, in this order: the LODs' mesh count, the occlusion
// inputs, then every range against what the cull reads and writes. Its shape when they pass.
Result<CullShape> check_cull_request(const Culler& self, CullerImpl& im, const LbvhTree& tree,
                                     const BufferRange& scratch, const CullOutput& out,
                                     const CullLods* lods, const CullOcclusion* occlusion) {
    const std::uint32_t n = tree.n;
    if (lods && (lods->mesh_count == 0 || lods->mesh_count > (1u << 24)))
        return Error{ErrorCode::invalid_argument,
                     "Culler::record: CullLods::mesh_count must be 1 to 2^24, got " +
                         std::to_string(lods->mesh_count)};
    // Without LODs their ranges need 0 bytes: not used, not checked.
    const CullLods none{};
    const CullLods& l = lods ? *lods : none;
    const bool want_lods = l.draw_lods.buffer != VK_NULL_HANDLE;
    if (occlusion) {
        if (Status st = check_occlusion(*occlusion); !st) return st.error();
    }
    const CullOcclusion no_occlusion{};
    const CullOcclusion& o = occlusion ? *occlusion : no_occlusion;
    const CullShape c = cull_shape(out, lods, occlusion);
    Status ranges = check_ranges(
        impl_of(*im.context), "Culler::record",
        {{"nodes", tree.nodes, lbvh_tree_bytes(n), false, tree_binding_sizes(n)},
         {"scratch", scratch, self.scratch_size(n, c.grouped ? c.mesh_count : 0), false},
         {"visible_ids", out.visible_ids, c.id_bytes},
         {"draw_commands", out.draw_commands, c.command_bytes},
         {"draw_count", out.draw_count, 8},
         {"mesh_table", l.mesh_table, c.mesh_count * VkDeviceSize(sizeof(CullMesh))},
         {"mesh_ids", l.mesh_ids, lods ? std::max<VkDeviceSize>(n * 4ull, 4) : 0},
         {"group_counts", l.group_counts, c.grouped ? (2ull * c.mesh_count + 1) * 4 : 0},
         {"draw_lods", l.draw_lods, want_lods ? c.id_bytes : 0},
         {"pyramid", o.pyramid, c.pyramid_size},
         {"visibility", o.visibility, c.stamps ? std::max<VkDeviceSize>(n * 4ull, 4) : 0}});
    if (!ranges) return ranges.error();
    return c;
}

// The kernels one cull records, compiled (their split variants too for a tree of n boxes over
// one descriptor).
Status ready_cull_kernels(CullerImpl& im, std::uint32_t n, bool lods, bool occlusion) {
    Kernel& traverse = occlusion ? im.traverse_occlusion : im.traverse;
    if (lods) {
        if (Status st = ready_for_tree(
                n, {&traverse, &im.compact, &im.emit_lods, &im.group, &im.group_bounds});
            !st)
            return st;
    } else if (Status st = ready_for_tree(n, {&traverse, &im.compact, &im.emit}); !st) {
        return st;
    }
    if (Status st = im.sort.ready_sort(); !st) return st;
    if (Status st = im.sort.ready_scan(); !st) return st;
    return im.sort.ready_count_args();
}

// The cull's inputs written into its scratch (the view's CullParams, the occlusion's
// parameters) and the words it accumulates into zeroed: the grouped emit's run bounds and
// count, and the visit count unless this cull adds to the last one's.
void write_cull_inputs(VkCommandBuffer cmd, const CullerImpl& im, const BufferRange& scratch,
                       const CullScratch& s, const Frustum& frustum, const CullOcclusion* occlusion,
                       const CullOutput& out, const CullShape& c, std::uint32_t n,
                       bool add_visits) {
    const CullParams params = cull_params(frustum, im.options);
    vkCmdUpdateBuffer(cmd, scratch.buffer, s.params.offset, sizeof(params), &params);
    if (occlusion) {
        CullOcclusionParams op{};
        for (int k = 0; k < 4; ++k) {
            const float* column = occlusion->view_projection.data() + 4 * k;
            op.view_projection[k] = {column[0], column[1], column[2], column[3]};
        }
        op.info = {occlusion->width, occlusion->height,
                   static_cast<std::uint32_t>(occlusion->phase), occlusion->frame};
        vkCmdUpdateBuffer(cmd, scratch.buffer, s.occlusion.offset, sizeof(op), &op);
    }
    if (c.grouped) {
        // Runs of absent meshes stay (0, 0); the grouped emit adds each group's stored count
        // onto draw_count[0].
        fill(cmd, s.bounds, 0);
        fill(cmd, first_bytes(out.draw_count, 4), 0);
    }
    if (n > 0 && !add_visits)
        fill(cmd, {scratch.buffer, s.offsets.offset + visits_offset(chunk_count(n)), 8}, 0);
}

Status record_cull(const Culler& self, CullerImpl& im, VkCommandBuffer cmd, const LbvhTree& tree,
                   const Frustum& frustum, CullOrder order, const BufferRange& scratch,
                   const CullOutput& out, const CullLods* lods, const CullOcclusion* occlusion,
                   VkQueryPool pool, std::uint32_t first_query, bool add_visits = false) {
    const std::uint32_t n = tree.n;
    const Result<CullShape> shape =
        check_cull_request(self, im, tree, scratch, out, lods, occlusion);
    if (!shape) return shape.error();
    const CullShape& c = shape.value();
    if (Status st = ready_cull_kernels(im, n, lods != nullptr, occlusion != nullptr); !st)
        return st;
    const CullScratch s = cull_scratch_layout(scratch, n, c.grouped ? c.mesh_count : 0);
    write_cull_inputs(cmd, im, scratch, s, frustum, occlusion, out, c, n, add_visits);
    const std::uint32_t chunks = chunk_count(n);
    const bool exact = order == CullOrder::exact;
    compute_barrier(cmd);
    auto mark = [&](std::uint32_t k) { im.mark(cmd, pool, first_query, k); };
    mark(0);

    const TreeBindings bound = tree_bindings(tree.nodes, n);
    const BufferRange nodes = bound.nodes;
    PushConstants pc{};
    pc.count = n;
    pc.tiles = chunks;
    if (n > 0) {
        pc.flags = exact ? 0u : kCullFlagRank;
        if (occlusion) {
            // A phase that reads no pyramid (early) or no stamps (single) binds the occlusion
            // parameters in their place.
            im.traverse_occlusion.dispatch(
                cmd,
                {nodes, s.params, s.slots, s.offsets, s.ranks, bound.wide, s.occlusion,
                 c.pyramid ? first_bytes(occlusion->pyramid, c.pyramid_size) : s.occlusion,
                 c.stamps ? first_bytes(occlusion->visibility, n * 4ull) : s.occlusion},
                pc, workgroups(chunks));
        } else {
            im.traverse.dispatch(cmd, {nodes, s.params, s.slots, s.offsets, s.ranks, bound.wide},
                                 pc, workgroups(chunks));
        }
        compute_barrier(cmd);
    }
    mark(1);
    if (n > 0) {
        im.sort.record_scan(cmd, s.offsets, chunks + 1, s.work);
        compute_barrier(cmd);
        pc.flags =
            (exact ? kCullFlagKeys : kCullFlagRank) | (lods && !exact ? kCullFlagPositions : 0u);
        pc.key_words = id_bits(n);  // the exact keys' id bits
        const auto [keys, values] = compacted(s, n, exact);
        im.compact.dispatch(cmd, {nodes, s.params, s.slots, s.offsets, keys, values, s.ranks}, pc,
                            workgroups(n));
        compute_barrier(cmd);
        pc.flags = 0;
    }
    mark(2);
    if (n > 0) {
        record_visible_sort(im.sort, cmd, s, s.offsets, chunks, n, exact);
    }
    mark(3);
    pc.capacity = out.capacity;
    if (lods) {
        record_lods(im, cmd, tree, s, out, *lods, exact, pc);
        mark(4);
        return {};
    }
    const BufferRange ordered = emit_order(s, n, exact, pc);
    im.emit.dispatch(
        cmd,
        {s.params, s.offsets, ordered, first_bytes(out.visible_ids, c.id_bytes),
         first_bytes(out.draw_commands, c.command_bytes), first_bytes(out.draw_count, 8)},
        pc, workgroups(std::max<std::uint32_t>(1, std::min(n, out.capacity))));
    mark(4);
    return {};
}

// The memory traffic of each stage of one view's cull over n boxes (gpu/instruments/traffic.hpp),
// from the kernels' access patterns; `visible` boxes seen, `stored` of them written out, `visits`
// the internal nodes the traversal expanded (its GPU count, lbvh_cull.glsl), chunks = n / 32
// rounded up, CullParams (128 B) counted once per kernel that reads it:
//   cull      lbvh_cull reads the params, per invocation the root's bounds (32 B) and per
//             expanded node its LbvhWideNode (64 B); writes each seen position's slot (4 B)
//             and, approx, its rank (4 B), each chunk's count and the scan's total slot (4 B
//             each), and adds its expanded nodes to the visit count (one atomic per
//             invocation: 4 B read and written; the rare carry not counted). Occlusion adds
//             its CullOcclusionParams (80 B); the pyramid texels and visibility stamps each
//             occlusion test reads are not counted (the tests are not).
//   compact   the exclusive scan of the chunk + 1 counts (RadixSort::scan_traffic);
//             lbvh_cull_compact reads the scanned counts (4 B per chunk + 1) and per visible
//             position its slot and leaf's id (4 + 4 B), exact: the leaf's bounds (32 B) and
//             the params, approx: its rank (4 B); writes per visible box, exact, its key alone
//             (8 B, the id in its low bits), approx, its value and key (4 + 4 B).
//   order sort  the copy of the visible total (4, 4 B), count_args (4, 24 B: two dispatch
//             slots) and RadixSort::count_traffic of the visible keys in a sort of capacity n
//             (exact: 2-word keys of 32 + id_bits(n) bits, the distance key above the id;
//             keys only; approx: id_bits(n)-bit ranks with the ids as values; an odd number of
//             passes ends in the compaction's arrays, swapped, with no copy back).
//   emit      lbvh_cull_emit reads the params, the total (4 B) and each stored value (approx,
//             4 B) or key (exact: only its low word, the id, is read, but the 8 B lie in the
//             same sectors, so 8 B are counted); writes each stored id (4 B) and draw command
//             (20 B) and the draw count (8 B).
//   emit (LODs), flat: lbvh_cull_emit_lods reads the params, the total, per stored draw its
//             element (exact: the sorted 64-bit key, 8 B; approx: its sorted position and
//             leaf's id and bounds, 4 + 4 + 32 B), its mesh id (4 B) and its mesh's CullMesh
//             (144 B, counted whole); writes the id, command and LOD (4 + 20 + 4 B per stored
//             draw) and the draw count (8 B). Grouped, before the emit: lbvh_cull_group reads
//             the total and per visible box its element (exact: its sorted key, whose low
//             bits are the id, 8 B; approx: position and leaf id, 4 + 4 B) and mesh id (4 B),
//             writes its mesh key and value (4 + 4 B); RadixSort::count_traffic of the keys on
//             bit_width(M) bits; lbvh_cull_group_bounds reads the total and each key (4 B; its
//             neighbours cached), writes (first, end) of each run present (8 B); then the emit
//             reads per visible box its key and run start (4 + 4 B) and per stored draw what the
//             flat emit reads except the mesh id, and per mesh its run bounds and record (8 + 16
//             B); writes per stored draw as the flat emit, 2M + 1 group counts (4 B each), the
//             visible total (4 B) and the stored count by one atomic per mesh (4, 4 B).
std::array<Traffic, 4> view_traffic(const LastCull& c, std::uint32_t visible, std::uint64_t visits,
                                    SortPath path, std::uint32_t* sort_passes) {
    std::array<Traffic, 4> t{};
    *sort_passes = 0;
    const std::uint64_t n = c.n;
    if (n == 0) {
        t[3] = {0, 8};  // the emit's one workgroup writes the draw count of no boxes
        return t;
    }
    const std::uint64_t chunks = chunk_count(c.n), seen = visible;
    const std::uint64_t stored = std::min<std::uint64_t>(visible, c.capacity);
    const bool exact = c.exact;
    const std::uint64_t params = sizeof(CullParams);
    t[0] = {params + 32 * chunks + 64 * visits + 4 * chunks,
            4 * seen + (exact ? 0 : 4 * seen) + 4 * (chunks + 1) + 4 * chunks};
    if (c.kind == LastCull::Kind::occluded) t[0].read += sizeof(CullOcclusionParams);
    t[1] = RadixSort::scan_traffic(static_cast<std::uint32_t>(chunks + 1));
    t[1] += {4 * (chunks + 1) + seen * (8 + (exact ? 32 : 4)) + (exact ? params : 0), seen * 8};
    t[2] = {4 + 4, 4 + 4 + 24};
    t[2] += RadixSort::count_traffic(c.n, visible, exact ? 2 : 1, order_key_bits(c.n, exact), exact,
                                     path, sort_passes, false);
    if (c.kind != LastCull::Kind::lods) {
        t[3] = {params + 4 + (exact ? 8 : 4) * stored, 24 * stored + 8};
        return t;
    }
    const std::uint64_t element = exact ? 8 : 4 + 4 + 32;
    const std::uint64_t draws = c.stored;
    if (!c.grouped) {
        t[3] = {params + 4 + draws * (element + 4 + sizeof(CullMesh)), 28 * draws + 8};
        return t;
    }
    const std::uint64_t meshes = c.mesh_count;
    t[3] = {4 + seen * (8 + 4), 8 * seen};  // lbvh_cull_group
    t[3] += RadixSort::count_traffic(
        c.n, visible, 1, std::max<std::uint32_t>(1, std::bit_width(c.mesh_count)), false, path);
    t[3] += {4 + 4 * seen, 8ull * c.runs};  // lbvh_cull_group_bounds
    t[3] += {params + 4 + 8 * seen + draws * (element + sizeof(CullMesh)) + 24 * meshes,
             28 * draws + 4 * (2 * meshes + 1) + 4 + 4 * meshes};
    t[3].read += 4 * meshes;  // the atomics' reads
    return t;
}

// Bytes the depth pyramid's levels above 0 take: depth_pyramid reads each texel of a level
// once for the next level (4 B; an odd edge's clamped re-read is the same texel) and writes
// every texel above level 0 (4 B).
Traffic pyramid_traffic(std::uint32_t width, std::uint32_t height) {
    const std::vector<DepthLevel> levels = depth_pyramid_levels(width, height);
    if (levels.size() < 2) return {};
    const std::uint64_t texels = levels.back().offset + 1ull;
    const std::uint64_t level0 = std::uint64_t(width) * height;
    return {4 * (texels - 1), 4 * (texels - level0)};
}

}  // namespace

Culler::Culler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Culler::~Culler() = default;

Result<std::unique_ptr<Culler>> Culler::create(Context& context, const CullOptions& options) {
    auto impl = std::make_unique<Impl>();
    impl->context = &context;
    impl->options = options;
    // Nothing is compiled here: each kernel on the first cull (Kernel).
    impl->sort = RadixSort(context);
    impl->traverse = Kernel(context, shaders::lbvh_cull, 6, "lbvh_cull",
                            {shaders::lbvh_cull_split, 1u << 0, 1u << 5});
    impl->traverse_views = Kernel(context, shaders::lbvh_cull_views, 5, "lbvh_cull_views",
                                  {shaders::lbvh_cull_views_split, 1u << 0, 1u << 4});
    impl->traverse_occlusion =
        Kernel(context, shaders::lbvh_cull_occlusion, 9, "lbvh_cull_occlusion",
               {shaders::lbvh_cull_occlusion_split, 1u << 0, 1u << 5});
    impl->build_pyramid = Kernel(context, shaders::depth_pyramid, 1, "depth_pyramid");
    impl->compact = Kernel(context, shaders::lbvh_cull_compact, 7, "lbvh_cull_compact",
                           {shaders::lbvh_cull_compact_split, 1u << 0});
    impl->emit = Kernel(context, shaders::lbvh_cull_emit, 6, "lbvh_cull_emit");
    impl->emit_lods = Kernel(context, shaders::lbvh_cull_emit_lods, 14, "lbvh_cull_emit_lods",
                             {shaders::lbvh_cull_emit_lods_split, 1u << 2});
    impl->group = Kernel(context, shaders::lbvh_cull_group, 7, "lbvh_cull_group",
                         {shaders::lbvh_cull_group_split, 1u << 0});
    impl->group_bounds =
        Kernel(context, shaders::lbvh_cull_group_bounds, 3, "lbvh_cull_group_bounds");
    auto lbvh = Lbvh::create(context);
    if (!lbvh) return lbvh.error();
    impl->lbvh = std::move(lbvh.value());
    auto stamps = Timestamps::create(context, kHelperQueries);
    if (!stamps) return stamps.error();
    impl->stamps = std::move(stamps.value());
    return std::unique_ptr<Culler>(new Culler(std::move(impl)));
}

VkDeviceSize cull_scratch_size(std::uint32_t n, std::uint32_t mesh_count, std::uint32_t views) {
    return cull_scratch_layout({}, n, mesh_count, std::max<std::uint32_t>(views, 1)).size;
}

VkDeviceSize Culler::scratch_size(std::uint32_t n, std::uint32_t mesh_count) const {
    return cull_scratch_size(n, mesh_count, 1);
}

VkDeviceSize Culler::views_scratch_size(std::uint32_t n, std::uint32_t views) const {
    return cull_scratch_size(n, 0, views);
}

namespace {

// Culler::record_views' checks: the view and output counts, each view's ranges, and no two
// views' outputs overlapping.
Status check_views_request(CullerImpl& im, const LbvhTree& tree, std::uint32_t views,
                           VkDeviceSize scratch_bytes, const BufferRange& scratch,
                           std::span<const CullOutput> outs) {
    const std::uint32_t n = tree.n;
    if (views == 0 || views > kMaxCullViews || outs.size() != views)
        return Error{ErrorCode::invalid_argument,
                     "Culler::record_views takes 1 to " + std::to_string(kMaxCullViews) +
                         " views and one output per view, got " + std::to_string(views) +
                         " views and " + std::to_string(outs.size()) + " outputs"};
    for (std::uint32_t v = 0; v < views; ++v) {
        const auto [ids, commands] = cull_output_bytes(outs[v]);
        if (Status st = check_ranges(
                impl_of(*im.context), "Culler::record_views",
                {{"nodes", tree.nodes, lbvh_tree_bytes(n), false, tree_binding_sizes(n)},
                 {"scratch", scratch, scratch_bytes, false},
                 {"visible_ids", outs[v].visible_ids, ids},
                 {"draw_commands", outs[v].draw_commands, commands},
                 {"draw_count", outs[v].draw_count, 8}});
            !st)
            return Error{st.error().code, "view " + std::to_string(v) + ": " + st.error().message};
        for (std::uint32_t w = v + 1; w < views; ++w) {
            const auto [ids_w, commands_w] = cull_output_bytes(outs[w]);
            if (Status st =
                    check_ranges(impl_of(*im.context), "Culler::record_views",
                                 {{"visible_ids", outs[v].visible_ids, ids},
                                  {"draw_commands", outs[v].draw_commands, commands},
                                  {"draw_count", outs[v].draw_count, 8},
                                  {"other visible_ids", outs[w].visible_ids, ids_w},
                                  {"other draw_commands", outs[w].draw_commands, commands_w},
                                  {"other draw_count", outs[w].draw_count, 8}});
                !st)
                return Error{st.error().code, "views " + std::to_string(v) + " and " +
                                                  std::to_string(w) + ": " + st.error().message};
        }
    }
    return Status::success();
}

// The approximate order needs each view's near-child-first ranks: carried down one view's
// traversal they cost less than the root-to-leaf descent per visible leaf the shared traversal
// would need (docs/performance.md), so each view is culled on its own (record_cull lays out
// its one-view arrays at the start of the larger scratch). The views' traversals add up one
// visit count (zeroed by the first); the stages are timed as one.
Status record_views_apart(const Culler& self, CullerImpl& im, VkCommandBuffer cmd,
                          const LbvhTree& tree, std::span<const Frustum> frusta, CullOrder order,
                          const BufferRange& scratch, std::span<const CullOutput> outs,
                          VkQueryPool pool, std::uint32_t first_query) {
    write_timestamp(cmd, pool, first_query + 0);
    const bool marking = std::exchange(im.marking, false);
    if (marking) im.marks[0] = im.dispatches();
    for (std::size_t v = 0; v < frusta.size(); ++v) {
        if (Status st = record_cull(self, im, cmd, tree, frusta[v], order, scratch, outs[v],
                                    nullptr, nullptr, VK_NULL_HANDLE, 0, v > 0);
            !st) {
            im.marking = marking;
            return st;
        }
        compute_barrier(cmd);  // the next view rewrites the params and arrays just read
    }
    im.marking = marking;
    for (std::uint32_t q = 1; q < kCullQueries; ++q) {
        write_timestamp(cmd, pool, first_query + q);
        if (marking) im.marks[q] = im.dispatches();
    }
    return {};
}

}  // namespace

Status Culler::record_views(VkCommandBuffer cmd, const LbvhTree& tree,
                            std::span<const Frustum> frusta, CullOrder order,
                            const BufferRange& scratch, std::span<const CullOutput> outs,
                            VkQueryPool pool, std::uint32_t first_query) {
    Impl& im = *impl_;
    const std::uint32_t n = tree.n;
    const auto views = static_cast<std::uint32_t>(frusta.size());
    if (Status st =
            check_views_request(im, tree, views, views_scratch_size(n, views), scratch, outs);
        !st)
        return st;
    if (order == CullOrder::approx)
        return record_views_apart(*this, im, cmd, tree, frusta, order, scratch, outs, pool,
                                  first_query);
    if (Status st = ready_for_tree(n, {&im.traverse_views, &im.compact, &im.emit}); !st) return st;
    if (Status st = im.sort.ready_sort(); !st) return st;
    if (Status st = im.sort.ready_count_args(); !st) return st;
    if (Status st = im.sort.ready_scan(); !st) return st;
    const CullScratch s = cull_scratch_layout(scratch, n, 0, views);
    const std::uint32_t chunks = chunk_count(n);
    const VkDeviceSize slot_stride = view_slots_stride(n), count_stride = view_counts_stride(n);
    for (std::uint32_t v = 0; v < views; ++v) {
        const CullParams params = cull_params(frusta[v], im.options);
        vkCmdUpdateBuffer(cmd, scratch.buffer, s.params.offset + v * kViewParamsStride,
                          sizeof(params), &params);
    }
    if (n > 0) fill(cmd, {scratch.buffer, s.offsets.offset + visits_offset(chunks), 8}, 0);
    const bool exact = order == CullOrder::exact;
    compute_barrier(cmd);
    auto mark = [&](std::uint32_t k) { im.mark(cmd, pool, first_query, k); };
    mark(0);
    const TreeBindings bound = tree_bindings(tree.nodes, n);
    const BufferRange nodes = bound.nodes;
    PushConstants pc{};
    pc.count = n;
    pc.tiles = chunks;
    if (n > 0) {
        PushConstants t = pc;
        t.offset = views;
        t.shift = static_cast<std::uint32_t>(slot_stride / 4);
        t.key_words = static_cast<std::uint32_t>(count_stride / 4);
        im.traverse_views.dispatch(cmd, {nodes, s.params, s.slots, s.offsets, bound.wide}, t,
                                   workgroups(chunks));
        compute_barrier(cmd);
    }
    // One traversal for every view; compaction, sort and emit follow per view (timed together).
    for (std::uint32_t q = 1; q <= 3; ++q) mark(q);
    for (std::uint32_t v = 0; v < views; ++v) {
        const BufferRange params{scratch.buffer, s.params.offset + v * kViewParamsStride,
                                 sizeof(CullParams)};
        const BufferRange slots{scratch.buffer, s.slots.offset + v * slot_stride, n * 4ull};
        const BufferRange offsets{scratch.buffer, s.offsets.offset + v * count_stride,
                                  (chunks + 1ull) * 4};
        if (n > 0) {
            im.sort.record_scan(cmd, offsets, chunks + 1, s.work);
            compute_barrier(cmd);
            pc.flags = kCullFlagKeys;
            pc.key_words = id_bits(n);  // the exact keys' id bits
            const auto [keys, values] = compacted(s, n, exact);
            im.compact.dispatch(cmd, {nodes, params, slots, offsets, keys, values, s.ranks}, pc,
                                workgroups(n));
            compute_barrier(cmd);
            pc.flags = 0;
            record_visible_sort(im.sort, cmd, s, offsets, chunks, n, exact);
        }
        const CullOutput& out = outs[v];
        const auto [ids, commands] = cull_output_bytes(out);
        pc.capacity = out.capacity;
        const BufferRange ordered = emit_order(s, n, exact, pc);
        im.emit.dispatch(cmd,
                         {params, offsets, ordered, first_bytes(out.visible_ids, ids),
                          first_bytes(out.draw_commands, commands), first_bytes(out.draw_count, 8)},
                         pc, workgroups(std::max<std::uint32_t>(1, std::min(n, out.capacity))));
        // The next view's scan, compaction and sort reuse the work arrays the emit reads.
        if (v + 1 < views) compute_barrier(cmd);
    }
    mark(4);
    return {};
}

Result<std::vector<CullMesh>> pack_mesh_table(std::span<const Mesh> meshes,
                                              std::span<const std::uint32_t> group_capacity) {
    auto fail = [](std::string message) {
        return Error{ErrorCode::invalid_argument, "pack_mesh_table: " + std::move(message)};
    };
    if (meshes.empty() || meshes.size() > (1u << 24))
        return fail("takes 1 to 2^24 meshes, got " + std::to_string(meshes.size()));
    if (!group_capacity.empty() && group_capacity.size() != meshes.size())
        return fail(std::to_string(group_capacity.size()) + " group capacities for " +
                    std::to_string(meshes.size()) + " meshes");
    std::vector<CullMesh> table(meshes.size());
    std::uint64_t first = 0;
    for (std::size_t m = 0; m < meshes.size(); ++m) {
        const std::vector<MeshLod>& lods = meshes[m].lods;
        const std::string mesh = "mesh " + std::to_string(m);
        if (lods.empty() || lods.size() > kMaxMeshLods)
            return fail(mesh + " has " + std::to_string(lods.size()) + " LODs (1 to " +
                        std::to_string(kMaxMeshLods) + ")");
        if (lods[0].switch_distance != 0)
            return fail(mesh + " LOD 0 switch distance is " +
                        std::to_string(lods[0].switch_distance) + ", must be 0");
        CullMesh& out = table[m];
        const std::uint32_t capacity = group_capacity.empty() ? 0 : group_capacity[m];
        out.info = {static_cast<std::uint32_t>(lods.size()), static_cast<std::uint32_t>(first),
                    capacity, 0};
        first += capacity;
        if (first > 0xffffffffull) return fail("the group capacities add up past 2^32 - 1");
        for (std::size_t k = 0; k < lods.size(); ++k) {
            const float d = lods[k].switch_distance;
            if (!std::isfinite(d) || (k > 0 && !(d > lods[k - 1].switch_distance)))
                return fail(mesh + " LOD " + std::to_string(k) + " switch distance " +
                            std::to_string(d) + " is not finite and above the previous LOD's");
            std::uint32_t vertex_offset = 0;
            std::memcpy(&vertex_offset, &lods[k].vertex_offset, 4);
            out.lods[k] = {lods[k].index_count, lods[k].first_index, vertex_offset,
                           lbvh::switch_key(d)};
        }
    }
    return table;
}

std::vector<std::uint32_t> group_first(std::span<const std::uint32_t> group_capacity) {
    std::vector<std::uint32_t> first(group_capacity.size() + 1, 0);
    for (std::size_t m = 0; m < group_capacity.size(); ++m)
        first[m + 1] = first[m] + group_capacity[m];
    return first;
}

Status Culler::record(VkCommandBuffer cmd, const LbvhTree& tree, const Frustum& frustum,
                      CullOrder order, const BufferRange& scratch, const CullOutput& out,
                      VkQueryPool pool, std::uint32_t first_query) {
    return record_cull(*this, *impl_, cmd, tree, frustum, order, scratch, out, nullptr, nullptr,
                       pool, first_query);
}

Status Culler::record(VkCommandBuffer cmd, const LbvhTree& tree, const Frustum& frustum,
                      CullOrder order, const BufferRange& scratch, const CullOutput& out,
                      const CullLods& lods, VkQueryPool pool, std::uint32_t first_query) {
    return record_cull(*this, *impl_, cmd, tree, frustum, order, scratch, out, &lods, nullptr, pool,
                       first_query);
}

Status Culler::record(VkCommandBuffer cmd, const LbvhTree& tree, const Frustum& frustum,
                      CullOrder order, const BufferRange& scratch, const CullOutput& out,
                      const CullLods* lods, const CullOcclusion& occlusion, VkQueryPool pool,
                      std::uint32_t first_query) {
    return record_cull(*this, *impl_, cmd, tree, frustum, order, scratch, out, lods, &occlusion,
                       pool, first_query);
}

Status Culler::record_depth_pyramid(VkCommandBuffer cmd, const BufferRange& pyramid,
                                    std::uint32_t width, std::uint32_t height) {
    Impl& im = *impl_;
    const std::vector<DepthLevel> levels = depth_pyramid_levels(width, height);
    if (levels.empty())
        return Error{ErrorCode::invalid_argument, "Culler::record_depth_pyramid: size " +
                                                      std::to_string(width) + " x " +
                                                      std::to_string(height) + " is outside 1.." +
                                                      std::to_string(kMaxDepthImageSize)};
    const VkDeviceSize bytes = pyramid_bytes(levels);
    if (Status st = check_ranges(impl_of(*im.context), "Culler::record_depth_pyramid",
                                 {{"pyramid", pyramid, bytes}});
        !st)
        return st;
    if (Status st = ready({&im.build_pyramid}); !st) return st;
    const BufferRange range = first_bytes(pyramid, bytes);
    for (std::size_t k = 1; k < levels.size(); ++k) {
        const DepthLevel& from = levels[k - 1];
        const DepthLevel& to = levels[k];
        PushConstants pc{};
        pc.count = to.width * to.height;
        pc.offset = from.offset;
        pc.key_word = from.width;
        pc.key_words = from.height;
        pc.capacity = to.offset;
        pc.shift = to.width;
        compute_barrier(cmd);  // level 0 from the caller, each later level from the last dispatch
        im.build_pyramid.dispatch(cmd, {range}, pc, workgroups(pc.count));
    }
    return {};
}

Result<std::vector<std::uint32_t>> Culler::cull(std::span<const Box> input, const Frustum& frustum,
                                                CullOrder order) {
    auto views = cull_views(input, std::span<const Frustum>(&frustum, 1), order);
    if (!views) return views.error();
    return std::move(views.value().front());
}

Result<std::vector<std::vector<std::uint32_t>>> Culler::cull_views(std::span<const Box> input,
                                                                   std::span<const Frustum> frusta,
                                                                   CullOrder order) {
    Impl& im = *impl_;
    if (frusta.empty() || frusta.size() > kMaxCullViews)
        return Error{ErrorCode::invalid_argument,
                     "Culler::cull_views takes 1 to " + std::to_string(kMaxCullViews) +
                         " views, got " + std::to_string(frusta.size())};
    auto prepared = im.prepare(input, 0);
    if (!prepared) return prepared.error();
    const std::uint32_t n = prepared.value();
    if (frusta.size() > 1) return im.cull_views_together(*this, n, frusta, order);
    im.last = {};
    im.last.kind = LastCull::Kind::plain;
    im.last.n = n;
    im.last.exact = order == CullOrder::exact;
    auto visible = im.cull_until_fits(n, nullptr, [&](VkCommandBuffer cmd, const CullOutput& out) {
        return record(cmd, {whole(im.nodes), n}, frusta.front(), order, whole(im.scratch), out,
                      im.stamps.handle(), kBuildQueries);
    });
    if (!visible) return visible.error();
    return std::vector<std::vector<std::uint32_t>>{std::move(visible.value())};
}

Result<std::vector<std::uint32_t>> Culler::cull_occluded(
    std::span<const Box> input, const Frustum& frustum, CullOrder order, const DepthPyramid& depth,
    const std::array<float, 16>& view_projection) {
    Impl& im = *impl_;
    auto prepared = im.prepare(input, 0);
    if (!prepared) return prepared.error();
    const std::uint32_t n = prepared.value();
    const std::uint32_t width = depth.width(), height = depth.height();
    const VkDeviceSize level0 = std::size_t(width) * height * 4ull;
    if (Status s = im.ensure(im.pyramid, depth.texels().size() * 4ull); !s) return s.error();
    if (Status s = im.context->upload(im.pyramid, depth.image().data(), level0); !s)
        return s.error();
    const CullOcclusion occlusion{
        OcclusionPhase::single, whole(im.pyramid), width, height, view_projection, {}, 1};
    im.last = {};
    im.last.kind = LastCull::Kind::occluded;
    im.last.n = n;
    im.last.exact = order == CullOrder::exact;
    im.last.pyramid_width = width;
    im.last.pyramid_height = height;
    // The first submission also builds the pyramid.
    return im.cull_until_fits(
        n,
        [&](VkCommandBuffer cmd) {
            return record_depth_pyramid(cmd, whole(im.pyramid), width, height);
        },
        [&](VkCommandBuffer cmd, const CullOutput& out) {
            return record(cmd, {whole(im.nodes), n}, frustum, order, whole(im.scratch), out,
                          nullptr, occlusion, im.stamps.handle(), kBuildQueries);
        });
}

namespace {

// The instances of each mesh among `mesh_ids`; an error names the first box whose mesh id is
// not below mesh_count.
Result<std::vector<std::uint32_t>> count_instances(std::span<const std::uint32_t> mesh_ids,
                                                   std::uint32_t mesh_count) {
    std::vector<std::uint32_t> instances(mesh_count, 0);
    for (std::size_t i = 0; i < mesh_ids.size(); ++i) {
        if (mesh_ids[i] >= mesh_count) {
            Error e{ErrorCode::invalid_argument, "Culler::cull_lods: box " + std::to_string(i) +
                                                     " has mesh id " + std::to_string(mesh_ids[i]) +
                                                     ", not below the mesh count " +
                                                     std::to_string(mesh_count)};
            e.box = i;
            return e;
        }
        ++instances[mesh_ids[i]];
    }
    return instances;
}

// cull_lods' buffers besides the cull's own (mesh ids, mesh table, group counts), and the
// mesh ids of the n boxes uploaded.
Status stage_lod_inputs(CullerImpl& im, std::uint32_t n, std::span<const std::uint32_t> mesh_ids,
                        std::uint32_t mesh_count) {
    if (Status s = im.ensure(im.mesh_ids, std::max<VkDeviceSize>(n * 4ull, 4)); !s) return s;
    if (Status s = im.ensure(im.mesh_table, mesh_count * sizeof(CullMesh)); !s) return s;
    if (Status s = im.ensure(im.group_counts, (2ull * mesh_count + 1) * 4); !s) return s;
    if (n > 0) return im.context->upload(im.mesh_ids, mesh_ids.data(), n * 4ull);
    return {};
}

// The draws of the last LOD cull, read back: `stored` of them, flat (in the order emitted) or
// grouped per mesh (group m at firsts[m], group_counts[m] draws).
Result<std::vector<CullDraw>> read_lod_draws(CullerImpl& im,
                                             std::span<const std::uint32_t> mesh_ids,
                                             std::uint32_t stored, bool grouped,
                                             std::span<const std::uint32_t> group_counts,
                                             std::span<const std::uint32_t> firsts,
                                             std::uint32_t mesh_count) {
    std::vector<std::uint32_t> ids, lod;
    if (!grouped || stored > 0) {
        const std::uint32_t span = grouped ? firsts.back() : stored;
        ids.resize(span);
        lod.resize(span);
        if (span > 0) {
            if (Status d = im.context->download(im.ids, ids.data(), span * 4ull); !d)
                return d.error();
            if (Status d = im.context->download(im.draw_lods, lod.data(), span * 4ull); !d)
                return d.error();
        }
    }
    std::vector<CullDraw> draws;
    draws.reserve(stored);
    if (!grouped) {
        for (std::uint32_t i = 0; i < stored; ++i)
            draws.push_back({ids[i], mesh_ids[ids[i]], lod[i]});
        return draws;
    }
    for (std::uint32_t m = 0; m < mesh_count; ++m)
        for (std::uint32_t r = 0; r < group_counts[m]; ++r)
            draws.push_back({ids[firsts[m] + r], m, lod[firsts[m] + r]});
    return draws;
}

}  // namespace

Result<std::vector<CullDraw>> Culler::cull_lods(std::span<const Box> input, const Frustum& frustum,
                                                CullOrder order, std::span<const Mesh> meshes,
                                                std::span<const std::uint32_t> mesh_ids,
                                                bool grouped) {
    Impl& im = *impl_;
    if (mesh_ids.size() != input.size())
        return Error{ErrorCode::invalid_argument,
                     "Culler::cull_lods: " + std::to_string(mesh_ids.size()) + " mesh ids for " +
                         std::to_string(input.size()) + " boxes"};
    auto checked = pack_mesh_table(meshes);
    if (!checked) return checked.error();
    const auto mesh_count = static_cast<std::uint32_t>(meshes.size());
    auto counted = count_instances(mesh_ids, mesh_count);
    if (!counted) return counted.error();
    const std::vector<std::uint32_t>& instances = counted.value();
    auto prepared = im.prepare(input, grouped ? mesh_count : 0);
    if (!prepared) return prepared.error();
    const std::uint32_t n = prepared.value();
    if (Status s = stage_lod_inputs(im, n, mesh_ids, mesh_count); !s) return s.error();
    // Grouped: each group starts with room for at most 256 draws (never more than the mesh's
    // instances) and grows to its visible total and a quarter when it overflows.
    std::vector<std::uint32_t> caps(mesh_count);
    for (std::uint32_t m = 0; m < mesh_count; ++m) caps[m] = std::min(instances[m], 256u);
    bool first = true;  // the first submission builds the tree
    std::uint32_t counts[2] = {0, 0};
    im.last = {};
    im.last.n = n;
    im.last.exact = order == CullOrder::exact;
    im.last.mesh_count = mesh_count;
    im.last.grouped = grouped;
    std::vector<std::uint32_t> group_counts(2ull * mesh_count + 1, 0), firsts;
    while (true) {
        std::uint32_t capacity = im.capacity;
        if (grouped) {
            firsts = group_first(caps);
            capacity = firsts.back();
            if (Status e = im.ensure_output(capacity); !e) return e.error();
        }
        auto table = pack_mesh_table(meshes, grouped ? std::span<const std::uint32_t>(caps)
                                                     : std::span<const std::uint32_t>());
        if (!table) return table.error();
        if (Status s =
                im.context->upload(im.mesh_table, table->data(), mesh_count * sizeof(CullMesh));
            !s)
            return s.error();
        if (Status s = im.ensure(im.draw_lods, std::max<VkDeviceSize>(im.capacity * 4ull, 4)); !s)
            return s.error();
        const CullOutput out{whole(im.ids), whole(im.commands), whole(im.count), capacity};
        im.last.capacity = capacity;
        const CullLods lods{whole(im.mesh_table),   whole(im.mesh_ids), mesh_count, grouped,
                            whole(im.group_counts), whole(im.draw_lods)};
        if (Status s = im.submit_cull(n, first, nullptr,
                                      [&](VkCommandBuffer cmd) {
                                          return record(cmd, {whole(im.nodes), n}, frustum, order,
                                                        whole(im.scratch), out, lods,
                                                        im.stamps.handle(), kBuildQueries);
                                      });
            !s)
            return s.error();
        if (Status d = im.context->download(im.count, counts, 8); !d) return d.error();
        if (!grouped) {
            if (counts[1] <= im.capacity) break;
            const auto grown = static_cast<std::uint32_t>(counts[1] + counts[1] / 4ull);
            if (Status e = im.ensure_output(std::min(grown, n)); !e) return e.error();
            continue;
        }
        if (Status d =
                im.context->download(im.group_counts, group_counts.data(), group_counts.size() * 4);
            !d)
            return d.error();
        bool grew = false;
        for (std::uint32_t m = 0; m < mesh_count; ++m) {
            const std::uint32_t total = group_counts[mesh_count + m];
            if (total <= caps[m]) continue;
            caps[m] = static_cast<std::uint32_t>(
                std::min<std::uint64_t>(total + total / 4ull, instances[m]));
            grew = true;
        }
        if (!grew) break;
    }
    const std::uint32_t stored = counts[0];
    im.last.kind = LastCull::Kind::lods;
    im.last.visible = {counts[1]};
    im.last.stored = stored;
    im.last.runs = 0;
    if (grouped) {
        for (std::uint32_t m = 0; m <= mesh_count; ++m)
            im.last.runs += group_counts[mesh_count + m] > 0 ? 1 : 0;
    }
    return read_lod_draws(im, mesh_ids, stored, grouped, group_counts, firsts, mesh_count);
}

const CullTimes& Culler::last_times() const {
    return impl_->times;
}

Result<std::uint64_t> Culler::last_visits() {
    Impl& im = *impl_;
    const LastCull& c = im.last;
    // None yet, or the last cull failed (no visible count was read).
    if (c.kind == LastCull::Kind::none || c.visible.empty() || c.n == 0) return std::uint64_t{0};
    // The Counts array of the layout the last traversal wrote: several views of the exact
    // order share one traversal (view 0's array); the approximate order's views add their
    // traversals' counts in the one-view array (record_cull).
    const bool joint = c.kind == LastCull::Kind::views && c.views > 1 && c.exact;
    const std::uint32_t mesh_count = c.kind == LastCull::Kind::lods && c.grouped ? c.mesh_count : 0;
    const CullScratch s = cull_scratch_layout({}, c.n, mesh_count, joint ? c.views : 1);
    std::uint32_t words[2] = {0, 0};
    if (Status d = im.context->download(im.scratch, words, 8,
                                        s.offsets.offset + visits_offset(chunk_count(c.n)));
        !d)
        return d.error();
    return std::uint64_t(words[1]) << 32 | words[0];
}

Result<std::vector<StageReport>> last_report(Culler& culler) {
    CullerImpl& im = impl_of(culler);
    const LastCull& c = im.last;
    if (c.kind == LastCull::Kind::none || c.visible.empty()) return std::vector<StageReport>{};
    auto visits = culler.last_visits();
    if (!visits) return visits.error();
    auto refined = read_build_refined(*im.lbvh, im.build_scratch, c.n);
    if (!refined) return refined.error();
    const CullTimes& t = im.times;
    std::vector<StageReport> out;
    StageReport build;
    build.name = "tree build";
    build.dispatches = static_cast<std::uint32_t>(im.build_dispatches);
    Traffic bt = build_traffic(*im.lbvh, c.n, refined.value(), &build.passes);
    bt += build_fill_traffic(*im.lbvh, c.n);
    build.bytes_read = bt.read;
    build.bytes_written = bt.written;
    build.ms = t.build.total();
    out.push_back(build);
    if (c.kind == LastCull::Kind::occluded) {
        StageReport p;
        p.name = "depth pyramid";
        p.dispatches = static_cast<std::uint32_t>(im.pyramid_dispatches);
        const Traffic pt = pyramid_traffic(c.pyramid_width, c.pyramid_height);
        p.bytes_read = pt.read;
        p.bytes_written = pt.written;
        p.ms = t.pyramid;
        out.push_back(p);
    }
    const SortPath path = im.sort.path();
    std::uint32_t passes = 0;
    auto stage = [&](const char* name, std::uint32_t from, std::uint32_t to, const Traffic& traffic,
                     double ms, std::uint32_t stage_passes) {
        StageReport r;
        r.name = name;
        r.dispatches = static_cast<std::uint32_t>(im.marks[to] - im.marks[from]);
        r.bytes_read = traffic.read;
        r.bytes_written = traffic.written;
        r.ms = ms;
        r.passes = stage_passes;
        out.push_back(r);
    };
    if (c.kind != LastCull::Kind::views || c.views == 1) {
        const auto v = view_traffic(c, c.visible.front(), visits.value(), path, &passes);
        stage(c.kind == LastCull::Kind::occluded ? "cull + occlusion" : "cull", 0, 1, v[0], t.cull,
              0);
        stage("compact", 1, 2, v[1], t.compact, 0);
        stage("order sort", 2, 3, v[2], t.sort, passes);
        stage(c.kind == LastCull::Kind::lods ? "emit (LODs)" : "emit", 3, 4, v[3], t.emit, 0);
        return out;
    }
    // Several views: each view's stages as one view's, the traversal's nodes counted once (all
    // views' expanded nodes); the exact order's shared traversal reads the root and counts its
    // visits once per invocation for all views. Timestamps as record_views writes them.
    std::array<Traffic, 4> sum{};
    for (std::uint32_t v = 0; v < c.views; ++v) {
        const auto per_view = view_traffic(c, c.visible[v], 0, path, &passes);
        for (std::size_t k = 0; k < sum.size(); ++k) sum[k] += per_view[k];
    }
    sum[0].read += 64 * visits.value();
    if (c.exact && c.n > 0) {
        const std::uint64_t chunks = chunk_count(c.n);
        sum[0].read -= (c.views - 1ull) * (32 + 4) * chunks;
        sum[0].written -= (c.views - 1ull) * 4 * chunks;
    }
    Traffic rest = sum[1];
    rest += sum[2];
    rest += sum[3];
    if (c.exact) {
        stage("cull (views together)", 0, 1, sum[0], t.cull, 0);
        stage("compact, sort, emit", 1, 4, rest, t.compact + t.sort + t.emit, passes);
    } else {
        Traffic all = sum[0];
        all += rest;
        stage("cull, compact, sort, emit", 0, 4, all, t.cull_total(), passes);
    }
    return out;
}

std::uint32_t Culler::capacity() const {
    return impl_->capacity;
}

}  // namespace broadphase::gpu
