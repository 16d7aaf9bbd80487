// Sphere BVH with split planes (P. Väänänen, "Sort a sphere BVH with split planes", 30fps.net,
// January 10, 2024; docs/references.md): a binary hierarchy whose nodes are bounding spheres, each
// also carrying the axis of an axis-aligned plane through the sphere's centre that separated its
// two children at build time. Visiting the eye's side of that plane first gives a rough
// front-to-back order for free, as in a BSP or k-d tree. The axis takes two bits, packed with the
// child / leaf link.
//
// The spheres only prune: a sphere bounds every box of its subtree, and leaves test the actual
// boxes, so every Structure query is exact. It is a static structure: build() once, then query.
//
// Long thin scenes. A sphere is never thinner than the boxes it holds, so where boxes lie along
// a line closer together than they are wide (the xline and yline scenes), each leaf's sphere
// meets hundreds of others however the boxes are grouped, and sphere-pruned self-pairs grew
// quadratically (23 million leaf pairs at 100,000 boxes). Two changes keep it near-linear:
// - each node also keeps its exact box bounds, so its region is the intersection of a sphere
//   and a box, as in Katayama and Satoh's SR-tree (SIGMOD 1997); self_pairs, query_box and
//   query_point prune where either is disjoint;
// - the build prices the midpoint plane of each axis with the surface area heuristic
//   (Goldsmith and Salmon 1987, MacDonald and Booth 1990) instead of always taking the longest
//   axis, which along such a line is the boxes' own width: the line is cut across its length.
// Either change alone still visits 4 to 23 million leaf pairs on xline at 100,000 boxes;
// together they visit 64,000, fewer than on uniform (153,000).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/structure.hpp"

namespace broadphase {

/// The `sphere_bvh` Structure.
class SphereBvh final : public Structure {
public:
    /// Build parameters.
    struct Config {
        /// A node over at most this many boxes is a leaf; 1 is the article's one object per leaf.
        /// Must be >= 1.
        std::uint32_t max_leaf_size = 4;
        /// Nodes at this depth or deeper split at the median instead of the article's midpoint
        /// rule, which bounds the height by max_midpoint_depth + log2(n). Must be <= 128.
        std::uint32_t max_midpoint_depth = 48;
    };

    /// Every sphere of radius r is treated as radius r * (1 + kRadiusSlack): validate()
    /// accepts boxes within that radius, and queries prune only beyond it.
    static constexpr double kRadiusSlack = 1e-6;

    /// Marks a leaf in Node::link's axis bits.
    static constexpr std::uint32_t kLeafAxis = 3;

    /// One node, 24 bytes:
    ///   bytes  0..11  center  float x, y, z: sphere centre, the centre of the node's box bounds
    ///   bytes 12..15  radius  float: bounds every box below (and every child sphere)
    ///   bytes 16..19  link    uint32: bits 0..1 split axis (0 x, 1 y, 2 z; 3 = leaf);
    ///                         bits 2..31 the right child's node index (internal; the left
    ///                         child is the next node) or the leaf's first slot in ids()
    ///   bytes 20..23  count   uint32: number of boxes below the node
    struct Node {
        Vec3 center;
        float radius = 0;
        std::uint32_t link = 0;
        std::uint32_t count = 0;

        std::uint32_t axis() const { return link & 3u; }
        bool is_leaf() const { return axis() == kLeafAxis; }
        std::uint32_t right() const { return link >> 2; }  ///< internal nodes
        std::uint32_t first() const { return link >> 2; }  ///< leaves
    };

    SphereBvh() = default;
    explicit SphereBvh(const Config& config) : config_(config) {}

    std::string_view name() const override { return "sphere_bvh"; }
    // The Structure overrides:
    // - build is top-down: on each axis, the midpoint plane of the node's box bounds (through
    //   its sphere's centre) divides the boxes by their centres; the plane with the least
    //   surface area heuristic cost (each child's bounds' area times its box count, over a
    //   sample of under 64 of the node's boxes) wins, ties to the longest axis. When every
    //   midpoint leaves one side of the sample empty, or below max_midpoint_depth, the median on
    //   the longest axis. O(n log n). Rejects bad boxes, a max_leaf_size of 0, a
    //   max_midpoint_depth over 128, and 2^29 boxes or more.
    // - self_pairs is a dual traversal of the tree against itself, skipping two subtrees whose
    //   box bounds or spheres are disjoint; each pair is found once, at the lowest node whose
    //   subtree holds both boxes.
    // - query_box goes depth first, skipping nodes whose box bounds or sphere miss the region.
    // - ray_cast goes depth first, eye-side child first, pruning nodes whose (conservative)
    //   sphere entry t exceeds the best hit.
    // - validate checks: ids a permutation, boxes valid, each sphere contains all 8 corners of
    //   every box below it and both child spheres (within kRadiusSlack), each node's bounds
    //   contain every box below it, split axes in 0..2 with no left box centre beyond a right
    //   one on that axis, children partition their parent's slots, leaves hold
    //   1..max_leaf_size boxes, every node reached once.
    BROADPHASE_STRUCTURE_OVERRIDES;
    /// Depth first, skipping nodes whose box bounds or sphere miss the point.
    void query_point(const Vec3& p, std::vector<std::uint32_t>& out) const override;
    /// Best first by the sphere lower bound max(0, |p - c| - r), exact point_box_distance at
    /// the leaves; nearest first, ties to the smaller id.
    Status nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const override;

    /// Appends every id once, in the article's approximate front-to-back order from `eye`: at
    /// each node the child on the eye's side of the split plane (eye[axis] < center[axis]
    /// means the left child) goes first; inside a leaf, by point_box_distance, then id.
    void front_to_back(const Vec3& eye, std::vector<std::uint32_t>& out) const;

    /// Frustum cull in the approximate order: the front_to_back traversal from f.eye, skipping
    /// every node whose sphere lies entirely outside one plane (with slack, so it only prunes),
    /// and keeping exactly the leaf boxes frustum_may_see keeps: the set is cull_brute_force's.
    void cull_front_to_back(const Frustum& f, std::vector<std::uint32_t>& out) const;

    const Config& config() const { return config_; }
    /// Nodes in depth-first order; the root is nodes()[0] (empty when there are no boxes).
    std::span<const Node> nodes() const { return nodes_; }
    /// Each node's box bounds, by node index: the exact merge of the boxes below it.
    std::span<const Box> node_bounds() const { return bounds_; }
    /// Box ids in leaf order: leaf slots index into this.
    std::span<const std::uint32_t> ids() const { return ids_; }
    /// Depth of the deepest leaf (0 for one leaf or an empty tree).
    std::uint32_t height() const;

private:
    friend struct SphereBvhTestAccess;  // tests corrupt the tree to see validate() catch it

    struct Item {
        Box box;  // its centre decides its side of a split
        std::uint32_t id;
    };
    std::uint32_t build_range(std::vector<Item>& items, std::uint32_t begin, std::uint32_t end,
                              std::uint32_t depth, const Box& bounds);
    bool may_overlap(std::uint32_t a, std::uint32_t b) const;
    /// The ids of the boxes meets_box(box) accepts, descending into the nodes
    /// meets_node(index) accepts (query_box and query_point).
    template <class MeetsNode, class MeetsBox>
    void collect(MeetsNode&& meets_node, MeetsBox&& meets_box,
                 std::vector<std::uint32_t>& out) const;
    /// The front_to_back traversal from `eye`, skipping the subtrees of the nodes
    /// outside(node) rejects and the leaf boxes visible(box) rejects.
    template <class Outside, class Visible>
    void walk_front_to_back(const Vec3& eye, Outside&& outside, Visible&& visible,
                            std::vector<std::uint32_t>& out) const;
    void self_pairs_node(std::uint32_t index, std::vector<Pair>& out) const;
    void cross_pairs(std::uint32_t a, std::uint32_t b, std::vector<Pair>& out) const;

    Config config_;
    std::vector<Node> nodes_;
    std::vector<Box> bounds_;         ///< bounds_[k] is the box bounds of node k's boxes
    std::vector<std::uint32_t> ids_;  ///< ids in leaf order
    std::vector<Box> boxes_;          ///< boxes in leaf order: boxes_[k] is box ids_[k]
};

}  // namespace broadphase
