// PairTracker: the overlapping pairs of a world that changes a little at a time, kept up to date
// from the bodies that changed alone. It is the change tracker behind ProxyWorld and the
// Bullet and FCL adapters.
//
// The scheme is Box2D's (E. Catto, box2d v3: the move buffer, b2UpdateBroadPhasePairs, and the
// contacts that live while their fat boxes overlap) with btDbvtBroadphase's exact leaf-versus-
// tree query (collideTV) for a body that moved out of its fat box:
// - Every body has its tight box (the caller's) and a fat box around it: the tight box grown by
//   a margin, and stretched along the body's last displacement times `prediction` (Box2D v2's
//   b2_aabbMultiplier), so that a body moving steadily leaves its fat box only every few steps;
//   the margin grows with the body's speed, so that one moving without a steady course does not
//   leave it at every step either.
//   The structure (any CPU method) holds the fat boxes.
// - A candidate is a pair of bodies whose fat boxes overlapped when one of them last got a new
//   fat box and whose filters allow it. Every pair of overlapping fat boxes is a candidate,
//   because a fat box changes only at a body's insert, filter change or escape, and then the
//   body queries the structure with its new fat box (the requery).
// - A pair is reported while its tight boxes overlap (closed boxes; with `hysteresis` h, once
//   begun it lasts until the boxes are more than h apart on some axis). update() tests only the
//   candidates of the bodies changed since the last update, so unchanged and sleeping bodies
//   cost nothing, and returns the pairs that began and ended.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase {

class Structure;

/// Work done by a PairTracker's updates, summed since its creation.
struct PairTrackerStats {
    std::uint64_t updates = 0;          ///< update() calls (one id or all)
    std::uint64_t changed = 0;          ///< changed bodies processed
    std::uint64_t requeries = 0;        ///< bodies that got a new fat box and queried the structure
    std::uint64_t candidate_tests = 0;  ///< tight-box tests of candidates
    /// Builds of the structure: a static method's at each update with changes, a dynamic
    /// one's when a batch of ids 0 .. k-1 (k >= 64) fills an empty tracker
    std::uint64_t rebuilds = 0;
    std::uint64_t candidates = 0;  ///< candidates held now
    std::uint64_t pairs = 0;       ///< pairs held now
};

/// The pairs of a changing set of boxes under caller-chosen ids (dense: memory follows the
/// largest id). Queries see the boxes of the last update; insert, remove, move and set_filter
/// take effect at the next update. Not thread-safe for writes; const calls may run
/// concurrently when no write does (they read only).
class PairTracker {
public:
    struct Config {
        /// The CPU method (make_structure's names). A dynamic structure holds the fat boxes
        /// and follows the changes as described above. A static one is instead rebuilt over
        /// the boxes at each update with changes and its pairs found whole (self_pairs) and
        /// compared with the last ones: cheaper when most bodies move every step, but every
        /// update costs O(n log n), an update of one id included.
        std::string method = "dynamic_aabb_tree";
        /// The fat box's margin, the same on every axis: this fraction of the box's largest
        /// extent, clamped to between a quarter and all of the typical extent (the lower median
        /// of the first 1024 boxes' mean extents), so that one world-sized box cannot make
        /// every fat box huge.
        float margin = 0.2f;
        /// The fat box is stretched along the last displacement (tight box centre to centre)
        /// times this, capped at 4 typical extents (a teleport does not make a huge fat box).
        float prediction = 3.0f;
        /// The margin is at least this times the length of the last displacement, up to half
        /// the size `margin` is a fraction of, on every side: a body that moves without
        /// a steady direction (jitter, a random walk) still stays in its fat box for several
        /// steps, where the prediction helps only a body that keeps its course. 0: the margin
        /// alone.
        float speed_margin = 4.0f;
        /// 0: a pair lasts exactly while the closed tight boxes overlap. h > 0 (dynamic methods
        /// only): a pair begins when they overlap and ends when they are more than h apart on
        /// some axis (engines like fewer pairs that come and go). The fat margin is at least
        /// h/2.
        float hysteresis = 0;
        /// false: a query index only (a mirror for region and ray queries): each update brings
        /// the structure up to date with the changes and keeps no candidates or pairs, so that
        /// its cost is that of the changes alone (update reports no began or ended pair; pairs()
        /// and partners() stay empty).
        bool pairs = true;
    };

    /// A tracker over `config.method`; an invalid_argument error names an unknown method or a
    /// bad setting.
    static Result<std::unique_ptr<PairTracker>> create(const Config& config);
    static Result<std::unique_ptr<PairTracker>> create() { return create(Config{}); }
    ~PairTracker();
    PairTracker(const PairTracker&) = delete;
    PairTracker& operator=(const PairTracker&) = delete;

    /// Adds body `id` (not present) with a valid box (an invalid_box error names the id
    /// otherwise). A static body never pairs with another static body.
    Status insert(std::uint32_t id, const Box& box, const Filter& filter = {},
                  bool is_static = false);
    /// Removes a present body; its pairs end at the next update.
    Status remove(std::uint32_t id);
    /// Gives a present body a new valid box. The same box as before costs nothing.
    Status move(std::uint32_t id, const Box& box);
    /// Gives a present body a new filter; its pairs follow at the next update.
    Status set_filter(std::uint32_t id, const Filter& filter);

    /// Applies every change since the last update and appends the pairs that began and ended
    /// (i < j, in no particular order) to `began` and `ended`. A pair that ended and began
    /// again within the changes is in neither. On an error (memory) the tracker must be
    /// cleared.
    Status update(std::vector<Pair>& began, std::vector<Pair>& ended);
    /// Applies the changes of `id` alone now (its pairs exact against every other body's
    /// box of its own last update); the other changed bodies wait for the next update.
    Status update(std::uint32_t id, std::vector<Pair>& began, std::vector<Pair>& ended);

    /// Every current pair (i < j, in no particular order), valid until the next update.
    std::span<const Pair> pairs() const;
    /// Appends the current partners of `id` (ids paired with it), in no particular order: from
    /// its candidates on a dynamic method, from every pair on a static one.
    void partners(std::uint32_t id, std::vector<std::uint32_t>& out) const;
    /// Appends every pair whose boxes (as of the last update) overlap and whose filters allow
    /// it (i < j, in no particular order): pairs() where the tracker keeps its pairs (with
    /// hysteresis, the pairs it keeps within it too), else (a query index) found whole through
    /// the structure, a self collide of its boxes.
    void overlapping_pairs(std::vector<Pair>& out) const;
    /// Appends every body whose box (as of its last update) overlaps the closed region.
    void query_box(const Box& region, std::vector<std::uint32_t>& out) const;
    /// Appends, for every body whose box grown to [min + lo, max + hi] the segment of `ray`
    /// (t in [0, tmax], tmax finite) touches, its id and the entry t (ray_box_slabs in float),
    /// in no particular order: one walk of the structure per ray.
    void query_ray(const Ray& ray, const Vec3& lo, const Vec3& hi, std::vector<RayHit>& out) const;

    /// True when `id` is present (inserted and not removed, whether updated or not).
    bool contains(std::uint32_t id) const;
    /// The box of a present body as of its last update.
    const Box& box(std::uint32_t id) const;
    /// Present bodies.
    std::size_t size() const;
    /// True when some change waits for an update.
    bool pending() const;
    /// Forgets every body and pair.
    void clear();

    std::string_view method() const;
    /// True for a static method: every update rebuilds it and finds its pairs whole.
    bool rebuilds() const;
    PairTrackerStats stats() const;
    /// Checks the invariants: every present, updated body in the structure with its fat box
    /// around its box, candidates linked both ways, and the pairs equal to brute force over
    /// the boxes and filters (an O(n^2) check, for tests). The first broken one is named.
    Status validate() const;

    struct Impl;

private:
    explicit PairTracker(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace broadphase
