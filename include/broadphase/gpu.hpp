// The Vulkan side of broadphase: a context (own device, or the caller's), and the GPU LBVH
// (Karras 2012) with all-pairs traversal, usable from host arrays or recorded into the
// caller's command buffer on the caller's buffers.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "broadphase/gpu_layout.h"
#include "broadphase/types.hpp"

namespace broadphase::gpu {

/// Declares, in the private part of a public GPU class (Context, Lbvh, Culler, LbvhQueries,
/// MovingScene, ProxyScene), its hidden implementation, as Qt's Q_DECLARE_PRIVATE does: the
/// struct Impl that callers never see, the pointer that owns it, the constructor create() makes
/// the class with, and ImplAccess (gpu/impl_access.hpp), the library's own way in.
#define BROADPHASE_GPU_IMPL(Class)              \
    struct Impl;                                \
    friend struct ImplAccess;                   \
    explicit Class(std::unique_ptr<Impl> impl); \
    std::unique_ptr<Impl> impl_

/// Where a Context keeps its VkPipelineCache between runs, so that a later process loads the
/// compiled pipelines instead of compiling them again (docs/performance.md, "Start-up"). One
/// file per device and driver (named after vendorID, deviceID, driverVersion and
/// pipelineCacheUUID) in `folder`; a file whose header names another device or driver, or that
/// is truncated or corrupt, is ignored (a cold start) and replaced at the next save.
struct PipelineCacheOptions {
    /// false: no file is read or written (pipelines are compiled by every process).
    bool enabled = true;
    /// The folder of the cache files (created when saving). Empty: the environment variable
    /// BROADPHASE_PIPELINE_CACHE ("off", or a folder), else $XDG_CACHE_HOME/broadphase, else
    /// $HOME/.cache/broadphase (off when neither is set).
    std::string folder;
};

/// Where a Context's pipeline cache came from (Context::pipeline_cache_info).
enum class PipelineCacheState {
    off,     ///< no file is read or written
    cold,    ///< no usable file was found: every pipeline is compiled, then saved
    loaded,  ///< a valid file for this device and driver was given to the driver
    caller,  ///< the caller's own VkPipelineCache (ExternalDevice::caller_pipeline_cache)
};

/// What the pipeline cache did when the Context was created.
struct PipelineCacheInfo {
    PipelineCacheState state = PipelineCacheState::off;
    /// The cache file (empty when off or the caller's).
    std::string path;
    /// Bytes of driver data loaded from the file (0 unless loaded).
    std::size_t loaded_bytes = 0;
    /// Why a file that exists was not used (truncated, corrupt, another device or driver);
    /// empty otherwise. Such a file counts as a cold start.
    std::string ignored;
};

/// Which radix sort every sort on a Context runs (the LBVH's codes, the cull's order, the
/// moving scene's pairs); both are stable and exact, with the same results.
///   onesweep: one read of the keys for every pass's digit counts, then one kernel per 8-bit
///     digit pass whose tiles, numbered in the order they start, find their offsets by
///     decoupled look-back (Adinets & Merrill 2022). A tile waits only on tiles that started
///     before it, and counts a predecessor's keys itself after a bounded wait (decoupled
///     fallback), so it is correct without forward progress between workgroups; it is fast
///     only where started workgroups do progress while others wait.
///   reduce_then_scan: per pass a histogram, a multi-level scan and a scatter (Merrill &
///     Grimshaw 2011); no workgroup ever waits on another, so it is safe on any device.
///   automatic: the BROADPHASE_SORT_PATH environment variable (onesweep or reduce_then_scan)
///     when set, else onesweep on NVIDIA, AMD and Intel GPUs (discrete or integrated), whose
///     started workgroups are known to progress while others wait on them; reduce_then_scan
///     elsewhere: Apple, Arm, Qualcomm, Imagination and other GPUs (progress across
///     workgroups not known: waits would end in fallbacks), and CPU devices such as
///     lavapipe, where a waiting workgroup spins on a core the one it waits for needs
///     (measured slower there, docs/performance.md).
/// DeviceInfo::sort_path is the path chosen.
enum class SortPath { automatic, onesweep, reduce_then_scan };

/// "automatic", "onesweep" or "reduce_then_scan".
const char* sort_path_name(SortPath path);

/// How Context::create picks and sets up a device.
struct ContextOptions {
    /// Enable the Khronos validation layer, synchronization validation included (also on when
    /// BROADPHASE_VALIDATION=1). Validation errors and hazards are counted
    /// (Context::validation_errors) and printed to stderr.
    bool validation = false;
    /// Device by index in enumeration order or by case-insensitive name substring. Empty: the
    /// BROADPHASE_DEVICE environment variable, else the first discrete GPU, then integrated,
    /// then virtual, then CPU (e.g. lavapipe).
    std::string device;
    /// Caps maxStorageBufferRange below the device's (0: the device's own). Every host path
    /// refuses scenes whose buffers exceed the cap, so tests and callers can exercise and
    /// plan for the limit on any device.
    VkDeviceSize max_storage_buffer_range = 0;
    /// The persistent pipeline cache (on by default, in the user's cache folder).
    PipelineCacheOptions pipeline_cache;
    /// Which radix sort runs (SortPath; automatic: the environment, else the device's rule).
    SortPath sort_path = SortPath::automatic;
    /// The bounded traversals' budget (DeviceInfo::traversal_budget; 0: automatic).
    std::uint32_t traversal_budget = 0;
    /// A tree too large for one storage descriptor is split over several
    /// (DeviceInfo::tree_parts). false: a tree's arrays are always bound whole, and larger
    /// trees are refused with limit_exceeded.
    bool split_tree_bindings = true;
};

/// Handles a caller already owns, and how they were created (Vulkan cannot be asked which
/// version an instance was created for, nor which extensions a device enabled). All handles
/// must outlive the Context. Context::adopt checks every requirement (docs/requirements.md)
/// and names everything that is missing in one error.
struct ExternalDevice {
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice physical_device = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    std::uint32_t queue_family = 0;
    VkQueue queue = VK_NULL_HANDLE;
    /// VkApplicationInfo::apiVersion the instance was created with (VK_API_VERSION_1_2 or
    /// later); 0 (unknown) is refused.
    std::uint32_t api_version = 0;
    /// The device extensions enabled in VkDeviceCreateInfo::ppEnabledExtensionNames (must
    /// include VK_KHR_push_descriptor). The strings are read during adopt only.
    std::span<const char* const> enabled_extensions;
    /// The caller's own VkPipelineCache of `device`, used for every pipeline the library
    /// creates; never read from or written to a file, nor destroyed, by the library (it must
    /// outlive the Context). VK_NULL_HANDLE: the library's own cache, as `pipeline_cache` says.
    VkPipelineCache caller_pipeline_cache = VK_NULL_HANDLE;
    /// The library's own persistent cache when there is no caller_pipeline_cache (as
    /// ContextOptions::pipeline_cache).
    PipelineCacheOptions pipeline_cache;
    /// Which radix sort runs (as ContextOptions::sort_path).
    SortPath sort_path = SortPath::automatic;
    /// The bounded traversals' budget (as ContextOptions::traversal_budget).
    std::uint32_t traversal_budget = 0;
    /// As ContextOptions::split_tree_bindings (no device feature is needed).
    bool split_tree_bindings = true;
    /// VkPhysicalDeviceVulkan12Features::vulkanMemoryModel and vulkanMemoryModelDeviceScope were
    /// enabled in vkCreateDevice's pNext chain (required: the LBVH build and refit order their
    /// memory with the Vulkan memory model).
    bool vulkan_memory_model = false;
};

/// What the chosen device is and can do.
struct DeviceInfo {
    std::string name;
    std::string driver;
    VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
    std::uint32_t vendor_id = 0;
    std::uint32_t api_version = 0;
    std::uint32_t subgroup_size = 0;
    /// The compute stage has subgroup ballot operations (VK_SUBGROUP_FEATURE_BASIC_BIT and
    /// VK_SUBGROUP_FEATURE_BALLOT_BIT): the all-pairs traversal then appends one atomic per
    /// subgroup (LbvhOptions::pair_append).
    bool subgroup_ballot = false;
    VkDeviceSize max_storage_buffer_range = 0;
    /// The device's maxMemoryAllocationSize: a soft limit. Context::create_buffer still tries a
    /// larger buffer (drivers may allow it: NVIDIA's report about 4 GiB and allocate more),
    /// and names this limit when the allocation fails.
    VkDeviceSize max_memory_allocation_size = ~VkDeviceSize(0);
    /// The device's maxBufferSize (Vulkan 1.3 devices; else the largest VkDeviceSize, no limit
    /// known): Context::create_buffer refuses larger buffers with limit_exceeded.
    VkDeviceSize max_buffer_size = ~VkDeviceSize(0);
    /// The device's minStorageBufferOffsetAlignment (bytes).
    VkDeviceSize min_storage_buffer_offset_alignment = 0;
    /// What every BufferRange offset must be a multiple of: minStorageBufferOffsetAlignment,
    /// and at least 4 (vkCmdFillBuffer, vkCmdUpdateBuffer and indirect arguments need it).
    VkDeviceSize range_alignment = 4;
    std::uint32_t max_workgroup_count_x = 0;
    /// 0 when the queue has no timestamps (timestampValidBits 0: optional, stage times read 0)
    float timestamp_period_ns = 0;
    /// The radix sort this Context runs: onesweep or reduce_then_scan (SortPath, never
    /// automatic once resolved).
    SortPath sort_path = SortPath::reduce_then_scan;
    /// Preceding tiles the onesweep sort's look-back reads per round after its first
    /// (1 to gpu_layout::kOnesweepWindow, the default): BROADPHASE_SORT_WINDOW overrides it, to
    /// measure the look-back's cost on a device (1 reads one tile per round). Sorts are equal
    /// whatever it is.
    std::uint32_t sort_window = gpu_layout::kOnesweepWindow;
    /// The radix sort ranks each tile with subgroup ballots (true) or in shared memory without
    /// subgroup operations (false). BROADPHASE_SORT_RANK=subgroup|shared overrides the device's
    /// rule: ballots on GPUs that have them (DeviceInfo::subgroup_ballot), shared memory on
    /// CPU devices, where the two measured alike (docs/performance.md, "The sort reshaped for
    /// GPUs"). Sorts are equal either way; a kernel whose subgroups turn out partial or smaller
    /// than 8 invocations ranks in shared memory.
    bool sort_subgroup_rank = false;
    /// Nodes one invocation of a bounded traversal (all pairs, region queries, ray casts)
    /// expands per round before it queues the rest (TraversalBuffers::budget when that is 0).
    /// Chosen at creation: the option when not 0, else BROADPHASE_TRAVERSAL_BUDGET, else
    /// kTraversalBudget (4096) on CPU devices, where a round costs a pass over every queued
    /// item and the lanes of a lopsided query are few, and kGpuTraversalBudget on GPUs, where one
    /// invocation walking thousands of dependent nodes idles the device (a box over half of
    /// the `level` scene: docs/performance.md, "Traversal budget").
    std::uint32_t traversal_budget = gpu_layout::kTraversalBudget;
    /// Storage descriptors a tree's node array and its wide-node array may each be split over
    /// when one descriptor cannot hold it (maxStorageBufferRange: 2^32 - 1 bytes at most, and
    /// 100M boxes need 9.6 GB of nodes): gpu_layout::kTreeParts where the option allows it
    /// (ContextOptions / ExternalDevice::split_tree_bindings) and the device allows 21 storage
    /// buffers per stage and 21 push descriptors; else 1. Trees that fit one descriptor always
    /// run the unsplit kernels (docs/performance.md, "Scale limits").
    std::uint32_t tree_parts = 1;
};

class Context;

/// A byte range of a buffer, as every recorder takes its buffers: `offset` a multiple of
/// DeviceInfo::range_alignment, `size` the bytes the caller gives (explicit: VK_WHOLE_SIZE is
/// refused, since nothing could check it). Several ranges may share one buffer (suballocation)
/// as long as the ranges of one recording do not overlap. A recorder whose ranges are missing,
/// misaligned, overlapping or smaller than it needs records nothing and returns an error naming
/// the range, the size needed and the size given.
struct BufferRange {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize offset = 0;
    VkDeviceSize size = 0;
};

class Buffer;
/// The whole of a library-allocated buffer: offset 0, b.size() bytes.
BufferRange whole(const Buffer& b);

/// A device buffer with its memory; move-only. Host-visible buffers are persistently mapped.
class Buffer {
public:
    Buffer() = default;
    Buffer(Buffer&& other) noexcept;
    Buffer& operator=(Buffer&& other) noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer();

    VkBuffer handle() const { return buffer_; }
    VkDeviceSize size() const { return size_; }
    void* mapped() const { return mapped_; }  ///< null unless host-visible

private:
    friend class Context;
    VkDevice device_ = VK_NULL_HANDLE;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    VkDeviceSize size_ = 0;
    void* mapped_ = nullptr;
};

enum class MemoryKind {
    device,    ///< device-local; filled by copies or shaders
    upload,    ///< host-visible, host writes then GPU reads
    readback,  ///< host-visible (cached where possible), GPU writes then host reads
};

/// A Vulkan instance, device, compute queue and the library's compiled pipelines. Pipelines are
/// compiled on first use by the objects created on the Context (the first call that records a
/// feature compiles its kernels; an error in doing so is that call's error), shared by all of
/// them and kept until the Context is destroyed.
class Context {
public:
    /// Creates an own instance and device. Errors say which step failed.
    static Result<std::unique_ptr<Context>> create(const ContextOptions& options = {});
    /// Adopts the caller's handles (not destroyed by the Context).
    static Result<std::unique_ptr<Context>> adopt(const ExternalDevice& external);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    const DeviceInfo& info() const;
    VkDevice device() const;
    VkPhysicalDevice physical_device() const;
    VkQueue queue() const;
    std::uint32_t queue_family() const;
    /// Number of validation-layer errors reported so far (0 when validation is off).
    std::uint64_t validation_errors() const;

    /// Where the pipeline cache came from, read when the Context was created.
    const PipelineCacheInfo& pipeline_cache_info() const;
    /// Writes the pipeline cache to its file now (a temporary file in the same folder, renamed
    /// over the old one; the folder is created). Succeeds without writing when the cache is off
    /// or the caller's. The destructor saves too when pipelines were compiled, and ignores a
    /// failure then (a line on stderr when validation is on).
    Status save_pipeline_cache();
    /// Compute pipelines this Context has compiled so far (each kernel once, on first use;
    /// measure_kernel_costs's too).
    std::uint32_t pipelines_created() const;

    /// Allocates a buffer usable as storage, transfer source and destination (size >= 1).
    Result<Buffer> create_buffer(VkDeviceSize size, MemoryKind kind);
    /// Copies host bytes into a device buffer through a staging buffer, and waits. The
    /// Context keeps one upload and one readback staging buffer, grown to the largest transfer
    /// so far (host-visible memory of that size stays allocated until it is destroyed).
    Status upload(const Buffer& dst, const void* data, VkDeviceSize size, VkDeviceSize offset = 0);
    /// Copies device bytes to host memory through the readback staging buffer, and waits.
    Status download(const Buffer& src, void* data, VkDeviceSize size, VkDeviceSize offset = 0);
    /// Records with `record` into a fresh primary command buffer, submits it and waits.
    template <class F>
    Status submit_and_wait(F&& record);

private:
    BROADPHASE_GPU_IMPL(Context);
    Status submit_and_wait_impl(void (*record)(VkCommandBuffer, void*), void* user);
};

template <class F>
Status Context::submit_and_wait(F&& record) {
    return submit_and_wait_impl(
        [](VkCommandBuffer cmd, void* user) { (*static_cast<F*>(user))(cmd); }, &record);
}

/// Which space-filling curve orders the leaves (broadphase/types.hpp).
using broadphase::CodeKind;

/// How pairs are appended to the output (LbvhOptions::pair_append).
enum class PairAppend { automatic, subgroup, atomic };

struct LbvhOptions {
    CodeKind code = CodeKind::morton30;
    /// Adaptive codes (morton30 and hilbert30; lbvh::refine_codes in the CPU twin): when the
    /// first sort leaves a run of gpu_layout::kRefineRun or more equal codes (a dense cluster that
    /// one grid over far-spread centroids puts into a few cells), every box gets a second code in
    /// its run's own centroid bounds and the 64-bit keys are sorted again, so that the
    /// hierarchy splits such runs by position instead of by index. Decided on the GPU: a scene
    /// without long runs pays one pass over the codes (and, in a build that records the
    /// refinement's steps, their launches with no workgroup: refine_on_demand).
    bool refine = true;
    /// Refinement on demand, in the host helpers (find_pairs, build_nodes): until a build of
    /// this Lbvh finds a run of kRefineRun equal codes, a build records the check of the
    /// codes alone, not the refinement's later steps (11 dispatches, launched empty on such a
    /// scene); a build whose check finds one is run again with them (the tree is then the
    /// CPU twin's; find_pairs' report and times cover that second run), and later builds
    /// record them until one finds no long run again. The
    /// recorders (record_build) always record them. False: every build records them.
    bool refine_on_demand = true;
    /// Some boxes may be empty slots: lo.x > hi.x, written as lo = +inf, hi = -inf
    /// (gpu_layout.h, "Empty slots"; gpu::ProxyScene's free slots). Such a leaf overlaps
    /// nothing and sorts after every other box; the codes' sort takes one more bit for it.
    /// Other boxes must be valid as always.
    bool empty_slots = false;
    /// How the all-pairs traversal reserves output slots: `automatic` takes `subgroup` on a GPU
    /// (not a CPU device such as lavapipe, where it measured slower) with
    /// DeviceInfo::subgroup_ballot, else `atomic`. `subgroup`: one atomic per subgroup's
    /// appends (ballot; Lbvh::create refuses it on a device without ballot); `atomic`: one
    /// atomic per pair, on any device. Both store the same pairs (in another order before the
    /// sort) and count them exactly.
    PairAppend pair_append = PairAppend::automatic;
    /// Entries of the all-pairs traversal's per-invocation stack used before a pending subtree
    /// goes to the work queue for the next round (gpu_layout::kPairStack, the default, when 0;
    /// 1 .. kPairStack). A tuning knob: the pairs and the visit count are the same for every
    /// value; a smaller stack holds less per invocation and queues more work items.
    std::uint32_t pair_stack = 0;
    /// Steps one invocation of the all-pairs traversal takes in its first round, from 1 to
    /// gpu_layout::kTraversalBudget, when the pass's TraversalBuffers::budget is 0; 0 takes
    /// kPairGroup times the device's DeviceInfo::traversal_budget, at most kTraversalBudget
    /// (each invocation walks for kPairGroup leaves). Later rounds, which run only for walks
    /// the first round left unfinished, take the device's budget: a walk over half the scene
    /// fans out into many short items instead of a few long ones. A tuning knob: the pairs
    /// and the visit count are the same for every value.
    std::uint32_t pair_budget = 0;
    /// Steps one invocation of a region query or ray cast (LbvhQueries) takes in its first
    /// round, from 1 to gpu_layout::kTraversalBudget, when the pass's TraversalBuffers::budget
    /// is 0; 0 takes gpu_layout::kQueryFirstRound times the device's
    /// DeviceInfo::traversal_budget, at most kTraversalBudget. Later rounds take the device's
    /// budget, as the pairs pass's do. A tuning knob: the ids, hits and region visit counts are
    /// the same for every value.
    std::uint32_t query_budget = 0;
    /// find_pairs: sort the pairs on the GPU, as (i, j) ascending (a radix sort of i << b | j,
    /// the "pair sort" stage). False: each pair once, i < j, in the order the traversal
    /// appended them, which varies from run to run; the pair sort is skipped (0 dispatches), for
    /// callers that hash, count or re-sort the pairs themselves.
    bool sorted_pairs = true;
};

/// GPU time of each stage of the last host-array call, from timestamp queries (ms).
struct StageTimes {
    double bounds = 0, codes = 0, sort = 0;
    double hierarchy = 0;  ///< the hierarchy and its node bounds (one bottom-up pass)
    double pairs = 0;      ///< every attempt of the pairs pass (a pass that overflowed reruns)
    double pair_sort = 0;  ///< find_pairs: the radix sort of the pairs found (GPU)
    double total() const { return bounds + codes + sort + hierarchy + pairs + pair_sort; }
};

/// One stage of the last Lbvh::find_pairs, for instruments (`broadphase bench`): "scene
/// bounds", "codes", "sort", "hierarchy + bounds", "all pairs", "pair sort".
struct StageReport {
    std::string name;
    std::uint32_t dispatches = 0;  ///< compute dispatches recorded (indirect ones included)
    /// Bytes the stage's kernels read and write by their documented access patterns (every
    /// element counted once; the model is stated beside the kernels in gpu/lbvh.cpp and
    /// gpu/radix_sort.hpp), not measured by counters. For the streaming stages this is about
    /// the memory traffic; the traversal's loads of the upper nodes mostly hit caches, so its
    /// bytes per second can pass the copy kernel's.
    std::uint64_t bytes_read = 0, bytes_written = 0;
    double ms = 0;             ///< GPU time from timestamps (0 without timestamps)
    std::uint32_t passes = 0;  ///< sort: radix digit passes over the keys; 0 for the others
};

/// Sizes of the buffers an Lbvh's recorders need for n boxes (bytes; Lbvh::requirements).
struct LbvhRequirements {
    VkDeviceSize boxes = 0;  ///< n GpuBox
    /// The tree: 2n-1 LbvhNode (one when n == 0), then from the next multiple of 256 bytes the
    /// n-1 LbvhWideNode (one when n <= 1) that the traversals read (gpu_layout.h).
    VkDeviceSize nodes = 0;
    VkDeviceSize scratch = 0;  ///< codes, ids, sort ping-pong, histograms, flags, bounds
};

/// The caller's ranges for a build. Every buffer needs VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
/// and TRANSFER_DST, and `scratch` also INDIRECT_BUFFER (the refinement's second sort is
/// launched from a GPU-written count; Context::create_buffer sets all three). Sizes at least
/// those of Lbvh::requirements of the Lbvh that records. `boxes` holds n GpuBox (32 bytes each).
struct LbvhBuildBuffers {
    BufferRange boxes;
    BufferRange nodes;
    BufferRange scratch;
};

/// A built tree in the caller's buffers: `nodes` as written by Lbvh::record_build over n boxes
/// (2n-1 LbvhNode and the LbvhWideNode records after them: LbvhRequirements::nodes bytes).
struct LbvhTree {
    BufferRange nodes;
    std::uint32_t n = 0;
};

/// The work queues of a bounded traversal (gpu_layout.h, "Bounded traversal"): `work` holds
/// traversal_work_bytes(capacity) bytes (STORAGE | TRANSFER_DST), `capacity` items per queue;
/// `rounds` (1 .. kTraversalMaxRounds) dispatches are recorded. An invocation that would expand
/// more than `budget` nodes queues the rest for the next round, so no dispatch runs an
/// unbounded loop; kTraversalMaxRounds rounds always finish, fewer leave the status flag
/// kTraversalIncomplete when a scene needs more (record the pass again with more rounds), and a
/// queue too small for a round leaves kTraversalQueueOverflow (grow `work`). Either flag means
/// the results are incomplete; neither is ever silent.
struct TraversalBuffers {
    BufferRange work;
    std::uint32_t capacity = 0;
    std::uint32_t rounds = gpu_layout::kTraversalRounds;
    /// Steps one invocation takes per round (1 .. kTraversalBudget; larger is capped): nodes
    /// expanded, and in the all-pairs pass also the iterations that store its pairs. 0 takes
    /// the Context's DeviceInfo::traversal_budget, except in the all-pairs pass's first round,
    /// which takes LbvhOptions::pair_budget (by default gpu_layout::kPairGroup times the
    /// device's: each of its invocations walks for that many leaves), and in the first round of
    /// region queries and ray casts, which takes LbvhOptions::query_budget. The results are the
    /// same whatever it is; a smaller one needs more rounds and queue items but balances a
    /// lopsided scene.
    std::uint32_t budget = 0;
};
/// Bytes of a TraversalBuffers::work buffer of `capacity` items per queue (two queues of 8-byte
/// items, then as many 16-byte ray-cast candidates).
VkDeviceSize traversal_work_bytes(std::uint32_t capacity);
/// A work capacity that holds the queued items of every scene seen so far for `queries`
/// queries: max(queries, 2^16), capped so the buffer stays within `max_range` bytes.
std::uint32_t default_traversal_capacity(std::uint64_t queries, VkDeviceSize max_range);
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

/// Reads the outcome of a traversal from its TraversalStatus (downloaded by the caller).
/// Returns an error naming what is incomplete (rounds, queue), or the exact pair total.
Result<std::uint64_t> traversal_outcome(const gpu_layout::TraversalStatus& status,
                                        const char* what);
/// The caller's pair output: `pairs` holds `capacity` pairs as 2 uints (i, j) each, i < j;
/// `status` holds one gpu_layout::TraversalStatus (64 bytes; STORAGE | TRANSFER_DST |
/// INDIRECT_BUFFER usage): its first uint `count` is the number of pairs found saturated at
/// 2^32 - 1, total_lo / total_hi the exact 64-bit number; when it exceeds capacity only
/// `capacity` of them were stored, in no particular order (grow and record the pairs pass
/// again); its `flags` say whether the traversal finished (see TraversalBuffers). Past
/// 2^32 - 1 pairs the 32-bit slot numbers wrap and later pairs overwrite the first slots, so
/// the stored pairs are then not a usable subset: such a total can never fit (capacity * 8
/// bytes is one binding, under 2^32) and the host helpers refuse it by its exact count.
struct LbvhPairBuffers {
    BufferRange pairs;
    std::uint32_t capacity = 0;
    BufferRange status;
    TraversalBuffers traversal;
};
/// Linear BVH on the GPU: Morton codes, radix sort, Karras hierarchy, bottom-up bounds,
/// self-pairs. All data lives in buffers the caller or the host-array helpers provide; the
/// kernels are the Context's, compiled by the first build (those of its code kind and refine
/// option only) and the first pairs pass. Not thread-safe; one recording at a time per command
/// buffer.
class Lbvh {
public:
    static Result<std::unique_ptr<Lbvh>> create(Context& context, const LbvhOptions& options = {});
    ~Lbvh();

    /// Sizes of the buffers this Lbvh's recorders need for n boxes: they depend on its code
    /// kind and refine option, so buffers must be sized by the Lbvh that records into them.
    LbvhRequirements requirements(std::uint32_t n) const;

    /// Records the build over n boxes (n < 2^31). Precondition: writes to `boxes` made
    /// available to compute-shader reads (a barrier with dstStage COMPUTE_SHADER, dstAccess
    /// SHADER_READ). Postcondition: nodes hold the tree; the last command is a compute dispatch
    /// whose writes the caller must make visible (srcStage COMPUTE_SHADER, srcAccess
    /// SHADER_WRITE) before reading nodes. `timestamps` (optional) receives 5 timestamp queries
    /// from `first_query` on (stage boundaries); pass VK_NULL_HANDLE for none. Records nothing
    /// and returns an error when a range is smaller than requirements(n) or misaligned.
    Status record_build(VkCommandBuffer cmd, const LbvhBuildBuffers& buffers, std::uint32_t n,
                        VkQueryPool timestamps = VK_NULL_HANDLE, std::uint32_t first_query = 0);

    /// Records the all-pairs traversal of a built tree, in out.traversal.rounds bounded rounds.
    /// Preconditions: the build's node writes visible to compute-shader reads. Resets `status`
    /// with vkCmdFillBuffer itself. Postcondition as record_build, for `pairs` and `status`
    /// (the last command is a compute dispatch writing status.count and flags). Records nothing
    /// and returns an error when a range is too small or misaligned.
    Status record_pairs(VkCommandBuffer cmd, const LbvhTree& tree, const LbvhPairBuffers& out);

    /// Host-array helper: uploads, builds, finds all pairs (the traversal's round 0 first; the
    /// later rounds, up to kTraversalMaxRounds, in a second submission only when items were
    /// queued; the output and the work queue grown and the pass run again until every pair is
    /// found and fits), downloads, and returns them sorted ascending (with
    /// LbvhOptions::sorted_pairs). Rejects invalid boxes; more pairs than one
    /// storage buffer holds is an error giving the exact count.
    Result<std::vector<Pair>> find_pairs(std::span<const Box> boxes);

    /// Host-array helper: builds and returns the nodes (2n-1) for inspection and tests.
    Result<std::vector<gpu_layout::LbvhNode>> build_nodes(std::span<const Box> boxes);

    /// Stage times of the last find_pairs (all zero when timestamps are unsupported).
    const StageTimes& last_times() const;
    /// Every stage of the last find_pairs: dispatches, modelled bytes, GPU time, sort passes
    /// (of its first pass over the pairs, which the later runs of a grown buffer repeat).
    /// Reads one word back (read_refined); empty before any find_pairs.
    Result<std::vector<StageReport>> last_report();

    /// Whether the last host-array build refined its codes (LbvhOptions::refine: a run of
    /// gpu_layout::kRefineRun equal first codes or more was found, so the "sort" stage also
    /// re-coded the runs and sorted the 64-bit keys). Reads one word back from the device.
    Result<bool> read_refined();

    /// How this Lbvh's all-pairs pass appends: PairAppend::subgroup or PairAppend::atomic
    /// (LbvhOptions::pair_append, `automatic` resolved for the device).
    PairAppend pair_append() const;

private:
    BROADPHASE_GPU_IMPL(Lbvh);
};

/// Converts boxes to the GPU layout (w = 0).
std::vector<gpu_layout::GpuBox> to_gpu_boxes(std::span<const Box> boxes);

}  // namespace broadphase::gpu
