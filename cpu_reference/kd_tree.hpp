// k-d tree over box centroids, with a bounding box per node (magley's survey "Broad phase
// algorithms and data structures"; J. L. Bentley, "Multidimensional binary search trees used
// for associative searching", CACM 1975; both in docs/references.md).
//
// Boxes are extended objects, so a split plane may cut through some of them (the survey's
// "rectangles that intersect the median line"). This tree assigns every box to exactly one
// side by its centroid, splitting at the centroid median, and stores in every node the bounds
// of all boxes below it. Queries prune by those bounds rather than by the split plane, so a box
// straddling the median needs no duplication and every id lives in exactly one leaf. It is a
// static structure: build() once, then query.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "broadphase/structure.hpp"

namespace broadphase {

/// The `kd_tree` Structure.
class KdTree final : public Structure {
public:
    /// How a node picks its split axis.
    enum class AxisRule : std::uint8_t {
        alternate,  ///< x, y, z, x, ... by depth (the survey's classic k-d tree)
        widest,     ///< the axis where the node's centroids spread most (ties to the lower axis)
    };

    /// Build parameters.
    struct Config {
        AxisRule axis_rule = AxisRule::widest;
        /// The survey's capacity c: a node holding at most this many boxes is a leaf. It should be
        /// at least 2^k (8 in 3D); must be >= 1.
        std::uint32_t leaf_capacity = 8;
        /// Nodes at this depth (the root is depth 0) become leaves whatever their size.
        std::uint32_t max_depth = 64;
    };

    /// One node, 48 bytes. A subtree holds the contiguous range [begin, end) of ids_ / boxes_;
    /// an internal node's left child is the next node and its right child is `right`.
    struct Node {
        Box bounds;               ///< bounds of every box in the subtree
        float split = 0;          ///< internal: left centroids <= split <= right centroids
        std::uint32_t right = 0;  ///< internal: index of the right child; 0 for a leaf
        std::uint32_t begin = 0, end = 0;
        std::uint32_t depth = 0;
        std::uint8_t axis = 0;  ///< internal: the split axis (0 x, 1 y, 2 z)
        bool is_leaf() const { return right == 0; }
    };

    KdTree() = default;
    explicit KdTree(const Config& config) : config_(config) {}

    std::string_view name() const override { return "kd_tree"; }
    // The Structure overrides:
    // - build makes recursive centroid-median splits (nth_element), O(n log n). Rejects bad
    //   boxes and a leaf_capacity of 0.
    // - self_pairs is a dual traversal of the tree against itself, pruned by node bounds; each
    //   pair is found once, at the lowest node whose subtree holds both boxes.
    // - ray_cast goes depth first, nearer child first, pruning nodes whose entry t exceeds the
    //   best hit.
    // - validate checks: ids a permutation, boxes valid, node bounds contain their boxes and
    //   children, children partition their parent's range, the median property at every split,
    //   and leaf sizes <= leaf_capacity unless at max_depth or all the leaf's centroids are
    //   equal.
    BROADPHASE_STRUCTURE_OVERRIDES;
    /// Best first by distance to node bounds; appends to `out`, nearest first. Distances are
    /// computed in double and rounded to float; ties (equal float distance) go to the smaller id.
    Status nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const override;

    const Config& config() const { return config_; }
    /// Nodes in depth-first order; the root is nodes()[0] (empty when there are no boxes).
    std::span<const Node> nodes() const { return nodes_; }
    /// Box ids in leaf order: leaf ranges index into this.
    std::span<const std::uint32_t> ids() const { return ids_; }
    /// Depth of the deepest leaf (0 for one leaf or an empty tree).
    std::uint32_t height() const;

private:
    friend struct KdTreeTestAccess;  // tests corrupt the tree to see validate() catch it

    struct Entry {
        Vec3 centroid;
        std::uint32_t id;
    };
    std::uint32_t build_node(std::span<const Box> input, std::vector<Entry>& entries,
                             std::uint32_t begin, std::uint32_t end, std::uint32_t depth);
    void leaf_self_pairs(const Node& leaf, std::vector<Pair>& out) const;
    void self_pairs_node(std::uint32_t node, std::vector<Pair>& out) const;
    void cross_pairs(std::uint32_t a, std::uint32_t b, std::vector<Pair>& out) const;
    /// The ids of the boxes meets(box) accepts, descending into the nodes whose bounds it
    /// accepts (query_box and query_point).
    template <class Meets>
    void collect(Meets&& meets, std::vector<std::uint32_t>& out) const;

    Config config_;
    std::vector<Node> nodes_;
    std::vector<std::uint32_t> ids_;  ///< ids in leaf order
    std::vector<Box> boxes_;          ///< boxes in leaf order: boxes_[k] is box ids_[k]
};

}  // namespace broadphase
