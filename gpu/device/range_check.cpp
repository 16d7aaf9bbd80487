// Checks of the caller's buffer ranges (gpu/device/range_check.hpp) and gpu::whole.
#include "device/range_check.hpp"

#include <string>
#include <vector>

#include "device/buffer_sizing.hpp"

namespace broadphase::gpu {

namespace {

// "[begin, end)"
std::string interval(VkDeviceSize begin, VkDeviceSize end) {
    std::string text(1, '[');
    text += std::to_string(begin);
    text += ", ";
    text += std::to_string(end);
    text += ')';
    return text;
}

}  // namespace

BufferRange whole(const Buffer& b) {
    return {b.handle(), 0, b.size()};
}

Status check_ranges(const ContextImpl& context, const char* recorder,
                    std::initializer_list<RangeNeed> needs) {
    const VkDeviceSize alignment = context.info.range_alignment;
    const DeviceLimits limits = device_limits(context.info);
    std::vector<std::string> problems;
    bool only_limits = true;
    auto problem = [&](const RangeNeed& need, const std::string& what, bool limit = false) {
        problems.push_back(std::string(need.name) + " " + what);
        only_limits = only_limits && limit;
    };
    for (const RangeNeed& need : needs) {
        if (need.bytes == 0) continue;
        const BufferRange& r = need.range;
        if (r.buffer == VK_NULL_HANDLE) {
            problem(need, "has no buffer (VK_NULL_HANDLE), needs " + std::to_string(need.bytes) +
                              " bytes");
            continue;
        }
        if (r.size == VK_WHOLE_SIZE) {
            problem(need, "has size VK_WHOLE_SIZE: give its size in bytes (needs " +
                              std::to_string(need.bytes) + ")");
            continue;
        }
        if (r.offset % alignment != 0)
            problem(need, "offset " + std::to_string(r.offset) + " is not a multiple of " +
                              std::to_string(alignment) +
                              " (minStorageBufferOffsetAlignment, at least 4)");
        if (r.size < need.bytes)
            problem(need, "holds " + std::to_string(r.size) + " bytes, needs " +
                              std::to_string(need.bytes));
        // The words of check_bindings (gpu/device/buffer_sizing.hpp): the range's name, or its
        // part's.
        if (need.bound && need.parts.empty() && !binding_fits(limits, {need.name, need.bytes}))
            problems.push_back(binding_problem(limits, {need.name, need.bytes}));
        for (const BindingSize& part : need.parts)
            if (!binding_fits(limits, part)) problems.push_back(binding_problem(limits, part));
    }
    // Two ranges of one recording must not share bytes: each is written or read as its own
    // array, and a shared byte would be both.
    for (auto a = needs.begin(); a != needs.end(); ++a) {
        for (auto b = a + 1; b != needs.end(); ++b) {
            if (a->bytes == 0 || b->bytes == 0 || a->range.buffer == VK_NULL_HANDLE ||
                a->range.buffer != b->range.buffer || a->range.size == VK_WHOLE_SIZE ||
                b->range.size == VK_WHOLE_SIZE)
                continue;
            const VkDeviceSize a_end = a->range.offset + a->bytes;
            const VkDeviceSize b_end = b->range.offset + b->bytes;
            if (a->range.offset < b_end && b->range.offset < a_end)
                problem(*a, "bytes " + interval(a->range.offset, a_end) + " overlap " + b->name +
                                " bytes " + interval(b->range.offset, b_end) +
                                " in the same buffer");
        }
    }
    if (problems.empty()) return {};
    std::string message = std::string(recorder) + ": ";
    for (std::size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
    message += "; nothing was recorded";
    return Error{only_limits ? ErrorCode::limit_exceeded : ErrorCode::invalid_argument, message};
}

}  // namespace broadphase::gpu
