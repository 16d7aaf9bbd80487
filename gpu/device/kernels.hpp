// Compute kernels: one pipeline per embedded SPIR-V module, all bindings storage buffers set
// with push descriptors, one PushConstants block, and 2D-folded dispatches so that any
// workgroup count fits maxComputeWorkGroupCount (shaders unfold with linear_group()). The
// pipelines are the Context's, compiled on the first ready() of a kernel and shared by every
// object on that Context.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "device/context_impl.hpp"

namespace broadphase::gpu {

/// Makes the dispatches recorded through it conditional on a decision taken on the GPU, so that
/// a command buffer can hold both paths of a branch without the host in between. In `capture`
/// mode a dispatch runs directly and its (x, y, 1) group counts are appended to `counts`; in
/// `indirect` mode the k-th dispatch becomes vkCmdDispatchIndirect of slot k of `args` (one
/// VkDispatchIndirectCommand per slot), which a kernel fills with counts[k] or zeros. The same
/// recording code run twice with the same sizes visits the same slots in the same order.
struct DispatchGate {
    enum class Mode { capture, indirect };
    Mode mode = Mode::capture;
    VkBuffer args = VK_NULL_HANDLE;
    std::vector<VkDispatchIndirectCommand> counts;  ///< capture: appended; indirect: the table
    std::uint32_t next = 0;                         ///< indirect: the next slot
};

/// A kernel's split variant (layout/common.h, "Split tree bindings"; shaders/lbvh/tree_parts.glsl):
/// the same source compiled with -DTREE_SPLIT (shaders::NAME_split), and which of its bindings hold
/// a tree's LbvhNode array and LbvhWideNode array (bit i: binding i). Each of those is then
/// bound as kTreeParts descriptors: part k of an array of E-byte elements starts k * (E << s)
/// bytes in (s: ContextImpl::node_shift or wide_shift), the parts past its end repeat part 0.
struct TreeSplit {
    std::span<const std::uint32_t> spirv;
    std::uint32_t node_bindings = 0;
    std::uint32_t wide_bindings = 0;
};

/// A compute kernel over `bindings` storage buffers (binding i = i-th range of dispatch), as an
/// object holds it: what to compile, and the Context's pipeline once ready() found or compiled
/// it. Recorders call ready() on every kernel they use before recording anything, so that a
/// compile error is their error and nothing is half recorded.
class Kernel {
public:
    Kernel() = default;
    /// A kernel of `context`, not compiled yet. `spirv` must outlive the Context (the embedded
    /// shaders:: arrays); `name` is for error messages.
    Kernel(Context& context, std::span<const std::uint32_t> spirv, std::uint32_t bindings,
           const char* name, const TreeSplit& split = {});

    /// A kernel compiled now (tests and eager callers).
    static Result<Kernel> create(Context& context, std::span<const std::uint32_t> spirv,
                                 std::uint32_t bindings, const char* name);

    /// Finds or compiles the pipeline (the first call of any kernel of this SPIR-V on the
    /// Context compiles it). Cheap once ready.
    Status ready() const;
    bool is_ready() const { return compiled_ != nullptr; }
    /// Whether a dispatch over a tree of `tree_boxes` boxes runs the split variant: the kernel
    /// has one, the device splits (DeviceInfo::tree_parts > 1), and the tree's node or wide
    /// array is larger than one descriptor may bind.
    bool needs_split(std::uint64_t tree_boxes) const;
    /// ready(), and the split variant's pipeline when needs_split(tree_boxes).
    Status ready_for_tree(std::uint64_t tree_boxes) const;

    /// Binds, pushes descriptors and constants, and dispatches `groups` workgroups (any
    /// count: folded into x * y). Does nothing when groups == 0. With a gate, the dispatch is
    /// captured or made indirect (see DispatchGate). Precondition: ready() succeeded.
    void dispatch(VkCommandBuffer cmd, std::initializer_list<BufferRange> buffers,
                  const gpu_layout::PushConstants& push, std::uint32_t groups,
                  DispatchGate* gate = nullptr) const;
    /// Binds as dispatch, then dispatches the VkDispatchIndirectCommand at `args` (written
    /// on the GPU, e.g. by RadixSort::record_count_args; folded x * y like dispatch).
    void dispatch_indirect(VkCommandBuffer cmd, std::initializer_list<BufferRange> buffers,
                           const gpu_layout::PushConstants& push, const BufferRange& args) const;

private:
    void bind(VkCommandBuffer cmd, std::initializer_list<BufferRange> buffers,
              const gpu_layout::PushConstants& push) const;

    ContextImpl* context_ = nullptr;
    std::span<const std::uint32_t> spirv_;
    std::uint32_t bindings_ = 0;
    const char* name_ = "";
    TreeSplit split_;
    mutable const CompiledKernel* compiled_ = nullptr;
    mutable const CompiledKernel* compiled_split_ = nullptr;
};

/// ready() of each kernel, stopping at the first error.
Status ready(std::initializer_list<const Kernel*> kernels);
/// ready_for_tree(tree_boxes) of each kernel, stopping at the first error.
Status ready_for_tree(std::uint64_t tree_boxes, std::initializer_list<const Kernel*> kernels);

/// ceil(a / b) for unsigned values.
constexpr std::uint64_t div_up(std::uint64_t a, std::uint64_t b) {
    return (a + b - 1) / b;
}
/// a rounded up to a multiple of b.
constexpr std::uint64_t align_up(std::uint64_t a, std::uint64_t b) {
    return div_up(a, b) * b;
}
/// The workgroups of kWorkgroupSize invocations that cover `count` items (one per invocation).
/// Dispatches fold counts past one dimension's limit themselves (Kernel::dispatch).
constexpr std::uint32_t workgroups(std::uint64_t count) {
    return static_cast<std::uint32_t>(div_up(count, gpu_layout::kWorkgroupSize));
}

/// Carves consecutive ranges out of one range (e.g. a scratch range). Each starts 256 bytes
/// after an aligned one (256 is the largest minStorageBufferOffsetAlignment Vulkan allows), so
/// every range taken from an aligned base is aligned; used() is relative to the base.
class Arena {
public:
    static constexpr VkDeviceSize kAlignment = 256;
    explicit Arena(VkBuffer buffer = VK_NULL_HANDLE, VkDeviceSize base = 0)
        : buffer_(buffer), base_(base) {}
    explicit Arena(const BufferRange& base) : buffer_(base.buffer), base_(base.offset) {}
    BufferRange take(VkDeviceSize size) {
        BufferRange r{buffer_, base_ + offset_, std::max<VkDeviceSize>(size, 4)};
        offset_ = align_up(offset_ + r.size, kAlignment);
        return r;
    }
    VkDeviceSize used() const { return offset_; }

private:
    VkBuffer buffer_;
    VkDeviceSize base_;
    VkDeviceSize offset_ = 0;
};

/// Fills a range with a 32-bit value (vkCmdFillBuffer).
void fill(VkCommandBuffer cmd, const BufferRange& range, std::uint32_t value);

}  // namespace broadphase::gpu
