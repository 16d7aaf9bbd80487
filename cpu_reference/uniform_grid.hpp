// Uniform grid with spatial hashing (M. Teschner et al., "Optimized Spatial Hashing for
// Collision Detection of Deformable Objects", VMV 2003), extended to a hierarchy of hash grids
// in the manner of hierarchical spatial hashing (B. Mirtich, "Impulse-based Dynamic Simulation
// of Rigid Body Systems", PhD thesis, 1996; M. Eitz and G. Lixu, "Hierarchical Spatial Hashing
// for Real-time Collision Detection", SMI 2007). Cells are kept in a hash table so that only
// occupied cells cost memory, and a box is entered in EVERY cell it overlaps, not only the
// cells of its corners (corner-only bucketing misses boxes that meet in a middle cell).
//
// Cell sides come from the median box extent. Boxes spanning too many cells go to a coarser
// grid (cells at least kLevelGrowth times larger, sized from those boxes), and so on. Boxes
// far smaller than the median would instead pile up in a few cells when they are dense (a
// scene of clusters whose box sizes differ 100x: the tiny boxes of one cluster would all share
// a handful of median-sized cells, a quadratic self_pairs). So each level first checks
// whether its boxes kLevelGrowth times smaller than the median one would crowd its cells and,
// if so, takes its cells from those boxes' median instead and keeps only that size class,
// repeating down the classes; the larger boxes move up to coarser levels chosen the same way.
// Each dense size class thus gets cells about cell_scale times its own boxes, no cell holds a
// crowd of boxes far smaller than itself, and every level stays linear in its boxes. Dynamic:
// insert, remove and move by caller-chosen id; a box goes to the finest level it fits.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "broadphase/structure.hpp"

namespace broadphase {

/// The `uniform_grid` Structure.
class UniformGrid final : public Structure {
public:
    /// Build parameters.
    struct Config {
        /// The cell side on each axis is cell_scale times the median box extent on that axis,
        /// taken over the boxes given to build() (per axis, so that XLine/YLine-like scenes get
        /// flat cells), or over a crowding class of much smaller boxes (see kCrowding).
        /// Must be > 0.
        double cell_scale = 2.0;
        /// A box spanning more cells than this (product over the axes), or outside the level's
        /// size class (see kCrowding), goes to the next coarser level; past kMaxDepth levels,
        /// to a list that every query tests directly.
        std::uint64_t max_cells_per_box = 64;
        /// Cell side on an axis where the boxes give none: an empty build, or all boxes with
        /// zero extent and zero spread on that axis. Must be > 0.
        double fallback_cell_size = 1.0;
    };

    /// Integer cell coordinates (x, y, z), clamped to +-kCoordLimit.
    using CellCoord = std::array<std::int64_t, 3>;
    /// Cell coordinates are clamped to this magnitude (the clamp is monotone, so it only makes
    /// the outermost cells larger, never loses an overlap).
    static constexpr std::int64_t kCoordLimit = std::int64_t{1} << 52;
    /// Each level's cell side is at least this many times its finer level's, on every axis.
    static constexpr double kLevelGrowth = 4;
    /// The coarsest level is this deep (the finest is depth 0); it keeps boxes that still span
    /// more than max_cells_per_box cells in a linear list.
    static constexpr std::uint32_t kMaxDepth = 24;
    /// build() sizes a level's cells for its "much smaller" boxes (on every axis at most
    /// 1 / kLevelGrowth of the cell side divided by cell_scale) instead, keeps only those there
    /// and repeats the check among them, when those boxes, counted by the cell of their min
    /// corner, give a sum of squared counts above kCrowding times the level's box count: they
    /// would cost more than about kCrowding / 2 box tests per box of the level (a uniform
    /// scene costs about 20). The deepest level keeps every box.
    static constexpr double kCrowding = 16;

    UniformGrid() = default;
    explicit UniformGrid(const Config& config) : config_(config) {}

    std::string_view name() const override { return "uniform_grid"; }
    // The Structure overrides:
    // - build chooses the cell sides (see Config and kCrowding) and the grid origin (the
    //   scene's min corner), then enters every box; those that do not fit (too many cells, or
    //   outside the level's size class) build the coarser levels the same way. Cell sides and
    //   origins stay fixed until the next build(), whatever is inserted later (a coarser level
    //   first made by insert() gets kLevelGrowth times this level's sides).
    // - self_pairs reports each pair once: within a level, from the cell holding the max of the
    //   two min corners (the lowest cell the two boxes share); across levels, by the finer
    //   box's region query on the coarser levels; in the deepest level's list, by a sweep on x.
    // - ray_cast is a 3D-DDA walk through the cells along the ray, each step widened by a
    //   rounding margin, stopping once the best hit is before the next cell. All levels share
    //   the best hit: each first walks a few cells, then the unfinished ones walk on, a level
    //   whose boxes all lie past the best hit being skipped; a walk longer than its level's
    //   occupied cells becomes a linear scan of that level.
    // - validate checks: id <-> slot maps agree, boxes valid, cached cell ranges match the
    //   boxes, each small box is in exactly the cells of its range (no cell twice, no empty
    //   cell stored), large boxes are exactly those spanning more than max_cells_per_box cells,
    //   every box is in its level's size class, no box of a coarser level fits this one, and the
    //   small-box bounds hold every small box.
    BROADPHASE_STRUCTURE_OVERRIDES;
    BROADPHASE_DYNAMIC_OVERRIDES;
    void query_point(const Vec3& p, std::vector<std::uint32_t>& out) const override;
    /// All levels share one candidate list: shells of cells at distance <= 1 around p's cell on
    /// each level, then, on the levels those did not settle, the cells of the cube around p
    /// whose half side is the k-th candidate distance (a region walk, see for_each_cell), or a
    /// linear scan of the level while fewer than k candidates are known.
    /// Replaces `out` with the k nearest by point_box_distance, nearest first, ties by id.
    Status nearest(const Vec3& p, std::size_t k, std::vector<Neighbor>& out) const override;

    const Config& config() const { return config_; }
    /// Cell side on each axis, chosen by build().
    std::array<double, 3> cell_size() const { return cell_size_; }
    /// Number of occupied cells of this level.
    std::size_t cell_count() const { return cells_.size(); }
    /// Number of boxes in this level's linear list (only the deepest level has one).
    std::size_t large_count() const { return large_.size(); }
    /// Number of boxes held by the coarser levels.
    std::size_t coarse_count() const { return coarse_ ? coarse_->size() : 0; }
    /// The next coarser level, if any.
    const UniformGrid* coarse() const { return coarse_.get(); }
    /// Number of levels, this one included.
    std::size_t levels() const { return 1 + (coarse_ ? coarse_->levels() : 0); }
    /// The cell holding coordinate x on `axis` (monotone in x; NaN maps to 0).
    std::int64_t cell_coord(float x, int axis) const;

private:
    /// An occupied cell: its coordinates and the slots of the small boxes entered in it.
    struct Cell {
        CellCoord key;
        std::vector<std::uint32_t> slots;
    };
    /// Open-addressing hash table (linear probing, backward-shift deletion) over a dense array
    /// of occupied cells; iterating the cells is a walk over that array.
    class CellTable {
    public:
        static std::size_t hash(const CellCoord& c);
        const std::vector<std::uint32_t>* find(const CellCoord& key) const;
        std::vector<std::uint32_t>& get_or_add(const CellCoord& key);
        /// Erases the cell `key`, which must be present.
        void erase(const CellCoord& key);
        void clear();
        void reserve(std::size_t cells);
        std::size_t size() const { return cells_.size(); }
        const std::vector<Cell>& cells() const { return cells_; }

    private:
        static constexpr std::uint32_t kVacant = 0xffffffffu;
        std::size_t position(const CellCoord& key) const;  ///< table position of key or vacancy
        void rehash(std::size_t capacity);
        std::vector<Cell> cells_;
        std::vector<std::uint32_t> table_;  ///< index into cells_, or kVacant
        std::size_t mask_ = 0;
    };

    static constexpr std::uint32_t kNotLarge = 0xffffffffu;
    static constexpr double kNoClass = std::numeric_limits<double>::infinity();

    CellCoord cell_of(const Vec3& p) const;
    double span_cells(std::uint32_t slot) const;
    /// Spans at most max_cells_per_box cells here and is in this level's size class.
    bool fits(const Box& box) const;
    /// At most 1 / kLevelGrowth of `sides` / cell_scale on every axis (infinite sides: any box).
    bool in_class(const Box& box, const std::array<double, 3>& sides) const;
    void reset_level();
    Status build_level(std::span<const Box> boxes, std::span<const std::uint32_t> ids);
    /// Cell sides for boxes[members]: see Config::cell_scale (at least min_cell_).
    std::array<double, 3> cell_sides(std::span<const Box> boxes,
                                     std::span<const std::uint32_t> members) const;
    /// Whether boxes[fine] would crowd cells of `sides` (see kCrowding).
    bool crowded(std::span<const Box> boxes, std::span<const std::uint32_t> fine,
                 const std::array<double, 3>& sides, std::size_t level_count) const;
    UniformGrid& coarse_level();  ///< the next coarser level, made on first use
    bool contains_id(std::uint32_t id) const;
    void place(std::uint32_t id, const Box& box);  ///< at this level if it fits, else coarser
    void erase_slot(std::uint32_t slot);
    void absorb(const UniformGrid& level) const;  ///< adds a coarser level's stats to ours
    void add_slot(std::uint32_t id, const Box& box);
    void enter(std::uint32_t slot);
    void leave(std::uint32_t slot);
    void relabel(std::uint32_t from, std::uint32_t to);
    /// Calls f(cell, slots) for every occupied cell in [lo, hi]: by cell lookup for a small
    /// range; else over the occupied blocks in range (by block lookup or by scanning the
    /// blocks, whichever visits fewer), each by its cell list or by cell lookup, whichever
    /// visits fewer. Empty space thus costs one visit per block, or nothing.
    template <class F>
    void for_each_cell(const CellCoord& lo, const CellCoord& hi, F&& f) const;
    void linear_nearest(const Vec3& p, std::vector<Neighbor>& candidates) const;
    /// This level's part of ray_cast: large boxes (when `first`), then the cell walk, sharing
    /// `best`. Returns false if it stopped after `max_steps` DDA steps without finishing (it then
    /// never scans linearly); max_steps < 0 walks to the end.
    bool ray_walk(const Ray& ray, std::optional<RayHit>& best, bool first, double max_steps) const;
    /// A ray's part within the small boxes' bounds grown by the rounding margin: parameters
    /// [t0, t1] and grid coordinates g0 + t * gd on each axis; `linear` when the origin or the
    /// direction is not finite (the walk then scans linearly).
    struct RaySpan {
        bool linear = false;
        double t0 = 0, t1 = 0;
        std::array<double, 3> g0{}, gd{};
    };
    /// The ray's RaySpan, or nothing when it misses the grown bounds.
    std::optional<RaySpan> ray_span(const Ray& ray) const;
    /// ray_walk's 3D-DDA over `span`, or its linear scan where the walk would stall or look up
    /// more cells than the level holds; the same return value.
    bool ray_dda(const Ray& ray, const RaySpan& span, std::optional<RayHit>& best,
                 double max_steps) const;
    /// The ray against every box of one cell's slots (one leaf visit), keeping the closest hit.
    void ray_cell(const Ray& ray, std::optional<RayHit>& best,
                  const std::vector<std::uint32_t>& slots) const;
    /// The linear scan of every cell of this level for an unbounded walk (true); a bounded one
    /// (max_steps >= 0) leaves it to the unbounded walk (false).
    bool ray_linear(const Ray& ray, std::optional<RayHit>& best, double max_steps) const;
    /// This level's part of nearest: shells around p's cell (radius <= 1 and the large boxes
    /// when `first`; else until settled, or a linear scan), adding to the shared `candidates`;
    /// true if no box of this level not met can be among the k nearest.
    bool nearest_shells(const Vec3& p, std::size_t k, std::vector<Neighbor>& candidates,
                        bool first) const;
    /// Adds every box of this level within `bound` of p (or all of them, bound infinite).
    void nearest_region(const Vec3& p, double bound, std::vector<Neighbor>& candidates) const;
    /// The block (kBlockSide^3 cells) holding a cell.
    static CellCoord block_of(const CellCoord& cell);
    void add_cell_to_block(const CellCoord& cell);
    void remove_cell_from_block(const CellCoord& cell);

    Config config_;
    std::uint32_t depth_ = 0;
    std::array<double, 3> min_cell_{0, 0, 0};  ///< lower bound on cell_size_ (coarser levels)
    /// The cell sides this level had before build() sized them for a crowding class of much
    /// smaller boxes (see kCrowding); only boxes in_class of them fit here. Infinite otherwise.
    std::array<double, 3> class_side_{kNoClass, kNoClass, kNoClass};
    std::unique_ptr<UniformGrid> coarse_;  ///< boxes that do not fit this level
    std::array<double, 3> origin_{0, 0, 0};
    std::array<double, 3> cell_size_{1, 1, 1};
    std::array<double, 3> inv_cell_{1, 1, 1};

    // Per slot (slots are dense; remove swaps the last slot into the hole).
    std::vector<Box> boxes_;
    std::vector<std::uint32_t> ids_;
    std::vector<CellCoord> lo_, hi_;                            ///< cell range of the box
    std::vector<std::uint32_t> large_pos_;                      ///< index in large_, or kNotLarge
    std::unordered_map<std::uint32_t, std::uint32_t> slot_of_;  ///< id -> slot

    CellTable cells_;  ///< occupied cell -> slots of the small boxes in it
    struct CoordHash {
        std::size_t operator()(const CellCoord& c) const { return CellTable::hash(c); }
    };
    /// Cells per block side, and its log2: blocks group the occupied cells so that region walks
    /// pass over empty space a block at a time.
    static constexpr int kBlockShift = 3;
    /// Occupied block -> the occupied cells in it.
    std::unordered_map<CellCoord, std::vector<CellCoord>, CoordHash> blocks_;
    std::vector<std::uint32_t> large_;  ///< slots of the boxes too large for the deepest level
    std::size_t small_count_ = 0;
    Box small_bounds_{};  ///< holds every small box entered since build (grows only)
    bool has_small_bounds_ = false;
};

}  // namespace broadphase
