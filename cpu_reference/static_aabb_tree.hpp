// Static AABB tree after PhysX's AABBTree / AABBPruner (PhysX SDK 3.4 Gu/SqAABBTree, as read in
// Hakuya's notes "「Scene Queries」AABBTree —— 上", docs/references.md): top-down build splitting
// at the mean centroid along the axis of largest centroid variance, a leaf limit (default 4), an
// index indirection (the tree never reorders the boxes, only an index array), flattened compact
// runtime nodes (28 bytes: bounds + one packed word), a progressive build with bounded work per
// step, refit of dirty paths through parent indices and a dirty bitmask, removal by swap-with-last,
// and merging of a freshly built tree into the live one.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "broadphase/structure.hpp"

namespace broadphase {

/// The `static_aabb_tree` Structure.
///
/// Ids and slots: every box lives in a slot 0 .. size()-1 of a compact box array (PhysX's
/// mAABBArray); ids stay the caller's (input indices after build(boxes), chosen ids after
/// build(boxes, ids), insert or merge), and `ids_[slot]` maps a slot to its id. Leaves hold
/// ranges of the index array (mIndices), whose live entries are a permutation of the slots.
/// remove(id) moves the last slot's box into the removed one's slot (swap-with-last); the moved
/// box keeps its id and its leaf.
///
/// Dynamic use: insert(id, box) builds a one-box tree and merges it (merge(); batches should be
/// built as one tree and merged once); move(id, box) is mark_dirty(id, box) + refit();
/// remove(id) takes the box out of its leaf (the leaf keeps its place; its range shrinks and the
/// dead index entry is not reclaimed, as in PhysX) and refits. Between mark_dirty() and refit()
/// queries may miss the marked boxes and validate() reports the pending refit.
class StaticAabbTree final : public Structure {
public:
    struct Config {
        /// Most boxes in a leaf (PhysX's mLimit), 1 .. 15 (4 bits of the packed node word).
        /// Leaves never exceed it: when the mean split leaves one side empty (all centroids
        /// equal on the split axis) the node is cut in half by index instead.
        std::uint32_t leaf_limit = 4;
        /// step_progressive_build() processes nodes until at least this many primitives have
        /// been processed (a node costs its primitive count and is never split across steps).
        std::uint32_t progressive_work_per_step = 1024;
    };

    /// Flattened runtime node, PhysX's AABBTreeRuntimeNode. Total: 28 bytes.
    /// data bit 0 = 1 (leaf): bits 1..4 primitive count, bits 5..31 first index-array position.
    /// data bit 0 = 0 (internal): bits 1..31 the left child; the right child is left + 1.
    /// Children always come after their parent, so refit can run from high indices to low.
    struct RuntimeNode {
        Box bounds;              ///< union of the children / primitives; inverted when empty
        std::uint32_t data = 0;  ///< packed, see above

        bool is_leaf() const { return (data & 1u) != 0; }
        std::uint32_t left() const { return data >> 1; }
        std::uint32_t count() const { return (data >> 1) & 15u; }
        std::uint32_t first() const { return data >> 5; }
        static RuntimeNode leaf(const Box& b, std::uint32_t first, std::uint32_t count) {
            return {b, (first << 5) | (count << 1) | 1u};
        }
        static RuntimeNode internal(const Box& b, std::uint32_t left) { return {b, left << 1}; }
        friend bool operator==(const RuntimeNode&, const RuntimeNode&) = default;
    };
    static_assert(sizeof(RuntimeNode) == 28, "RuntimeNode is 28 bytes, as in PhysX");

    static constexpr std::uint32_t kNone = 0xffffffffu;
    /// Most index-array positions a tree can address (27 bits).
    static constexpr std::uint32_t kMaxPositions = 1u << 27;

    StaticAabbTree() = default;
    explicit StaticAabbTree(const Config& config) : config_(config) {}
    StaticAabbTree(const StaticAabbTree& other);
    StaticAabbTree& operator=(const StaticAabbTree& other);
    StaticAabbTree(StaticAabbTree&&) noexcept = default;
    StaticAabbTree& operator=(StaticAabbTree&&) noexcept = default;

    std::string_view name() const override { return "static_aabb_tree"; }
    // The Structure overrides:
    // - build is a one-shot build over `boxes` with ids 0 .. n-1. On error the tree is left
    //   empty.
    // - validate checks: node bounds contain children and primitives, parent indices and child
    //   order, leaf sizes <= leaf_limit, the index array's live entries a permutation of the
    //   slots, the slot / id / leaf maps, and no dirty bits left.
    BROADPHASE_STRUCTURE_OVERRIDES;
    BROADPHASE_DYNAMIC_OVERRIDES;
    /// Best-first search over node bounds; `out` is replaced by the k nearest, nearest first.
    Status nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const override;
    /// One-shot build with caller ids (`ids[i]` is the id of `boxes[i]`, all distinct).
    Status build(std::span<const Box> boxes, std::span<const std::uint32_t> ids);

    /// Starts a progressive build (PhysX's progressiveBuild) over a copy of `boxes` (ids as in
    /// build(); empty `ids` means 0 .. n-1). The live tree keeps answering queries until
    /// step_progressive_build() returns true and the new tree replaces it (as AABBPruner swaps
    /// in its new tree). Errors (bad box, duplicate id, bad config) leave the live tree as is.
    Status begin_progressive_build(std::span<const Box> boxes,
                                   std::span<const std::uint32_t> ids = {});
    /// Does one bounded step of the pending build; returns true when done (the new tree is
    /// installed) or when no build is pending. The result equals build() node for node.
    bool step_progressive_build();
    bool progressive_build_pending() const { return pending_ != nullptr; }

    /// Replaces the box of `id` and marks its leaf and the leaf's ancestors dirty (PhysX's
    /// markNodeForRefit); node bounds are stale until refit().
    Status mark_dirty(std::uint32_t id, const Box& new_box);
    /// Recomputes the bounds of every dirty node, children before parents (highest index
    /// first, PhysX's refitMarkedNodes), and clears the dirty bits.
    void refit();

    /// Merges `fresh` (built over new boxes whose ids are disjoint from the live ones) into
    /// this tree (PhysX's mergeTree): its root is attached beside the deepest live node whose
    /// bounds contain it (appended at the end when that node is a leaf, otherwise the node array
    /// is laid out again). `fresh` is not changed. Pending dirty nodes of this tree are refitted.
    Status merge(const StaticAabbTree& fresh);

    /// The runtime nodes (root at 0), for tests and inspection.
    std::span<const RuntimeNode> nodes() const { return nodes_; }
    /// The parent of every runtime node (kNone for the root).
    std::span<const std::uint32_t> parent_indices() const { return parents_; }
    /// The index array: leaf positions -> slots (kNone for dead entries).
    std::span<const std::uint32_t> indices() const { return indices_; }
    /// Slot -> caller id.
    std::span<const std::uint32_t> slot_ids() const { return ids_; }
    const Config& config() const { return config_; }
    /// Depth of the deepest leaf (0 for a single leaf or an empty tree).
    std::uint32_t depth() const;

private:
    friend struct StaticAabbTreeTestAccess;

    /// Build-time node (PhysX's AABBTreeBuildNode): a range of the index array and, once
    /// subdivided, the first of its two adjacent children. Bounds are computed at the end.
    struct BuildNode {
        std::uint32_t start = 0, count = 0;
        std::uint32_t child = 0;  ///< 0: leaf (the root is node 0, so no child is 0)
    };
    /// One entry of the index array while building, with its cached centroid (PhysX's mCache)
    /// beside it so that splits read memory in order.
    struct BuildItem {
        float centroid[3];
        std::uint32_t slot;
    };
    struct BuildState {
        std::vector<Box> boxes;
        std::vector<std::uint32_t> ids;
        std::vector<BuildItem> items;  ///< the index array being permuted
        std::vector<BuildNode> nodes;
        std::vector<std::uint32_t> fifo;  ///< progressive build queue (PhysX's FIFOStack)
        std::size_t fifo_head = 0;
    };

    Status init_build(std::span<const Box> boxes, std::span<const std::uint32_t> ids,
                      BuildState& state) const;
    void subdivide(BuildState& state, std::uint32_t node) const;
    void install(BuildState& state);
    void clear();
    void rebuild_leaf_map();
    void mark_node(std::uint32_t node);
    void refit_node(std::uint32_t node);
    Box leaf_bounds(const RuntimeNode& leaf) const;

    // The steps of merge(): its checks; the fresh tree's slots and index entries appended with
    // offsets; the deepest live node whose bounds contain the fresh root (the root if none
    // does); the fresh tree attached beside that node when it is a leaf (at the end of the
    // array), or else the array laid out again with that node made the parent of (its
    // copy, the fresh root), returning the node's new index.
    Status check_merge(const StaticAabbTree& fresh) const;
    void append_slots(const StaticAabbTree& fresh, std::uint32_t slot_offset,
                      std::uint32_t pos_offset);
    std::uint32_t merge_target(const Box& fresh_bounds) const;
    static RuntimeNode shifted(const RuntimeNode& node, std::uint32_t pos_offset,
                               std::uint32_t child_base);
    void attach_beside_leaf(const StaticAabbTree& fresh, std::uint32_t target,
                            std::uint32_t pos_offset);
    std::uint32_t lay_out_with(const StaticAabbTree& fresh, std::uint32_t target,
                               std::uint32_t pos_offset);

    Config config_;
    std::vector<RuntimeNode> nodes_;
    std::vector<std::uint32_t> parents_;
    std::vector<std::uint32_t> indices_;       ///< position -> slot (mIndices)
    std::vector<Box> boxes_;                   ///< slot -> box
    std::vector<std::uint32_t> ids_;           ///< slot -> id
    std::vector<std::uint32_t> position_of_;   ///< slot -> position in indices_
    std::vector<std::uint32_t> leaf_of_slot_;  ///< slot -> leaf node (AABBTreeUpdateMap)
    std::unordered_map<std::uint32_t, std::uint32_t> slot_of_;  ///< id -> slot
    std::vector<std::uint32_t> dirty_;      ///< one bit per node (mRefitBitmask)
    std::int64_t highest_dirty_word_ = -1;  ///< mRefitHighestSetWord; -1 when clean
    std::unique_ptr<BuildState> pending_;
};

}  // namespace broadphase
