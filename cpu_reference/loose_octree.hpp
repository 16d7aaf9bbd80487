// Loose octree (T. Ulrich, "Loose octrees", Game Programming Gems, 2000). Each octant has its
// strict cell and a loose bound k times as wide about the same centre. A box is stored in one
// octant only, chosen in O(1) from the box itself: the depth from its size (the deepest level
// whose margin (k-1)/2 * side still covers the box's half extent when its centre lies anywhere
// in the strict cell) and the cell from its centre ("centre-in-strict-bounds"). The octree
// subdivides dynamically: a box lives in the deepest allocated octant on the path to its ideal
// one (the pseudocode's findBestFittingOctant), and an octant holding more than `capacity`
// boxes splits, pushing down the boxes whose ideal octant lies deeper.
//
// The pseudocode this was written from ("Loose Octrees for Frustum Culling, Part 1",
// AltDevBlogADay 2011; docs/references.md) has slips that this implementation corrects: the fit
// test must read side * (k-1)/2 >= extent/2 (it writes (1-k), which is negative for k > 1);
// after the loop the depth is already the deepest fitting level, so its "off by one" depth-- is
// wrong; the loop never ends for a zero-size box (a depth cap is needed); the cell index needs
// the centre relative to the root's min corner, clamped to [0, 2^d - 1] for centres on the
// root's upper faces; and the child index must be ((x >> s) & 1) | ((y >> s) & 1) << 1 |
// ((z >> s) & 1) << 2, not x + y << 1 + z << 2 (which C++ parses as (x + y) << (1 + z) << 2).
// Here the depth is one ilogb, with no loop. Float rounding can leave a box a hair outside the
// computed loose bound; it then goes one level up, so "box inside its octant's loose bound"
// holds exactly.
//
// Robustness (issue 9): the root is not the scene's bounding cube but a cube over a robust core
// (per axis, the box centres without the 32 most extreme on each side, widened by the core's own
// width on each side): a few boxes 1e7 away, or a ground slab 2e6 wide, go to the outside list
// (each tested against the tree by one descent) instead of stretching the root until every
// box of the play area falls into one octant. Clusters far apart are part of the core; the
// depth limit (31) resolves a cluster 1e-5 of the root's side to its own box sizes. If the
// trimmed root would leave out more than 16 + n/4 boxes the whole scene's cube is used.
//
// Long thin boxes sit at the level of their longest side (Ulrich places a box by its largest
// dimension), so parallel long boxes crowd a few octants: on the line scenes thousands of them
// lie in each octant along the line. An octant holding more than 48 boxes keeps them indexed
// on their most spread axis (list_sweep.hpp: sorted by min there, the boxes longer than 4
// times the median on that axis in a short tail). Self-pairs sweep such a list once, and two
// octants' lists meet by window searches (each box of the shorter list looks up the window of
// minima it can meet in the longer one's index) instead of all against all, which made the
// line scenes quadratic (yline: 14 s at 1M boxes against 1.5 s on uniform). Box, point, ray
// and k-nearest queries use the same index (a binary search for the window a region or point
// can meet, a ray scanned along the axis over its part inside the loose bound and the boxes'
// bounds, k-nearest cursors walking outwards from p); on xline every query kind costs about
// what it does on uniform. What remains of the accepted worst case: a long box meets every
// box of its loose neighbours that its window reaches, so boxes long on several axes in one
// octant (girders of every orientation, aspect ratio a) cost tests growing with a, not with n.
//
// Dynamic: insert/remove/move by caller id. A box whose centre is not in the root's strict
// cube, or that does not fit the root's loose bound, goes to an `outside` list tested linearly;
// once that list exceeds 16 + n/4 the tree is rebuilt around every box. Removal does not merge
// emptied octants (empty subtrees are skipped by their counts).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "broadphase/structure.hpp"
#include "list_sweep.hpp"
#include "octree_base.hpp"

namespace broadphase {

/// An octant of a LooseOctree by its level and integer coordinates (0 .. 2^depth - 1 on each
/// axis).
struct LooseOctreeCell {
    std::uint32_t depth = 0, x = 0, y = 0, z = 0;
    friend bool operator==(const LooseOctreeCell&, const LooseOctreeCell&) = default;
};

/// One box stored in a LooseOctree: its bounds, id and ideal octant.
struct LooseOctreeEntry {
    Box box;
    std::uint32_t id = 0;
    LooseOctreeCell ideal;
};

/// The `loose_octree` Structure.
class LooseOctree final : public detail::OctreeBase<LooseOctreeEntry> {
public:
    /// Subdivision parameters.
    struct Config {
        /// Loose factor: a loose bound is k times the strict cell's side; 1 < k <= 8.
        float k = 2.0f;
        /// An octant holding more boxes than this splits (if some of them belong deeper).
        std::uint32_t capacity = 8;
        /// Deepest level (the root is 0); at most 31 (cell coordinates are 32-bit).
        std::uint32_t max_depth = 31;
    };

    using Cell = LooseOctreeCell;
    using Entry = LooseOctreeEntry;

    /// One octant. Its entries are the boxes stored here (ideal octant here or below).
    struct Node : detail::OctreeNode<Entry> {
        Cell cell;
        Box strict;                       ///< the cell, rounded outwards to float
        Box loose;                        ///< holds every box of the subtree
        std::uint32_t subtree_count = 0;  ///< boxes stored in this subtree
    };

    LooseOctree() = default;
    explicit LooseOctree(const Config& config) : config_(config) {}

    std::string_view name() const override { return "loose_octree"; }
    // The Structure overrides:
    // - build: the root strict cube is the scene's robust bounding cube (see the top of the
    //   file; side 1 if the scene has no extent); every box is placed by ideal_cell, then
    //   octants over capacity split top-down. Rejects bad boxes and a bad Config.
    // - self_pairs: per octant, one descent over loose bounds with the bounds of its boxes,
    //   testing them against the boxes at its own level (later octants only) and deeper: each
    //   pair once.
    // - ray_cast goes front-to-back over loose bounds by entry t, stopping past the best hit.
    // - validate checks: octants nest with the right coordinates and bounds, counts add up, each
    //   box sits inside its octant's loose bound on the path to its ideal octant (exactly there
    //   when the octant has children), outside boxes have no octant.
    // insert, remove and move: detail::OctreeBase.
    BROADPHASE_STRUCTURE_OVERRIDES;
    /// Best first by distance to loose bounds; appends to `out`, nearest first.
    Status nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const override;

    /// The ideal octant of a box, in O(1): depth from the box's largest extent, cell from its
    /// centre; nothing when the box does not fit the root (it then goes to the outside list).
    std::optional<Cell> ideal_cell(const Box& box) const;
    /// Strict (first) and loose (second) bounds of a cell, rounded outwards to float.
    std::pair<Box, Box> cell_bounds(const Cell& cell) const;

    const Config& config() const { return config_; }
    std::span<const Node> nodes() const { return nodes_; }

private:
    void clear();
    void place_all(const std::vector<Entry>& entries, bool robust) override;
    bool tree_insert(Entry entry) override;
    void tree_remove(std::uint32_t id, const Box& box) override;
    std::uint32_t find_node(const Cell& ideal) const;
    std::uint32_t count_path(const Cell& ideal, bool added);
    void maybe_split(std::uint32_t node);
    template <class Visit>
    void descend(const Box& region, std::vector<std::uint32_t>& stack, Visit&& visit) const;

    Config config_;
    double root_min_[3] = {0, 0, 0};
    double root_side_ = 1;
    std::vector<Node> nodes_;  ///< nodes_[0] is the root; empty when nothing was ever built
};

}  // namespace broadphase
