// R-tree: a balanced tree of nodes holding between min_entries and max_entries boxes each, all
// leaves at one depth, filled one box at a time (the R-tree section of magley's survey "Broad
// phase algorithms and data structures", docs/references.md). Three policies:
// - Guttman's linear and quadratic splits (A. Guttman, "R-trees: a dynamic index structure for
//   spatial searching", SIGMOD 1984): ChooseLeaf by least enlargement, Delete with CondenseTree.
// - the R*-tree (N. Beckmann, H.-P. Kriegel, R. Schneider, B. Seeger, "The R*-tree: an efficient
//   and robust access method for points and rectangles", SIGMOD 1990): ChooseSubtree by least
//   overlap enlargement at the level above the leaves, split on the axis of least margin sum
//   at the distribution of least overlap, and forced reinsertion once per level per insertion.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "broadphase/structure.hpp"

namespace broadphase {

/// The `rtree_linear`, `rtree_quadratic` and `rstar_tree` Structures, by Config::split. Node
/// bounds are tight (exactly the union of their entries); build() inserts the boxes one by one.
class RTree final : public Structure {
public:
    enum class SplitPolicy {
        linear,     ///< Guttman 1984, LinearPickSeeds / any PickNext
        quadratic,  ///< Guttman 1984, QuadraticPickSeeds / PickNext
        rstar,      ///< Beckmann et al. 1990, with forced reinsertion
    };
    struct Config {
        SplitPolicy split = SplitPolicy::quadratic;
        /// Fill bounds of every node but the root: 1 <= min_entries <= max_entries / 2.
        std::uint32_t min_entries = 4, max_entries = 16;
        /// R* only: the share of max_entries that an overflowing node gives up for reinsertion
        /// (Beckmann's p = 30%); 0 turns forced reinsertion off.
        float reinsert_fraction = 0.3f;
    };

    RTree() = default;
    explicit RTree(const Config& config) : config_(config) {}

    /// `rtree_linear`, `rtree_quadratic` or `rstar_tree`.
    std::string_view name() const override;
    // The Structure overrides:
    // - build replaces the contents by `boxes` (ids 0 .. n-1), inserted one by one in id
    //   order. On error (a bad box, a bad Config) the tree is left empty.
    // - self_pairs is a dual-tree traversal: two subtrees are crossed only where their entry
    //   boxes overlap.
    // - ray_cast goes best-first by the entry parameter of node bounds.
    // - validate checks: all leaves at one depth, entry counts in [min, max] (the root: 2 ..
    //   max, or 1 .. max as a leaf), bounds exactly the union of the child entries, parent
    //   links, every id once.
    // - insert is Guttman's Insert (ChooseLeaf, SplitNode, AdjustTree), or Beckmann's with
    //   OverflowTreatment for rstar.
    // - remove is Guttman's Delete: CondenseTree removes underfull nodes and re-inserts their
    //   entries at their own level.
    // - move is remove + insert.
    BROADPHASE_STRUCTURE_OVERRIDES;
    BROADPHASE_DYNAMIC_OVERRIDES;
    /// Best-first by the distance to node bounds; `out` is replaced by the k nearest.
    Status nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const override;

    /// Number of levels: 0 when empty, 1 when the root is a leaf.
    int height() const;
    /// Nodes in use.
    std::size_t node_count() const { return nodes_.size() - free_count_; }
    /// Node splits and R* forced reinsertions (overflows treated by reinsertion) so far.
    std::uint64_t split_count() const { return splits_; }
    std::uint64_t forced_reinsert_count() const { return forced_reinserts_; }
    const Config& config() const { return config_; }

private:
    static constexpr std::int32_t kNull = -1;

    /// A child box and what it bounds: a node index (internal) or a box id (leaf).
    struct Entry {
        Box box;
        std::uint32_t ref = 0;
    };
    struct Node {
        std::vector<Entry> entries;
        std::int32_t parent = kNull;  ///< or the next free node while on the free list
        std::int32_t level = 0;       ///< 0 for leaves, parent level - 1; -1 on the free list
    };

    Status check_config() const;
    Status check_id(std::uint32_t id, bool present, const char* what) const;
    std::int32_t allocate_node(std::int32_t level);
    void free_node(std::int32_t index);
    void clear();
    Box bounds(std::int32_t node) const;
    Entry& entry_of(std::int32_t parent, std::int32_t child);
    void add_entry(std::int32_t node, const Entry& entry);

    std::vector<std::int32_t> choose_path(const Box& box, std::int32_t level) const;
    std::size_t choose_subtree(const Node& node, const Box& box) const;
    void insert_entry(const Entry& entry, std::int32_t level, std::vector<char>& reinserted);
    std::vector<Entry> take_farthest(std::int32_t node);
    std::int32_t split_node(std::int32_t node);
    void condense(std::int32_t leaf);
    void collect_leaf_entries(std::int32_t node, std::vector<Entry>& out);

    Config config_;
    std::vector<Node> nodes_;
    std::int32_t root_ = kNull;
    std::int32_t free_list_ = kNull;
    std::size_t free_count_ = 0;
    std::unordered_map<std::uint32_t, std::int32_t> leaf_of_;  ///< id -> leaf node
    std::uint64_t splits_ = 0;
    std::uint64_t forced_reinserts_ = 0;
};

}  // namespace broadphase
