// broadphase::bullet: any broadphase method of this library as Bullet's broadphase, a
// btBroadphaseInterface that a btCollisionWorld or btDiscreteDynamicsWorld takes in place of
// btDbvtBroadphase or btAxisSweep3 (docs/bullet.md):
//
//     auto broadphase = broadphase::bullet::Broadphase::create("sweep_and_prune").value();
//     btDiscreteDynamicsWorld world(&dispatcher, broadphase.get(), &solver, &configuration);
//
// Every CPU method (cpu_method_names()) sits behind it, the dynamic ones kept up to date by
// insert, remove and move, the static ones rebuilt when something changed; "gpu_lbvh" runs
// through gpu::ProxyScene, with a CPU query index for Bullet's ray and box queries.
//
// The pair cache holds exactly the pairs of proxies whose closed boxes overlap and that the
// cache's needsBroadphaseCollision accepts (the group/mask rule (g0 & m1) && (g1 & m0), or the
// cache's overlap filter callback where one is set), kept from the changed proxies alone
// (PairTracker): a proxy's pairs are there after its createProxy and setAabb, as on
// btDbvtBroadphase. calculateOverlappingPairs syncs the cache against the full set only when it
// drifted (pairs removed by someone else, a filter callback set or removed).
#pragma once

#include <BulletCollision/BroadphaseCollision/btBroadphaseInterface.h>

#include <cstdint>
#include <memory>
#include <string_view>

#include "broadphase/types.hpp"

class btOverlappingPairCache;

namespace broadphase::gpu {
class Context;
}

namespace broadphase::bullet {

/// How Broadphase::create sets the adapter up.
struct Options {
    /// gpu_lbvh only: the device, which must outlive the Broadphase. Null: the adapter creates
    /// its own Context (gpu::ContextOptions' defaults: the first GPU, else lavapipe).
    gpu::Context* context = nullptr;
    /// The pair cache to fill (not owned; it must outlive the Broadphase and hold only this
    /// broadphase's pairs). Null: the adapter owns a btHashedOverlappingPairCache, as
    /// btDbvtBroadphase does when given none.
    btOverlappingPairCache* pair_cache = nullptr;
    /// gpu_lbvh only: the CPU method of the index that answers rayTest and aabbTest (a
    /// PairTracker that keeps no pairs; the first query after changes applies them, the changed
    /// proxies alone, and a static method is rebuilt then).
    std::string_view query_method = "dynamic_aabb_tree";
};

/// What the adapter has done so far and holds now, for tests, printStats and benches.
struct Stats {
    std::uint32_t proxies = 0;          ///< live proxies
    std::uint32_t invalid_proxies = 0;  ///< live proxies whose box is not valid (kept out)
    std::uint64_t pairs = 0;            ///< overlapping, filter-accepted pairs at the last call
    std::uint64_t pairs_added = 0;      ///< pairs added to the cache at the last call
    std::uint64_t pairs_removed = 0;    ///< stale pairs removed from the cache at the last call
    std::uint64_t rebuilds = 0;         ///< static structures' rebuilds (all calls)
    std::uint64_t calls = 0;            ///< calculateOverlappingPairs calls
    /// gpu_lbvh: GPU steps run (one per calculateOverlappingPairs after changes)
    std::uint64_t gpu_steps = 0;
    /// Calls that found the cache as the adapter had left it, with every change already
    /// applied (CPU methods: at its createProxy, setAabb or destroyProxy, so that the call
    /// cost nothing; gpu_lbvh: by the call's GPU step, its began and ended pairs); the others
    /// synced the cache against every pair: a filter callback set or removed, pairs removed
    /// from the cache by someone else, a cache with deferred removal
    std::uint64_t updates = 0;
};

/// The btBroadphaseInterface over one broadphase method. Proxies are btBroadphaseProxy
/// objects owned by the adapter from createProxy to destroyProxy; their m_uniqueId counts up
/// from 1 (as btDbvtBroadphase's). Not thread-safe: one thread at a time, as every Bullet
/// broadphase.
///
/// Where it differs from btDbvtBroadphase: pairs are exact (no fat boxes, no lingering pairs);
/// gpu_lbvh's appear at calculateOverlappingPairs only, and a static method's at the next look
/// at the cache (docs/bullet.md); and a proxy whose box has a NaN, an infinity or min > max is
/// stored (getAabb returns it) but kept out of the structure: it is in no pair and no query
/// result until a setAabb gives it a valid box. The first such box is reported once on
/// stderr; Stats::invalid_proxies counts them. A failure of the method itself (a Vulkan
/// error, memory) leaves the cache as it was and is kept in status().
class Broadphase final : public btBroadphaseInterface {
public:
    /// A broadphase of `method`: a name of cpu_method_names() or "gpu_lbvh" (when the GPU part
    /// is built). An invalid_argument error names an unknown method or a bad query_method;
    /// gpu_lbvh returns the errors of creating the Context or the ProxyScene.
    static Result<std::unique_ptr<Broadphase>> create(std::string_view method = "dynamic_aabb_tree",
                                                      const Options& options = {});
    ~Broadphase() override;
    Broadphase(const Broadphase&) = delete;
    Broadphase& operator=(const Broadphase&) = delete;

    /// A proxy with this box and filter; its pairs are in the cache from now on (see the class
    /// comment). `shape_type` is unused (as in btDbvtBroadphase).
    btBroadphaseProxy* createProxy(const btVector3& aabb_min, const btVector3& aabb_max,
                                   int shape_type, void* user_ptr, int collision_filter_group,
                                   int collision_filter_mask, btDispatcher* dispatcher) override;
    /// Removes the proxy and, at once, every cache pair that holds it (its algorithms freed
    /// through `dispatcher`, which may be null); the proxy is freed.
    void destroyProxy(btBroadphaseProxy* proxy, btDispatcher* dispatcher) override;
    /// Stores the box in proxy->m_aabbMin and m_aabbMax and reads the proxy's group and mask
    /// again; the pairs follow at once (see the class comment).
    void setAabb(btBroadphaseProxy* proxy, const btVector3& aabb_min, const btVector3& aabb_max,
                 btDispatcher* dispatcher) override;
    /// The box last given to createProxy or setAabb.
    void getAabb(btBroadphaseProxy* proxy, btVector3& aabb_min, btVector3& aabb_max) const override;

    /// Calls back every proxy whose box, grown by the cast shape's [aabb_min, aabb_max] (as
    /// btDbvt::rayTestInternal grows it), the ray from `ray_from` towards `ray_to` touches
    /// (closed boxes) within callback.m_lambda_max (distance along the normalised direction),
    /// in increasing entry distance, ties by m_uniqueId. m_lambda_max is read again after each
    /// call, so a callback that shortens it stops the search there. A zero-length ray reports
    /// the boxes containing its origin.
    void rayTest(const btVector3& ray_from, const btVector3& ray_to,
                 btBroadphaseRayCallback& callback, const btVector3& aabb_min = btVector3(0, 0, 0),
                 const btVector3& aabb_max = btVector3(0, 0, 0)) override;
    /// Calls back every proxy whose box overlaps the closed box [aabb_min, aabb_max], in
    /// increasing m_uniqueId. Infinite bounds are taken as the largest floats; a NaN or
    /// min > max reports nothing.
    void aabbTest(const btVector3& aabb_min, const btVector3& aabb_max,
                  btBroadphaseAabbCallback& callback) override;

    /// Makes sure the pair cache holds exactly the current pairs (see the file comment): O(1)
    /// when it is as the adapter left it; otherwise the missing ones are added through
    /// addOverlappingPair and the stale ones removed with the dispatcher (removeOverlappingPair;
    /// a cache with deferred removal has them cleaned and erased).
    void calculateOverlappingPairs(btDispatcher* dispatcher) override;
    btOverlappingPairCache* getOverlappingPairCache() override;
    const btOverlappingPairCache* getOverlappingPairCache() const override;
    /// The smallest box holding every valid proxy's box; the zero box when there is none (as
    /// btDbvtBroadphase's empty one). Scans the proxies: O(n).
    void getBroadphaseAabb(btVector3& aabb_min, btVector3& aabb_max) const override;
    /// With no proxy alive: forgets the structure's state and restarts m_uniqueId at 1, as
    /// btDbvtBroadphase::resetPool does; otherwise nothing.
    void resetPool(btDispatcher* dispatcher) override;
    /// Prints the method and stats() on stdout.
    void printStats() override;

    /// The method's name.
    std::string_view method() const;
    /// What the adapter has done and holds (see Stats).
    Stats stats() const;
    /// The first failure of the method since creation (a structure's error, running out of
    /// memory, a Vulkan error), or success when there was none: the same as
    /// broadphase::fcl::CollisionManager::status(). Bullet's calls have no error channel: this
    /// is where their failures go.
    Status status() const;
    /// Checks the adapter's invariants: each live proxy is in the structure exactly when its
    /// box is valid, with that box, and the structure's own validate(). An error names the
    /// first broken one.
    Status validate();

    struct Impl;

private:
    explicit Broadphase(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace broadphase::bullet
