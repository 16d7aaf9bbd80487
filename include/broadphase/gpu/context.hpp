// The Vulkan context of broadphase's GPU classes: an own instance and device or the caller's
// handles, the pipeline cache, the buffers every recorder works on, and the device's facts.
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

#include "broadphase/gpu/layout/common.h"
#include "broadphase/types.hpp"

namespace broadphase::gpu {

/// Declares, in the private part of a public GPU class (Context, Lbvh, Culler, LbvhQueries,
/// MovingScene, ProxyScene), its hidden implementation, as Qt's Q_DECLARE_PRIVATE does: the
/// struct Impl that callers never see, the pointer that owns it, the constructor create() makes
/// the class with, and ImplAccess (gpu/device/impl_access.hpp), the library's own way in.
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
///   automatic: the device's rule: onesweep on NVIDIA, AMD and Intel GPUs (discrete or
///     integrated), whose started workgroups are known to progress while others wait on them;
///     reduce_then_scan elsewhere: Apple, Arm, Qualcomm, Imagination and other GPUs (progress
///     across workgroups not known: waits would end in fallbacks), and CPU devices such as
///     lavapipe, where a waiting workgroup spins on a core the one it waits for needs
///     (measured slower there, docs/performance.md).
/// DeviceInfo::sort_path is the path chosen.
enum class SortPath { automatic, onesweep, reduce_then_scan };

/// "automatic", "onesweep" or "reduce_then_scan".
const char* sort_path_name(SortPath path);

/// How the radix sort ranks each tile: in shared memory without subgroup operations, or with
/// subgroup ballots (the device must have them: DeviceInfo::subgroup_ballot). Sorts are equal
/// either way. As a Context's choice (Tuning::sort_rank), automatic is the device's rule:
/// ballots on GPUs that have them, shared memory on CPU devices, where the two measured alike
/// (docs/performance.md, "The sort reshaped for GPUs"); as one sort's (RadixSort), the
/// Context's. DeviceInfo::sort_subgroup_rank is the ranking chosen.
enum class SortRank { automatic, shared, subgroup };

/// How a Context's work is shaped, asked by the caller (ContextOptions::tuning,
/// ExternalDevice::tuning) and resolved against the device when the Context is created:
/// DeviceInfo reports what was chosen (sort_path, sort_window, sort_subgroup_rank,
/// traversal_budget and the first rounds' budgets, tree_parts). Every value gives the same
/// results; they trade time on a device. The library reads no environment variable for them:
/// the `broadphase` tool passes BROADPHASE_SORT_PATH, BROADPHASE_SORT_WINDOW,
/// BROADPHASE_SORT_RANK and BROADPHASE_TRAVERSAL_BUDGET in as these options.
struct Tuning {
    /// Which radix sort runs (SortPath; automatic: the device's rule).
    SortPath sort_path = SortPath::automatic;
    /// Preceding tiles the onesweep sort's look-back reads per round after its first, 1 to
    /// gpu_layout::kOnesweepWindow (DeviceInfo::sort_window); 0: kOnesweepWindow.
    std::uint32_t sort_window = 0;
    /// How the radix sort ranks its tiles (SortRank, DeviceInfo::sort_subgroup_rank; automatic:
    /// the device's rule). subgroup is refused on a device without subgroup ballot.
    SortRank sort_rank = SortRank::automatic;
    /// Nodes one invocation of a bounded traversal expands per round, 1 to
    /// gpu_layout::kTraversalBudget (DeviceInfo::traversal_budget); 0: the device's rule.
    std::uint32_t traversal_budget = 0;
    /// A tree too large for one storage descriptor is split over several
    /// (DeviceInfo::tree_parts). false: a tree's arrays are always bound whole, and larger
    /// trees are refused with limit_exceeded.
    bool split_tree_bindings = true;
};

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
    /// How the Context's work is shaped (resolved into DeviceInfo).
    Tuning tuning{};
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
    /// How the Context's work is shaped, as ContextOptions::tuning (splitting a tree's
    /// bindings needs no device feature).
    Tuning tuning{};
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
    /// (1 to gpu_layout::kOnesweepWindow): Tuning::sort_window when not 0, else
    /// kOnesweepWindow; a smaller one measures the look-back's cost on a device (1 reads one
    /// tile per round). Sorts are equal whatever it is.
    std::uint32_t sort_window = gpu_layout::kOnesweepWindow;
    /// The radix sort ranks each tile with subgroup ballots (true) or in shared memory without
    /// subgroup operations (false): Tuning::sort_rank, else the device's rule (SortRank).
    /// Sorts are equal either way; a kernel whose subgroups turn out partial or smaller than 8
    /// invocations ranks in shared memory.
    bool sort_subgroup_rank = false;
    /// Nodes one invocation of a bounded traversal (all pairs, region queries, ray casts)
    /// expands per round before it queues the rest (TraversalBuffers::budget when that is 0).
    /// Chosen at creation: Tuning::traversal_budget when not 0, else kTraversalBudget (4096)
    /// on CPU devices, where a round costs a pass over every queued item and the lanes of a
    /// lopsided query are few, and kGpuTraversalBudget on GPUs, where one invocation walking
    /// thousands of dependent nodes idles the device (a box over half of the `level` scene:
    /// docs/performance.md, "Traversal budget").
    std::uint32_t traversal_budget = gpu_layout::kTraversalBudget;
    /// Steps one invocation of the all-pairs pass takes in its first round when neither the
    /// pass (TraversalBuffers::budget) nor the Lbvh (LbvhOptions::pair_budget) says:
    /// gpu_layout::kPairGroup times traversal_budget, at most kTraversalBudget.
    std::uint32_t pair_first_round = gpu_layout::kTraversalBudget;
    /// Steps one invocation of a region query or ray cast takes in its first round when
    /// neither the pass nor LbvhOptions::query_budget says: gpu_layout::kQueryFirstRound times
    /// traversal_budget, at most kTraversalBudget.
    std::uint32_t query_first_round = gpu_layout::kTraversalBudget;
    /// Storage descriptors a tree's node array and its wide-node array may each be split over
    /// when one descriptor cannot hold it (maxStorageBufferRange: 2^32 - 1 bytes at most, and
    /// 100M boxes need 9.6 GB of nodes): gpu_layout::kTreeParts where the option allows it
    /// (Tuning::split_tree_bindings) and the device allows 21 storage
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

}  // namespace broadphase::gpu
