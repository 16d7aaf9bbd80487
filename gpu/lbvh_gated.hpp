// The GPU LBVH build with its dispatches gated on a decision taken on the GPU (DispatchGate),
// for recorders that hold both a refit and a rebuild in one command buffer (gpu/moving_scene.cpp).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "broadphase/gpu.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#include "kernels.hpp"
#include "scale.hpp"
#include "traffic.hpp"

namespace broadphase::gpu {

/// The timestamp queries Lbvh::record_build writes: its stage boundaries (bounds, codes, sort,
/// hierarchy + bounds), from `first_query` on.
inline constexpr std::uint32_t kBuildQueries = 5;

/// Lbvh::record_build with every dispatch captured or made indirect by `gate` (the transfer
/// fills of the build's scratch are not gated: they touch scratch only). Nodes are written
/// by gated dispatches alone. Checks the ranges as record_build does.
Status record_gated_build(Lbvh& lbvh, VkCommandBuffer cmd, const LbvhBuildBuffers& buffers,
                          std::uint32_t n, DispatchGate& gate);

/// What gpu::ProxyScene adds to an all-pairs pass (shaders/lbvh_pairs.comp): `slots` (one
/// gpu_layout::ProxySlot per leaf id of the tree) filters the pairs and writes handles; with
/// `cross` the tree's leaves are tested against `other` (its ProxySlots in `other_slots`)
/// instead of against each other; with `append` the pass continues the pair counter of the
/// status (the list of the passes before it) and counts no visits. With key_bits b in 1..31
/// each pair (i, j) is stored as the 64-bit key i << b | j (kPairsKeys; ids below 2^b).
/// Bits of j in a pair key i << b | j (written by the pairs pass, kPairsKeys): j < n needs
/// bit_width(n - 1).
inline std::uint32_t pair_key_bits(std::uint32_t n) {
    return std::max<std::uint32_t>(std::bit_width(n > 0 ? n - 1 : 0u), 1);
}

/// The pair of a key (low word, high word) of shaders/lbvh_pairs.glsl with kPairsKeys.
inline Pair unpack_pair_key(std::uint32_t lo, std::uint32_t hi, std::uint32_t b) {
    return {(lo >> b) | (hi << (32 - b)), lo & ((1u << b) - 1)};
}

/// The pairs of the `count` keys (two words each, low first) at `keys`: host memory the keys
/// were downloaded to, read where they lie.
inline std::vector<Pair> unpack_pair_keys(const void* keys, std::uint64_t count, std::uint32_t b) {
    std::vector<Pair> pairs;
    pairs.reserve(count);
    const auto* words = static_cast<const unsigned char*>(keys);
    for (std::uint64_t k = 0; k < count; ++k) {
        std::uint32_t w[2];
        std::memcpy(w, words + 8 * k, 8);
        pairs.push_back(unpack_pair_key(w[0], w[1], b));
    }
    return pairs;
}

struct ProxyPairs {
    BufferRange slots{};
    bool cross = false;
    bool append = false;
    std::uint32_t key_bits = 0;
    LbvhTree other{};
    BufferRange other_slots{};
    /// A continuation (Lbvh::find_pairs): the rounds from this one on, over the queue and
    /// counters a pass recorded with fewer rounds left in the status (nothing filled, round 0
    /// not recorded again); 0 records a whole pass.
    std::uint32_t first_round = 0;
};

/// Lbvh::record_pairs with ProxyPairs (an empty ProxyPairs: record_pairs itself).
Status record_proxy_pairs(Lbvh& lbvh, VkCommandBuffer cmd, const LbvhTree& tree,
                          const LbvhPairBuffers& out, const ProxyPairs& proxy);

/// Modelled traffic of one build of n boxes (gpu/lbvh.cpp, stage_traffic: scene bounds, codes,
/// sort, hierarchy + bounds; `refined`: its codes were refined), and the sort's digit passes.
/// The transfer fills of its scratch are not included (build_fill_traffic).
Traffic build_traffic(const Lbvh& lbvh, std::uint32_t n, bool refined, std::uint32_t* passes);
/// Modelled traffic of one all-pairs pass over n boxes (gpu/lbvh.cpp, "all pairs") that
/// expanded `visits` nodes, resumed `resumed` queued items and stored `stored` pairs.
Traffic pairs_traffic(std::uint64_t n, std::uint64_t visits, std::uint64_t resumed,
                      std::uint64_t stored);
/// lbvh_bindings (gpu/scale.hpp) of this Lbvh's code kind and refine option: the buffers a
/// build of n boxes binds whole, for the host paths' limit checks.
std::vector<BindingSize> build_bindings(const Lbvh& lbvh, std::uint32_t n);
/// Bytes the build's ungated transfer fills write (the scene bounds' 32 bytes, the refine word
/// when codes may be refined, the split flags): recorded even when a gate empties the build.
Traffic build_fill_traffic(const Lbvh& lbvh, std::uint32_t n);
/// Whether the last build of n boxes into `scratch` refined its codes (one word read back).
Result<bool> read_build_refined(Lbvh& lbvh, const Buffer& scratch, std::uint32_t n);
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
