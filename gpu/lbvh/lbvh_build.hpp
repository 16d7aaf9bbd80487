// The GPU LBVH build as the library's other recorders use it: the build with its dispatches
// gated on a decision taken on the GPU (DispatchGate), for recorders that hold both a refit and
// a rebuild in one command buffer (gpu/frames/), the assembling pass of a split tree, the
// buffers a build binds whole, its modelled traffic, and the helpers' own node buffers.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "broadphase/gpu/lbvh.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#include "device/buffer_sizing.hpp"
#include "device/kernels.hpp"
#include "instruments/traffic.hpp"

namespace broadphase::gpu {

/// The timestamp queries Lbvh::record_build writes: its stage boundaries (bounds, codes, sort,
/// hierarchy + bounds), from `first_query` on.
inline constexpr std::uint32_t kBuildQueries = 5;

/// Lbvh::record_build with every dispatch captured or made indirect by `gate` (the transfer
/// fills of the build's scratch are not gated: they touch scratch only). Nodes are written
/// by gated dispatches alone. Checks the ranges as record_build does.
Status record_gated_build(Lbvh& lbvh, VkCommandBuffer cmd, const LbvhBuildBuffers& buffers,
                          std::uint32_t n, DispatchGate& gate);

/// Modelled traffic of one build of n boxes (gpu/lbvh/lbvh.cpp, stage_traffic: scene bounds, codes,
/// sort, hierarchy + bounds; `refined`: its codes were refined), and the sort's digit passes.
/// The transfer fills of its scratch are not included (build_fill_traffic).
Traffic build_traffic(const Lbvh& lbvh, std::uint32_t n, bool refined, std::uint32_t* passes);
/// lbvh_bindings (gpu/device/buffer_sizing.hpp) of this Lbvh's code kind and refine option: the
/// buffers a build of n boxes binds whole, for the host paths' limit checks.
std::vector<BindingSize> build_bindings(const Lbvh& lbvh, std::uint32_t n);
/// Bytes the build's ungated transfer fills write (the scene bounds' 32 bytes, the refine word
/// when codes may be refined, the split flags): recorded even when a gate empties the build.
Traffic build_fill_traffic(const Lbvh& lbvh, std::uint32_t n);
/// Whether the last build of n boxes into `scratch` refined its codes (one word read back).
Result<bool> read_build_refined(Lbvh& lbvh, const Buffer& scratch, std::uint32_t n);
/// The all-pairs passes find_pairs submitted with a build that left out the refinement's
/// steps and whose check found a long run (LbvhOptions::refine_on_demand), and the status of
/// the last: the refine arguments' gate holds such a pass back (no round launched, nothing
/// visited, no pair) before the build is continued.
struct HeldBackPasses {
    std::uint32_t count = 0;
    gpu_layout::TraversalStatus last{};
};
HeldBackPasses held_back_passes(const Lbvh& lbvh);
/// lbvh_assemble.comp as a Kernel of `context` (its split variant binds the tree's arrays).
Kernel assemble_kernel(Context& context);
/// Records lbvh_assemble over a tree of n boxes: the node arrays (lo, hi, link; a refit, which
/// keeps the links, binds lo again for link) copied into the tree's nodes and wide records, or
/// with `bounds_only` (a refit) their bounds alone.
void record_assemble(const Kernel& assemble, VkCommandBuffer cmd,
                     const std::array<BufferRange, 3>& arrays, const TreeBindings& tree,
                     std::uint32_t n, bool bounds_only, DispatchGate* gate = nullptr);
/// The lo and hi arrays (soa_array_bytes(n) each) that a build of n boxes too large for one
/// descriptor writes in `scratch` (lbvh_build_soa.comp) and that are idle between builds: a
/// moving scene lends them to its refits. Empty ranges when the tree is not split.
std::array<BufferRange, 2> build_soa_bounds(const Lbvh& lbvh, const BufferRange& scratch,
                                            std::uint32_t n);

/// The n - 1 LbvhWideNode records of a tree over n boxes held in `tree_buffer` (a node range
/// from offset 0: the helpers' own buffers), read back for tests; empty when n < 2.
Result<std::vector<gpu_layout::LbvhWideNode>> download_wide_nodes(Context& context,
                                                                  const Buffer& tree_buffer,
                                                                  std::uint32_t n);
/// The node buffer of an Lbvh's host-array helpers (the tree of its last build_nodes or
/// find_pairs, from offset 0).
const Buffer& helper_nodes(const Lbvh& lbvh);
/// A MovingScene's node buffer (the tree MovingScene::tree() names, from offset 0).
const Buffer& helper_nodes(const MovingScene& scene);

/// Compiles (or finds) the kernels of the Lbvh's builds and pairs passes, with their split
/// variants where trees of `tree_boxes` boxes need them, for recorders that must know before
/// recording anything that every stage they record can be recorded.
Status ready_lbvh_kernels(Lbvh& lbvh, std::uint64_t tree_boxes);

}  // namespace broadphase::gpu
