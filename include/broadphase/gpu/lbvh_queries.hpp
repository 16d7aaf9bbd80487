// Batched queries on the GPU LBVH (Karras 2012 tree built by gpu::Lbvh): region (box) queries
// and point picks returning every hit in CSR form (two passes: count, exclusive scan, fill;
// nothing dropped, no per-query cap), closest-hit ray casts, and set-versus-set pairs (the
// boxes of a set A queried against a tree over a set B). Recorders work on the caller's
// buffers inside the caller's command buffer; host-array helpers stage, run, grow and download.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "broadphase/gpu/layout/queries.h"
#include "broadphase/gpu/lbvh.hpp"
#include "broadphase/types.hpp"

namespace broadphase::gpu {

/// Hits of a batch of Q queries in compressed-sparse-row form: the ids hit by query q are
/// ids[offsets[q] .. offsets[q+1]), ascending; offsets has Q+1 entries (offsets[0] = 0).
struct QueryHits {
    std::vector<std::uint32_t> offsets{0};
    std::vector<std::uint32_t> ids;
    /// Number of queries Q.
    std::size_t size() const { return offsets.size() - 1; }
    /// The ascending ids hit by query q (q < size()).
    std::span<const std::uint32_t> hits(std::size_t q) const {
        return std::span<const std::uint32_t>(ids).subspan(offsets[q], offsets[q + 1] - offsets[q]);
    }
};

/// The caller's ranges of a region query batch (all STORAGE | TRANSFER_DST): `queries` holds
/// Q GpuBox (a point p is the box {p, p}); `offsets` Q+1 uints; `ids` `capacity` uints;
/// `scratch` LbvhQueries::scan_scratch_size(Q) bytes; `count_status` and `fill_status` one
/// gpu_layout::TraversalStatus each (64 bytes, also INDIRECT_BUFFER usage), of the count pass
/// and of the fill pass, each with flags that say whether its bounded traversal finished (see
/// TraversalBuffers); `traversal` the work queues both passes use.
struct RegionQueryBuffers {
    BufferRange queries;
    BufferRange offsets;
    BufferRange ids;
    std::uint32_t capacity = 0;
    BufferRange scratch;
    BufferRange count_status;
    BufferRange fill_status;
    TraversalBuffers traversal;
};

/// The caller's ranges of a ray batch: `rays` holds R GpuRay, `hits` R GpuRayHit; `status`
/// one gpu_layout::TraversalStatus (64 bytes, also INDIRECT_BUFFER usage) whose flags say
/// whether the bounded traversal finished; `traversal` its work queues and candidates.
struct RayQueryBuffers {
    BufferRange rays;
    BufferRange hits;
    BufferRange status;
    TraversalBuffers traversal;
};

/// GPU time of the last host-helper batch, from timestamp queries (ms; all zero when the
/// queue has no timestamps), every attempt summed (a traversal that overflowed its work queue
/// or rounds runs again with more). Fields of the other kind of batch read 0.
struct QueryTimes {
    double count = 0;     ///< region queries: the count pass
    double scan = 0;      ///< region queries: the exclusive scan of the counts
    double fill = 0;      ///< region queries: the fill pass (both passes when ids grew)
    double ray_cast = 0;  ///< ray casts: the closest-hit dispatch
};

/// Batched queries against a GPU LBVH. Holds its kernels (compiled by the Context on the first
/// query or ray cast of each kind), and for the host-array helpers the tree of the last
/// build() and working buffers (grown on demand). Not thread-safe.
class LbvhQueries {
public:
    static Result<std::unique_ptr<LbvhQueries>> create(Context& context,
                                                       const LbvhOptions& options = {});
    ~LbvhQueries();

    /// Scratch bytes of the region passes for Q queries (the scan of Q+1 counts, then the
    /// fill pass's Q cursors of queries that continue in queued items).
    VkDeviceSize scan_scratch_size(std::uint32_t queries) const;

    /// Records the count pass and its scan: offsets[q] = number of boxes overlapping query q,
    /// then scanned in place, so offsets[q] is query q's first slot and offsets[Q] the total
    /// (the ids capacity needed; the caller keeps it below 2^32). `tree.nodes` is the whole
    /// node range a build wrote (Lbvh::requirements(n).nodes bytes: the LbvhNode array, then
    /// the LbvhWideNode records that every traversal step reads, 64 bytes each; the same for
    /// record_region_fill and record_ray_cast). Preconditions: the tree's nodes and `queries`
    /// visible to compute-shader reads. Postcondition: offsets written and
    /// made visible to later compute-shader reads and writes (ends with a compute barrier);
    /// a transfer read of offsets needs the caller's barrier (srcStage COMPUTE_SHADER,
    /// srcAccess SHADER_WRITE). `ids` (bound, not written) and `fill_status` are not used.
    /// Check count_status.flags. Records nothing and returns an error when a range it uses is
    /// too small or misaligned.
    Status record_region_count(VkCommandBuffer cmd, const LbvhTree& tree,
                               const RegionQueryBuffers& buffers, std::uint32_t queries);

    /// Records the fill pass: the hits of query q go to ids[offsets[q] ...] in traversal
    /// order (not sorted; for a query that continued in queued items the order of the queued
    /// part varies), slots at or past `capacity` skipped (if offsets[Q] > capacity, grow
    /// `ids` and record this pass again). Preconditions: record_region_count's offsets, the
    /// nodes and `queries` visible to compute-shader reads. Postcondition: the last command is
    /// a compute dispatch writing `ids`; the caller makes it visible (srcStage COMPUTE_SHADER,
    /// srcAccess SHADER_WRITE) before reading. Check fill_status.flags (`count_status` is not
    /// used). Records nothing and returns an error as record_region_count.
    Status record_region_fill(VkCommandBuffer cmd, const LbvhTree& tree,
                              const RegionQueryBuffers& buffers, std::uint32_t queries);

    /// Records R closest-hit ray casts: hits[r] = {id, t bits} of the smallest entry t in
    /// [0, tmax] (ties to the smallest id), or id kInvalidNode. Preconditions: nodes and
    /// `rays` visible to compute-shader reads. Postcondition as record_region_fill, for `hits`
    /// and `status` (check its flags). Records nothing and returns an error when a range is
    /// too small or misaligned.
    Status record_ray_cast(VkCommandBuffer cmd, const LbvhTree& tree,
                           const RayQueryBuffers& buffers, std::uint32_t rays);

    /// Host helper: uploads `boxes` and builds the tree that the queries below run against
    /// (replacing any earlier one). Rejects invalid boxes, naming the box.
    Status build(std::span<const Box> boxes);
    /// Number of boxes of the current tree (0 before build()).
    std::uint32_t size() const;

    /// Host helper: every box overlapping each closed region, ids ascending per query.
    /// Rejects invalid regions (NaN, infinity, min > max), naming the query.
    ///
    /// Rounds of the host helpers (query_boxes, query_points, ray_cast): until a batch queues
    /// items past round 0, a batch records round 0 and the traversal's finish alone (two
    /// dispatches per pass, not 2 * kTraversalRounds) and reads its statuses; more rounds run
    /// only when items were left: a ray cast continues from its queue in a second submission,
    /// region queries run again with every round (their scan and fill took the partial
    /// counts). After a batch that queued items, batches record every round at once until one
    /// resumes nothing past round 0.
    Result<QueryHits> query_boxes(std::span<const Box> regions);
    /// Host helper: every box containing each point, ids ascending per query. Points must be
    /// finite.
    Result<QueryHits> query_points(std::span<const Vec3> points);
    /// Host helper: closest hit of each ray (nothing on a miss). Origins and directions must
    /// be finite and tmax not NaN; t may differ from ray_box_entry by the rounding of GPU
    /// division (Vulkan: 2.5 ulp), never the id.
    Result<std::vector<std::optional<RayHit>>> ray_cast(std::span<const Ray> rays);

    /// GPU times of the last query_boxes, query_points or ray_cast.
    const QueryTimes& last_times() const;

    /// Host helper, set versus set: builds a tree over `b` and returns every overlapping
    /// (a, b) with a an index into `a` and b into `b` (so i is from A, j from B, and i < j
    /// need not hold), sorted ascending.
    Result<std::vector<Pair>> find_pairs_against(std::span<const Box> a, std::span<const Box> b);
    /// Host helper, set versus set against a kept tree: every overlapping (a, b) of the boxes
    /// `a` and the boxes of the last build() (a static world built once, queried each frame by
    /// the moving set), sorted ascending. Rejects invalid boxes of `a`, naming the query.
    Result<std::vector<Pair>> pairs_against(std::span<const Box> a);

private:
    BROADPHASE_GPU_IMPL(LbvhQueries);
};

}  // namespace broadphase::gpu
