// broadphase::mpi: one scene split over the ranks of an MPI communicator, each rank holding
// the boxes its domain decomposition gave it (docs/mpi.md):
//
//     auto scene = broadphase::mpi::DistributedScene::create(MPI_COMM_WORLD, "lbvh").value();
//     scene->set_boxes(my_boxes);                  // every step, on every rank
//     auto pairs = scene->find_pairs().value();    // the pairs this rank is responsible for
//
// Every call but the accessors is collective: each rank of the communicator makes it, in the
// same order (a rank with nothing to give passes an empty list). An error on one rank (a bad
// box, a failed build) is returned to every rank, the same Error, naming the rank it came from;
// none is left waiting.
//
// The scene is the concatenation of the ranks' boxes: box `index` of rank `rank` is GlobalId
// {rank, index}, and GlobalIds order by rank, then index, as the ids of that concatenation do.
// Boxes are closed (types.hpp, overlaps). Any placement over the ranks is allowed; how much is
// exchanged depends on how far each rank's boxes reach into the other ranks' bounds.
//
// Which rank reports a pair (pair_owner): a pair of two boxes of rank r is reported by r. For a
// pair between ranks r and s, find_pairs counts the boxes of r that overlap s's bounds (those r
// would send s) and the boxes of s that overlap r's bounds: the fewer travel, and the rank they
// go to reports the pairs of r and s. On a tie, r < s, it is r when r + s is even, s when odd.
// Each pair of ranks exchanges boxes in one direction only, the cheaper one (a world-sized box
// on one rank travels to the others, rather than every box to that rank). Every overlapping
// pair of the scene is reported exactly once over all ranks.
//
// The implementation is mpi/distributed_scene.cpp.
#pragma once

#include <mpi.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase::gpu {
class Context;
}

namespace broadphase::mpi {

/// A box of the distributed scene: the rank that gave it and its index in that rank's
/// set_boxes. Ordered by rank, then index.
struct GlobalId {
    std::uint32_t rank = 0;
    std::uint32_t index = 0;
    friend auto operator<=>(const GlobalId&, const GlobalId&) = default;
};

/// An overlapping pair of the distributed scene, always a < b.
struct GlobalPair {
    GlobalId a, b;
    friend auto operator<=>(const GlobalPair&, const GlobalPair&) = default;
};

/// Closest hit of a ray over every rank: the box and the entry parameter t (0 if the origin is
/// inside it); the smallest t, ties to the smallest GlobalId.
struct GlobalHit {
    GlobalId id;
    float t = 0;
    friend bool operator==(const GlobalHit&, const GlobalHit&) = default;
};

/// The hits of a batch of region queries, in compressed rows: query q's hits are
/// ids[offsets[q] .. offsets[q + 1]), sorted ascending.
struct QueryHits {
    std::vector<std::uint64_t> offsets{0};
    std::vector<GlobalId> ids;

    /// The hits of query q (q < offsets.size() - 1).
    std::span<const GlobalId> hits(std::size_t q) const {
        return std::span<const GlobalId>(ids).subspan(offsets[q], offsets[q + 1] - offsets[q]);
    }
};

/// How DistributedScene::create sets the scene up.
struct Options {
    /// gpu_lbvh only: this rank's device, which must outlive the scene (one GPU per rank).
    /// Null: the scene creates its own Context on the device named by `device`.
    gpu::Context* context = nullptr;
    /// gpu_lbvh only, when `context` is null: the device by index or name substring
    /// (gpu::ContextOptions::device); empty: the library's default choice.
    std::string device;
    /// gpu_lbvh only: the CPU method (a name of cpu_method_names()) of the index over this
    /// rank's boxes that answers the forwarded region queries and rays; the GPU finds the
    /// pairs.
    std::string query_method = "lbvh";
};

/// What this rank exchanged in the last collective call that exchanged boxes or queries
/// (find_pairs, query_boxes, ray_casts), with the other ranks only (not with itself).
struct ExchangeStats {
    std::uint64_t items_sent = 0;      ///< boxes (find_pairs: ghosts), queries or answers sent
    std::uint64_t items_received = 0;  ///< the same, received
    std::uint64_t bytes_sent = 0;      ///< every byte sent: the counts and the items
    std::uint64_t bytes_received = 0;  ///< every byte received: the counts and the items
};

/// One scene over the ranks of a communicator; see the file comment.
class DistributedScene {
public:
    /// Collective over `comm` (duplicated: the scene's messages never meet the caller's). Every
    /// rank gives the same `method`: a CPU method (cpu_method_names()) or, in a build with the
    /// GPU part, "gpu_lbvh". The scene must be destroyed, on every rank, before MPI_Finalize.
    static Result<std::unique_ptr<DistributedScene>> create(MPI_Comm comm, std::string_view method,
                                                            const Options& options = {});
    ~DistributedScene();
    DistributedScene(const DistributedScene&) = delete;
    DistributedScene& operator=(const DistributedScene&) = delete;

    /// This rank's number in the communicator, and the number of ranks.
    int rank() const;
    int size() const;
    /// The method the scene was created with.
    std::string_view method() const;

    /// Collective: replaces this rank's boxes by `boxes` (copied; fewer than 2^32, possibly
    /// none) and gathers every rank's bounds. A NaN, an infinity or min > max on any rank is an
    /// invalid_box error on every rank, naming the first rank that has one and its box; the
    /// scene then holds no boxes on any rank.
    Status set_boxes(std::span<const Box> boxes);

    /// This rank's boxes, as the last set_boxes gave them.
    std::span<const Box> boxes() const;
    /// The bounds of rank r's boxes (r < size()), as the last set_boxes gathered them; nothing
    /// for a rank without boxes.
    std::optional<Box> bounds(int r) const;

    /// Collective: the overlapping pairs this rank is responsible for (see the file comment),
    /// sorted ascending. Each rank sends to each rank whose pairs with it that rank reports
    /// its boxes that overlap that rank's bounds (the ghosts).
    Result<std::vector<GlobalPair>> find_pairs();

    /// Collective: every box of the scene that overlaps each of this rank's `regions` (closed
    /// boxes; possibly none). Each region is answered by the ranks whose bounds it overlaps. A
    /// region that is not a valid box is an invalid_argument error on every rank.
    Result<QueryHits> query_boxes(std::span<const Box> regions);

    /// Collective: the closest hit over the whole scene of each of this rank's `rays`
    /// (Structure::ray_cast's rule: the smallest entry t in [0, tmax], ties to the smallest
    /// GlobalId); nothing for a miss. Each ray goes to the ranks whose bounds it enters. Origin
    /// and direction must be finite and tmax not NaN (else invalid_argument on every rank).
    Result<std::vector<std::optional<GlobalHit>>> ray_casts(std::span<const Ray> rays);

    /// The rank that reported, in the last find_pairs, the pairs between a box of rank r and a
    /// box of rank s (r, s < size()): r itself when r == s; see the file comment. Before any
    /// find_pairs, the tie's rule.
    int pair_owner(int r, int s) const;

    /// What the last find_pairs, query_boxes or ray_casts exchanged from this rank.
    const ExchangeStats& last_exchange() const;

    struct Impl;

private:
    explicit DistributedScene(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace broadphase::mpi
