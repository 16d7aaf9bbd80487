// broadphase::bullet (broadphase/bullet.hpp): a btBroadphaseInterface over any method of the
// library. The proxies live in slots (a LIFO free list, as Box2D's proxies); a slot's box and
// filter are kept by the adapter.
//
// CPU methods: the live, valid slots are the bodies of a PairTracker (ids = slots; Bullet's
// group/mask rule mapped onto Filter as category = group, mask = mask, group = 0), which keeps
// the pairs from the changed slots alone and says which pairs began and ended; those go to the
// pair cache through addOverlappingPair and removeOverlappingPair. The adapter's own cache
// (FlushingPairCache) applies the recorded changes before anything reads it; with a ghost pair
// callback or a caller's cache, each change is applied at its createProxy/setAabb, as
// btDbvtBroadphase collides a moved leaf at once. calculateOverlappingPairs then has nothing to
// do, unless the cache drifted (a filter callback set or removed, pairs removed by someone
// else, deferred removal): then the cache is synced against the full pair set as
// btDbvtBroadphase::performDeferredRemoval does against its trees, the set bucketed by its
// smaller slot (a CSR table, each bucket sorted) so that both directions of the comparison cost
// O(1) per pair.
//
// gpu_lbvh keeps the slots in a gpu::ProxyScene (adapters::GpuPairs, gpu_pairs.hpp): one GPU
// step per calculateOverlappingPairs with changes, whose began and ended pairs go to the cache
// as the tracker's do; and, for Bullet's queries, in a PairTracker over Options::query_method
// that keeps no pairs (Config::pairs false): the first query after changes applies them, the
// changed slots alone.
//
// rayTest: Bullet wants every box along the ray, in order. Both walk the tracker's structure
// once along the ray (PairTracker::query_ray: the boxes grown by the cast shape's box, as
// btDbvt::rayTestInternal grows its nodes), and call the hits back in increasing entry
// distance.
#include "broadphase/bullet.hpp"

#include <BulletCollision/BroadphaseCollision/btOverlappingPairCache.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "broadphase/pair_tracker.hpp"
#include "broadphase/structure.hpp"
#include "gpu_pairs.hpp"
#include "outward.hpp"

namespace broadphase::bullet {
namespace {

constexpr std::uint32_t kNone = 0xFFFFFFFFu;

/// The proxy the adapter hands out: Bullet's, plus the slot it lives in.
struct Proxy final : btBroadphaseProxy {
    Proxy(const btVector3& aabb_min, const btVector3& aabb_max, void* user, int group, int mask,
          std::uint32_t proxy_slot)
        : btBroadphaseProxy(aabb_min, aabb_max, user, group, mask), slot(proxy_slot) {}
    std::uint32_t slot;
};

std::uint32_t slot_of(const btBroadphaseProxy* proxy) {
    return static_cast<const Proxy*>(proxy)->slot;
}

/// A proxy's box as a float box: rounded outward (adapters/outward.hpp) when it is valid in
/// btScalar (a double in BT_USE_DOUBLE_PRECISION builds), so that no pair is lost to rounding;
/// an invalid one (NaN, infinity, min > max) stays invalid.
Box to_box(const btVector3& lo, const btVector3& hi) {
    double l[3], h[3];
    bool valid = true;
    for (int axis = 0; axis < 3; ++axis) {
        l[axis] = double(lo[axis]);
        h[axis] = double(hi[axis]);
        valid = valid && std::isfinite(l[axis]) && std::isfinite(h[axis]) && l[axis] <= h[axis];
    }
    if (valid) return adapters::round_outward(l, h);
    return {{static_cast<float>(l[0]), static_cast<float>(l[1]), static_cast<float>(l[2])},
            {static_cast<float>(h[0]), static_cast<float>(h[1]), static_cast<float>(h[2])}};
}

bool same_xyz(const btVector3& a, const btVector3& b) {
    return a.x() == b.x() && a.y() == b.y() && a.z() == b.z();
}

bool is_valid(const Box& b) {
    for (int axis = 0; axis < 3; ++axis) {
        if (!std::isfinite(b.min[axis]) || !std::isfinite(b.max[axis])) return false;
        if (!(b.min[axis] <= b.max[axis])) return false;
    }
    return true;
}

/// Bullet's collision filter as a Filter: should_collide then is (g0 & m1) && (g1 & m0).
Filter to_filter(int group, int mask) {
    return {static_cast<std::uint32_t>(group), static_cast<std::uint32_t>(mask), 0};
}

/// One proxy slot: free when `proxy` is null.
struct Slot {
    Proxy* proxy = nullptr;
    Box box;             // the box as given (may be invalid)
    bool valid = false;  // box is valid: the slot belongs in the structures
    Filter filter;       // the proxy's group and mask as last read
};

Status out_of_memory(const char* what) {
    return Error{ErrorCode::out_of_memory,
                 std::string("broadphase::bullet: out of memory in ") + what};
}

/// fn() with running out of memory turned into an error (no exception leaves the adapter,
/// whose callers are Bullet's virtual calls).
template <class Fn>
Status guarded(const char* what, Fn&& fn) {
    try {
        return fn();
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    return out_of_memory(what);
}

}  // namespace

/// The pair cache the adapter owns (Options::pair_cache null): Bullet's hashed cache, which
/// brings the pairs up to date (Broadphase::Impl::flush) before anything reads it or adds or
/// removes a pair, so that the changes of a step can be applied together at the first look
/// instead of one by one at each setAabb, and still every reader sees what btDbvtBroadphase
/// would show it. Cleaning or removing one proxy's pairs (btCollisionWorld's removal of an
/// object, destroyProxy) does not flush: the pairs the waiting changes will add for it are
/// new ones, with nothing to clean, and a removed proxy's waiting changes end with it.
class FlushingPairCache final : public btHashedOverlappingPairCache {
public:
    explicit FlushingPairCache(Broadphase::Impl* owner) : owner_(owner) {}
    /// True when a ghost pair callback is set: ghost objects keep pair caches of their own,
    /// which are read without a look at this one, so their pairs are applied at once.
    bool has_ghost_callback() const { return m_ghostPairCallback != nullptr; }
    /// destroyProxy's removal of a proxy's pairs, without applying the changes that wait
    /// (its own removal among them); returns how many pairs it removed.
    int remove_pairs_unflushed(btBroadphaseProxy* proxy, btDispatcher* dispatcher) {
        const int before = btHashedOverlappingPairCache::getNumOverlappingPairs();
        removeOverlappingPairsContainingProxy(proxy, dispatcher);
        return before - btHashedOverlappingPairCache::getNumOverlappingPairs();
    }

    void removeOverlappingPairsContainingProxy(btBroadphaseProxy* proxy,
                                               btDispatcher* dispatcher) override {
        ++quiet_;  // (Bullet's own runs processAllOverlappingPairs, which would flush)
        btHashedOverlappingPairCache::removeOverlappingPairsContainingProxy(proxy, dispatcher);
        --quiet_;
    }
    void cleanProxyFromPairs(btBroadphaseProxy* proxy, btDispatcher* dispatcher) override {
        ++quiet_;
        btHashedOverlappingPairCache::cleanProxyFromPairs(proxy, dispatcher);
        --quiet_;
    }
    btBroadphasePair* addOverlappingPair(btBroadphaseProxy* a, btBroadphaseProxy* b) override {
        flush();
        return btHashedOverlappingPairCache::addOverlappingPair(a, b);
    }
    void* removeOverlappingPair(btBroadphaseProxy* a, btBroadphaseProxy* b,
                                btDispatcher* dispatcher) override {
        flush();
        return btHashedOverlappingPairCache::removeOverlappingPair(a, b, dispatcher);
    }
    void processAllOverlappingPairs(btOverlapCallback* callback,
                                    btDispatcher* dispatcher) override {
        flush();
        btHashedOverlappingPairCache::processAllOverlappingPairs(callback, dispatcher);
    }
    void processAllOverlappingPairs(btOverlapCallback* callback, btDispatcher* dispatcher,
                                    const btDispatcherInfo& info) override {
        flush();
        btHashedOverlappingPairCache::processAllOverlappingPairs(callback, dispatcher, info);
    }
    btBroadphasePair* getOverlappingPairArrayPtr() override {
        flush();
        return btHashedOverlappingPairCache::getOverlappingPairArrayPtr();
    }
    const btBroadphasePair* getOverlappingPairArrayPtr() const override {
        flush();
        return btHashedOverlappingPairCache::getOverlappingPairArrayPtr();
    }
    btBroadphasePairArray& getOverlappingPairArray() override {
        flush();
        return btHashedOverlappingPairCache::getOverlappingPairArray();
    }
    int getNumOverlappingPairs() const override {
        flush();
        return btHashedOverlappingPairCache::getNumOverlappingPairs();
    }
    btBroadphasePair* findPair(btBroadphaseProxy* a, btBroadphaseProxy* b) override {
        flush();
        return btHashedOverlappingPairCache::findPair(a, b);
    }

private:
    void flush() const;
    Broadphase::Impl* owner_;
    int quiet_ = 0;  // inside a call that must not flush
};

struct Broadphase::Impl {
    std::string method;
    // The live, valid slots. CPU methods: their pairs kept up to date slot by slot (each
    // createProxy, setAabb and destroyProxy applies its slot at once, as btDbvtBroadphase
    // collides a moved leaf at once). gpu_lbvh: the queries' index over query_method
    // (PairTracker::Config::pairs false), brought up to date by the first query after changes.
    std::unique_ptr<PairTracker> tracker;
    std::vector<Pair> began, ended;  // one update's events
    std::uint64_t cached = 0;        // pairs this adapter put in the cache and did not remove
    std::uint64_t window_added = 0, window_removed = 0;  // since the last call
    bool resync = true;  // the cache must be synced against every pair at the next call
    btDispatcher* last_dispatcher = nullptr;  // the one given with the changes recorded
    bool gpu = false;
    std::unique_ptr<adapters::GpuPairs> gpu_pairs;  // gpu_lbvh: the pairs
    std::unique_ptr<FlushingPairCache> own_cache;
    bool flushing = false;  // inside flush(): the cache's own calls do not flush again
    btOverlappingPairCache* cache = nullptr;

    std::vector<Slot> slots;
    std::vector<std::uint32_t> free_slots;  // LIFO
    // Slots of proxies destroyed while their removal waits for the next flush: free after it,
    // so that no new proxy takes a slot whose old pairs the tracker still holds.
    std::vector<std::uint32_t> released_slots;
    std::uint32_t live = 0;
    std::uint32_t invalid = 0;  // live proxies with an invalid box
    int next_uid = 0;
    bool warned_invalid = false;
    bool callback_mode = false;  // the cache has an overlap filter callback: no filters here

    // The current pairs (slots, smaller first) as a CSR table by the smaller slot.
    std::vector<Pair> pairs;
    std::vector<Pair> scratch_pairs;
    std::vector<std::uint32_t> bucket_start;  // slots.size() + 1
    std::vector<std::uint32_t> partner;       // per pair, bucketed and sorted
    std::vector<std::uint8_t> present;        // per pair: found in the cache

    // Queries.

    Stats stats;
    Status status = Status::success();

    /// Keeps the first failure (the later ones follow from it, mostly).
    void fail(const Status& s) {
        if (s || !status.ok()) return;
        status = s;
    }

    /// The filter the pair structure applies to a slot: none in callback mode (the callback
    /// decides), else the proxy's group and mask.
    Filter effective(std::uint32_t s) const { return callback_mode ? Filter{} : slots[s].filter; }

    /// CPU methods: whether changes wait for the next look at the cache (the adapter's own
    /// cache, with no ghost objects about) or are applied one by one at once.
    /// A static method rebuilds at every update: its changes always wait (docs/bullet.md).
    bool batched() const {
        return tracker->rebuilds() || (own_cache && !own_cache->has_ghost_callback());
    }

    void touch(std::uint32_t s, btDispatcher* dispatcher) {
        if (!gpu) {
            if (!batched()) return track(s, dispatcher);
            fail(guarded("a change", [&] { return record(s); }));
            last_dispatcher = dispatcher;
            return;
        }
        fail(guarded("a change", [&] { return record(s); }));
        gpu_pairs->touch(s);
    }

    /// CPU methods: slot s's box, filter and life into the tracker, its pairs updated now and
    /// their changes applied to the cache.
    /// Slot s's box, filter and life, given to the tracker (applied at its next update).
    Status record(std::uint32_t s) {
        const Slot& slot = slots[s];
        const bool want = slot.proxy && slot.valid;
        const bool held = tracker->contains(s);
        if (want && held) {
            if (Status m = tracker->move(s, slot.box); !m) return m;
            return tracker->set_filter(s, effective(s));
        }
        if (want) return tracker->insert(s, slot.box, effective(s));
        if (held) return tracker->remove(s);
        return Status::success();
    }

    /// CPU methods: every change recorded since the last look applied now, its pairs' changes
    /// made in the cache (FlushingPairCache calls it before each read).
    void flush() {
        if (flushing || gpu) return;
        if (!tracker->pending()) {
            if (!released_slots.empty()) {
                free_slots.insert(free_slots.end(), released_slots.begin(), released_slots.end());
                released_slots.clear();
            }
            return;
        }
        flushing = true;
        Status st = guarded("a pair update", [&]() -> Status {
            began.clear();
            ended.clear();
            if (Status u = tracker->update(began, ended); !u) return u;
            apply_events(last_dispatcher);
            return Status::success();
        });
        flushing = false;
        free_slots.insert(free_slots.end(), released_slots.begin(), released_slots.end());
        released_slots.clear();
        if (!st) {
            fail(st);
            resync = true;
        }
    }

    void track(std::uint32_t s, btDispatcher* dispatcher) {
        flush();  // the changes recorded before (a ghost callback set since)
        Status st = guarded("a pair update", [&]() -> Status {
            if (Status r = record(s); !r) return r;
            began.clear();
            ended.clear();
            if (Status u = tracker->update(s, began, ended); !u) return u;
            apply_events(dispatcher);
            return Status::success();
        });
        if (!st) {
            fail(st);
            resync = true;
        }
    }

    /// The tracker's began and ended pairs into the cache: added through addOverlappingPair
    /// (which consults the filter callback and tells a ghost pair callback), removed with the
    /// dispatcher. A cache with deferred removal (btSortedOverlappingPairCache) has its ended
    /// pairs removed at the next call's sync instead.
    void apply_events(btDispatcher* dispatcher) {
        // (A pair the cache held already, or one it never took, makes `cached` disagree with
        // the cache's count, and the next call syncs.)
        for (const Pair& p : ended) {
            Proxy* pa = slots[p.i].proxy;
            Proxy* pb = slots[p.j].proxy;
            if (!pa || !pb) continue;  // destroyProxy removed its pairs itself
            if (cache->hasDeferredRemoval()) {
                resync = true;
                continue;
            }
            // A filter callback may have refused the pair when it began.
            if (callback_mode && !cache->findPair(pa, pb)) continue;
            cache->removeOverlappingPair(pa, pb, dispatcher);
            --cached;
            ++window_removed;
        }
        for (const Pair& p : began) {
            Proxy* pa = slots[p.i].proxy;
            Proxy* pb = slots[p.j].proxy;
            if (pa->m_uniqueId > pb->m_uniqueId) std::swap(pa, pb);
            if (cache->addOverlappingPair(pa, pb)) {
                ++cached;
                ++window_added;
            }
        }
    }

    void note_box(std::uint32_t s, const Box& box) {
        Slot& slot = slots[s];
        const bool was_valid = slot.valid;
        slot.box = box;
        slot.valid = is_valid(box);
        if (was_valid && !slot.valid) ++invalid;
        if (!was_valid && slot.valid) --invalid;
        if (!slot.valid && !warned_invalid) {
            warned_invalid = true;
            std::fprintf(stderr,
                         "broadphase::bullet: proxy %d has an invalid box (NaN, infinity or "
                         "min > max); it is kept out of pairs and queries until a setAabb gives "
                         "it a valid one (reported once)\n",
                         slot.proxy->m_uniqueId);
        }
    }

    /// The tracker up to date for a query: CPU methods flush (pairs and cache); gpu_lbvh's
    /// query index applies the changes since the last query.
    void ready_for_query() {
        if (!gpu) return flush();
        if (!tracker->pending()) return;
        fail(guarded("a query", [&] { return tracker->update(began, ended); }));
    }

    /// Every slot whose box overlaps `region`, appended to `out`.
    void query(const Box& region, std::vector<std::uint32_t>& out) {
        ready_for_query();
        tracker->query_box(region, out);
    }

    /// The pairs now, into `pairs` (slots, smaller first).
    void find_pairs() {
        if (gpu) return gpu_pairs->pairs(pairs);
        const std::span<const Pair> now = tracker->pairs();
        pairs.assign(now.begin(), now.end());
    }

    /// Buckets `pairs` by the smaller slot, each bucket's partners sorted.
    void bucket_pairs() {
        const std::size_t n = slots.size();
        bucket_start.assign(n + 1, 0);
        for (const Pair& p : pairs) ++bucket_start[p.i + 1];
        for (std::size_t s = 0; s < n; ++s) bucket_start[s + 1] += bucket_start[s];
        partner.resize(pairs.size());
        std::vector<std::uint32_t> fill(bucket_start.begin(), bucket_start.end() - 1);
        for (const Pair& p : pairs) partner[fill[p.i]++] = p.j;
        for (std::size_t s = 0; s < n; ++s)
            std::sort(partner.begin() + std::ptrdiff_t(bucket_start[s]),
                      partner.begin() + std::ptrdiff_t(bucket_start[s + 1]));
    }

    /// The index of pair (a, b), a < b, in `partner`, or kNone.
    std::uint32_t find(std::uint32_t a, std::uint32_t b) const {
        if (a + 1 >= bucket_start.size()) return kNone;
        const auto first = partner.begin() + std::ptrdiff_t(bucket_start[a]);
        const auto last = partner.begin() + std::ptrdiff_t(bucket_start[a + 1]);
        const auto it = std::lower_bound(first, last, b);
        if (it == last || *it != b) return kNone;
        return static_cast<std::uint32_t>(it - partner.begin());
    }

    /// Removes pair k of the cache's array (iterated backwards by the caller).
    void remove_cached(btBroadphasePairArray& array, int k, bool direct, btDispatcher* dispatcher) {
        btBroadphasePair& pair = array[k];
        if ((direct && cache->hasDeferredRemoval()) || !pair.m_pProxy0 || !pair.m_pProxy1) {
            cache->cleanOverlappingPair(pair, dispatcher);
            array.swap(k, array.size() - 1);
            array.pop_back();
        } else {
            cache->removeOverlappingPair(pair.m_pProxy0, pair.m_pProxy1, dispatcher);
        }
        ++stats.pairs_removed;
    }

    /// Makes the cache hold exactly `pairs` that its needsBroadphaseCollision accepts.
    void sync_cache(btDispatcher* dispatcher) {
        present.assign(pairs.size(), 0);
        btBroadphasePairArray& array = cache->getOverlappingPairArray();
        const bool deferred = cache->hasDeferredRemoval();
        for (int k = array.size() - 1; k >= 0; --k) {
            if (k >= array.size()) continue;
            btBroadphasePair& pair = array[k];
            if (!pair.m_pProxy0 || !pair.m_pProxy1) {
                remove_cached(array, k, true, dispatcher);
                continue;
            }
            std::uint32_t a = slot_of(pair.m_pProxy0), b = slot_of(pair.m_pProxy1);
            if (a > b) std::swap(a, b);
            const std::uint32_t at = find(a, b);
            if (at != kNone && present[at]) {
                remove_cached(array, k, true, dispatcher);  // a duplicate
                continue;
            }
            const bool keep =
                at != kNone &&
                (!callback_mode || cache->needsBroadphaseCollision(pair.m_pProxy0, pair.m_pProxy1));
            if (keep) {
                present[at] = 1;
            } else {
                remove_cached(array, k, deferred, dispatcher);
            }
        }
        for (std::uint32_t a = 0; a + 1 < bucket_start.size(); ++a) {
            for (std::uint32_t k = bucket_start[a]; k < bucket_start[a + 1]; ++k) {
                if (present[k]) continue;
                Proxy* pa = slots[a].proxy;
                Proxy* pb = slots[partner[k]].proxy;
                if (pa->m_uniqueId > pb->m_uniqueId) std::swap(pa, pb);
                if (cache->addOverlappingPair(pa, pb)) ++stats.pairs_added;
            }
        }
    }

    /// CPU methods: a filter callback set on the cache or taken off since the last look
    /// changes every slot's effective filter (the callback decides alone, as in Bullet), and
    /// every pair is offered to the cache again at the next call.
    void check_mode(btDispatcher* dispatcher) {
        const bool mode = cache->getOverlapFilterCallback() != nullptr;
        if (mode == callback_mode) return;
        callback_mode = mode;
        Status st = guarded("a change of the filter callback", [&]() -> Status {
            for (std::uint32_t s = 0; s < slots.size(); ++s)
                if (tracker->contains(s))
                    if (Status f = tracker->set_filter(s, effective(s)); !f) return f;
            began.clear();
            ended.clear();
            if (Status u = tracker->update(began, ended); !u) return u;
            apply_events(dispatcher);
            return Status::success();
        });
        fail(st);
        resync = true;
    }

    /// A proxy's group and mask as written on it (btCollisionWorld and users write them
    /// directly): read at createProxy and setAabb, which a btCollisionWorld calls for every
    /// object it updates each step.
    bool reread_filter(std::uint32_t s) {
        Slot& slot = slots[s];
        const Filter f =
            to_filter(slot.proxy->m_collisionFilterGroup, slot.proxy->m_collisionFilterMask);
        if (f == slot.filter) return false;
        slot.filter = f;
        return true;
    }

    /// gpu_lbvh: the changed slots into the scene and one GPU step, its began and ended pairs
    /// into the cache. A filter callback set or removed since the last look changes every
    /// slot's effective filter and makes this call sync the cache.
    void step_gpu(btDispatcher* dispatcher) {
        const bool mode = cache->getOverlapFilterCallback() != nullptr;
        if (mode != callback_mode) {
            callback_mode = mode;
            for (std::uint32_t s = 0; s < slots.size(); ++s)
                if (slots[s].proxy) gpu_pairs->touch(s);
            resync = true;
        }
        if (!gpu_pairs->pending()) return;
        Status st = guarded("calculateOverlappingPairs", [&]() -> Status {
            began.clear();
            ended.clear();
            const auto slot_of = [&](std::uint32_t s) {
                return adapters::GpuSlot{slots[s].proxy && slots[s].valid, slots[s].box,
                                         effective(s)};
            };
            if (Status step = gpu_pairs->step(slot_of, &began, &ended); !step) return step;
            apply_events(dispatcher);
            return Status::success();
        });
        if (!st && status.ok())  // the first failure, which status() keeps
            std::fprintf(stderr, "broadphase::bullet: gpu_lbvh: %s\n", st.error().message.c_str());
        fail(st);
    }

    /// The pairs are up to date already (CPU methods: each change was applied at once;
    /// gpu_lbvh: one GPU step applies this call's); the cache is synced against all of them
    /// only when it may have drifted: a filter callback set or removed, a failure, ended pairs
    /// of a cache with deferred removal, or a cache whose pair count is not what this adapter
    /// left in it (pairs removed by someone else).
    void calculate(btDispatcher* dispatcher) {
        ++stats.calls;
        last_dispatcher = dispatcher;
        if (gpu) {
            step_gpu(dispatcher);
        } else {
            flush();
            check_mode(dispatcher);
        }
        if (resync || std::uint64_t(cache->getNumOverlappingPairs()) != cached) {
            const std::uint64_t added = stats.pairs_added, removed = stats.pairs_removed;
            stats.pairs_added = stats.pairs_removed = 0;
            Status st = guarded("calculateOverlappingPairs", [&]() -> Status {
                find_pairs();
                bucket_pairs();
                sync_cache(dispatcher);
                return Status::success();
            });
            fail(st);
            window_added += stats.pairs_added;
            window_removed += stats.pairs_removed;
            stats.pairs_added = added;
            stats.pairs_removed = removed;
            cached = std::uint64_t(cache->getNumOverlappingPairs());
            resync = !st.ok();
        } else {
            ++stats.updates;
        }
        stats.pairs = gpu ? gpu_pairs->pair_count() : tracker->pairs().size();
        stats.pairs_added = window_added;
        stats.pairs_removed = window_removed;
        window_added = window_removed = 0;
    }
};

void FlushingPairCache::flush() const {
    if (quiet_ == 0) owner_->flush();
}

Broadphase::Broadphase(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Broadphase::~Broadphase() {
    for (Slot& slot : impl_->slots) delete slot.proxy;
}

Result<std::unique_ptr<Broadphase>> Broadphase::create(std::string_view method,
                                                       const Options& options) {
    try {
        auto impl = std::make_unique<Impl>();
        impl->method = std::string(method);
        impl->gpu = method == "gpu_lbvh";
        PairTracker::Config config;
        config.method = std::string(impl->gpu ? options.query_method : method);
        config.pairs = !impl->gpu;
        auto tracker = PairTracker::create(config);
        if (!tracker)
            return impl->gpu ? Error{ErrorCode::invalid_argument,
                                     "gpu_lbvh: query_method: " + tracker.error().message}
                             : tracker.error();
        impl->tracker = std::move(tracker.value());
        if (impl->gpu) {
            auto pairs = adapters::GpuPairs::create(options.context);
            if (!pairs) return pairs.error();
            impl->gpu_pairs = std::move(pairs.value());
        }
        if (options.pair_cache) {
            impl->cache = options.pair_cache;
        } else {
            impl->own_cache = std::make_unique<FlushingPairCache>(impl.get());
            impl->cache = impl->own_cache.get();
        }
        return std::unique_ptr<Broadphase>(new Broadphase(std::move(impl)));
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::out_of_memory,
                     "broadphase::bullet: out of memory creating " + std::string(method)};
    }
}

btBroadphaseProxy* Broadphase::createProxy(const btVector3& aabb_min, const btVector3& aabb_max,
                                           int shape_type, void* user_ptr,
                                           int collision_filter_group, int collision_filter_mask,
                                           btDispatcher* dispatcher) {
    (void)shape_type;
    Impl& m = *impl_;
    std::uint32_t s = 0;
    if (!m.free_slots.empty()) {
        s = m.free_slots.back();
        m.free_slots.pop_back();
    } else {
        s = static_cast<std::uint32_t>(m.slots.size());
        m.slots.emplace_back();
    }
    auto* proxy =
        new Proxy(aabb_min, aabb_max, user_ptr, collision_filter_group, collision_filter_mask, s);
    proxy->m_uniqueId = ++m.next_uid;
    Slot& slot = m.slots[s];
    slot.proxy = proxy;
    slot.valid = true;  // note_box counts it invalid if it is
    slot.filter = to_filter(collision_filter_group, collision_filter_mask);
    ++m.live;
    m.note_box(s, to_box(aabb_min, aabb_max));
    if (!m.gpu) m.check_mode(dispatcher);
    m.touch(s, dispatcher);
    return proxy;
}

void Broadphase::destroyProxy(btBroadphaseProxy* proxy, btDispatcher* dispatcher) {
    Impl& m = *impl_;
    int removed = 0;
    if (m.own_cache && !m.gpu) {
        removed = m.own_cache->remove_pairs_unflushed(proxy, dispatcher);
    } else {
        const int before = m.cache->getNumOverlappingPairs();
        m.cache->removeOverlappingPairsContainingProxy(proxy, dispatcher);
        removed = before - m.cache->getNumOverlappingPairs();
    }
    if (removed > 0 && std::uint64_t(removed) <= m.cached) m.cached -= removed;
    const std::uint32_t s = slot_of(proxy);
    Slot& slot = m.slots[s];
    if (!slot.valid) --m.invalid;
    delete slot.proxy;
    slot = Slot{};
    --m.live;
    if (m.gpu) {  // its body leaves the scene now, so that a new proxy here is a new body
        m.fail(m.gpu_pairs->drop(s));
        m.fail(guarded("destroyProxy", [&] { return m.record(s); }));
        m.free_slots.push_back(s);
        return;
    }
    if (m.batched()) {  // its pairs left the cache above; the tracker drops them at the flush
        m.fail(guarded("destroyProxy", [&] { return m.record(s); }));
        m.released_slots.push_back(s);
        return;
    }
    m.free_slots.push_back(s);
    m.track(s, dispatcher);
}

void Broadphase::setAabb(btBroadphaseProxy* proxy, const btVector3& aabb_min,
                         const btVector3& aabb_max, btDispatcher* dispatcher) {
    Impl& m = *impl_;
    const std::uint32_t s = slot_of(proxy);
    // The common call of a world step: the same box as before (a body at rest, asleep or
    // static: btCollisionWorld::updateAabbs calls it for every object) and the same filter.
    const Slot& slot = m.slots[s];
    if (slot.valid && same_xyz(proxy->m_aabbMin, aabb_min) &&
        same_xyz(proxy->m_aabbMax, aabb_max) &&
        slot.filter == to_filter(proxy->m_collisionFilterGroup, proxy->m_collisionFilterMask))
        return;
    proxy->m_aabbMin = aabb_min;
    proxy->m_aabbMax = aabb_max;
    const Box box = to_box(aabb_min, aabb_max);
    if (!m.gpu) m.check_mode(dispatcher);
    const bool filter_changed = m.reread_filter(s);
    if (!filter_changed && m.slots[s].valid && box == m.slots[s].box) return;
    m.note_box(s, box);
    m.touch(s, dispatcher);
}

void Broadphase::getAabb(btBroadphaseProxy* proxy, btVector3& aabb_min, btVector3& aabb_max) const {
    aabb_min = proxy->m_aabbMin;
    aabb_max = proxy->m_aabbMax;
}

namespace {

/// A double box as a float box that contains it (rounded outwards, clamped to the floats).
Box outward(const double lo[3], const double hi[3]) {
    return adapters::round_outward(lo, hi);
}

struct RayCandidate {
    float t;
    int uid;
    Proxy* proxy;
};

bool by_entry(const RayCandidate& a, const RayCandidate& b) {
    return a.t < b.t || (a.t == b.t && a.uid < b.uid);
}

/// A thread's scratch for rayTest and aabbTest (any Broadphase), so that a query allocates
/// only while its scratch grows.
struct QueryScratch {
    std::vector<std::uint32_t> found;
    std::vector<RayHit> ray_hits;
    std::vector<RayCandidate> candidates;
};

QueryScratch& query_scratch() {
    thread_local QueryScratch scratch;
    return scratch;
}

}  // namespace

void Broadphase::rayTest(const btVector3& ray_from, const btVector3& ray_to,
                         btBroadphaseRayCallback& callback, const btVector3& aabb_min,
                         const btVector3& aabb_max) {
    Impl& m = *impl_;
    const double lambda = callback.m_lambda_max;
    if (!(lambda >= 0) && !std::isnan(lambda)) return;  // negative: nothing
    double origin[3], dir[3], length2 = 0;
    for (int axis = 0; axis < 3; ++axis) {
        origin[axis] = ray_from[axis];
        dir[axis] = double(ray_to[axis]) - double(ray_from[axis]);
        length2 += dir[axis] * dir[axis];
        if (!std::isfinite(origin[axis]) || !std::isfinite(dir[axis]) ||
            !std::isfinite(aabb_min[axis]) || !std::isfinite(aabb_max[axis]))
            return;
    }
    const double length = std::sqrt(length2);
    double t_end = 0;
    Ray ray;
    ray.origin = {float(origin[0]), float(origin[1]), float(origin[2])};
    if (length > 0) {
        if (std::isnan(lambda)) return;
        t_end = lambda;
        for (int axis = 0; axis < 3; ++axis) {
            dir[axis] /= length;
            ray.dir[axis] = float(dir[axis]);
            // Keep the ray's points within the floats: no box lies beyond.
            if (dir[axis] > 0) t_end = std::min(t_end, (FLT_MAX - origin[axis]) / dir[axis]);
            if (dir[axis] < 0) t_end = std::min(t_end, (-FLT_MAX - origin[axis]) / dir[axis]);
        }
        t_end = std::min(t_end, double(FLT_MAX));  // a float below
    } else {
        for (double& d : dir) d = 0;
    }
    // Per thread, so that rays may be cast from several threads at once (once the pairs are
    // up to date: a query first applies the changes that wait, a write).
    QueryScratch& q = query_scratch();
    // One walk of the tracker's structure along the ray.
    m.ready_for_query();
    ray.tmax = length > 0 ? float(t_end) : 0.0f;
    const Vec3 lo{-float(aabb_max[0]), -float(aabb_max[1]), -float(aabb_max[2])};
    const Vec3 hi{-float(aabb_min[0]), -float(aabb_min[1]), -float(aabb_min[2])};
    q.ray_hits.clear();
    m.tracker->query_ray(ray, lo, hi, q.ray_hits);
    q.candidates.clear();
    for (const RayHit& hit : q.ray_hits) {
        Proxy* proxy = m.slots[hit.id].proxy;
        if (proxy) q.candidates.push_back({hit.t, proxy->m_uniqueId, proxy});
    }
    std::sort(q.candidates.begin(), q.candidates.end(), by_entry);
    for (const RayCandidate& hit : q.candidates) {
        if (length > 0 && hit.t > callback.m_lambda_max) return;
        callback.process(hit.proxy);
    }
}

void Broadphase::aabbTest(const btVector3& aabb_min, const btVector3& aabb_max,
                          btBroadphaseAabbCallback& callback) {
    Impl& m = *impl_;
    double lo[3], hi[3];
    for (int axis = 0; axis < 3; ++axis) {
        lo[axis] = aabb_min[axis];
        hi[axis] = aabb_max[axis];
        if (std::isnan(lo[axis]) || std::isnan(hi[axis]) || !(lo[axis] <= hi[axis])) return;
    }
    QueryScratch& q = query_scratch();
    q.found.clear();
    m.query(outward(lo, hi), q.found);
    std::vector<Proxy*> hits;
    hits.reserve(q.found.size());
    for (const std::uint32_t s : q.found)
        if (m.slots[s].proxy) hits.push_back(m.slots[s].proxy);
    std::sort(hits.begin(), hits.end(),
              [](const Proxy* a, const Proxy* b) { return a->m_uniqueId < b->m_uniqueId; });
    for (Proxy* proxy : hits) callback.process(proxy);
}

void Broadphase::calculateOverlappingPairs(btDispatcher* dispatcher) {
    impl_->calculate(dispatcher);
}

btOverlappingPairCache* Broadphase::getOverlappingPairCache() {
    return impl_->cache;
}

const btOverlappingPairCache* Broadphase::getOverlappingPairCache() const {
    return impl_->cache;
}

void Broadphase::getBroadphaseAabb(btVector3& aabb_min, btVector3& aabb_max) const {
    bool any = false;
    Box bounds{};
    for (const Slot& slot : impl_->slots) {
        if (!slot.proxy || !slot.valid) continue;
        bounds = any ? merge(bounds, slot.box) : slot.box;
        any = true;
    }
    aabb_min.setValue(bounds.min.x, bounds.min.y, bounds.min.z);
    aabb_max.setValue(bounds.max.x, bounds.max.y, bounds.max.z);
}

void Broadphase::resetPool(btDispatcher* dispatcher) {
    (void)dispatcher;
    Impl& m = *impl_;
    if (m.live != 0) return;
    if (m.gpu) m.fail(m.gpu_pairs->clear());
    m.tracker->clear();
    m.cached = 0;
    m.resync = true;
    m.slots.clear();
    m.free_slots.clear();
    m.released_slots.clear();
    m.pairs.clear();
    m.bucket_start.clear();
    m.partner.clear();
    m.next_uid = 0;
}

void Broadphase::printStats() {
    const Stats s = stats();
    std::printf(
        "broadphase::bullet %s: %u proxies (%u invalid), %llu pairs (+%llu -%llu at the last "
        "call), %llu calls, %llu rebuilds%s\n",
        impl_->method.c_str(), s.proxies, s.invalid_proxies,
        static_cast<unsigned long long>(s.pairs), static_cast<unsigned long long>(s.pairs_added),
        static_cast<unsigned long long>(s.pairs_removed), static_cast<unsigned long long>(s.calls),
        static_cast<unsigned long long>(s.rebuilds), impl_->status.ok() ? "" : ", failed");
}

std::string_view Broadphase::method() const {
    return impl_->method;
}

Stats Broadphase::stats() const {
    Stats s = impl_->stats;
    s.proxies = impl_->live;
    s.invalid_proxies = impl_->invalid;
    s.rebuilds = impl_->tracker->stats().rebuilds;
    s.gpu_steps = impl_->gpu ? impl_->gpu_pairs->steps() : 0;
    return s;
}

Status Broadphase::status() const {
    return impl_->status;
}

Status Broadphase::validate() {
    Impl& m = *impl_;
    m.ready_for_query();
    std::uint32_t live = 0, invalid = 0;
    for (std::uint32_t s = 0; s < m.slots.size(); ++s) {
        const Slot& slot = m.slots[s];
        if (!slot.proxy) continue;
        ++live;
        if (!slot.valid) ++invalid;
        if (slot.proxy->slot != s)
            return Error{ErrorCode::invariant_violated,
                         "broadphase::bullet: the proxy in slot " + std::to_string(s) +
                             " names slot " + std::to_string(slot.proxy->slot),
                         s};
    }
    if (live != m.live || invalid != m.invalid)
        return Error{ErrorCode::invariant_violated,
                     "broadphase::bullet: proxy counts disagree with the slots"};
    if (live + m.free_slots.size() + m.released_slots.size() != m.slots.size())
        return Error{ErrorCode::invariant_violated,
                     "broadphase::bullet: the free list and the live slots do not add up"};
    for (std::uint32_t s = 0; s < m.slots.size(); ++s) {
        const bool want = m.slots[s].proxy && m.slots[s].valid;
        if (want != m.tracker->contains(s) || (want && m.tracker->box(s) != m.slots[s].box))
            return Error{ErrorCode::invariant_violated,
                         "broadphase::bullet: slot " + std::to_string(s) +
                             (want ? " is not in the pair tracker with its box"
                                   : " should not be in the pair tracker"),
                         s};
    }
    return m.tracker->validate();
}

}  // namespace broadphase::bullet
