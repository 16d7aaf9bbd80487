// Dynamic AABB tree: a binary tree of "fat" boxes (each box grown by a margin) that supports
// insert by least cost, remove, and re-insert only when a moved box escapes its fat box, as
// described in Ming-Lun "Allen" Chou's article "Game Physics: Broadphase - Dynamic AABB
// Tree", with what its comment section asks for: self-pairs that prune at every level of a
// dual-tree traversal (not only at leaves) and rotations so that degenerate insertion orders
// stay balanced. Insertion and moves follow Box2D v3's b2DynamicTree (E. Catto, src/
// dynamic_tree.c; see also his GDC 2019 talk "Dynamic Bounding Volume Hierarchies"): the best
// sibling by surface-area cost through a branch-and-bound descent (b2FindBestSibling), rotations
// that swap subtrees only where that shrinks the tree's surface area (b2RotateNodes), and a move
// that removes and re-inserts the leaf with no rotation after the removal (b2DynamicTree_
// MoveProxy), searching only below the lowest ancestor whose box holds the new fat box.
//
// Box2D grows every box by one absolute margin. Here the default margin is relative (see
// Config::margin): a fraction of the typical box extent (a lower median, which outliers such as
// a world-sized ground slab cannot move), capped on each axis by the same fraction of the box's
// own extent there, so that no fat box is much larger than its box on any axis. Together with
// the surface-area insertion cost, the median-split bulk build and the rotations, this keeps
// self-pairs and queries within a small factor of a uniform scene's cost per box on level,
// multiscale, degenerate, line-shaped and long-thin scenes (tests/cpu/robustness_test.cpp), and
// a tree kept up to date by move() through 200 frames of motion within twice the cost of one
// built afresh (tests/cpu/tree_quality_test.cpp).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "broadphase/structure.hpp"

namespace broadphase {

/// The `dynamic_aabb_tree` Structure. Fat boxes are used only for pruning; every reported
/// pair or hit is decided on the real (tight) boxes, so results equal brute force exactly.
class DynamicAabbTree final : public Structure {
public:
    struct Config {
        /// Fat-box margin. With margin_is_relative (the default) a box is grown on each axis
        /// by margin times the smaller of its own extent on that axis (max - min) and the
        /// typical extent: the lower median of the boxes' mean extents (mean over the axes),
        /// taken over the boxes given to build(), or, for a tree filled by insert() alone, over
        /// the first 1024 inserted (re-estimated at 1, 2, 4, ... boxes). A median, not a mean,
        /// so that one world-sized box cannot make every fat box cover the scene; a per-axis
        /// cap, so that a thin box is not grown across its thin axis by many times its
        /// thickness (and an axis of extent 0 not at all). Otherwise it is an absolute length
        /// added on every side of every box. 0 gives tight leaves (every move that changes a
        /// box re-inserts it).
        float margin = 0.1f;
        bool margin_is_relative = true;
        /// Tree rotations on the path up from every inserted leaf (insert(), and move()'s
        /// re-insertions), to the first ancestor that neither changed nor rotated (Box2D v3's
        /// b2RotateNodes; none after a removal, as there): at each ancestor, the swap of a child
        /// with a grandchild on the other side that most reduces the surface area of the node
        /// it changes, if one does; where no swap changes the area (identical boxes), one that
        /// lowers the ancestor's height. Sorted insertions stay O(log n) high, and since no swap
        /// grows a node, none hangs a far group of boxes under a node of another, as
        /// height-only (AVL) rotations did.
        bool rotations = true;
        /// build() by top-down median splits (true) or by inserting the boxes one by one.
        bool bulk_build = true;
    };

    DynamicAabbTree() = default;
    explicit DynamicAabbTree(const Config& config) : config_(config) {}

    std::string_view name() const override { return "dynamic_aabb_tree"; }
    // The Structure overrides:
    // - build replaces the contents by `boxes` with ids 0 .. n-1. On error the tree is left
    //   empty.
    // - validate checks parent/child links, heights, fat boxes containing children and tight
    //   boxes, the id map, the free list, and leaf count equal to size().
    // - insert adds a new leaf by least surface-area cost (Box2D v3's sibling search), then
    //   rotates.
    //   Ids below about twice the number of boxes held (slot indices, as the engine adapters
    //   use, always are) index a table; others, however large, go to a hash map.
    // - move updates the tight box, O(1) while it stays inside its fat box. A box that escapes
    //   gets a new fat box: kept in place when the leaf's parent box holds it, else the leaf is
    //   re-inserted below the lowest ancestor that holds it (or the root), O(log n) for a
    //   balanced tree.
    BROADPHASE_STRUCTURE_OVERRIDES;
    BROADPHASE_DYNAMIC_OVERRIDES;
    /// O(n), keeping the topology: every leaf takes its new box and a fat box fattened afresh
    /// from it (centred again, with the current margin(), as build() would make it; no leaf is
    /// re-inserted), then every internal box is recomputed bottom-up. Rejects (and leaves the
    /// tree as it was) a count other than size(), an id in 0 .. size()-1 the tree does not
    /// hold, and invalid boxes. Quality decays as boxes move away from where the tree was built
    /// (FCL's refit does the same); build() restores it.
    Status refit_all(std::span<const Box> boxes) override;
    /// One walk along the ray: a node is entered when the ray touches its fat box grown by
    /// lo and hi; a leaf is reported when the ray touches its tight box grown so.
    void query_ray_candidates(const Ray& ray, const Vec3& lo, const Vec3& hi,
                              std::vector<std::uint32_t>& out) const override;
    /// Best-first search over fat boxes; `out` is replaced by the k nearest, nearest first.
    Status nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const override;

    /// query_box of every region at once: region r's ids (in no particular order) are
    /// out[ranges[r].first .. ranges[r].first + ranges[r].second), `out` and `ranges` replaced.
    /// Several descents run in turn, each node asked for when it is pushed and read after the
    /// other descents' steps, so that the memory latency of one walk hides behind the others
    /// (a walk alone waits for each node it reads). The same nodes, leaves and counts as a
    /// query_box per region.
    void query_boxes(std::span<const Box> regions, std::vector<std::uint32_t>& out,
                     std::vector<std::pair<std::uint32_t, std::uint32_t>>& ranges) const;

    /// build(boxes) with the boxes flagged in `apart` (one byte per box, nonzero: flagged)
    /// under one child of the root and the others under the other, each part by median splits,
    /// then the pairs self_pairs() would append to `out` except those of two flagged boxes: a
    /// world's static bodies, which never pair with each other, cost their part's build and
    /// nothing in the walk. With either part empty, the tree is build()'s (and no pair is
    /// appended when every box is flagged). On error the tree is left empty.
    Status build_apart(std::span<const Box> boxes, std::span<const std::uint8_t> apart,
                       std::vector<Pair>& out);

    /// Height of the tree: 0 when empty or a single leaf, else 1 + the taller child's height.
    int height() const;
    /// Moves that left their fat box since construction: each gave the leaf a new fat box and
    /// re-inserted it, unless the new one lay in its parent's box. A move inside is free.
    std::uint64_t reinsert_count() const { return reinserts_; }
    /// The margin in scene units now applied to new fat boxes (relative margins: the most a
    /// box is grown by on an axis; on an axis where config().margin times the box's extent is
    /// smaller, it is grown by that).
    float margin() const { return margin_; }
    const Config& config() const { return config_; }

private:
    static constexpr std::int32_t kNull = -1;

    /// The fat box and child links that every descent reads: 32 bytes, aligned to 32, so that
    /// a node never straddles a cache line. The parent link and height (Link) and a leaf's own
    /// data (LeafData) are apart, under the same index.
    struct alignas(32) Node {
        Box fat;  ///< leaf: tight box grown by the margin; internal: union of the children
        std::int32_t child1 = kNull;  ///< kNull for a leaf
        /// A leaf's id (its bits) at a leaf, so that a query of a tree whose fat boxes are the
        /// tight ones (margin 0: the pair tracker's) reads no LeafData
        std::int32_t child2 = kNull;
        bool leaf() const { return child1 == kNull; }
    };
    static_assert(sizeof(Node) == 32);
    /// What the writes alone read: insertions, removals, rotations, refits, validate().
    struct Link {
        std::int32_t parent = kNull;  ///< or the next free node while on the free list
        std::int32_t height = 0;      ///< 0 for a leaf, -1 on the free list
    };
    struct LeafData {
        Box tight;  ///< the caller's box
        std::uint32_t id = 0;
    };

    std::int32_t allocate_node();
    void free_node(std::int32_t index);
    std::int32_t make_leaf(std::uint32_t id, const Box& box);
    Box fatten(const Box& box) const;
    void set_relative_margin(std::span<const Box> boxes);
    Status start_build(std::span<const Box> boxes);
    void sample_margin(const Box& box);
    struct BuildItem {
        float centre[3];
        std::uint32_t id;
    };
    static BuildItem build_item(const Box& box, std::uint32_t id) {
        BuildItem item;
        for (int a = 0; a < 3; ++a) item.centre[a] = 0.5f * box.min[a] + 0.5f * box.max[a];
        item.id = id;
        return item;
    }
    std::int32_t build_top_down(std::span<const Box> boxes, std::span<BuildItem> items,
                                std::int32_t parent);
    /// Reports the pairs of every entry of `start`: (a, kNull) the pairs inside subtree a,
    /// (a, b) those between the disjoint subtrees a and b, whose fat boxes overlap.
    void pair_walk(std::initializer_list<std::pair<std::int32_t, std::int32_t>> start,
                   std::vector<Pair>& out) const;
    void relink(std::int32_t parent, std::int32_t from, std::int32_t to);
    std::int32_t find_best_sibling(const Box& box, std::int32_t top) const;
    void insert_leaf(std::int32_t leaf, bool rotations, std::int32_t top = kNull);
    void remove_leaf(std::int32_t leaf);
    void refit_node(std::int32_t index);
    void refit_upwards(std::int32_t index, bool rotations);
    bool rotate(std::int32_t a);
    std::int32_t leaf_of(std::uint32_t id) const;
    /// A leaf reached by a region query (its fat box overlaps `region`): appends its id when
    /// its tight box does too. A tree without margin (fatten() returns the box itself) keeps
    /// the id in child2 and reads no LeafData.
    void report_leaf(std::int32_t index, const Box& region, std::vector<std::uint32_t>& out) const {
        if (!(config_.margin > 0)) {
            out.push_back(static_cast<std::uint32_t>(nodes_[index].child2));
            return;
        }
        const LeafData& data = leaf_data_[index];
        if (overlaps(data.tight, region)) out.push_back(data.id);
    }
    void map_id(std::uint32_t id, std::int32_t leaf);
    void unmap_id(std::uint32_t id);
    void clear();
    void note_reinsert();
    void relayout();

    Config config_;
    static constexpr std::size_t kMarginSample = 1024;
    float margin_ = 0;
    bool margin_chosen_ = false;
    bool sampling_margin_ = false;    ///< insert() is still estimating the typical extent
    std::vector<Box> margin_sample_;  ///< the first boxes inserted, while sampling
    std::vector<Node> nodes_;
    std::vector<Link> links_;          ///< by node index
    std::vector<LeafData> leaf_data_;  ///< by node index; meaningful at leaves
    std::int32_t root_ = kNull;
    std::int32_t free_list_ = kNull;
    /// id -> leaf node for ids below its size (kNull: not in the tree). It grows only to take
    /// an id below 2 * size() + kTableSlack, so that a huge id (4e9) costs no memory.
    std::vector<std::int32_t> leaf_of_;
    static constexpr std::size_t kTableSlack = 1024;
    std::unordered_map<std::uint32_t, std::int32_t> far_leaf_of_;  ///< ids past leaf_of_
    std::size_t leaf_count_ = 0;
    std::uint64_t reinserts_ = 0;
    /// Leaves re-inserted since the nodes were last laid out in depth-first order.
    std::size_t reinserts_since_layout_ = 0;
};

}  // namespace broadphase
