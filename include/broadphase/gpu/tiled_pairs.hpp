// gpu::find_pairs_tiled: the pairs of a scene whose tree does not fit under a memory budget, on
// one device, tile by tile (docs/mpi.md, "Tiles on one device"). The scene is cut into tiles by
// median splits of the box centres, and each tile's pairs with the other tiles are found as
// broadphase::mpi finds a rank's pairs with the other ranks: the boxes of one tile that overlap
// another tile's bounds go there as ghosts, in one direction per pair of tiles (the one that
// sends fewer), and each tile's LBVH pass over its boxes and its ghosts keeps the pairs that have
// one of its own boxes. Every pair is found once.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "broadphase/gpu/lbvh.hpp"
#include "broadphase/types.hpp"

namespace broadphase::gpu {

/// How find_pairs_tiled cuts the scene.
struct TiledPairsOptions {
    /// Bytes a tile's build may take on the device: Lbvh::requirements' boxes + nodes + scratch
    /// for its boxes and ghosts (the pairs' output buffer, which grows with the pairs found, is
    /// not counted). 0: no budget, one tile.
    VkDeviceSize budget = 0;
};

/// What find_pairs_tiled did.
struct TiledPairsReport {
    std::uint32_t tiles = 0;   ///< tiles the scene was cut into
    std::uint64_t ghosts = 0;  ///< boxes sent to another tile, summed over the tiles
    VkDeviceSize largest = 0;  ///< the largest tile's bytes (as the budget counts them)
};

/// The pairs of `boxes` (ids: their indices), sorted ascending, as Lbvh::find_pairs gives them,
/// with no tile's build over `options.budget`: the number of tiles doubles until every tile
/// with its ghosts fits. Rejects invalid boxes (naming the box); a budget that one box and its
/// ghosts do not fit in is a limit_exceeded error giving the bytes needed.
Result<std::vector<Pair>> find_pairs_tiled(Lbvh& lbvh, std::span<const Box> boxes,
                                           const TiledPairsOptions& options,
                                           TiledPairsReport* report = nullptr);

}  // namespace broadphase::gpu
