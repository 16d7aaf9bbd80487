// The all-pairs pass of the GPU LBVH (shaders/lbvh/lbvh_pairs.comp) as the library's other
// recorders use it: the proxies' filtered, cross-tree and appending passes (gpu::ProxyScene),
// the pair keys i << b | j that the moving scenes sort, and the pass's modelled traffic.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "broadphase/gpu/lbvh.hpp"
#include "instruments/traffic.hpp"

namespace broadphase::gpu {

/// What gpu::ProxyScene adds to an all-pairs pass (shaders/lbvh/lbvh_pairs.comp): `slots` (one
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

/// The pair of a key (low word, high word) of shaders/lbvh/lbvh_pairs.glsl with kPairsKeys.
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
    /// Round 0 launched from these indirect arguments instead of over every group (Lbvh's
    /// refinement on demand: slot kArgsPairsGate of the build's refine arguments, empty when
    /// the codes need refining and the tree is to be replaced); visible to indirect reads.
    BufferRange first_args{};
};

/// Lbvh::record_pairs with ProxyPairs (an empty ProxyPairs: record_pairs itself).
Status record_proxy_pairs(Lbvh& lbvh, VkCommandBuffer cmd, const LbvhTree& tree,
                          const LbvhPairBuffers& out, const ProxyPairs& proxy);
/// Modelled traffic of one all-pairs pass over n boxes (gpu/lbvh/lbvh.cpp, "all pairs") that
/// expanded `visits` nodes, resumed `resumed` queued items and stored `stored` pairs.
Traffic pairs_traffic(std::uint64_t n, std::uint64_t visits, std::uint64_t resumed,
                      std::uint64_t stored);

}  // namespace broadphase::gpu
