// Regular (strict) octree with dynamic subdivision (D. Meagher, "Geometric modeling using octree
// encoding", 1982). The root is a cube over the scene (see Robustness); a leaf holding more than
// `capacity` box references that do not cover its whole cell splits into 8 octants at its
// centre, down to `max_depth` or `min_size`, provided the split separates some of those boxes
// (some box misses a child another one reaches; or all go to one child and they are not
// identical within the cell) and pays: the children's sum of n_c^2 is below 0.7 n^2, or the
// split adds at most n/2 references. Identical boxes, boxes covering the cell, and boxes long
// against the cell are never copied down level after level. A leaf left with more than 48
// references is crowded: it is paired by sort and sweep on its most spread axis, and kept
// indexed on that axis for the queries (list_sweep.hpp: references sorted by their min there, a
// binary search for the window a region or point can meet, a ray scanned along the axis over
// its part inside the cell, k-nearest cursors walking outwards from p).
//
// Robustness (issue 9): no scene makes it quadratic through its bounds. The root is a cube over
// a robust core (per axis, the box centres without the 32 most extreme on each side, widened by
// the core's own width on each side, clipped to the scene's bounds; the whole scene's cube if
// that would leave out more than 16 + n/4 boxes), as in the loose octree: a few boxes 1e7 away
// or a ground slab 2e6 wide go to the outside list, each tested against the tree by one
// descent, instead of putting the play area 20 levels down, where the build handed every box
// down each of those levels (level took 3x uniform's time at 1M boxes). Clusters far apart
// (1e4, a sixth of the boxes 1e6 away) are part of the core, so the depth limit is generous
// (300: a cell stops splitting first, once float halving cannot split it). Down a cluster's
// chain of splits that send every box to one child the boxes move as one list: each level
// costs 8 nodes and copies of the boxes covering the cell, not a pass over every box (the tree
// is the one the level-by-level splits build). World-sized boxes cover most cells they are in,
// so they neither drive nor stop splitting, and a leaf tests them only against its own few
// references. A box over the whole scene does not cover the cells that reach past the scene
// (the root is a cube): those chains split level by level (degenerate: 2.4x uniform's build
// work). The root and the split points are computed in double and rounded once (a box from
// -3e38 to 1e31 builds at once; issue 14). Long thin boxes are referenced from every leaf along
// them, up to the point where the split rule stops (aspect ratio a costs about a references,
// the duplication cost of any strict octree); past it they share crowded leaves, swept for
// self-pairs and searched through their index by queries (on xline every query kind costs
// about what it does on uniform; scanned whole, up to 35 times).
//
// Placement: a box is referenced from EVERY leaf whose closed cell it overlaps. The alternative
// (keep a box in the smallest node containing it) piles the boxes that straddle high split
// planes into the root ("hot spots"), which every query must then test; duplicating references
// instead keeps each leaf small. Results stay unique by an ownership rule: descending a point p
// chooses the upper octant on an axis iff p >= the split, so p has exactly one owner leaf
// (cells half-open, the root's upper faces closed). A pair (a, b) is reported only in the leaf
// owning max(a.min, b.min) (a point of both boxes), a region hit only in the leaf owning
// max(region.min, b.min), and a point pick looks in p's owner leaf alone.
//
// Dynamic: insert/remove/move by caller id. A box that is not inside the root cube goes to an
// `outside` list, tested linearly by every query; once that list exceeds 16 + n/4 the whole tree
// is rebuilt around every box (robust root again; amortised O(log n) per insert). Removal does
// not merge emptied octants back together.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "broadphase/structure.hpp"
#include "list_sweep.hpp"
#include "octree_base.hpp"

namespace broadphase {

/// One stored reference of an Octree: the box and its id.
struct OctreeEntry {
    Box box;
    std::uint32_t id = 0;
};

/// The `octree` Structure.
class Octree final : public detail::OctreeBase<OctreeEntry> {
public:
    /// Subdivision parameters.
    struct Config {
        /// A leaf referencing more boxes than this splits (when that separates them; see above).
        std::uint32_t capacity = 16;
        /// Leaves at this depth (the root is 0) never split; at most 300. The default is that
        /// limit: float halving stops a cell first (about 277 levels from 3e38 to 1e-45).
        std::uint32_t max_depth = 300;
        /// A cell whose side is below 2 * min_size never splits (0: only max_depth limits).
        float min_size = 0.0f;
    };

    using Entry = OctreeEntry;

    /// One octant. A leaf's entries are every box overlapping its cell (indexed when crowded);
    /// internal nodes hold none.
    struct Node : detail::OctreeNode<Entry> {
        Box cell;                 ///< closed cell bounds (a cube, up to rounding)
        std::uint32_t depth = 0;  ///< root is 0
    };

    Octree() = default;
    explicit Octree(const Config& config) : config_(config) {}

    std::string_view name() const override { return "octree"; }
    // The Structure overrides:
    // - build: the root is a cube over the scene's robust core (see the top of the file), boxes
    //   not inside it outside; then top-down splits. Rejects bad boxes and a bad Config.
    // - self_pairs: per leaf, all pairs of its references, each kept only in the owner leaf of
    //   its intersection's min corner; plus the outside list against everything.
    // - ray_cast goes front-to-back over octants by entry t, stopping past the best hit.
    // - validate checks: cells nest and halve exactly, leaves reference exactly the boxes
    //   overlapping them, every id is referenced by exactly the leaves its box overlaps,
    //   outside boxes are outside.
    // insert, remove and move: detail::OctreeBase.
    BROADPHASE_STRUCTURE_OVERRIDES;
    void query_point(const Vec3& p, std::vector<std::uint32_t>& out) const override;
    /// Best first by distance to cells; appends to `out`, nearest first.
    Status nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const override;

    const Config& config() const { return config_; }
    std::span<const Node> nodes() const { return nodes_; }
    /// Deepest leaf depth.
    std::uint32_t height() const;
    /// Box references copied into children by the splits since the last build: the build's
    /// work besides one pass over the boxes per split (a list moved down whole is not counted).
    std::uint64_t split_references() const { return split_references_; }

private:
    void clear();
    void place_all(const std::vector<Entry>& entries, bool robust) override;
    bool tree_insert(Entry entry) override;
    void tree_remove(std::uint32_t id, const Box& box) override;
    void insert_into(std::uint32_t node, const Entry& entry);
    void remove_from(std::uint32_t node, std::uint32_t id, const Box& box);
    bool cell_splits(const Node& node) const;
    int split_plan(std::uint32_t node) const;
    std::uint32_t add_children(std::uint32_t node);
    void index_crowded(std::uint32_t node);
    void maybe_split(std::uint32_t node);
    bool owns(const Node& leaf, const Vec3& p) const;
    template <class Leaf>
    void for_each_leaf(const Box& region, Leaf&& leaf) const;
    bool inside_root(const Box& box) const;
    std::size_t leaves_overlapping(const Box& box) const;

    Config config_;
    std::vector<Node> nodes_;  ///< nodes_[0] is the root; empty when nothing was ever built
    std::uint64_t split_references_ = 0;
};

}  // namespace broadphase
