// Buffers that grow on demand, for the host helpers and the frames: a buffer is reallocated
// only when it is smaller than asked, and its contents are then lost (callers grow a buffer
// before they fill it). The old buffer is freed before the new one is allocated, so that the
// two never hold device memory at once.
#pragma once

#include <algorithm>
#include <utility>

#include "broadphase/gpu.hpp"

namespace broadphase::gpu {

/// Makes `buffer` hold at least `need` bytes of `kind` memory; a new buffer gets `allocate`
/// bytes (at least `need`).
inline Status grow_buffer(Context& context, Buffer& buffer, VkDeviceSize need,
                          MemoryKind kind = MemoryKind::device, VkDeviceSize allocate = 0) {
    if (buffer.handle() && buffer.size() >= need) return {};
    buffer = Buffer();
    auto made = context.create_buffer(std::max(need, allocate), kind);
    if (!made) return made.error();
    buffer = std::move(made.value());
    return {};
}

/// A host-visible buffer of at least `need` bytes, grown with a quarter of headroom (staging
/// and read-back buffers: not bound as storage, so not limited by maxStorageBufferRange).
inline Status grow_host_buffer(Context& context, Buffer& buffer, VkDeviceSize need,
                               MemoryKind kind) {
    return grow_buffer(context, buffer, need, kind, std::max<VkDeviceSize>(need + need / 4, 256));
}

}  // namespace broadphase::gpu
