// Size arithmetic of the GPU paths at scale (gpu/device/buffer_sizing.hpp). The per-path sizes that
// need a layout private to a path live beside it (lbvh_requirements in gpu/lbvh/lbvh.cpp,
// cull_scratch_size in gpu/cull/culler.cpp).
#include "device/buffer_sizing.hpp"

#include <algorithm>

#include "device/kernels.hpp"

namespace broadphase::gpu {

using namespace gpu_layout;

DeviceLimits device_limits(const DeviceInfo& info) {
    DeviceLimits l;
    l.max_storage_buffer_range = info.max_storage_buffer_range;
    l.max_workgroup_count_x = std::max<std::uint32_t>(info.max_workgroup_count_x, 1);
    l.tree_parts = std::max<std::uint32_t>(info.tree_parts, 1);
    return l;
}

std::uint32_t part_shift(VkDeviceSize range, VkDeviceSize element) {
    std::uint32_t s = 0;
    while (s < 31 && (element << (s + 1)) <= range) ++s;
    return s;
}

VkDeviceSize part_bytes(VkDeviceSize range, VkDeviceSize element) {
    return element << part_shift(range, element);
}

bool binding_fits(const DeviceLimits& limits, const BindingSize& binding) {
    if (binding.bytes <= limits.max_storage_buffer_range) return true;
    if (binding.element == 0 || limits.tree_parts <= 1) return false;
    return binding.bytes <=
           limits.tree_parts * part_bytes(limits.max_storage_buffer_range, binding.element);
}

std::string binding_problem(const DeviceLimits& limits, const BindingSize& binding) {
    if (binding.element == 0 || limits.tree_parts <= 1)
        return binding_over_range(binding.name, binding.bytes, limits.max_storage_buffer_range);
    return std::string(binding.name) + " needs " + std::to_string(binding.bytes) +
           " bytes, over the " + std::to_string(limits.tree_parts) + " storage descriptors of " +
           std::to_string(part_bytes(limits.max_storage_buffer_range, binding.element)) +
           " bytes (maxStorageBufferRange " + std::to_string(limits.max_storage_buffer_range) +
           ") it may be split over";
}

std::string binding_over_range(const std::string& name, VkDeviceSize bytes, VkDeviceSize range) {
    return name + " needs " + std::to_string(bytes) +
           " bytes bound as one storage buffer, over the device's maxStorageBufferRange of " +
           std::to_string(range);
}

Status check_bindings(const DeviceLimits& limits, const std::string& what,
                      std::span<const BindingSize> bindings) {
    std::string problems;
    for (const BindingSize& b : bindings) {
        if (binding_fits(limits, b)) continue;
        if (!problems.empty()) problems += "; ";
        problems += binding_problem(limits, b);
    }
    if (problems.empty()) return {};
    return Error{ErrorCode::limit_exceeded, what + ": " + problems};
}

GroupCounts fold_groups(std::uint64_t groups, std::uint32_t max_x) {
    if (groups == 0) return {};
    const std::uint64_t x = std::min<std::uint64_t>(groups, std::max<std::uint32_t>(max_x, 1));
    return {static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(div_up(groups, x))};
}

VkDeviceSize lbvh_nodes_bytes(std::uint64_t n) {
    return (2 * std::max<std::uint64_t>(n, 1) - 1) * sizeof(LbvhNode);
}

VkDeviceSize soa_array_bytes(std::uint64_t n) {
    return (2 * std::max<std::uint64_t>(n, 1) - 1) * 16;
}

VkDeviceSize lbvh_wide_offset(std::uint64_t n) {
    return (lbvh_nodes_bytes(n) + 255) / 256 * 256;
}

VkDeviceSize lbvh_wide_bytes(std::uint64_t n) {
    return (std::max<std::uint64_t>(n, 2) - 1) * sizeof(LbvhWideNode);
}

VkDeviceSize lbvh_tree_bytes(std::uint64_t n) {
    return lbvh_wide_offset(n) + lbvh_wide_bytes(n);
}

TreeBindings tree_bindings(const BufferRange& tree_nodes, std::uint64_t n) {
    return {{tree_nodes.buffer, tree_nodes.offset, lbvh_nodes_bytes(n)},
            {tree_nodes.buffer, tree_nodes.offset + lbvh_wide_offset(n), lbvh_wide_bytes(n)}};
}

std::array<BindingSize, 2> tree_binding_sizes(std::uint64_t n, const char* node_name,
                                              const char* wide_name) {
    return {{{node_name, lbvh_nodes_bytes(n), sizeof(LbvhNode)},
             {wide_name, lbvh_wide_bytes(n), sizeof(LbvhWideNode)}}};
}

std::uint32_t largest_lbvh_boxes(const DeviceLimits& limits, CodeKind code, bool refine) {
    return largest_count(kMaxLbvhBoxes, [&](std::uint32_t n) {
        const std::vector<BindingSize> b = lbvh_bindings(n, code, refine);
        return static_cast<bool>(check_bindings(limits, "", b));
    });
}

std::uint64_t pair_total(const TraversalStatus& status) {
    return (std::uint64_t(status.total_hi) << 32) | status.total_lo;
}

std::uint64_t traversal_visits(const TraversalStatus& status) {
    return (std::uint64_t(status.visits_hi) << 32) | status.visits_lo;
}

VkDeviceSize max_stored_pairs(const DeviceLimits& limits) {
    return limits.max_storage_buffer_range / 8;
}

Status check_pair_total(const DeviceLimits& limits, const std::string& what, std::uint64_t total) {
    const VkDeviceSize most = max_stored_pairs(limits);
    if (total <= most) return {};
    return Error{ErrorCode::limit_exceeded,
                 what + ": " + std::to_string(total) +
                     " pairs do not fit one storage buffer (device limit " + std::to_string(most) +
                     " pairs of 8 bytes)"};
}

std::uint32_t largest_count(std::uint32_t most, const std::function<bool(std::uint32_t)>& fits) {
    if (fits(most)) return most;
    std::uint32_t lo = 0, hi = most;  // fits(lo), !fits(hi)
    while (hi - lo > 1) {
        const std::uint32_t mid = lo + (hi - lo) / 2;
        (fits(mid) ? lo : hi) = mid;
    }
    return lo;
}

}  // namespace broadphase::gpu
