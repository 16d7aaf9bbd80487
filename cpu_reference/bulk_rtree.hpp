// Bulk-loaded (packed, static) R-trees, the bulk-loading section of magley's survey "Broad
// phase algorithms and data structures" (all cited in full in docs/references.md):
// - Nearest-X: N. Roussopoulos and D. Leifker, "Direct spatial search on pictorial databases
//   using packed R-trees", SIGMOD 1985. Sort the centroids along one axis and pack runs of
//   `node_capacity`.
// - Sort-Tile-Recursive: S. T. Leutenegger, M. A. Lopez and J. Edgington, "STR: A Simple and
//   Efficient Algorithm for R-Tree Packing", ICDE 1997. Slabs, then slices, then runs.
// - Hilbert: I. Kamel and C. Faloutsos, "On Packing R-trees", CIKM 1993. Sort by the Hilbert
//   index of the centroid and pack runs. The centroid is taken in rank space, as in J. Qi,
//   Y. Tao, Y. Chang and R. Zhang, "Theoretically Optimal and Empirically Efficient R-trees with
//   Strong Parallelizability", PVLDB 2018: each coordinate replaced by its rank among the
//   centroids before quantising.
//
// The tree is packed bottom-up, level by level, into one flat array of nodes: the leaves first,
// then each level above, the root last. Every node except the last of its level is full, and
// all leaves are at the same depth. Nearest-X degenerates when the centroids align on its
// axis; here the sort axes are chosen by centroid spread (widest first) wherever the method
// sorts along axes, and STR and Hilbert leave out axes along which the centroids spread less
// than a typical box is wide. It is a static structure: build() once, then query.
//
// Near-linear self-pairs on scenes shaped like real ones (a few boxes fallen far out of the
// world, a ground slab as wide as it, far clusters, one box over everything): every measure the
// build steers by is robust, i.e. the spread is the range of the middle 98% of the centroids
// and the typical box the median extent, never the full range, the variance or the mean extent
// that a handful of boxes can move by orders of magnitude. Beyond the choice of axes, STR cuts
// by counts (order statistics) and the Hilbert keys are ranks, so neither depends on how far
// apart the boxes are: every leaf holds `node_capacity` neighbours wherever they lie, as in
// Qi et al., whose rank-space Hilbert packing answers window queries in the optimal worst case.
// Quantising coordinates over the centroid bounds instead (Kamel and Faloutsos' grid) squeezes
// a play area into a few cells as soon as a few boxes are far away, and equal keys leave the
// boxes inside in arbitrary order.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "broadphase/structure.hpp"

namespace broadphase {

/// The `rtree_nearest_x`, `rtree_str` and `rtree_hilbert` Structures.
class BulkRTree final : public Structure {
public:
    /// The ordering by which boxes (and, for STR, the nodes of each level) are packed.
    enum class BulkLoad : std::uint8_t {
        nearest_x,  ///< sort centroids along the axis of widest spread (Roussopoulos 1985)
        str,        ///< Sort-Tile-Recursive, axes in decreasing spread (Leutenegger 1997)
        hilbert,    ///< 3D Hilbert index of the rank-space centroid, 21 bits (Kamel 1993)
    };

    /// Build parameters.
    struct Config {
        BulkLoad method = BulkLoad::str;
        /// Children per node (boxes per leaf); must be >= 2.
        std::uint32_t node_capacity = 16;
    };

    /// One node, 32 bytes. A leaf's children are boxes()[first, first + count); an internal
    /// node's are nodes()[first, first + count), all on the level below.
    struct Node {
        Box bounds;  ///< union of the children's bounds
        std::uint32_t first = 0;
        std::uint32_t count = 0;
    };

    BulkRTree() = default;
    explicit BulkRTree(const Config& config) : config_(config) {}

    /// `rtree_nearest_x`, `rtree_str` or `rtree_hilbert`.
    std::string_view name() const override;
    // The Structure overrides:
    // - build packs the tree in O(n log n). Rejects bad boxes and a node_capacity below 2.
    // - self_pairs is a dual traversal of the tree against itself from (root, root), pruned by
    //   node bounds; node pairs are visited unordered, so each box pair is found once.
    // - ray_cast goes best first by the entry t of node bounds; it stops when the next node is
    //   entered after the best hit.
    // - validate checks: ids a permutation, boxes valid, levels partition the node array, every
    //   node except the last of its level full, children ranges tiling the level below, node
    //   bounds equal to the union of their children, one root, and the leaf order of the method
    //   (sorted keys for Nearest-X and Hilbert, ordered slabs, slices and runs for STR).
    BROADPHASE_STRUCTURE_OVERRIDES;
    /// Best first by point_box_distance to node bounds, nearest first, ties to the smaller id.
    Status nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const override;

    const Config& config() const { return config_; }
    /// All nodes, leaves first, level by level; the root is the last one.
    std::span<const Node> nodes() const { return nodes_; }
    /// Level L holds nodes()[level_offsets()[L], level_offsets()[L + 1]); level 0 is the leaves.
    std::span<const std::uint32_t> level_offsets() const { return levels_; }
    /// Number of levels (0 for an empty tree, 1 when the root is a leaf).
    std::uint32_t height() const {
        return levels_.empty() ? 0 : static_cast<std::uint32_t>(levels_.size() - 1);
    }
    /// Box ids in leaf order: leaf ranges index into this and boxes().
    std::span<const std::uint32_t> ids() const { return ids_; }
    std::span<const Box> boxes() const { return boxes_; }
    /// The axes the leaf level was ordered by. Nearest-X: by decreasing centroid spread (the
    /// range between the 1st and 99th percentiles; ties to the lower axis), sorted along the
    /// first. STR and Hilbert: the tiled axes first, each group by decreasing spread.
    const std::array<std::uint8_t, 3>& sort_axes() const { return axes_; }
    /// STR and Hilbert: how many of sort_axes() the leaf level was tiled along / ranked on
    /// (1 to 3): those where the centroids spread wider than the median box extent.
    std::uint32_t tiled_axes() const { return tiled_axes_; }

    /// Bits per axis of the Hilbert index.
    static constexpr std::uint32_t kHilbertBits = 21;
    /// 3D Hilbert index of q (each < 2^21), 63 bits; J. Skilling, "Programming the Hilbert
    /// curve", AIP Conf. Proc. 707, 2004.
    static std::uint64_t hilbert_index(const std::uint32_t q[3]);

private:
    friend struct BulkRTreeTestAccess;  // tests corrupt the tree to see validate() catch it

    bool is_leaf(std::uint32_t node) const { return node < levels_[1]; }
    std::uint32_t root() const { return static_cast<std::uint32_t>(nodes_.size() - 1); }
    void leaf_self_pairs(const Node& leaf, std::vector<Pair>& out) const;
    void leaf_cross_pairs(const Node& a, const Node& b, std::vector<Pair>& out) const;
    /// The ids of the boxes meets(box) accepts, descending into the nodes whose bounds it
    /// accepts (query_box and query_point).
    template <class Meets>
    void collect(Meets&& meets, std::vector<std::uint32_t>& out) const;
    Status validate_leaf_order() const;

    Config config_;
    std::vector<Node> nodes_;
    std::vector<std::uint32_t> levels_;  ///< level offsets into nodes_, plus nodes_.size()
    std::vector<std::uint32_t> ids_;     ///< ids in leaf order
    std::vector<Box> boxes_;             ///< boxes in leaf order: boxes_[k] is box ids_[k]
    std::array<std::uint8_t, 3> axes_{0, 1, 2};
    std::uint8_t tiled_axes_ = 1;
};

}  // namespace broadphase
