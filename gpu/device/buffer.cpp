// Buffers: one VkDeviceMemory per buffer (memory type chosen by MemoryKind), persistent
// mapping for host-visible kinds, and staged upload/download through the context's queue.
#include <algorithm>
#include <cstring>
#include <string>

#include "device/context_impl.hpp"

namespace broadphase::gpu {

Buffer::Buffer(Buffer&& other) noexcept {
    *this = std::move(other);
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
    if (this != &other) {
        this->~Buffer();
        device_ = std::exchange(other.device_, VK_NULL_HANDLE);
        buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
        memory_ = std::exchange(other.memory_, VK_NULL_HANDLE);
        size_ = std::exchange(other.size_, 0);
        mapped_ = std::exchange(other.mapped_, nullptr);
    }
    return *this;
}

Buffer::~Buffer() {
    if (!device_) return;
    if (buffer_) vkDestroyBuffer(device_, buffer_, nullptr);
    if (memory_) vkFreeMemory(device_, memory_, nullptr);
    device_ = VK_NULL_HANDLE;
    buffer_ = VK_NULL_HANDLE;
    memory_ = VK_NULL_HANDLE;
    mapped_ = nullptr;
}

namespace {

std::optional<std::uint32_t> find_memory_type(const VkPhysicalDeviceMemoryProperties& memory,
                                              std::uint32_t allowed, VkMemoryPropertyFlags want) {
    for (std::uint32_t i = 0; i < memory.memoryTypeCount; ++i)
        if ((allowed & (1u << i)) && (memory.memoryTypes[i].propertyFlags & want) == want) return i;
    return std::nullopt;
}

}  // namespace

Result<Buffer> Context::create_buffer(VkDeviceSize size, MemoryKind kind) {
    Impl& impl = *impl_;
    // A size no memory heap could hold is refused before Vulkan sees it (an allocation larger
    // than its heap is invalid usage, not an out-of-memory result).
    VkDeviceSize largest_heap = 0;
    for (std::uint32_t h = 0; h < impl.memory.memoryHeapCount; ++h)
        largest_heap = std::max(largest_heap, impl.memory.memoryHeaps[h].size);
    if (size > largest_heap)
        return Error{ErrorCode::out_of_memory,
                     "a buffer of " + std::to_string(size) +
                         " bytes is larger than the device's largest memory heap (" +
                         std::to_string(largest_heap) + " bytes)"};
    // One buffer of one allocation (a 100M-box tree's node range is 16 GB): within the
    // device's maxBufferSize, or refused naming it. maxMemoryAllocationSize is a soft limit:
    // the spec lets an allocation past it succeed or fail with VK_ERROR_OUT_OF_DEVICE_MEMORY,
    // and NVIDIA's drivers report about 4 GiB but allocate more, so a larger buffer is tried,
    // and its failure names the limit (below).
    const DeviceInfo& limits = impl.info;
    if (size > limits.max_buffer_size)
        return Error{ErrorCode::limit_exceeded, "a buffer of " + std::to_string(size) +
                                                    " bytes is larger than the device's "
                                                    "maxBufferSize (" +
                                                    std::to_string(limits.max_buffer_size) +
                                                    " bytes)"};
    Buffer buffer;
    buffer.device_ = impl.device;
    buffer.size_ = std::max<VkDeviceSize>(size, 4);
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = buffer.size_;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    BP_VK_TRY(vkCreateBuffer(impl.device, &info, nullptr, &buffer.buffer_), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(impl.device, buffer.buffer_, &req);

    std::optional<std::uint32_t> type;
    switch (kind) {
        case MemoryKind::device:
            type = find_memory_type(impl.memory, req.memoryTypeBits,
                                    VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
            break;
        case MemoryKind::upload:
            type = find_memory_type(
                impl.memory, req.memoryTypeBits,
                VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
            break;
        case MemoryKind::readback:
            type = find_memory_type(impl.memory, req.memoryTypeBits,
                                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                        VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                        VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
            if (!type)
                type = find_memory_type(
                    impl.memory, req.memoryTypeBits,
                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
            break;
    }
    if (!type) type = find_memory_type(impl.memory, req.memoryTypeBits, 0);
    if (!type) return Error{ErrorCode::unsupported, "no memory type for a buffer"};

    const VkDeviceSize heap =
        impl.memory.memoryHeaps[impl.memory.memoryTypes[*type].heapIndex].size;
    if (req.size > heap)
        return Error{ErrorCode::out_of_memory, "a buffer of " + std::to_string(req.size) +
                                                   " bytes is larger than its memory heap (" +
                                                   std::to_string(heap) + " bytes)"};
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = *type;
    VkResult r = vkAllocateMemory(impl.device, &alloc, nullptr, &buffer.memory_);
    if (r != VK_SUCCESS && req.size > limits.max_memory_allocation_size)
        return Error{ErrorCode::limit_exceeded,
                     "vkAllocateMemory of " + std::to_string(req.size) + " bytes failed (" +
                         vk_result_name(r) +
                         "): larger than the device's "
                         "maxMemoryAllocationSize (" +
                         std::to_string(limits.max_memory_allocation_size) + " bytes)"};
    if (r != VK_SUCCESS)
        return vk_error(r, "vkAllocateMemory of " + std::to_string(req.size) + " bytes");
    BP_VK_TRY(vkBindBufferMemory(impl.device, buffer.buffer_, buffer.memory_, 0),
              "vkBindBufferMemory");
    if (kind != MemoryKind::device)
        BP_VK_TRY(vkMapMemory(impl.device, buffer.memory_, 0, VK_WHOLE_SIZE, 0, &buffer.mapped_),
                  "vkMapMemory");
    return buffer;
}

Status upload_by(Context& context, const Buffer& dst, VkDeviceSize size, VkDeviceSize offset,
                 const std::function<void(void*)>& write) {
    if (size == 0) return {};
    if (offset + size > dst.size())
        return Error{ErrorCode::invalid_argument, "upload past the end of a buffer"};
    if (dst.mapped()) {
        write(static_cast<char*>(dst.mapped()) + offset);
        return {};
    }
    Buffer& staging = impl_of(context).upload_staging;
    if (staging.size() < size) {
        staging = Buffer();  // the old one first: both may not fit together
        auto grown = context.create_buffer(size, MemoryKind::upload);
        if (!grown) return grown.error();
        staging = std::move(grown.value());
    }
    write(staging.mapped());
    return context.submit_and_wait([&](VkCommandBuffer cmd) {
        VkBufferCopy copy{0, offset, size};
        vkCmdCopyBuffer(cmd, staging.handle(), dst.handle(), 1, &copy);
    });
}

Status Context::upload(const Buffer& dst, const void* data, VkDeviceSize size,
                       VkDeviceSize offset) {
    return upload_by(*this, dst, size, offset,
                     [&](void* destination) { std::memcpy(destination, data, size); });
}

void write_gpu_boxes(std::span<const Box> boxes, gpu_layout::GpuBox* out) {
    for (const Box& b : boxes)
        *out++ = {{b.min.x, b.min.y, b.min.z, 0}, {b.max.x, b.max.y, b.max.z, 0}};
}

Status upload_boxes(Context& context, const Buffer& dst, std::span<const Box> boxes) {
    return upload_by(context, dst, boxes.size() * sizeof(gpu_layout::GpuBox), 0,
                     [&](void* destination) {
                         write_gpu_boxes(boxes, static_cast<gpu_layout::GpuBox*>(destination));
                     });
}

Status download_by(Context& context, const Buffer& src, VkDeviceSize size, VkDeviceSize offset,
                   const std::function<void(const void*)>& read) {
    if (size == 0) return {};
    if (offset + size > src.size())
        return Error{ErrorCode::invalid_argument, "download past the end of a buffer"};
    if (src.mapped()) {
        read(static_cast<const char*>(src.mapped()) + offset);
        return {};
    }
    Buffer& staging = impl_of(context).readback_staging;
    if (staging.size() < size) {
        staging = Buffer();
        auto grown = context.create_buffer(size, MemoryKind::readback);
        if (!grown) return grown.error();
        staging = std::move(grown.value());
    }
    Status s = context.submit_and_wait([&](VkCommandBuffer cmd) {
        VkBufferCopy copy{offset, 0, size};
        vkCmdCopyBuffer(cmd, src.handle(), staging.handle(), 1, &copy);
        host_barrier(cmd);
    });
    if (!s) return s;
    read(staging.mapped());
    return {};
}

Status Context::download(const Buffer& src, void* data, VkDeviceSize size, VkDeviceSize offset) {
    return download_by(*this, src, size, offset,
                       [&](const void* source) { std::memcpy(data, source, size); });
}

}  // namespace broadphase::gpu
