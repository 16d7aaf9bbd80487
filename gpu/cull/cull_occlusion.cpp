// Occlusion culling against a depth pyramid (Culler::record with CullOcclusion,
// Culler::record_depth_pyramid): the pyramid's levels, each the maximum of 2 x 2 texels of the
// level below (shaders/cull/depth_pyramid.comp), and the traversal that tests each box's
// projected bounds against the level its size selects (shaders/cull/lbvh_cull_occlusion.comp,
// shaders/cull/occlusion.glsl), in one phase or two (early / late, with visibility stamps).
#include <string>
#include <vector>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/layout/cull.h"
#include "cull/culler_impl.hpp"
#include "device/impl_access.hpp"
#include "device/range_check.hpp"

namespace broadphase::gpu {

namespace culling {

VkDeviceSize pyramid_bytes(std::span<const DepthLevel> levels) {
    return (levels.back().offset + 1ull) * 4;
}

Status check_occlusion(const CullOcclusion& o) {
    const auto fail = [](const std::string& message) {
        return Error{ErrorCode::invalid_argument, "Culler::record: CullOcclusion " + message};
    };
    const auto phase = static_cast<std::uint32_t>(o.phase);
    if (phase > kOcclusionLate) return fail("phase " + std::to_string(phase) + " is not a phase");
    const bool pyramid = o.phase != OcclusionPhase::early;
    const bool stamps = o.phase != OcclusionPhase::single;
    if (pyramid && depth_pyramid_levels(o.width, o.height).empty())
        return fail("size " + std::to_string(o.width) + " x " + std::to_string(o.height) +
                    " is outside 1.." + std::to_string(kMaxDepthImageSize));
    if (stamps && o.frame == 0) return fail("frame must be at least 1 (0 means never seen)");
    return {};
}

}  // namespace culling

Status Culler::record_depth_pyramid(VkCommandBuffer cmd, const BufferRange& pyramid,
                                    std::uint32_t width, std::uint32_t height) {
    Impl& im = *impl_;
    const std::vector<DepthLevel> levels = depth_pyramid_levels(width, height);
    if (levels.empty())
        return Error{ErrorCode::invalid_argument, "Culler::record_depth_pyramid: size " +
                                                      std::to_string(width) + " x " +
                                                      std::to_string(height) + " is outside 1.." +
                                                      std::to_string(kMaxDepthImageSize)};
    const VkDeviceSize bytes = pyramid_bytes(levels);
    if (Status st = check_ranges(impl_of(*im.context), "Culler::record_depth_pyramid",
                                 {{"pyramid", pyramid, bytes}});
        !st)
        return st;
    if (Status st = ready({&im.build_pyramid}); !st) return st;
    const BufferRange range = first_bytes(pyramid, bytes);
    for (std::size_t k = 1; k < levels.size(); ++k) {
        const DepthLevel& from = levels[k - 1];
        const DepthLevel& to = levels[k];
        PushConstants pc{};
        pc.count = to.width * to.height;
        pc.offset = from.offset;
        pc.key_word = from.width;
        pc.key_words = from.height;
        pc.capacity = to.offset;
        pc.shift = to.width;
        compute_barrier(cmd);  // level 0 from the caller, each later level from the last dispatch
        im.build_pyramid.dispatch(cmd, {range}, pc, workgroups(pc.count));
    }
    return {};
}

}  // namespace broadphase::gpu
