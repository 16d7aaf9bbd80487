// Several views culled together (Culler::record_views): the exact order traverses the tree once
// for every view (shaders/cull/lbvh_cull_views.comp, one slot array and Counts array per view),
// then compacts, sorts and emits each view; the approximate order culls each view on its own
// (its near-child-first ranks are per view).
#include <algorithm>
#include <span>
#include <string>
#include <utility>

#include "broadphase/gpu/culler.hpp"
#include "cull/culler_impl.hpp"
#include "device/buffer_sizing.hpp"
#include "device/impl_access.hpp"
#include "device/range_check.hpp"
#include "device/timestamps.hpp"
#include "lbvh/lbvh_build.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::gpu {

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
            record_compaction(im, cmd, s, nodes, params, slots, offsets, n, exact, kCullFlagKeys,
                              pc);
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

}  // namespace broadphase::gpu
