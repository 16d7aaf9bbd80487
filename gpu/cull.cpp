// GPU frustum cull of an LBVH (shaders/lbvh_cull.comp -> scan -> lbvh_cull_compact.comp ->
// [32-bit radix sort of near-child-first ranks (approx) or 64-bit radix sort of (distance, id)
// (exact)] -> lbvh_cull_emit.comp) and its host helper, which builds the tree, grows the output
// until every visible id fits and reads per-stage GPU timestamps.
#include <algorithm>
#include <bit>
#include <cstring>

#include "broadphase/gpu_cull.hpp"
#include "broadphase/gpu_layout_cull.h"
#include "broadphase/scene.hpp"
#include "grow.hpp"
#include "radix_sort.hpp"
#include "range_check.hpp"
#include "shaders.hpp"
#include "timestamps.hpp"

namespace broadphase::gpu {

using namespace gpu_layout;

namespace {

std::uint32_t chunk_count(std::uint32_t n) {
    return static_cast<std::uint32_t>(div_up(n, kCullChunk));
}

// Where each array of a cull lives inside the scratch buffer.
struct ScratchLayout {
    BufferRange params, slots, ranks, offsets, keys, values, keys_tmp, values_tmp, work;
    BufferRange visible;  // the visible count, copied from offsets[chunks] (aligned for binding)
    BufferRange args;     // the sort's indirect dispatch arguments for that count
    VkDeviceSize size = 0;
};

ScratchLayout scratch_layout(const BufferRange& scratch, std::uint32_t n) {
    Arena arena(scratch);
    ScratchLayout s;
    s.params = arena.take(sizeof(CullParams));
    s.slots = arena.take(n * 4ull);
    s.ranks = arena.take(n * 4ull);
    s.offsets = arena.take((chunk_count(n) + 1ull) * 4);
    s.keys = arena.take(n * 8ull);
    s.values = arena.take(n * 4ull);
    s.keys_tmp = arena.take(n * 8ull);
    s.values_tmp = arena.take(n * 4ull);
    s.work = arena.take(
        std::max(RadixSort::scratch_size(n), RadixSort::scan_scratch_size(chunk_count(n) + 1)));
    s.visible = arena.take(4);
    s.args = arena.take(kArgsSlots * sizeof(VkDispatchIndirectCommand));
    s.size = arena.used();
    return s;
}

VkDeviceSize nodes_bytes(std::uint32_t n) {
    return std::max<VkDeviceSize>(2ull * std::max<std::uint32_t>(n, 1) - 1, 1) * sizeof(LbvhNode);
}

std::uint32_t groups(std::uint64_t count) {
    return static_cast<std::uint32_t>(div_up(count, kWorkgroupSize));
}

constexpr std::uint32_t kBuildQueries = 5;  // Lbvh::record_build's stage boundaries
constexpr std::uint32_t kHelperQueries = kBuildQueries + kCullQueries;

}  // namespace

struct Culler::Impl {
    Context* context = nullptr;
    CullOptions options;
    RadixSort sort;
    Kernel traverse, compact, emit;
    std::unique_ptr<Lbvh> lbvh;
    // Working buffers of the host helper, grown on demand.
    Buffer boxes, nodes, build_scratch, scratch, ids, commands, count;
    std::uint32_t capacity = 0;
    Timestamps stamps;  // kHelperQueries: the build's stage boundaries, then the cull's
    CullTimes times;

    // Reads the timestamps of one submission: the build's (when `build`) and the cull's.
    void read_times(bool build) {
        double b[kBuildQueries - 1] = {}, c[kCullQueries - 1] = {};
        if (build && stamps.spans(0, kBuildQueries - 1, b))
            times.build = {b[0], b[1], b[2], b[3], 0};
        if (!stamps.spans(kBuildQueries, kCullQueries - 1, c)) return;
        times.cull = c[0];
        times.compact = c[1];
        times.sort = c[2];
        times.emit = c[3];
    }

    Status ensure(Buffer& buffer, VkDeviceSize size) { return grow_buffer(*context, buffer, size); }

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

Culler::Culler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Culler::~Culler() = default;

Result<std::unique_ptr<Culler>> Culler::create(Context& context, const CullOptions& options) {
    auto impl = std::make_unique<Impl>();
    impl->context = &context;
    impl->options = options;
    // Nothing is compiled here: each kernel on the first cull (Kernel).
    impl->sort = RadixSort(context);
    impl->traverse = Kernel(context, shaders::lbvh_cull, 5, "lbvh_cull");
    impl->compact = Kernel(context, shaders::lbvh_cull_compact, 7, "lbvh_cull_compact");
    impl->emit = Kernel(context, shaders::lbvh_cull_emit, 6, "lbvh_cull_emit");
    auto lbvh = Lbvh::create(context);
    if (!lbvh) return lbvh.error();
    impl->lbvh = std::move(lbvh.value());
    auto stamps = Timestamps::create(context, kHelperQueries);
    if (!stamps) return stamps.error();
    impl->stamps = std::move(stamps.value());
    return std::unique_ptr<Culler>(new Culler(std::move(impl)));
}

VkDeviceSize Culler::scratch_size(std::uint32_t n) const {
    return scratch_layout({}, n).size;
}

Status Culler::record(VkCommandBuffer cmd, const LbvhTree& tree, const Frustum& frustum,
                      CullOrder order, const BufferRange& scratch, const CullOutput& out,
                      VkQueryPool pool, std::uint32_t first_query) {
    Impl& im = *impl_;
    const std::uint32_t n = tree.n;
    const VkDeviceSize cap = out.capacity;
    const VkDeviceSize id_bytes = std::max<VkDeviceSize>(cap * 4, 4);
    const VkDeviceSize command_bytes = std::max<VkDeviceSize>(cap * 4 * kDrawCommandWords, 4);
    if (Status st = check_ranges(impl_of(*im.context), "Culler::record",
                                 {{"nodes", tree.nodes, nodes_bytes(n)},
                                  {"scratch", scratch, scratch_size(n), false},
                                  {"visible_ids", out.visible_ids, id_bytes},
                                  {"draw_commands", out.draw_commands, command_bytes},
                                  {"draw_count", out.draw_count, 8}});
        !st)
        return st;
    if (Status st = ready({&im.traverse, &im.compact, &im.emit}); !st) return st;
    if (Status st = im.sort.ready_sort(); !st) return st;
    if (Status st = im.sort.ready_scan(); !st) return st;
    if (Status st = im.sort.ready_count_args(); !st) return st;
    ScratchLayout s = scratch_layout(scratch, n);
    CullParams params{};
    for (int i = 0; i < 6; ++i) {
        const Plane& p = frustum.planes[i];
        params.planes[i] = {p.normal.x, p.normal.y, p.normal.z, p.d};
    }
    params.eye = {frustum.eye.x, frustum.eye.y, frustum.eye.z, 0};
    std::uint32_t vertex_offset = 0;
    std::memcpy(&vertex_offset, &im.options.vertex_offset, 4);
    params.draw = {im.options.index_count, im.options.first_index, vertex_offset, 0};
    vkCmdUpdateBuffer(cmd, scratch.buffer, s.params.offset, sizeof(params), &params);
    const bool exact = order == CullOrder::exact;
    compute_barrier(cmd);
    write_timestamp(cmd, pool, first_query + 0);

    const std::uint32_t chunks = chunk_count(n);
    const BufferRange nodes = first_bytes(tree.nodes, nodes_bytes(n));
    PushConstants pc{};
    pc.count = n;
    pc.tiles = chunks;
    if (n > 0) {
        pc.flags = exact ? 0u : kCullFlagRank;
        im.traverse.dispatch(cmd, {nodes, s.params, s.slots, s.offsets, s.ranks}, pc,
                             groups(chunks));
        compute_barrier(cmd);
    }
    write_timestamp(cmd, pool, first_query + 1);
    if (n > 0) {
        im.sort.record_scan(cmd, s.offsets, chunks + 1, s.work);
        compute_barrier(cmd);
        pc.flags = exact ? kCullFlagKeys : kCullFlagRank;
        im.compact.dispatch(cmd, {nodes, s.params, s.slots, s.offsets, s.keys, s.values, s.ranks},
                            pc, groups(n));
        compute_barrier(cmd);
        pc.flags = 0;
    }
    write_timestamp(cmd, pool, first_query + 2);
    if (n > 0) {
        // Only the visible keys, compacted to the front, are sorted: the count is read on the
        // GPU (offsets[chunks]) and only the tiles it fills are launched.
        const VkBufferCopy total{s.offsets.offset + chunks * 4ull, s.visible.offset, 4};
        vkCmdCopyBuffer(cmd, s.offsets.buffer, s.visible.buffer, 1, &total);
        compute_barrier(cmd);
        im.sort.record_count_args(cmd, s.visible, n, s.args);
        const std::uint32_t rank_bits = std::max<std::uint32_t>(1, std::bit_width(n - 1));
        SortBuffers sort{s.keys, s.values, s.keys_tmp, s.values_tmp, s.work};
        sort.count = s.visible;
        sort.args = s.args;
        im.sort.record(cmd, sort, n, exact ? 2 : 1, exact ? 64 : rank_bits);
        compute_barrier(cmd);
    }
    write_timestamp(cmd, pool, first_query + 3);
    pc.capacity = out.capacity;
    im.emit.dispatch(
        cmd,
        {s.params, s.offsets, s.values, first_bytes(out.visible_ids, id_bytes),
         first_bytes(out.draw_commands, command_bytes), first_bytes(out.draw_count, 8)},
        pc, groups(std::max<std::uint32_t>(1, std::min(n, out.capacity))));
    write_timestamp(cmd, pool, first_query + 4);
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
    if (Status s = validate_boxes(input); !s) return s.error();
    if (input.size() >= (1ull << 31))
        return Error{ErrorCode::limit_exceeded, "at most 2^31 - 1 boxes per cull"};
    const auto n = static_cast<std::uint32_t>(input.size());
    const VkDeviceSize max_range = im.context->info().max_storage_buffer_range;
    struct Need {
        const char* what;
        VkDeviceSize bytes;
    };
    const Need needs[] = {{"the node buffer", nodes_bytes(n)},
                          {"the box buffer", n * 32ull},
                          {"the sort-key buffer", n * 8ull}};
    for (const Need& need : needs) {
        if (need.bytes > max_range)
            return Error{ErrorCode::limit_exceeded,
                         std::string(need.what) + " of a cull of " + std::to_string(n) +
                             " boxes needs " + std::to_string(need.bytes) +
                             " bytes, over the device's maxStorageBufferRange of " +
                             std::to_string(max_range)};
    }
    const LbvhRequirements req = im.lbvh->requirements(n);
    if (Status s = im.ensure(im.boxes, std::max<VkDeviceSize>(req.boxes, 4)); !s) return s.error();
    if (Status s = im.ensure(im.nodes, req.nodes); !s) return s.error();
    if (Status s = im.ensure(im.build_scratch, req.scratch); !s) return s.error();
    if (Status s = im.ensure(im.scratch, scratch_size(n)); !s) return s.error();
    if (Status s = im.ensure_output(std::max(im.capacity, std::min<std::uint32_t>(n, 1024))); !s)
        return s.error();
    if (n > 0) {
        std::vector<GpuBox> gpu_boxes = to_gpu_boxes(input);
        if (Status s = im.context->upload(im.boxes, gpu_boxes.data(), n * sizeof(GpuBox)); !s)
            return s.error();
    }
    const LbvhBuildBuffers build{whole(im.boxes), whole(im.nodes), whole(im.build_scratch)};
    bool first = true;  // the first submission builds the tree; every view culls it
    std::vector<std::vector<std::uint32_t>> views;
    for (const Frustum& frustum : frusta) {
        std::uint32_t counts[2] = {0, 0};
        while (true) {
            CullOutput out{whole(im.ids), whole(im.commands), whole(im.count), im.capacity};
            Status recorded;
            Status s = im.context->submit_and_wait([&](VkCommandBuffer cmd) {
                compute_barrier(cmd);  // make the staged upload visible to the shaders
                im.stamps.reset(cmd, 0, kHelperQueries);
                if (first) {
                    if (!(recorded = im.lbvh->record_build(cmd, build, n, im.stamps.handle(), 0)))
                        return;
                    compute_barrier(cmd);
                }
                recorded = record(cmd, {build.nodes, n}, frustum, order, whole(im.scratch), out,
                                  im.stamps.handle(), kBuildQueries);
                compute_barrier(cmd);
            });
            if (!s) return s.error();
            if (!recorded) return recorded.error();
            im.read_times(first);
            first = false;
            if (Status d = im.context->download(im.count, counts, 8); !d) return d.error();
            if (counts[1] <= im.capacity) break;
            // Grow with headroom for the next frame (none past the device limit), and cull again.
            const VkDeviceSize max_ids = max_range / (kDrawCommandWords * 4);
            const auto grown = static_cast<std::uint32_t>(std::min<VkDeviceSize>(
                counts[1] + counts[1] / 4ull, std::max<VkDeviceSize>(max_ids, counts[1])));
            if (Status e = im.ensure_output(grown); !e) return e.error();
        }
        std::vector<std::uint32_t> visible(counts[1]);
        if (counts[1] > 0) {
            if (Status d = im.context->download(im.ids, visible.data(), counts[1] * 4ull); !d)
                return d.error();
        }
        views.push_back(std::move(visible));
    }
    return views;
}

const CullTimes& Culler::last_times() const {
    return impl_->times;
}

std::uint32_t Culler::capacity() const {
    return impl_->capacity;
}

}  // namespace broadphase::gpu
