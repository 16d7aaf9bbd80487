// Sweep and prune (sort and sweep): boxes sorted by their minimum on the axis where box
// centroids vary most, then swept with an active list (magley's survey "Broad phase algorithms
// and data structures"; D. Baraff, "Dynamic Simulation of Non-Penetrating Rigid Bodies", 1992;
// Cohen et al., I-COLLIDE, 1995; all in docs/references.md). Temporal coherence: update()
// re-sorts last frame's order with insertion sort. Box queries scan, per
// class of boxes of similar extent on the sweep axis, the band of minima that can reach the
// region, so one world-sized box does not make every query linear. Accepted worst case (as in
// the literature): boxes that all overlap on the sweep axis; ray casts are a linear scan.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "broadphase/structure.hpp"

namespace broadphase {

/// The `sweep_and_prune` Structure.
class SweepAndPrune final : public Structure {
public:
    std::string_view name() const override { return "sweep_and_prune"; }
    // The Structure overrides; build chooses the sweep axis (largest centroid variance, ties
    // to the lower axis) and sorts.
    BROADPHASE_STRUCTURE_OVERRIDES;

    /// Temporal coherence (as in the survey): `moved` holds the new positions of the same boxes
    /// (same count, same ids). Keeps the sweep axis chosen by build() and re-sorts the previous
    /// order with insertion sort, O(n + k) for k swapped neighbours, so O(n) when boxes moved
    /// little.
    /// Should the order change a lot (more than kMaxShiftsPerBox shifts per box), it finishes
    /// with a full sort instead; the result is the same order either way. On error (different
    /// count, bad box) the structure is left as it was.
    Status update(std::span<const Box> moved);

    /// Shift budget of update() per box before it falls back to a full sort.
    static constexpr std::size_t kMaxShiftsPerBox = 16;

    /// The sweep axis (0 x, 1 y, 2 z).
    int axis() const { return axis_; }
    /// Box ids in sweep order: ascending (min on the sweep axis, id).
    std::span<const std::uint32_t> order() const { return order_; }
    /// Neighbour shifts made by the insertion sort of the last update().
    std::size_t last_update_shifts() const { return last_update_shifts_; }
    /// Whether the last update() fell back to a full sort.
    bool last_update_fell_back() const { return last_update_fell_back_; }

private:
    void refresh_derived();

    int axis_ = 0;
    std::vector<std::uint32_t> order_;  ///< ids in sweep order
    std::vector<Box> sorted_;           ///< boxes in sweep order (sorted_[k] is box order_[k])
    std::vector<float> prefix_max_;     ///< prefix_max_[k]: max of sorted_[0..k].max[axis_]
    // Queries: the sweep positions grouped by the binary exponent of the box's extent on the
    // sweep axis, each group in sweep order with its own largest extent, so that a region
    // scans in each group only the boxes whose min lies within that extent before it. One huge
    // box (a ground slab) then costs one test per query instead of making every query scan
    // from it onwards, as one running maximum over all boxes did.
    struct ExtentClass {
        double widest = 0;                 ///< largest extent on the sweep axis in the class
        std::vector<float> mins;           ///< sweep-axis minima, ascending
        std::vector<std::uint32_t> where;  ///< sweep positions, ascending
    };
    std::vector<ExtentClass> classes_;
    // The active list is split into slabs along the axis of second-largest variance, so
    // that a box meets only the active boxes of the slabs it spans (see self_pairs).
    int slab_axis_ = 1;
    std::vector<float> slab_bounds_;  ///< ascending; slab s is [bounds[s-1], bounds[s])
    std::size_t last_update_shifts_ = 0;
    bool last_update_fell_back_ = false;
};

}  // namespace broadphase
