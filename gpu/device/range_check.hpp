// The check every public recorder runs on its caller's buffer ranges before it records
// anything: present, explicit size, offset aligned for storage descriptors (and for fills,
// updates and indirect arguments), large enough, bound sizes within maxStorageBufferRange, and
// no two ranges of one recording overlapping in the same buffer.
#pragma once

#include <initializer_list>

#include <span>

#include "device/buffer_sizing.hpp"
#include "device/context_impl.hpp"

namespace broadphase::gpu {

/// One range a recorder uses: its name in messages ("scratch"), the range, the bytes the
/// recording touches from its offset, and whether it is bound whole as one storage descriptor
/// (then `bytes` must fit maxStorageBufferRange). A range bound as several descriptors names
/// them in `parts` (a tree's node range: tree_binding_sizes, gpu/device/buffer_sizing.hpp), each of
/// which must fit instead. A range of 0 needed bytes is not used and not checked.
struct RangeNeed {
    const char* name;
    const BufferRange& range;
    VkDeviceSize bytes;
    bool bound = true;
    std::span<const BindingSize> parts = {};
};

/// Success, or one Error naming every problem of the ranges at once, prefixed by `recorder`
/// ("Lbvh::record_build: scratch holds 1024 bytes, needs 4096"). invalid_argument, or
/// limit_exceeded when the only problems are bound sizes over maxStorageBufferRange.
Status check_ranges(const ContextImpl& context, const char* recorder,
                    std::initializer_list<RangeNeed> needs);

/// `range` cut to its first `bytes` bytes (at least 4): what a recorder binds once
/// check_ranges has passed.
inline BufferRange first_bytes(const BufferRange& range, VkDeviceSize bytes) {
    return {range.buffer, range.offset, bytes < 4 ? 4 : bytes};
}

}  // namespace broadphase::gpu
