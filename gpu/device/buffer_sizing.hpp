// Size arithmetic of the GPU paths at scale (issue 15, item 6): every byte size in 64 bits,
// every buffer a path binds whole as one storage descriptor checked against
// maxStorageBufferRange through one helper (check_bindings; gpu::check_ranges for the caller's
// ranges words its limit problems the same way), dispatches folded within
// maxComputeWorkGroupCount, pair totals past what one binding stores refused with their exact
// count (exact in 64 bits, also past 2^32), and the largest scene each path takes on a device. Pure
// functions of the sizes and a DeviceLimits value, so that tests check them for any device without
// one (tests/gpu/limits_test.cpp; docs/performance.md, "Scale limits").
//
// Why the limits are what they are:
//   - maxStorageBufferRange is a uint32_t in Vulkan: no binding exceeds 2^32 - 1 bytes on any
//     device, whatever its memory. A "4 GiB" device is one whose range is 2^32 - 1.
//   - One LBVH holds n < 2^31 boxes: its 2n - 1 node indices, and every invocation index
//     (folded group * 256 + local), are uints in the shaders. The host helpers refuse more;
//     a recorder given a tree of n boxes checks its node arrays against the binding limit,
//     which keeps n below 44.7M (bound whole) or 134.2M (split, below). Likewise every other count
//     a shader takes as a uint (pairs, queries, ids, work items) sizes a binding of 4 bytes or more
//     per element, so a count whose binding fits fits a uint too.
//   - The node buffer (48 bytes x (2n - 1)) is the largest per-box binding of every path (boxes
//     32 B, sort keys 8 B, run bounds 24 B, cull slots 4 B, sort state about 2 B per box), so
//     bound whole it sets the largest scene: n <= 44,739,243 for a range of 2^32 - 1 bytes,
//     22,369,621 for 2 GiB, 1,398,101 for 128 MiB (largest_lbvh_boxes).
//   - 100M boxes (3.2 GB of boxes: that binding fits 2^32 - 1) need 9.6 GB of nodes and 6.4 GB
//     of wide records: more than one binding holds on any Vulkan device. So each of a tree's two
//     node arrays may be split over up to kTreeParts descriptors of 2^s elements (part_shift;
//     DeviceInfo::tree_parts; shaders/lbvh/tree_parts.glsl), and then the box buffer sets the
//     largest scene: n <= 134,217,727 at 2^32 - 1. With splitting off, a tree's arrays are bound
//     whole, as above.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "broadphase/gpu.hpp"

namespace broadphase::gpu {

/// The device limits the size checks read: a plain value, so that tests can check the
/// arithmetic against any device (a fake 128 MiB, 2 GiB or 4 GiB range) without one.
struct DeviceLimits {
    /// Bytes one storage descriptor may bind (a uint32_t in Vulkan: at most 2^32 - 1).
    VkDeviceSize max_storage_buffer_range = 0;
    /// maxComputeWorkGroupCount[0] (Vulkan guarantees at least 65,535 in x and in y).
    std::uint32_t max_workgroup_count_x = 65535;
    /// Descriptors a tree's node array or wide array may be split over (DeviceInfo::tree_parts:
    /// 1, or gpu_layout::kTreeParts).
    std::uint32_t tree_parts = 1;
};

/// The limits of a Context's device (its max_storage_buffer_range cap included).
DeviceLimits device_limits(const DeviceInfo& info);

/// The limits of a device whose storage bindings hold `range` bytes, a tree's arrays split over
/// `tree_parts` descriptors (tests, docs).
inline DeviceLimits limits_of_range(VkDeviceSize range, std::uint32_t tree_parts = 1) {
    DeviceLimits l;
    l.max_storage_buffer_range = range;
    l.tree_parts = tree_parts;
    return l;
}

/// log2 of the elements of `element` bytes one part of a split tree array holds: the largest s
/// <= 31 with element << s <= range (layout/common.h, "Split tree bindings").
std::uint32_t part_shift(VkDeviceSize range, VkDeviceSize element);
/// The bytes of one part: element << part_shift(range, element).
VkDeviceSize part_bytes(VkDeviceSize range, VkDeviceSize element);
/// Below this shift a device does not split tree arrays (DeviceInfo::tree_parts stays 1): the
/// parts' offsets would not be multiples of 256 (48 << 4 = 768 is the first that is), and so
/// not of every minStorageBufferOffsetAlignment Vulkan allows.
inline constexpr std::uint32_t kMinPartShift = 4;

/// The largest maxStorageBufferRange Vulkan can report: 2^32 - 1 bytes ("4 GiB").
inline constexpr VkDeviceSize kMaxStorageRange = 0xffffffffull;
/// One LBVH holds at most this many boxes (node and invocation indices are uints).
inline constexpr std::uint32_t kMaxLbvhBoxes = (1u << 31) - 1;

/// One buffer a path binds as one storage descriptor: its name in messages ("the node
/// buffer") and its bytes (0: not bound, not checked). A tree's node or wide array gives its
/// `element` size: it may then be split over DeviceLimits::tree_parts descriptors of
/// part_bytes each (0: always bound whole).
struct BindingSize {
    const char* name;
    VkDeviceSize bytes;
    VkDeviceSize element = 0;
};

/// Whether `binding` fits the device: bytes <= maxStorageBufferRange, or for a splittable array
/// bytes <= tree_parts * part_bytes.
bool binding_fits(const DeviceLimits& limits, const BindingSize& binding);
/// Why it does not fit: binding_over_range, or for an array the device splits "<name> needs
/// <bytes> bytes, over the <k> storage descriptors of <part> bytes (maxStorageBufferRange
/// <range>) it may be split over".
std::string binding_problem(const DeviceLimits& limits, const BindingSize& binding);

/// "<name> needs <bytes> bytes bound as one storage buffer, over the device's
/// maxStorageBufferRange of <range>": the words of every limit error on a binding.
std::string binding_over_range(const std::string& name, VkDeviceSize bytes, VkDeviceSize range);

/// Success, or limit_exceeded "<what>: " followed by binding_problem for every binding that
/// does not fit (joined by "; ").
Status check_bindings(const DeviceLimits& limits, const std::string& what,
                      std::span<const BindingSize> bindings);

/// x * y workgroups that cover `groups` (x <= max_x): how Kernel::dispatch and the kernels that
/// write indirect arguments (count_args.comp, traversal_args.comp) fold a count; the shaders
/// unfold it with linear_group(). Every count is of uint elements, so at most 2^24 groups of
/// 256: y <= 257 with x = 65,535, within the 65,535 in y every device allows. No dispatch size
/// needs a check.
struct GroupCounts {
    std::uint32_t x = 0, y = 0;
};
GroupCounts fold_groups(std::uint64_t groups, std::uint32_t max_x);

/// Bytes of the 2n - 1 nodes of an LBVH over n boxes (48 each; one node when n <= 1).
VkDeviceSize lbvh_nodes_bytes(std::uint64_t n);
/// Bytes of one of the arrays of 16 B per node (2n - 1) into which a tree too large for one
/// descriptor is built or refitted before lbvh_assemble.comp writes it
/// (shaders/lbvh/lbvh_build.glsl): a third of lbvh_nodes_bytes, and less than the box buffer's 32
/// n, so never the binding that limits a scene.
VkDeviceSize soa_array_bytes(std::uint64_t n);
/// A tree's node range (LbvhRequirements::nodes, LbvhTree::nodes) holds the 2n - 1 LbvhNode,
/// then from this offset (lbvh_nodes_bytes rounded up to 256, the largest
/// minStorageBufferOffsetAlignment Vulkan allows) the n - 1 LbvhWideNode of the internal nodes
/// (layout/common.h), lbvh_wide_bytes of them (one record when n <= 1). The two are bound as two
/// descriptors, each checked against maxStorageBufferRange on its own.
VkDeviceSize lbvh_wide_offset(std::uint64_t n);
VkDeviceSize lbvh_wide_bytes(std::uint64_t n);
/// lbvh_wide_offset + lbvh_wide_bytes: the whole node range of a tree over n boxes.
VkDeviceSize lbvh_tree_bytes(std::uint64_t n);
/// The two bindings of a tree's node range: its LbvhNode array and its LbvhWideNode array.
struct TreeBindings {
    BufferRange nodes;
    BufferRange wide;
};
TreeBindings tree_bindings(const BufferRange& tree_nodes, std::uint64_t n);
/// The sizes of a tree's two bindings over n boxes, by name: its LbvhNode array and its
/// LbvhWideNode array, each splittable (RangeNeed::parts of a tree's range,
/// gpu/device/range_check.hpp).
std::array<BindingSize, 2> tree_binding_sizes(std::uint64_t n,
                                              const char* node_name = "the node buffer",
                                              const char* wide_name = "the wide node buffer");

/// Lbvh::requirements without an Lbvh (gpu/lbvh/lbvh.cpp): the buffers a build of n boxes needs
/// with this code kind and refine option; `soa`: the tree is too large for one descriptor, and
/// the scratch also holds the three arrays it is built into (soa_array_bytes each).
LbvhRequirements lbvh_requirements(std::uint32_t n, CodeKind code, bool refine, bool soa);
/// The buffers a build of n boxes binds whole (gpu/lbvh/lbvh.cpp): boxes, nodes, the largest key
/// array of its scratch, the refinement's run bounds, and the sort's scratch (an upper bound of
/// what its passes bind). From a few hundred boxes on (below, the sort's fixed 16 KiB of
/// state is larger) every one of them is at most the node buffer.
std::vector<BindingSize> lbvh_bindings(std::uint32_t n, CodeKind code, bool refine);
/// The largest n (at most kMaxLbvhBoxes) whose lbvh_bindings all fit `limits`.
std::uint32_t largest_lbvh_boxes(const DeviceLimits& limits, CodeKind code, bool refine);

/// Culler::scratch_size (views == 1) and Culler::views_scratch_size without a Culler
/// (gpu/cull/culler.cpp).
VkDeviceSize cull_scratch_size(std::uint32_t n, std::uint32_t mesh_count, std::uint32_t views);

/// The exact pair total of a traversal status: total_lo plus its carries in total_hi (the
/// status's `count` saturates at 2^32 - 1).
std::uint64_t pair_total(const gpu_layout::TraversalStatus& status);
/// The exact count of internal nodes a traversal expanded: visits_lo plus its carries in
/// visits_hi.
std::uint64_t traversal_visits(const gpu_layout::TraversalStatus& status);
/// Pairs one storage binding of 8-byte pairs (or pair keys) holds on the device.
VkDeviceSize max_stored_pairs(const DeviceLimits& limits);
/// Success when `total` pairs fit one binding; else limit_exceeded "<what>: <total> pairs do
/// not fit one storage buffer (device limit <max> pairs of 8 bytes)", the total exact in 64
/// bits also past 2^32.
Status check_pair_total(const DeviceLimits& limits, const std::string& what, std::uint64_t total);

/// The largest n in [0, most] with fits(n), for a `fits` that holds for 0 and, once false,
/// stays false (binary search).
std::uint32_t largest_count(std::uint32_t most, const std::function<bool(std::uint32_t)>& fits);

}  // namespace broadphase::gpu
