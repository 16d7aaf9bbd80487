// Instruments of the GPU classes, for `broadphase bench` and the benches: each stage's
// dispatches, modelled traffic and GPU time (StageReport, last_report), the copy kernel's
// bandwidth that the stages are compared with, the first use of each kernel, and the warm-up
// that keeps a device's clocks up ahead of a measurement. Not part of the product's API
// (broadphase/gpu.hpp does not include it).
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "broadphase/gpu/context.hpp"
#include "broadphase/types.hpp"

namespace broadphase::gpu {

class Lbvh;
class LbvhQueries;
class Culler;
class MovingScene;
class ProxyScene;

/// One stage of the last Lbvh::find_pairs, for instruments (`broadphase bench`): "scene
/// bounds", "codes", "sort", "hierarchy + bounds", "all pairs", "pair sort".
struct StageReport {
    std::string name;
    std::uint32_t dispatches = 0;  ///< compute dispatches recorded (indirect ones included)
    /// Bytes the stage's kernels read and write by their documented access patterns (every
    /// element counted once; the model is stated beside the kernels in gpu/lbvh/lbvh.cpp and
    /// gpu/sort/radix_sort.hpp), not measured by counters. For the streaming stages this is about
    /// the memory traffic; the traversal's loads of the upper nodes mostly hit caches, so its
    /// bytes per second can pass the copy kernel's.
    std::uint64_t bytes_read = 0, bytes_written = 0;
    double ms = 0;             ///< GPU time from timestamps (0 without timestamps)
    std::uint32_t passes = 0;  ///< sort: radix digit passes over the keys; 0 for the others
};

/// What measure_copy_bandwidth found.
struct CopyBandwidth {
    VkDeviceSize bytes = 0;       ///< bytes copied per run (read once, written once)
    double ms = 0;                ///< GPU time of the fastest run (0 without timestamps)
    double bytes_per_second = 0;  ///< 2 * bytes / ms: read + written (0 without timestamps)
};
/// Times a compute kernel that copies `bytes` (capped at maxStorageBufferRange) from one
/// device buffer to another, best of `repeat` runs after a warm-up: the yardstick of the
/// instruments (`broadphase bench` reports each stage's bandwidth as a fraction of it).
/// Allocates two buffers of `bytes` for the call.
Result<CopyBandwidth> measure_copy_bandwidth(Context& context, VkDeviceSize bytes = 64ull << 20,
                                             int repeat = 3);

/// The first use of one kernel (measure_kernel_costs), in host wall-clock milliseconds.
struct KernelCost {
    std::string name;        ///< NAME of shaders/NAME.comp, NAME_split for its split variant
    double create_ms = 0;    ///< its layouts and vkCreateComputePipelines
    double dispatch_ms = 0;  ///< its first dispatch, from vkQueueSubmit until the fence signals
    double total_ms() const { return create_ms + dispatch_ms; }
};
/// Times the first use of each embedded kernel whose name contains `filter` (all when empty;
/// an empty list when none does): its pipeline's creation, then one workgroup over zero-filled
/// buffers with zero push constants (every kernel exits early on count 0). Cold only where no
/// cache holds the kernel yet: the Context's (PipelineCacheOptions), the driver's (Mesa:
/// MESA_SHADER_CACHE_DISABLE=true before the Context is created), an earlier call. Split
/// variants only where DeviceInfo::tree_parts > 1. A dispatch unfinished after `timeout_s` is
/// an error, and the device still runs it (the Context's destructor would wait for it).
Result<std::vector<KernelCost>> measure_kernel_costs(Context& context, std::string_view filter = {},
                                                     double timeout_s = 600);

/// Keeps the device busy ahead of a measurement. GPUs lower their clocks while idle and raise
/// them only after some time under load, so a benchmark whose host work (uploads, downloads,
/// checks) leaves the GPU idle between runs times each run at whatever clock the idle left:
/// on an NVIDIA H200 the same stages measured 2 to 4 times slower in one process than in the
/// next (docs/performance.md, "Warm-up"). start(ms) submits copy-kernel dispatches that last
/// about `ms` of GPU time and returns at once; what is submitted on the Context's queue
/// afterwards runs after them, on a device that has been busy all along. Used by `broadphase
/// bench` before every run. Holds two device buffers of 64 MiB (or maxStorageBufferRange).
class WarmUp {
public:
    /// Compiles the copy kernel and times one copy (timestamps; without them start() submits
    /// one copy per millisecond asked).
    static Result<WarmUp> create(Context& context);
    WarmUp(WarmUp&&) noexcept;
    WarmUp& operator=(WarmUp&&) noexcept;
    ~WarmUp();  ///< waits for the last start()'s work

    /// Submits about `ms` milliseconds of copies without waiting (none for ms <= 0). Waits
    /// first for the previous start()'s work, whose command buffer it reuses.
    Status start(double ms);
    /// GPU time of one copy dispatch (0 without timestamps).
    double copy_ms() const;
    /// Copy dispatches the last start() submitted (0 before any, or for ms <= 0).
    std::uint32_t copies() const;
    /// Whether the last start()'s copies have finished (true when none are pending).
    bool finished() const;

private:
    struct State;
    explicit WarmUp(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

/// Every stage of the lbvh's last find_pairs: "scene bounds", "codes", "sort", "hierarchy +
/// bounds", "all pairs", "pair sort", each with its dispatches, modelled bytes, GPU time and
/// sort passes (of its first pass over the pairs, which the later runs of a grown buffer
/// repeat). Reads one word back (Lbvh::read_refined); empty before any find_pairs.
Result<std::vector<StageReport>> last_report(Lbvh& lbvh);

/// Every stage of the culler's host helper's last cull (cull, cull_views, cull_occluded,
/// cull_lods), as last_report(Lbvh&): "tree build" (its first submission; passes: its code
/// sort's), "depth pyramid" (cull_occluded), "cull" ("cull + occlusion"), "compact", "order
/// sort" (passes: its radix digit passes), "emit" ("emit (LODs)", grouping included); several
/// views of cull_views: "cull (views together)" and "compact, sort, emit" (exact), or one
/// "cull, compact, sort, emit" stage (approx), as their timestamps split them. Each with the
/// dispatches recorded, the bytes modelled from the kernels' documented traffic (view_traffic;
/// the traversal's from Culler::last_visits()) and the GPU time of Culler::last_times(). Reads
/// three words back; empty before any cull and after a failed one.
Result<std::vector<StageReport>> last_report(Culler& culler);

/// Every stage of the queries' last query_boxes / query_points ("region count", "region
/// scan", "region fill"; the fill's figures add both runs when the ids grew) or ray_cast ("ray
/// cast": the bounded rounds; "ray resolve": the pass over the candidates of rays that
/// continued in queued items, recorded always, an empty dispatch when there are none):
/// dispatches recorded, bytes modelled from the kernels' access patterns and the GPU visit
/// counts (TraversalStatus visits_lo / visits_hi), GPU time. Every attempt of the batch counts,
/// as in last_report(Lbvh&) (a traversal that overflowed its work queue or rounds runs again:
/// each attempt's dispatches, ms and bytes with its own visits, summed). Empty before any
/// batch, after an error, and for an empty ray batch. The ray cast's bytes follow its visit
/// count, which depends on timing once rays continue in queued items; region queries' never do.
/// The reference is valid until the queries' next batch.
const std::vector<StageReport>& last_report(const LbvhQueries& queries);

/// The instruments of the scene's last frame read (reset, step or read_step), one StageReport
/// per stage: "refit + cost + decision", "rebuild (gated)", "all pairs", "pair keys", "sort"
/// (its `passes`), "differences". Dispatches as recorded (a gated rebuild's emptied
/// dispatches count; a repair's passes add to the frame's); bytes by the frame's traffic model
/// from the frame's counts; ms from timestamps (0 after record_step). Reads one word back after
/// a rebuild (whether it refined its codes). An error before the first reset.
Result<std::vector<StageReport>> last_report(MovingScene& scene);

/// The instruments of the proxy scene's last frame read: "batch + trees" (the batch's scatter,
/// the fresh and static trees' builds), then last_report(MovingScene&)'s stages for the dynamic
/// tree (whose "all pairs" holds every pass appended to its list). An error before a step.
Result<std::vector<StageReport>> last_report(ProxyScene& scene);

}  // namespace broadphase::gpu
