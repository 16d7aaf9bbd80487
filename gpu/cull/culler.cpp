// GPU frustum cull of an LBVH (shaders/cull/lbvh_cull.comp -> scan -> lbvh_cull_compact.comp ->
// [radix sort of near-child-first ranks (approx) or of (distance key, id) packed in 32 +
// bit_width(n - 1) bits (exact)] -> lbvh_cull_emit.comp) and its host helper, which builds the
// tree, grows the output until every visible id fits and reads per-stage GPU timestamps. With
// per-instance meshes and levels of detail (CullLods), the compaction keeps sorted positions, an
// optional grouping per mesh (lbvh_cull_group.comp -> stable radix sort by mesh ->
// lbvh_cull_group_bounds.comp) follows the order sort, and lbvh_cull_emit_lods.comp writes each
// draw with its LOD.
//
// This file is the core recorder (traversal, compaction, order sort, emit) and Culler's
// creation; the features are beside it, each with its shaders: the order (cull_order.cpp),
// several views (cull_views.cpp), LODs (cull_lods.cpp), occlusion (cull_occlusion.cpp); the host
// helper is culler_helper.cpp, the instruments gpu/instruments/cull_report.cpp.
#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/layout/cull.h"
#include "cull/culler_impl.hpp"
#include "device/buffer_sizing.hpp"
#include "device/impl_access.hpp"
#include "device/range_check.hpp"
#include "device/timestamps.hpp"
#include "lbvh/lbvh_build.hpp"
#include "lbvh/lbvh_pairs.hpp"
#include "shaders.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::gpu {

namespace culling {

CullScratch cull_scratch_layout(const BufferRange& scratch, std::uint32_t n,
                                std::uint32_t mesh_count, std::uint32_t views) {
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

std::pair<VkDeviceSize, VkDeviceSize> cull_output_bytes(const CullOutput& out) {
    return {std::max<VkDeviceSize>(out.capacity * 4ull, 4),
            std::max<VkDeviceSize>(out.capacity * 4ull * kDrawCommandWords, 4)};
}

}  // namespace culling

namespace {

// What one cull request needs besides the tree: the output sizes its capacity sets, and what
// its LODs and occlusion (when given) read.
struct CullShape {
    VkDeviceSize id_bytes = 0, command_bytes = 0;
    std::uint32_t mesh_count = 0;
    bool grouped = false;
    bool pyramid = false, stamps = false;  // the occlusion phase reads the pyramid / the stamps
    VkDeviceSize pyramid_size = 0;
};

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

}  // namespace

namespace culling {

Status record_cull(const Culler& self, CullerImpl& im, VkCommandBuffer cmd, const LbvhTree& tree,
                   const Frustum& frustum, CullOrder order, const BufferRange& scratch,
                   const CullOutput& out, const CullLods* lods, const CullOcclusion* occlusion,
                   VkQueryPool pool, std::uint32_t first_query, bool add_visits) {
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
        const std::uint32_t flags =
            (exact ? kCullFlagKeys : kCullFlagRank) | (lods && !exact ? kCullFlagPositions : 0u);
        record_compaction(im, cmd, s, nodes, s.params, s.slots, s.offsets, n, exact, flags, pc);
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

}  // namespace culling

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

}  // namespace broadphase::gpu
