// Batched LBVH queries on the GPU: region queries and point picks in two passes (count per
// query, exclusive scan with RadixSort::record_scan, fill: exact CSR output without atomics,
// so nothing is dropped and the per-query order is deterministic), closest-hit ray casts,
// and set-versus-set pairs as region queries of set A against a tree over set B.
// Kernels: shaders/lbvh/lbvh_query.comp, shaders/lbvh/lbvh_raycast.comp; CPU twins in
// cpu_reference/lbvh_queries.hpp. The host helpers keep an instrument report (last_report:
// dispatches between their timestamps, bytes modelled from the kernels' access patterns and
// the traversals' GPU visit counts; the model is stated beside region_count_traffic and
// ray_cast_traffic below).
#include "broadphase/gpu/lbvh_queries.hpp"
#include "broadphase/gpu/instruments.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "broadphase/scene.hpp"
#include "device/buffer_sizing.hpp"
#include "device/grow.hpp"
#include "device/range_check.hpp"
#include "device/timestamps.hpp"
#include "lbvh/lbvh_build.hpp"
#include "lbvh/lbvh_pairs.hpp"
#include "lbvh/traversal.hpp"
#include "shaders.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::gpu {

using namespace gpu_layout;

namespace {

// Bytes of a range that is bound as a storage descriptor (at least 4).
VkDeviceSize bound(VkDeviceSize bytes) {
    return std::max<VkDeviceSize>(bytes, 4);
}

Error query_error(std::size_t q, const std::string& what) {
    return Error{ErrorCode::invalid_argument, "query " + std::to_string(q) + ": " + what, q, {}};
}

// Bytes a region pass of lbvh_query.comp reads and writes for Q queries against a tree of n
// leaves, `visits` its expanded internal nodes (its status's visit count):
//   count pass  reads each query's GpuBox (32 B), and per expanded node its LbvhWideNode
//               (64 B); with n == 1 instead the single leaf's LbvhNode (48 B) per query;
//               writes each query's count to offsets[q] (4 B).
//   fill pass   reads the GpuBox (32 B) and offsets[q] (4 B) of each query, the wide records
//               as the count pass (its own visit count, the same nodes), and writes 4 B per
//               hit stored (`stored`: the hits below the ids capacity of that run).
// Queued items (8 B each way, only past an invocation's budget), their atomic additions to
// offsets[q] or cursors[q], and the fill of offsets[Q] (a transfer) are not counted.
Traffic region_count_traffic(std::uint32_t n, std::uint64_t q, std::uint64_t visits) {
    return {32 * q + (n == 1 ? 48 * q : 64 * visits), 4 * q};
}
Traffic region_fill_traffic(std::uint32_t n, std::uint64_t q, std::uint64_t visits,
                            std::uint64_t stored) {
    return {36 * q + (n == 1 ? 48 * q : 64 * visits), 4 * stored};
}

// Bytes of R ray casts of lbvh_raycast.comp against a tree of n leaves:
//   ray cast  reads each ray's GpuRay (32 B) and the root's bounds (32 B; with n == 1 the
//             single leaf's LbvhNode, 48 B; none with n == 0), and per expanded node its
//             LbvhWideNode (64 B); writes each ray's GpuRayHit (8 B), and per candidate (a ray
//             that continued in queued items and found a hit: `candidates`, the status word)
//             its 12-byte record and the atomicMin of its ray's t bits (4 B). Queued items'
//             own reads (the ray, the start node's bounds, the shared t: 68 B each) and the
//             queue (8 B each way) are not counted.
//   resolve   reads the candidate count (4 B), and per candidate its record (12 B) and its
//             ray's t bits (4 B); writes per candidate the atomicMin of its ray's id (4 B,
//             counted for every candidate: an upper bound, the candidates of a larger t skip
//             it). No candidates (every ray finished in round 0): 4 B read.
Traffic ray_cast_traffic(std::uint32_t n, std::uint64_t r, std::uint64_t visits,
                         std::uint64_t candidates) {
    const std::uint64_t root = n == 0 ? 0 : n == 1 ? 48 : 32;
    return {(32 + root) * r + 64 * visits, 8 * r + 16 * candidates};
}
Traffic ray_resolve_traffic(std::uint64_t candidates) {
    return {4 + 16 * candidates, 4 * candidates};
}

StageReport stage(const char* name, std::uint64_t dispatches, const Traffic& t, double ms) {
    StageReport r;
    r.name = name;
    r.dispatches = static_cast<std::uint32_t>(dispatches);
    r.bytes_read = t.read;
    r.bytes_written = t.written;
    r.ms = ms;
    return r;
}

}  // namespace

struct LbvhQueries::Impl {
    Context* context = nullptr;
    std::unique_ptr<Lbvh> lbvh;
    RadixSort scan;
    TraversalRounds rounds;
    Kernel query, raycast;
    std::uint32_t n = 0;
    std::uint32_t query_budget = 0;  ///< LbvhOptions::query_budget
    // Working buffers of the host-array helpers, grown on demand.
    Buffer boxes, nodes, build_scratch, queries, offsets, ids, scan_scratch, rays, hits;
    std::uint32_t ids_capacity = 0;
    // Bounded traversal of the host helpers: two TraversalStatus (the count pass's at 0, the
    // fill pass's at status_stride()), the work queues, the rounds.
    Buffer status, work;
    std::uint32_t work_capacity = 0;
    std::uint32_t traversal_rounds = kTraversalRounds;
    // Timestamps of the host helpers: count [0, 1], scan [1, 2], fill [3, 4], rays [5, 6]
    // (the rounds [5, 7], the resolve pass [7, 6]). `timing` is set only while a host helper
    // records, so the public recorders of the caller's command buffers never write them.
    Timestamps timestamps;
    bool timing = false;
    QueryTimes times;
    // Context::Impl::dispatches_recorded at each timestamp of the last timed recording (a
    // stage's dispatches are the difference of its marks), and the last helper's report.
    std::array<std::uint64_t, 8> marks{};
    std::vector<StageReport> report;

    // Writes timestamp k and marks the dispatches recorded so far.
    void stamp(VkCommandBuffer cmd, std::uint32_t k) {
        timestamps.write(cmd, k);
        marks[k] = impl_of(*context).dispatches_recorded;
    }
    std::uint64_t dispatches(std::uint32_t from, std::uint32_t to) const {
        return marks[to] - marks[from];
    }

    Status ensure(Buffer& buffer, VkDeviceSize size) {
        return grow_buffer(*context, buffer, std::max<VkDeviceSize>(size, 4));
    }

    Status check_bindings(const std::string& what, std::span<const BindingSize> bindings) const {
        return gpu::check_bindings(device_limits(context->info()), what, bindings);
    }

    LbvhTree tree() const { return {whole(nodes), n}; }

    TraversalBuffers traversal(std::uint32_t round_count) const {
        return {whole(work), work_capacity, round_count};
    }

    // Whether the last batch of region queries (of ray casts) queued items past round 0. Until
    // one does, a batch records round 0 alone before it reads its statuses (a pass whose first
    // round finishes costs two dispatches, not 2 * traversal_rounds), and goes on only when
    // items are left: ray casts continue from the queue; region queries run again with every
    // round (their scan and fill used the partial counts). After one that did, batches record
    // traversal_rounds at once, until a batch's later rounds resume nothing again.
    bool region_queued = false, ray_queued = false;
    std::uint32_t first_rounds(bool queued) const { return queued ? traversal_rounds : 1; }
    // Whether statuses after `first` rounds say only that items were left (nothing overflowed)
    // while more rounds could run.
    bool short_of_rounds(std::uint32_t first, std::span<const TraversalStatus> statuses) const {
        std::uint32_t flags = 0;
        for (const TraversalStatus& st : statuses) flags |= st.flags;
        return first < traversal_rounds && flags == kTraversalIncomplete;
    }

    VkDeviceSize status_stride() const {
        return align_up(sizeof(TraversalStatus), context->info().range_alignment);
    }
    BufferRange status_range(std::uint32_t k) const {
        return {status.handle(), k * status_stride(), sizeof(TraversalStatus)};
    }

    Status ensure_traversal(std::uint64_t query_count) {
        if (Status s = ensure(status, status_stride() + sizeof(TraversalStatus)); !s) return s;
        if (work_capacity == 0)
            work_capacity =
                default_traversal_capacity(query_count, context->info().max_storage_buffer_range);
        return ensure(work, traversal_work_bytes(work_capacity));
    }

    // After a host-helper batch: whether it must run again with a larger work queue or more
    // rounds (both kept for later batches), or an error when neither can help.
    Result<bool> retry_traversal(std::span<const TraversalStatus> statuses, const char* what) {
        return grow_traversal(*context, work, work_capacity, traversal_rounds, statuses, what);
    }

    // What the attempts of one region batch measured, each attempt counted (as
    // Lbvh::find_pairs' pairs pass): the count and fill passes' statuses of the last attempt,
    // and per stage (count, scan, fill) the dispatches and modelled traffic of all of them.
    struct RegionAttempts {
        TraversalStatus st[2] = {};
        std::array<std::uint64_t, 3> dispatches{};
        Traffic count, scan, fill;
    };

    RegionQueryBuffers region_buffers(std::uint32_t round_count) const {
        return {whole(queries),      whole(offsets),  whole(ids),      ids_capacity,
                whole(scan_scratch), status_range(0), status_range(1), traversal(round_count)};
    }
    // The count and fill passes' statuses, read back.
    Status read_region_status(TraversalStatus (&st)[2]) {
        for (std::uint32_t k = 0; k < 2; ++k)
            if (Status d = context->download(status, &st[k], sizeof(st[k]), k * status_stride());
                !d)
                return d;
        return {};
    }
    Status prepare_regions(LbvhQueries& self, std::span<const GpuBox> input);
    Status run_region_passes(LbvhQueries& self, std::uint32_t q, RegionAttempts& a,
                             std::uint32_t& recorded_rounds);
    Status refill_regions(LbvhQueries& self, std::uint32_t q, std::uint32_t total,
                          std::uint32_t round_count, RegionAttempts& a);
    Status record_rays(VkCommandBuffer cmd, const LbvhTree& tree, const RayQueryBuffers& b,
                       std::uint32_t ray_count, std::uint32_t first_round);
    Result<QueryHits> run_regions(LbvhQueries& self, std::span<const GpuBox> input);
};

LbvhQueries::LbvhQueries(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LbvhQueries::~LbvhQueries() = default;

Result<std::unique_ptr<LbvhQueries>> LbvhQueries::create(Context& context,
                                                         const LbvhOptions& options) {
    auto impl = std::make_unique<Impl>();
    impl->context = &context;
    auto lbvh = Lbvh::create(context, options);
    if (!lbvh) return lbvh.error();
    impl->lbvh = std::move(lbvh.value());
    impl->query_budget = options.query_budget;
    // Nothing is compiled here: each kernel on the first call that records it (Kernel).
    impl->scan = RadixSort(context);
    impl->rounds = TraversalRounds(context);
    impl->query = Kernel(context, shaders::lbvh_query, 8, "lbvh_query",
                         {shaders::lbvh_query_split, 1u << 0, 1u << 7});
    impl->raycast = Kernel(context, shaders::lbvh_raycast, 6, "lbvh_raycast",
                           {shaders::lbvh_raycast_split, 1u << 0, 1u << 5});
    auto timestamps = Timestamps::create(context, 8);
    if (!timestamps) return timestamps.error();
    impl->timestamps = std::move(timestamps.value());
    return std::unique_ptr<LbvhQueries>(new LbvhQueries(std::move(impl)));
}

VkDeviceSize LbvhQueries::scan_scratch_size(std::uint32_t queries) const {
    return std::max<VkDeviceSize>(RadixSort::scan_scratch_size(queries + 1), queries * 4ull);
}

namespace {

// The ranges of a region pass and the bytes each needs, checked before anything is recorded.
Status check_region_ranges(const ContextImpl& context, const char* recorder,
                           const LbvhQueries& self, const LbvhTree& tree,
                           const RegionQueryBuffers& b, std::uint32_t queries, std::uint32_t pass) {
    const BufferRange& status = pass == kQueryCount ? b.count_status : b.fill_status;
    return check_ranges(
        context, recorder,
        {{"nodes", tree.nodes, lbvh_tree_bytes(tree.n), false, tree_binding_sizes(tree.n)},
         {"queries", b.queries, bound(queries * sizeof(GpuBox))},
         {"offsets", b.offsets, (queries + 1ull) * 4},
         {"ids", b.ids, bound(b.capacity * 4ull)},
         {"scratch", b.scratch, bound(self.scan_scratch_size(queries)), false},
         {pass == kQueryCount ? "count_status" : "fill_status", status, sizeof(TraversalStatus)},
         {"work", b.traversal.work, work_range_bytes(b.traversal)}});
}

// Records one bounded traversal of the region query kernel (count or fill pass).
void record_region_pass(const Kernel& kernel, const TraversalRounds& rounds, VkCommandBuffer cmd,
                        const LbvhTree& tree, const RegionQueryBuffers& b, std::uint32_t queries,
                        std::uint32_t pass, std::uint32_t query_budget) {
    const BufferRange status =
        first_bytes(pass == kQueryCount ? b.count_status : b.fill_status, sizeof(TraversalStatus));
    fill(cmd, status, 0u);
    compute_barrier(cmd);
    PushConstants pc{};
    pc.count = queries;
    pc.offset = tree.n;
    pc.capacity = b.capacity;
    pc.flags = pass;
    pc.tiles = b.traversal.capacity;
    const TreeBindings t = tree_bindings(tree.nodes, tree.n);
    const std::initializer_list<BufferRange> bindings = {
        t.nodes,
        first_bytes(b.queries, queries * sizeof(GpuBox)),
        first_bytes(b.offsets, (queries + 1ull) * 4),
        first_bytes(b.ids, b.capacity * 4ull),
        status,
        first_bytes(b.traversal.work, work_range_bytes(b.traversal)),
        first_bytes(b.scratch, queries * 4ull),
        t.wide};
    // Round 0 takes LbvhOptions::query_budget (layout/common.h, kQueryFirstRound).
    const auto [traversal, later_budget] =
        rounds.with_first_round(b.traversal, query_budget, kQueryFirstRound);
    rounds.record_kernel(cmd, status, traversal, kernel, bindings, pc, workgroups(queries), 0,
                         later_budget);
}

}  // namespace

Status LbvhQueries::record_region_count(VkCommandBuffer cmd, const LbvhTree& tree,
                                        const RegionQueryBuffers& b, std::uint32_t queries) {
    if (Status st =
            check_region_ranges(impl_of(*impl_->context), "LbvhQueries::record_region_count", *this,
                                tree, b, queries, kQueryCount);
        !st)
        return st;
    if (Status st = impl_->query.ready_for_tree(tree.n); !st) return st;
    if (Status st = impl_->rounds.ready(); !st) return st;
    if (Status st = impl_->scan.ready_scan(); !st) return st;
    // offsets[Q] starts at 0 so that the exclusive scan leaves the total there.
    const bool timing = impl_->timing;
    fill(cmd, {b.offsets.buffer, b.offsets.offset + queries * 4ull, 4}, 0u);
    compute_barrier(cmd);
    if (timing) impl_->stamp(cmd, 0);
    record_region_pass(impl_->query, impl_->rounds, cmd, tree, b, queries, kQueryCount,
                       impl_->query_budget);
    if (timing) impl_->stamp(cmd, 1);
    const BufferRange offsets = first_bytes(b.offsets, (queries + 1ull) * 4);
    impl_->scan.record_scan(cmd, offsets, queries + 1,
                            first_bytes(b.scratch, scan_scratch_size(queries)));
    compute_barrier(cmd);
    if (timing) impl_->stamp(cmd, 2);
    return {};
}

Status LbvhQueries::record_region_fill(VkCommandBuffer cmd, const LbvhTree& tree,
                                       const RegionQueryBuffers& b, std::uint32_t queries) {
    if (Status st = check_region_ranges(impl_of(*impl_->context), "LbvhQueries::record_region_fill",
                                        *this, tree, b, queries, kQueryFill);
        !st)
        return st;
    if (Status st = impl_->query.ready_for_tree(tree.n); !st) return st;
    if (Status st = impl_->rounds.ready(); !st) return st;
    record_region_pass(impl_->query, impl_->rounds, cmd, tree, b, queries, kQueryFill,
                       impl_->query_budget);
    return {};
}

Status LbvhQueries::record_ray_cast(VkCommandBuffer cmd, const LbvhTree& tree,
                                    const RayQueryBuffers& b, std::uint32_t rays) {
    const VkDeviceSize work_bytes = work_range_bytes(b.traversal);
    if (Status st = check_ranges(
            impl_of(*impl_->context), "LbvhQueries::record_ray_cast",
            {{"nodes", tree.nodes, lbvh_tree_bytes(tree.n), false, tree_binding_sizes(tree.n)},
             {"rays", b.rays, bound(rays * sizeof(GpuRay))},
             {"hits", b.hits, bound(rays * sizeof(GpuRayHit))},
             {"status", b.status, sizeof(TraversalStatus)},
             {"work", b.traversal.work, work_bytes}});
        !st)
        return st;
    if (Status st = impl_->raycast.ready_for_tree(tree.n); !st) return st;
    if (Status st = impl_->rounds.ready(); !st) return st;
    return impl_->record_rays(cmd, tree, b, rays, 0);
}

// record_ray_cast's recording, or with first_round > 0 a continuation of one whose status says
// items were left after first_round rounds (TraversalRounds::record): rounds first_round to
// b.traversal.rounds - 1, the finish and the resolve pass again (which resolves only a
// finished traversal: lbvh_raycast.comp).
Status LbvhQueries::Impl::record_rays(VkCommandBuffer cmd, const LbvhTree& tree,
                                      const RayQueryBuffers& b, std::uint32_t ray_count,
                                      std::uint32_t first_round) {
    const BufferRange st = first_bytes(b.status, sizeof(TraversalStatus));
    if (first_round == 0) {
        fill(cmd, st, 0u);
        compute_barrier(cmd);
    }
    PushConstants pc{};
    pc.count = ray_count;
    pc.offset = tree.n;
    pc.tiles = b.traversal.capacity;
    const TreeBindings t = tree_bindings(tree.nodes, tree.n);
    const std::initializer_list<BufferRange> bindings = {
        t.nodes,
        first_bytes(b.rays, ray_count * sizeof(GpuRay)),
        first_bytes(b.hits, ray_count * sizeof(GpuRayHit)),
        st,
        first_bytes(b.traversal.work, work_range_bytes(b.traversal)),
        t.wide};
    const auto [traversal, later_budget] =
        this->rounds.with_first_round(b.traversal, query_budget, kQueryFirstRound);
    this->rounds.record_kernel(cmd, st, traversal, raycast, bindings, pc, workgroups(ray_count),
                               first_round, later_budget);
    if (timing) stamp(cmd, 7);
    // The finish step left the arguments of one invocation per candidate.
    indirect_barrier(cmd);
    pc.shift = 0;
    pc.flags = kRayResolve;
    raycast.dispatch_indirect(cmd, bindings, pc, {st.buffer, st.offset + 32, 12});
    return {};
}

Status LbvhQueries::build(std::span<const Box> input) {
    Impl& im = *impl_;
    im.n = 0;
    if (Status s = validate_boxes(input); !s) return s;
    if (input.size() >= (1ull << 31))
        return Error{ErrorCode::limit_exceeded, "at most 2^31 - 1 boxes per LBVH"};
    const auto n = static_cast<std::uint32_t>(input.size());
    const LbvhRequirements req = im.lbvh->requirements(n);
    if (Status s =
            im.check_bindings("LbvhQueries::build: an LBVH of " + std::to_string(n) + " boxes",
                              build_bindings(*im.lbvh, n));
        !s)
        return s;
    if (Status s = im.ensure(im.nodes, req.nodes); !s) return s;
    if (n == 0) return {};
    if (Status s = im.ensure(im.boxes, req.boxes); !s) return s;
    if (Status s = im.ensure(im.build_scratch, req.scratch); !s) return s;
    if (Status s = upload_boxes(*im.context, im.boxes, input); !s) return s;
    Status recorded;
    Status s = im.context->submit_and_wait([&](VkCommandBuffer cmd) {
        compute_barrier(cmd);
        recorded = im.lbvh->record_build(
            cmd, {whole(im.boxes), whole(im.nodes), whole(im.build_scratch)}, n);
        compute_barrier(cmd);
    });
    if (!s) return s;
    if (!recorded) return recorded;
    im.n = n;
    return {};
}

std::uint32_t LbvhQueries::size() const {
    return impl_->n;
}

// The batch's checks (query count, bindings), its buffers, and the queries uploaded.
Status LbvhQueries::Impl::prepare_regions(LbvhQueries& self, std::span<const GpuBox> input) {
    if (input.size() >= (1ull << 31))
        return Error{ErrorCode::limit_exceeded, "at most 2^31 - 1 queries per batch"};
    const auto q = static_cast<std::uint32_t>(input.size());
    const BindingSize bindings[] = {{"the query buffer", q * VkDeviceSize(sizeof(GpuBox))},
                                    {"the offset buffer", (q + 1ull) * 4}};
    if (Status s = check_bindings("a batch of " + std::to_string(q) + " queries", bindings); !s)
        return s;
    if (Status s = ensure(queries, q * sizeof(GpuBox)); !s) return s;
    if (Status s = ensure(offsets, (q + 1ull) * 4); !s) return s;
    if (Status s = ensure(scan_scratch, self.scan_scratch_size(q)); !s) return s;
    const VkDeviceSize max_ids = context->info().max_storage_buffer_range / 4;
    if (ids_capacity == 0) {
        ids_capacity = static_cast<std::uint32_t>(
            std::min<VkDeviceSize>(std::max<VkDeviceSize>(4ull * q, 1024), max_ids));
        if (Status s = ensure(ids, ids_capacity * 4ull); !s) return s;
    }
    if (q > 0) {
        if (Status s = context->upload(queries, input.data(), q * sizeof(GpuBox)); !s) return s;
    }
    return ensure_traversal(q);
}

// Both passes; again with a larger work queue or more rounds while a traversal did not finish
// (each retry changes one of them, and the most of both always finishes), or with every round
// when only the first_rounds were recorded and items were left. An attempt that runs again
// stored, by the model, its counted total (offsets[Q]) up to the capacity. `recorded_rounds`
// receives the rounds the last attempt recorded.
Status LbvhQueries::Impl::run_region_passes(LbvhQueries& self, std::uint32_t q, RegionAttempts& a,
                                            std::uint32_t& recorded_rounds) {
    while (true) {
        const std::uint32_t first = first_rounds(region_queued);
        recorded_rounds = first;
        timing = true;
        Status recorded;
        Status s = context->submit_and_wait([&](VkCommandBuffer cmd) {
            timestamps.reset(cmd, 0, 5);
            compute_barrier(cmd);  // make the staged upload visible to the shaders
            if (!(recorded = self.record_region_count(cmd, tree(), region_buffers(first), q)))
                return;
            stamp(cmd, 3);
            recorded = self.record_region_fill(cmd, tree(), region_buffers(first), q);
            compute_barrier(cmd);
            stamp(cmd, 4);
        });
        timing = false;
        if (!s) return s;
        if (!recorded) return recorded;
        if (Status d = read_region_status(a.st); !d) return d;
        times.count += timestamps.ms(0, 1);
        times.scan += timestamps.ms(1, 2);
        times.fill += timestamps.ms(3, 4);
        a.dispatches[0] += dispatches(0, 1);
        a.dispatches[1] += dispatches(1, 2);
        a.dispatches[2] += dispatches(3, 4);
        a.count += region_count_traffic(n, q, traversal_visits(a.st[0]));
        a.scan += RadixSort::scan_traffic(q + 1);
        const std::uint32_t capacity = ids_capacity;
        region_queued = traversal_queued(a.st[0]) || traversal_queued(a.st[1]);
        // Items left after round 0 alone: the counts are partial, so the scan and fill over
        // them are redone with every round (the count cannot go on: the scan replaced it).
        if (!short_of_rounds(first, a.st)) {
            auto again = retry_traversal(a.st, "region queries");
            if (!again) return again.error();
            if (!again.value()) return {};
        }
        std::uint32_t counted = 0;
        if (Status d = context->download(offsets, &counted, 4, q * 4ull); !d) return d;
        a.fill += region_fill_traffic(n, q, traversal_visits(a.st[1]), std::min(counted, capacity));
    }
}

// The ids buffer grown for `total` hits (with headroom for the next batch), and the fill pass
// run again.
Status LbvhQueries::Impl::refill_regions(LbvhQueries& self, std::uint32_t q, std::uint32_t total,
                                         std::uint32_t round_count, RegionAttempts& a) {
    const VkDeviceSize max_ids = context->info().max_storage_buffer_range / 4;
    if (total > max_ids)
        return Error{ErrorCode::limit_exceeded,
                     std::to_string(total) + " hits do not fit one storage buffer (device limit " +
                         std::to_string(max_ids) + " ids)"};
    ids_capacity =
        static_cast<std::uint32_t>(std::min<VkDeviceSize>(total + total / 4ull, max_ids));
    ids = Buffer();
    if (Status e = ensure(ids, ids_capacity * 4ull); !e) return e;
    Status recorded;
    Status f = context->submit_and_wait([&](VkCommandBuffer cmd) {
        timestamps.reset(cmd, 3, 2);
        compute_barrier(cmd);
        stamp(cmd, 3);
        recorded = self.record_region_fill(cmd, tree(), region_buffers(round_count), q);
        compute_barrier(cmd);
        stamp(cmd, 4);
    });
    if (!f) return f;
    if (!recorded) return recorded;
    times.fill += timestamps.ms(3, 4);
    a.dispatches[2] += dispatches(3, 4);
    if (Status d = read_region_status(a.st); !d) return d;
    if (auto r = traversal_outcome(a.st[1], "region queries"); !r) return r.error();
    a.fill += region_fill_traffic(n, q, traversal_visits(a.st[1]), total);
    return {};
}

Result<QueryHits> LbvhQueries::Impl::run_regions(LbvhQueries& self, std::span<const GpuBox> input) {
    report.clear();
    if (Status s = prepare_regions(self, input); !s) return s.error();
    const auto q = static_cast<std::uint32_t>(input.size());
    // Every attempt counts in the times and the report: its ms, dispatches and modelled bytes
    // with its own visit counts.
    times = {};
    RegionAttempts a;
    std::uint32_t round_count = 0;
    if (Status s = run_region_passes(self, q, a, round_count); !s) return s.error();
    QueryHits result;
    result.offsets.resize(q + 1ull);
    if (Status d = context->download(offsets, result.offsets.data(), (q + 1ull) * 4); !d)
        return d.error();
    // Each query's count is below 2^31, so the differences of the 32-bit scanned offsets are
    // exact even where the running sum wrapped, and their 64-bit sum is the exact total.
    std::uint64_t exact_total = 0;
    for (std::uint32_t i = 0; i < q; ++i) exact_total += result.offsets[i + 1] - result.offsets[i];
    if (exact_total > 0xffffffffull)
        return Error{ErrorCode::limit_exceeded,
                     std::to_string(exact_total) +
                         " hits in one batch: more than 2^32 - 1 (split the batch)"};
    const std::uint32_t total = result.offsets[q];
    // The fill pass's traffic, twice when ids grew and it ran again.
    a.fill += region_fill_traffic(n, q, traversal_visits(a.st[1]), std::min(total, ids_capacity));
    if (total > ids_capacity) {
        // With the rounds the count finished in: the fill walks the same nodes.
        if (Status s = refill_regions(self, q, total, round_count, a); !s) return s.error();
    }
    report = {stage("region count", a.dispatches[0], a.count, times.count),
              stage("region scan", a.dispatches[1], a.scan, times.scan),
              stage("region fill", a.dispatches[2], a.fill, times.fill)};
    result.ids.resize(total);
    if (total > 0) {
        if (Status d = context->download(ids, result.ids.data(), total * 4ull); !d)
            return d.error();
    }
    for (std::uint32_t i = 0; i < q; ++i)
        std::sort(result.ids.begin() + result.offsets[i],
                  result.ids.begin() + result.offsets[i + 1]);
    return result;
}

Result<QueryHits> LbvhQueries::query_boxes(std::span<const Box> regions) {
    impl_->report.clear();
    std::vector<GpuBox> input(regions.size());
    for (std::size_t q = 0; q < regions.size(); ++q) {
        if (Status s = validate_box(regions[q], q); !s) {
            Error e = s.error();
            e.message = "query " + e.message;  // "query box 3: min.x is NaN"
            return e;
        }
        input[q] = to_gpu_boxes(regions.subspan(q, 1))[0];
    }
    return impl_->run_regions(*this, input);
}

Result<QueryHits> LbvhQueries::query_points(std::span<const Vec3> points) {
    impl_->report.clear();
    std::vector<Box> regions(points.size());
    for (std::size_t q = 0; q < points.size(); ++q) {
        const Vec3& p = points[q];
        if (!std::isfinite(p.x) || !std::isfinite(p.y) || !std::isfinite(p.z))
            return query_error(q, "point is not finite");
        regions[q] = {p, p};
    }
    return query_boxes(regions);
}

Result<std::vector<std::optional<RayHit>>> LbvhQueries::ray_cast(std::span<const Ray> input) {
    Impl& im = *impl_;
    im.report.clear();
    if (input.size() >= (1ull << 31))
        return Error{ErrorCode::limit_exceeded, "at most 2^31 - 1 rays per batch"};
    const auto r = static_cast<std::uint32_t>(input.size());
    std::vector<GpuRay> rays(r);
    for (std::uint32_t i = 0; i < r; ++i) {
        const Ray& ray = input[i];
        for (int axis = 0; axis < 3; ++axis) {
            if (!std::isfinite(ray.origin[axis]) || !std::isfinite(ray.dir[axis]))
                return query_error(i, "ray origin and direction must be finite");
        }
        if (std::isnan(ray.tmax)) return query_error(i, "ray tmax is NaN");
        rays[i] = {{ray.origin.x, ray.origin.y, ray.origin.z, ray.tmax},
                   {ray.dir.x, ray.dir.y, ray.dir.z, 0}};
    }
    std::vector<std::optional<RayHit>> out(r);
    if (r == 0) return out;
    const BindingSize bindings[] = {{"the ray buffer", r * VkDeviceSize(sizeof(GpuRay))},
                                    {"the hit buffer", r * VkDeviceSize(sizeof(GpuRayHit))}};
    if (Status s = im.check_bindings("a batch of " + std::to_string(r) + " rays", bindings); !s)
        return s.error();
    if (Status s = im.ensure(im.rays, r * sizeof(GpuRay)); !s) return s.error();
    if (Status s = im.ensure(im.hits, r * sizeof(GpuRayHit)); !s) return s.error();
    if (Status s = im.context->upload(im.rays, rays.data(), r * sizeof(GpuRay)); !s)
        return s.error();
    if (Status s = im.ensure_traversal(r); !s) return s.error();
    // Every attempt counts, as in run_regions: its ms, dispatches and bytes (its own visits and
    // candidates, those past the queue's capacity dropped).
    TraversalStatus st{};
    im.times = {};
    std::uint64_t cast_dispatches = 0, resolve_dispatches = 0;
    Traffic cast_traffic, resolve_traffic;
    double cast_ms = 0, resolve_ms = 0;
    while (true) {
        // Round 0 alone first unless the last batch queued items (first_rounds); then, while
        // only items are left, the other rounds from the queue, in a continuation.
        const std::uint32_t first = im.first_rounds(im.ray_queued);
        std::uint32_t from = 0;
        do {
            const TraversalBuffers traversal =
                im.traversal(from == 0 ? first : im.traversal_rounds);
            im.timing = true;
            Status recorded;
            Status s = im.context->submit_and_wait([&](VkCommandBuffer cmd) {
                im.timestamps.reset(cmd, 5, 3);
                compute_barrier(cmd);
                im.stamp(cmd, 5);
                const RayQueryBuffers buffers{whole(im.rays), whole(im.hits), im.status_range(0),
                                              traversal};
                recorded = from == 0 ? record_ray_cast(cmd, im.tree(), buffers, r)
                                     : im.record_rays(cmd, im.tree(), buffers, r, from);
                compute_barrier(cmd);
                im.stamp(cmd, 6);
            });
            im.timing = false;
            if (!s) return s.error();
            if (!recorded) return recorded.error();
            if (Status d = im.context->download(im.status, &st, sizeof(st)); !d) return d.error();
            im.times.ray_cast += im.timestamps.ms(5, 6);
            cast_ms += im.timestamps.ms(5, 7);
            resolve_ms += im.timestamps.ms(7, 6);
            cast_dispatches += im.dispatches(5, 7);
            resolve_dispatches += im.dispatches(7, 6);
            from = st.rounds;
        } while (im.short_of_rounds(from, {&st, 1}));
        im.ray_queued = traversal_queued(st);
        // The status counts over the attempt's submissions (a continuation keeps it).
        const std::uint32_t candidates = std::min(st.candidates, im.work_capacity);
        cast_traffic += ray_cast_traffic(im.n, r, traversal_visits(st), candidates);
        resolve_traffic += ray_resolve_traffic(candidates);
        auto again = im.retry_traversal({&st, 1}, "ray casts");
        if (!again) return again.error();
        if (!again.value()) break;
    }
    im.report = {stage("ray cast", cast_dispatches, cast_traffic, cast_ms),
                 stage("ray resolve", resolve_dispatches, resolve_traffic, resolve_ms)};
    std::vector<GpuRayHit> hits(r);
    if (Status d = im.context->download(im.hits, hits.data(), r * sizeof(GpuRayHit)); !d)
        return d.error();
    for (std::uint32_t i = 0; i < r; ++i) {
        if (hits[i].id == kInvalidNode) continue;
        float t;
        static_assert(sizeof(t) == sizeof(hits[i].t_bits));
        std::memcpy(&t, &hits[i].t_bits, sizeof(t));
        out[i] = RayHit{hits[i].id, t};
    }
    return out;
}

const QueryTimes& LbvhQueries::last_times() const {
    return impl_->times;
}

const std::vector<StageReport>& last_report(const LbvhQueries& queries) {
    return impl_of(queries).report;
}

Result<std::vector<Pair>> LbvhQueries::find_pairs_against(std::span<const Box> a,
                                                          std::span<const Box> b) {
    if (Status s = build(b); !s) return s.error();
    return pairs_against(a);
}

Result<std::vector<Pair>> LbvhQueries::pairs_against(std::span<const Box> a) {
    auto hits = query_boxes(a);
    if (!hits) return hits.error();
    std::vector<Pair> pairs;
    pairs.reserve(hits->ids.size());
    for (std::size_t q = 0; q < hits->size(); ++q)
        for (std::uint32_t id : hits->hits(q)) pairs.push_back({static_cast<std::uint32_t>(q), id});
    return pairs;
}

}  // namespace broadphase::gpu
