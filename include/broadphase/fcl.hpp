// broadphase::fcl: any broadphase method of this library as an FCL (0.7) broadphase, a
// ::fcl::BroadPhaseCollisionManager<S> that takes the place of
// ::fcl::DynamicAABBTreeCollisionManager<S> or ::fcl::NaiveCollisionManager<S> (docs/fcl.md):
//
//     auto manager = broadphase::fcl::CollisionManager<double>::create("sweep_and_prune").value();
//     manager->registerObjects(objects);
//     manager->setup();
//     manager->collide(&data, ::fcl::DefaultCollisionFunction<double>);
//
// Every CPU method (cpu_method_names()) sits behind a PairTracker (broadphase/pair_tracker.hpp),
// which keeps the overlapping pairs from the objects that moved alone: each write (register,
// unregister, update, setup) brings it up to date, the self collide walks its pairs. "gpu_lbvh"
// finds the self-collide pairs through gpu::ProxyScene and answers every other query from a CPU
// query index (a PairTracker over Options::query_method that keeps no pairs).
//
// The structures hold float boxes: each object's AABB is rounded outward to float (a bound that
// the cast rounded inward is moved one float further out, values past the float range clamp to
// +-FLT_MAX, NaN bounds open to the whole range), so no overlapping pair is ever lost. The
// candidates are then tested against the objects' AABBs in S, so that the callback sees exactly
// the pairs NaiveCollisionManager<S> would give it.
//
// The callbacks follow FCL's protocol: a collision callback returning true stops the search; a
// distance callback writes the smallest distance found so far into its S& argument, which
// prunes what follows (it is called only for pairs whose AABB distance, in S, is below that
// value, as FCL's managers do), and returning true stops. The arguments come in
// DynamicAABBTreeCollisionManager's order: collide(obj) and distance(obj) call
// callback(registered, obj), collide(other) and distance(other) callback(this manager's object,
// other's object).
//
// The implementation is adapters/fcl.cpp, instantiated there for float and double.
#pragma once

#include <fcl/broadphase/broadphase_collision_manager.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "broadphase/pair_tracker.hpp"
#include "broadphase/types.hpp"

namespace broadphase::gpu {
class Context;
}

namespace broadphase::fcl {

/// How CollisionManager::create sets the adapter up.
struct Options {
    /// gpu_lbvh only: the device, which must outlive the manager. Null: the adapter creates its
    /// own Context (gpu::ContextOptions' defaults: the first GPU, else lavapipe; validation when
    /// BROADPHASE_VALIDATION=1).
    gpu::Context* context = nullptr;
    /// gpu_lbvh only: the CPU method of the query index that answers collide(object),
    /// collide(other manager) and every distance query (a name of cpu_method_names()).
    std::string_view query_method = "dynamic_aabb_tree";
    /// CPU methods: the pair tracker's fat-box margin, motion prediction and speed margin
    /// (PairTracker::Config; docs/fcl.md, "Costs", measures them). The margin is wider than the
    /// tracker's own default (0.2): FCL's callers set transforms, often without a steady course
    /// (a planner's samples, a random walk), and an object that wanders leaves a narrow fat box
    /// within a few frames, each time a query of the tree and a re-insertion, where the wider
    /// box costs a few more candidate tests per frame.
    float margin = 0.7f;
    float prediction = PairTracker::Config{}.prediction;
    float speed_margin = PairTracker::Config{}.speed_margin;
};

/// What the adapter has done so far, for tests and benches. The counts of the last query are
/// those of the last one to finish: queries running at once on several threads each publish
/// theirs at their end (atomics; no count is torn, one query's wins).
struct Stats {
    std::uint64_t builds = 0;      ///< builds over every object: the pair tracker's structure
                                   ///< (a static method's at each update, a dynamic one's when
                                   ///< a batch fills it empty), a tracker refilled after a
                                   ///< failure (gpu_lbvh: its query index's)
    std::uint64_t gpu_steps = 0;   ///< gpu_lbvh: ProxyScene frames run (one per self collide
                                   ///< after changes)
    std::uint64_t candidates = 0;  ///< last query: pairs whose float boxes overlap (or are near
                                   ///< enough, for distance), before the test in S
    std::uint64_t callbacks = 0;   ///< last query: calls of the callback
    PairTrackerStats tracker;      ///< the pair tracker's work since create() (gpu_lbvh: its
                                   ///< query index's)
};

/// The `BroadPhaseCollisionManager<S>` over one broadphase method, for S float or double. Objects
/// are the caller's (never owned or deleted); the manager keeps each one's AABB as it was at
/// registerObject or the last update that named it, as FCL's tree managers do.
///
/// Threads: the writes (register, unregister, update, setup, clear) one at a time; the const
/// queries (collide, distance, getObjects, empty, size, status, stats, validate) may run on
/// several threads at once while no write runs. They read only (gpu_lbvh's self collide runs
/// its GPU frame, and its first other query after changes applies them to its query index,
/// under a mutex).
///
/// Where it differs from FCL's managers: queries need no setup() first (every write leaves
/// the structure up to date); registering an object twice, or unregistering or updating one
/// that is not registered, changes nothing; a failure of the method itself (a Vulkan error,
/// memory: std::bad_alloc or std::length_error, the callbacks' included) is kept in status()
/// and never thrown; a query that met it was answered from a linear scan or from the CPU
/// query index, so that no pair is lost, unless memory ran out within that query, which then
/// stops.
template <class S>
class CollisionManager final : public ::fcl::BroadPhaseCollisionManager<S> {
public:
    using Object = ::fcl::CollisionObject<S>;
    using Base = ::fcl::BroadPhaseCollisionManager<S>;

    /// A manager of `method`: a name of cpu_method_names() or "gpu_lbvh" (when the GPU part is
    /// built; method_names() lists them). An invalid_argument error names an unknown method or
    /// a bad query_method; gpu_lbvh returns the errors of creating the Context or the
    /// ProxyScene.
    static Result<std::unique_ptr<CollisionManager>> create(
        std::string_view method = "dynamic_aabb_tree", const Options& options = {});
    /// The methods create() knows: cpu_method_names(), then "gpu_lbvh" when the GPU part is
    /// built.
    static std::vector<std::string_view> method_names();

    ~CollisionManager() override;
    CollisionManager(const CollisionManager&) = delete;
    CollisionManager& operator=(const CollisionManager&) = delete;

    /// Adds the objects (each with its AABB computed: CollisionObject::computeAABB), then
    /// brings the pairs up to date once.
    void registerObjects(const std::vector<Object*>& other_objs) override;
    /// Adds one object (its AABB computed) and finds its pairs. Null and already registered
    /// objects are ignored.
    void registerObject(Object* obj) override;
    /// Removes one object; one that is not registered is ignored.
    void unregisterObject(Object* obj) override;
    /// Nothing to do for CPU methods, whose writes keep them up to date (a tracker that a
    /// failure emptied is refilled here). gpu_lbvh leaves its GPU frame to the next self collide
    /// and its query index to the next other query.
    void setup() override;
    /// Reads every object's AABB again (after setTransform + computeAABB) and updates the pairs
    /// from the objects whose box changed: a body that stays inside its fat box costs a box test
    /// per candidate, one that leaves it a query (pair_tracker.hpp). gpu_lbvh gives the changed
    /// boxes to its scene and its query index.
    void update() override;
    /// Reads one object's AABB again and updates its pairs.
    void update(Object* updated_obj) override;
    /// Reads these objects' AABBs again, then as update().
    void update(const std::vector<Object*>& updated_objs) override;
    /// Removes every object.
    void clear() override;
    /// Replaces `objs` with the registered objects, in no particular order.
    void getObjects(std::vector<Object*>& objs) const override;

    /// Calls callback(o, obj, cdata) for every registered o whose AABB overlaps obj's (obj
    /// itself too when registered), until the callback returns true.
    void collide(Object* obj, void* cdata, ::fcl::CollisionCallBack<S> callback) const override;
    /// The distance from obj to the registered objects: calls callback(o, obj, cdata, d) for
    /// the objects whose AABB distance to obj's is below d, the value the callback wrote last
    /// (the largest S at first), overlapping ones first, until it returns true.
    void distance(Object* obj, void* cdata, ::fcl::DistanceCallBack<S> callback) const override;
    /// Calls callback(a, b, cdata) once for every pair of registered objects whose AABBs
    /// overlap, a registered before b (NaiveCollisionManager's order; the dynamic tree's follows
    /// its leaves and has none to keep), until the callback returns true.
    void collide(void* cdata, ::fcl::CollisionCallBack<S> callback) const override;
    /// The smallest distance between registered objects, pruned as distance(obj): overlapping
    /// pairs first, then per object a box query of its AABB grown by the running minimum.
    void distance(void* cdata, ::fcl::DistanceCallBack<S> callback) const override;
    /// Calls callback(a, b, cdata) for every a of this manager and b of `other_manager` (any
    /// FCL manager; itself: the self collide) whose AABBs overlap, until it returns true.
    void collide(Base* other_manager, void* cdata,
                 ::fcl::CollisionCallBack<S> callback) const override;
    /// The smallest distance between an object of this manager (the callback's first) and one
    /// of `other_manager` (any FCL manager; itself: the self distance), pruned as distance(obj).
    void distance(Base* other_manager, void* cdata,
                  ::fcl::DistanceCallBack<S> callback) const override;

    /// True when no object is registered.
    bool empty() const override;
    /// Number of registered objects.
    std::size_t size() const override;

    /// The method given to create().
    std::string_view method() const;
    /// The first failure of the method since create() (success when none): a query that met
    /// it was answered by a linear scan or by the CPU query index instead.
    Status status() const;
    /// What the adapter has done so far.
    Stats stats() const;
    /// Checks the adapter's invariants (every object once, its float box the outward rounding
    /// of its AABB, the tracker holding exactly these boxes) and the tracker's validate()
    /// (which compares its pairs with brute force: O(n^2), for tests).
    Status validate() const;

private:
    struct Impl;
    explicit CollisionManager(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

extern template class CollisionManager<float>;
extern template class CollisionManager<double>;

/// The float box that contains the AABB [lo, hi]: each bound cast to float and moved one float
/// outward where the cast rounded it inward, clamped to +-FLT_MAX; a NaN bound opens to the
/// float range. Overlapping AABBs always give overlapping boxes.
Box outward_box(const double lo[3], const double hi[3]);

}  // namespace broadphase::fcl
