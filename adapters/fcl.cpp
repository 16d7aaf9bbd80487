// broadphase::fcl: the library's structures behind FCL's BroadPhaseCollisionManager
// (include/broadphase/fcl.hpp, docs/fcl.md).
//
// CPU methods sit behind a PairTracker (broadphase/pair_tracker.hpp: Box2D v3's fat boxes and
// move buffer, btDbvtBroadphase's collideTV), which keeps the pairs of overlapping float boxes
// up to date from the objects whose box changed alone. Every write brings it up to date (one
// tracker update per register, unregister or update call), so that the queries only read: the
// self collide walks the tracker's pairs, the other queries ask it for the boxes that overlap a
// region. An object's id in the tracker is its slot here, stable for its life: a removal leaves
// a hole that the next registration takes (a LIFO free list, as Box2D's proxies), so that no
// other object changes id and no pair is ended and begun again for it.
//
// gpu_lbvh finds the self-collide pairs through gpu::ProxyScene (adapters::GpuPairs,
// gpu_pairs.hpp) and the rest through a PairTracker that keeps no pairs (a query index over
// Options::query_method): the writes give it the changed objects alone, and the first query
// that needs it applies them; that lazy work is done under a mutex, so that its const queries
// may also run at once. Its slots are those of the CPU methods.
//
// Each object keeps its AABB in S and its float box rounded outward (adapters/outward.hpp);
// candidates found on the float boxes are tested again in S. Distance prunes with the running
// minimum the callback writes (overlapping pairs first, then a box query of each AABB grown by
// the minimum), as FCL's own managers do.
#include "broadphase/fcl.hpp"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "broadphase/structure.hpp"
#include "gpu_pairs.hpp"
#include "outward.hpp"

namespace broadphase::fcl {

namespace {

// The float at or below v (above, when `up`), clamped to the float range; NaN opens outward.
float outward(double v, bool up) {
    if (std::isnan(v))
        return up ? std::numeric_limits<float>::max() : -std::numeric_limits<float>::max();
    return adapters::round_outward(v, up);
}

// One float further out on every bound (a distance query's margin for rounding in S).
Box widen_one_float(Box b) {
    constexpr float kMax = std::numeric_limits<float>::max();
    for (int k = 0; k < 3; ++k) {
        if (b.min[k] > -kMax) b.min[k] = std::nextafter(b.min[k], -kMax);
        if (b.max[k] < kMax) b.max[k] = std::nextafter(b.max[k], kMax);
    }
    return b;
}

// `b` grown by r >= 0 on every side, rounded outward.
Box grown_by(const Box& b, double r) {
    double lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
        lo[k] = double(b.min[k]) - r;
        hi[k] = double(b.max[k]) + r;
    }
    return outward_box(lo, hi);
}

// The squared distance between two float boxes (0 when they overlap).
double gap2(const Box& a, const Box& b) {
    double sum = 0;
    for (int k = 0; k < 3; ++k) {
        const double d = std::max(
            {0.0, double(b.min[k]) - double(a.max[k]), double(a.min[k]) - double(b.max[k])});
        sum += d * d;
    }
    return sum;
}

bool whole_range(const Box& b) {
    constexpr float kMax = std::numeric_limits<float>::max();
    for (int k = 0; k < 3; ++k)
        if (b.min[k] > -kMax || b.max[k] < kMax) return false;
    return true;
}

// AABB<S>::overlap (closed boxes), inline: libfcl compiles the double one out of line, a call
// per candidate pair.
template <class S>
bool aabb_overlap(const ::fcl::AABB<S>& a, const ::fcl::AABB<S>& b) {
    for (int k = 0; k < 3; ++k)
        if (a.min_[k] > b.max_[k] || a.max_[k] < b.min_[k]) return false;
    return true;
}

template <class S>
Box box_of(const ::fcl::AABB<S>& a) {
    const double lo[3] = {double(a.min_[0]), double(a.min_[1]), double(a.min_[2])};
    const double hi[3] = {double(a.max_[0]), double(a.max_[1]), double(a.max_[2])};
    Box b;
    if (adapters::round_outward_in_range(lo, hi, b)) return b;  // inline: every object, every step
    return outward_box(lo, hi);
}

// The float box holding every AABB whose distance to `a` (as AABB<S>::distance computes it) is
// below d > 0: `a` grown by d, with a relative margin for the rounding of that distance in S.
template <class S>
Box grown_box(const ::fcl::AABB<S>& a, S d) {
    const double margin = double(d) + double(d) * 1e-5;
    double lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
        lo[k] = double(a.min_[k]) - margin;
        hi[k] = double(a.max_[k]) + margin;
    }
    return widen_one_float(outward_box(lo, hi));
}

}  // namespace

Box outward_box(const double lo[3], const double hi[3]) {
    // A bound given as min > max (an inverted AABB) still overlaps, in FCL's test, every box
    // that spans [max, min]: the swapped interval keeps those pairs.
    double from[3], to[3];
    for (int k = 0; k < 3; ++k) {
        const bool swap = lo[k] > hi[k];
        from[k] = swap ? hi[k] : lo[k];
        to[k] = swap ? lo[k] : hi[k];
    }
    Box b;
    if (adapters::round_outward_in_range(from, to, b)) return b;  // the common case
    for (int k = 0; k < 3; ++k) {
        b.min[k] = outward(from[k], false);
        b.max[k] = outward(to[k], true);
    }
    return b;
}

template <class S>
struct CollisionManager<S>::Impl {
    using Aabb = ::fcl::AABB<S>;

    struct Record {
        Object* object = nullptr;  // null: a free slot (CPU methods), on `free_ids`
        Aabb aabb;                 // as read at register or the last update naming it
        std::uint64_t order = 0;   // registration sequence: a pair's earlier object comes first
    };
    // An object of the side a cross query iterates over (another manager, or one object).
    struct Item {
        Object* object = nullptr;
        Aabb aabb;
        Box box;
    };
    // One query's counts, published to the stats when it ends, however it ends.
    struct Count {
        const Impl& m;
        std::uint64_t candidates = 0, callbacks = 0;
        explicit Count(const Impl& impl) : m(impl) {}
        Count(const Count&) = delete;
        Count& operator=(const Count&) = delete;
        ~Count() {
            m.last_candidates.store(candidates, std::memory_order_relaxed);
            m.last_callbacks.store(callbacks, std::memory_order_relaxed);
        }
    };

    std::string method;
    std::vector<Record> records;  // by id (slot)
    std::vector<Box> boxes;       // by id: the outward float box of records[id].aabb
    std::unordered_map<const Object*, std::uint32_t> index_of;
    std::uint64_t next_order = 0;

    // The tracker holds every object's box under its slot: its pairs for CPU methods, a query
    // index for gpu_lbvh (its changes applied by the first query after them, under `lazy`).
    // After a failure (memory) it is emptied and `tracker_ok` false: the queries scan
    // `records`, and the next batch write (registerObjects, update() or update(vector),
    // setup()) fills it again; gpu_lbvh's next query does.
    std::unique_ptr<PairTracker> tracker;
    mutable bool tracker_ok = true;       // gpu_lbvh: written under `lazy` by const queries
    std::vector<std::uint32_t> free_ids;  // free slots, the last freed last
    std::vector<Pair> began, ended;       // the tracker's events: scratch, unused
    static constexpr std::size_t kMortonBatch = 64;  // smaller batches keep the caller's order

    mutable std::mutex lazy;  // gpu_lbvh's work done by const queries

    // gpu_lbvh: the objects' self pairs on the GPU (adapters/gpu_pairs.hpp: slots = ids, each
    // step downloading every pair), its scene made by the first self collide, sized for the
    // objects, and followed write by write after; stepped by the self collide under `lazy`.
    // Null once it failed: the query index answers from then on.
    mutable std::unique_ptr<adapters::GpuPairs> scene;

    mutable std::mutex status_mutex;
    mutable Status status;  // under status_mutex
    mutable std::atomic<std::uint64_t> builds{0}, gpu_steps{0};
    mutable std::atomic<std::uint64_t> last_candidates{0}, last_callbacks{0};

    bool on_gpu = false;  // gpu_lbvh
    bool gpu() const { return on_gpu; }
    std::uint32_t slots() const { return static_cast<std::uint32_t>(records.size()); }
    bool present(std::uint32_t id) const { return records[id].object != nullptr; }
    std::size_t live() const { return index_of.size(); }
    // The first present id, or none.
    std::optional<std::uint32_t> first_present() const {
        for (std::uint32_t id = 0; id < slots(); ++id)
            if (present(id)) return id;
        return std::nullopt;
    }

    void fail(const Error& error) const {
        std::lock_guard<std::mutex> hold(status_mutex);
        if (status) status = error;
    }
    void fail(const Status& s) const {
        if (!s) fail(s.error());
    }
    // Memory ran out in `where` (an entry point): kept in status(). Building the error may
    // itself need memory; then none is kept.
    void out_of_memory(const char* where) const noexcept {
        try {
            fail(Error{ErrorCode::out_of_memory, std::string("fcl: out of memory in ") + where});
        } catch (...) {
        }
    }

    // Runs an entry point's body: a memory failure (std::bad_alloc, std::length_error, the
    // callback's too) is kept in status() and never thrown; any other exception (a callback's
    // own) passes through, as FCL's managers let it. A write that threw drops what may lag
    // behind the objects (write_failed).
    template <class Body>
    void write(const char* where, Body&& body) {
        try {
            body();
            return;
        } catch (const std::bad_alloc&) {
        } catch (const std::length_error&) {
        }
        write_failed();
        out_of_memory(where);
    }
    template <class Body>
    void query(const char* where, Body&& body) const {
        try {
            body();
        } catch (const std::bad_alloc&) {
            out_of_memory(where);
        } catch (const std::length_error&) {
            out_of_memory(where);
        }
    }
    Status current_status() const {
        std::lock_guard<std::mutex> hold(status_mutex);
        return status;
    }

    // ---- the objects ----

    // Takes a slot for `obj` and fills it, `order` its registration sequence: none for null or
    // registered objects. A memory failure throws before anything changed.
    std::optional<std::uint32_t> add_record(Object* obj, std::uint64_t order) {
        if (obj == nullptr || index_of.contains(obj)) return std::nullopt;
        const bool fresh = free_ids.empty();
        const std::uint32_t id = fresh ? slots() : free_ids.back();
        if (fresh) {
            if (id == std::numeric_limits<std::uint32_t>::max())
                throw std::length_error("fcl: too many objects");
            records.emplace_back();
            try {
                boxes.emplace_back();
            } catch (...) {
                records.pop_back();
                throw;
            }
        }
        try {
            index_of.emplace(obj, id);
        } catch (...) {
            if (fresh) {
                records.pop_back();
                boxes.pop_back();
            }
            throw;
        }
        if (!fresh) free_ids.pop_back();
        Record& r = records[id];
        r.object = obj;
        r.aabb = obj->getAABB();
        r.order = order;
        boxes[id] = box_of(r.aabb);
        return id;
    }

    // update() reads the objects' AABBs in slot order, which the Morton order of the slots makes
    // a walk through the caller's memory in no order: the AABB this many slots ahead is
    // prefetched (measured: 5 to 10 % of update() at 100,000 objects).
    static constexpr std::uint32_t kPrefetch = 16;
    void prefetch_aabb(std::uint32_t id) const {
#if defined(__GNUC__)
        if (id < slots() && records[id].object != nullptr) {
            const char* aabb = reinterpret_cast<const char*>(&records[id].object->getAABB());
            __builtin_prefetch(aabb);
            __builtin_prefetch(aabb + sizeof(Aabb) - 1);  // its last byte's line
        }
#else
        (void)id;
#endif
    }

    // Reads the AABB of object `id` again; true when its float box changed.
    bool reread(std::uint32_t id) {
        Record& r = records[id];
        const Aabb& now = r.object->getAABB();
        if (now.min_ == r.aabb.min_ && now.max_ == r.aabb.max_) return false;  // not moved
        r.aabb = now;
        const Box box = box_of(r.aabb);
        if (box == boxes[id]) return false;
        boxes[id] = box;
        return true;
    }

    void add(Object* obj, bool batch, std::uint64_t order) {
        const std::optional<std::uint32_t> id = add_record(obj, order);
        if (!id) return;
        if (scene) scene->touch(*id);
        if (!tracker_ok) return;
        if (Status s = tracker->insert(*id, boxes[*id]); !s) return tracker_failed(s);
        if (!batch) update_tracker(*id);
    }

    // registerObjects: a batch takes its slots in the Morton order of its boxes' centres, so
    // that the tracker's ids, and the records the self collide reads per pair, of
    // neighbours lie near each other in memory (measured: docs/fcl.md, "Methods"); the
    // registration sequence, which orders each pair's objects, stays the caller's.
    void add_batch(const std::vector<Object*>& objs) {
        const std::uint64_t base = next_order;
        next_order += objs.size();
        records.reserve(records.size() + objs.size());
        boxes.reserve(boxes.size() + objs.size());
        index_of.reserve(index_of.size() + objs.size());  // no rehash inside the batch
        if (objs.size() < kMortonBatch) {
            for (std::size_t k = 0; k < objs.size(); ++k) add(objs[k], true, base + k);
            return update_tracker();
        }
        std::vector<Box> batch;  // the objects' boxes, null ones left out
        std::vector<std::uint32_t> index;
        batch.reserve(objs.size());
        index.reserve(objs.size());
        for (std::size_t k = 0; k < objs.size(); ++k) {
            if (objs[k] == nullptr) continue;
            batch.push_back(box_of(objs[k]->getAABB()));
            index.push_back(static_cast<std::uint32_t>(k));
        }
        for (const std::uint32_t n : morton_order(batch))
            add(objs[index[n]], true, base + index[n]);
        update_tracker();
    }

    void remove(const Object* obj) {
        const auto it = index_of.find(obj);
        if (it == index_of.end()) return;
        const std::uint32_t id = it->second;
        if (free_ids.size() == free_ids.capacity())  // before any change: it may throw
            free_ids.reserve(std::max<std::size_t>(16, 2 * free_ids.capacity()));
        index_of.erase(it);
        records[id] = Record{};
        free_ids.push_back(id);
        if (scene)
            if (Status s = scene->drop(id); !s) scene_failed(s.error());
        if (!tracker_ok) return;
        if (Status s = tracker->remove(id); !s) return tracker_failed(s);
        update_tracker(id);
    }

    // update(): every object's AABB read again.
    void update_all() {
        for (std::uint32_t id = 0; id < slots(); ++id) {
            prefetch_aabb(id + kPrefetch);
            if (present(id) && reread(id)) moved(id);
        }
        update_tracker();
    }

    // Object `id`'s box changed: to the GPU scene and the tracker (applied at its update).
    void moved(std::uint32_t id) {
        if (scene) scene->touch(id);
        if (!tracker_ok) return;
        if (Status s = tracker->move(id, boxes[id]); !s) tracker_failed(s);
    }

    // update(obj) (`one`: the tracker's update of that id) and update(objs): these objects'
    // AABBs read again.
    void update_some(std::span<Object* const> objs, bool one) {
        for (Object* obj : objs) {
            const auto it = index_of.find(obj);
            if (it != index_of.end() && reread(it->second)) moved(it->second);
        }
        if (!one) return update_tracker();
        if (const auto it = index_of.find(objs[0]); it != index_of.end())
            update_tracker(it->second);
    }

    void clear() {
        records.clear();
        boxes.clear();
        index_of.clear();
        free_ids.clear();
        tracker->clear();
        tracker_ok = true;
        if (scene)
            if (Status s = scene->clear(); !s) scene_failed(s.error());
    }

    // A write that threw (memory) may have left the tracker or the GPU scene behind the
    // objects: they are dropped, the objects stay (they are consistent at every throw).
    void write_failed() noexcept {
        tracker->clear();
        tracker_ok = false;
        scene.reset();
    }

    // ---- the tracker ----

    void tracker_failed(const Status& s) const {
        fail(s);
        tracker->clear();
        tracker_ok = false;
    }

    // A tracker that a failure emptied, filled again (its update then builds it); false when
    // that failed too.
    bool refill_tracker() const {
        if (tracker_ok) return true;
        tracker->clear();
        tracker_ok = true;
        for (std::uint32_t id = 0; id < slots() && tracker_ok; ++id)
            if (present(id))
                if (Status s = tracker->insert(id, boxes[id]); !s) tracker_failed(s);
        if (tracker_ok) builds.fetch_add(1, std::memory_order_relaxed);
        return tracker_ok;
    }

    // CPU methods: the changes of `id` applied now (gpu_lbvh's wait for a query).
    void update_tracker(std::uint32_t id) {
        if (gpu() || !tracker_ok) return;
        Status s = tracker->update(id, began, ended);
        began.clear();
        ended.clear();
        if (!s) tracker_failed(s);
    }

    // CPU methods: every change applied now; a tracker that a failure emptied is filled again
    // (gpu_lbvh's wait for a query).
    void update_tracker() {
        if (gpu() || !refill_tracker()) return;
        Status s = tracker->update(began, ended);
        began.clear();
        ended.clear();
        if (!s) tracker_failed(s);
    }

    // The tracker up to date for a query, or false (the query then scans the boxes): CPU
    // methods keep it so at every write; gpu_lbvh's first query after changes applies them,
    // the changed objects alone, refilling a tracker that a failure emptied.
    bool index_ready() const {
        if (!gpu()) return tracker_ok;
        std::lock_guard<std::mutex> hold(lazy);
        if (!refill_tracker()) return false;
        if (!tracker->pending()) return true;
        std::vector<Pair> none_began, none_ended;  // a query index reports no pairs
        if (Status s = tracker->update(none_began, none_ended); !s) tracker_failed(s);
        return tracker_ok;
    }

    // ---- gpu_lbvh ----

    // The scene is dropped at its first failure; the query index answers from then on.
    void scene_failed(const Error& error) const {
        fail(error);
        scene.reset();
    }
    // The self pairs of the GPU frame (run now if anything changed), as ids, into `out`; false
    // when the scene failed (now or before).
    bool gpu_pairs(std::vector<Pair>& out) const {
        std::lock_guard<std::mutex> hold(lazy);
        if (!scene) return false;
        if (scene->pending()) {
            const auto slot_of = [&](std::uint32_t id) {
                const bool live = id < slots() && present(id);
                return adapters::GpuSlot{live, live ? boxes[id] : Box{}, Filter{}};
            };
            if (Status s = scene->step(slot_of); !s) {
                scene_failed(s.error());
                return false;
            }
            gpu_steps.fetch_add(1, std::memory_order_relaxed);
        }
        scene->pairs(out);
        return true;
    }

    // ---- the queries: const, reading only (gpu_lbvh's lazy work under `lazy`) ----

    // Every pair of ids whose float boxes overlap, i < j: the tracker's own span, or `storage`
    // filled from gpu_lbvh's frame (when use_gpu), its query index, or a scan.
    std::span<const Pair> self_candidates(std::vector<Pair>& storage, bool use_gpu) const {
        storage.clear();
        if (!gpu()) {
            if (tracker_ok) return tracker->pairs();
        } else {
            if (use_gpu && gpu_pairs(storage)) return storage;
            if (index_ready()) {
                tracker->overlapping_pairs(storage);
                return storage;
            }
        }
        for (std::uint32_t i = 0; i < slots(); ++i) {
            if (!present(i)) continue;
            for (std::uint32_t j = i + 1; j < slots(); ++j)
                if (present(j) && overlaps(boxes[i], boxes[j])) storage.push_back({i, j});
        }
        return storage;
    }

    // Every id whose box overlaps `region`, into `out` (replaced).
    void box_candidates(const Box& region, std::vector<std::uint32_t>& out) const {
        out.clear();
        if (index_ready()) return tracker->query_box(region, out);
        for (std::uint32_t i = 0; i < slots(); ++i)
            if (present(i) && overlaps(boxes[i], region)) out.push_back(i);
    }

    // An id near `box` other than `skip`, or none: the closest box found by box queries around
    // `box` grown fourfold until one finds another, else the first other id.
    std::optional<std::uint32_t> near_id(const Box& box, std::optional<std::uint32_t> skip) const {
        if (live() <= (skip ? 1u : 0u)) return std::nullopt;
        double r = 0;
        for (int k = 0; k < 3; ++k) r = std::max(r, double(box.max[k]) - double(box.min[k]));
        if (!(r > 0) || !std::isfinite(r)) r = 1;
        std::vector<std::uint32_t> ids;
        for (int step = 0; step < 200; ++step, r *= 4) {
            const Box region = grown_by(box, r);
            box_candidates(region, ids);
            std::optional<std::uint32_t> best;
            double best_gap = 0;
            for (std::uint32_t id : ids) {
                if (id == skip) continue;
                const double g = gap2(box, boxes[id]);
                if (!best || g < best_gap) best = id, best_gap = g;
            }
            if (best) return best;
            if (whole_range(region)) break;
        }
        for (std::uint32_t id = 0; id < slots(); ++id)
            if (present(id) && id != skip) return id;
        return std::nullopt;
    }

    Object* first_of(std::uint32_t a, std::uint32_t b) const {
        return records[a].order < records[b].order ? records[a].object : records[b].object;
    }
    Object* second_of(std::uint32_t a, std::uint32_t b) const {
        return records[a].order < records[b].order ? records[b].object : records[a].object;
    }

    void self_collide(void* cdata, ::fcl::CollisionCallBack<S> callback) const {
        Count count(*this);
        std::vector<Pair> storage;
        const std::span<const Pair> pairs = self_candidates(storage, true);
        count.candidates = pairs.size();
        for (const Pair& p : pairs) {
            if (!aabb_overlap(records[p.i].aabb, records[p.j].aabb)) continue;
            ++count.callbacks;
            if (callback(first_of(p.i, p.j), second_of(p.i, p.j), cdata)) return;
        }
    }

    void self_distance(void* cdata, ::fcl::DistanceCallBack<S> callback) const {
        Count count(*this);
        S min_dist = std::numeric_limits<S>::max();
        const auto visit = [&](std::uint32_t i, std::uint32_t j) {
            ++count.candidates;
            if (!(records[i].aabb.distance(records[j].aabb) < min_dist)) return false;
            ++count.callbacks;
            return callback(first_of(i, j), second_of(i, j), cdata, min_dist);
        };
        // Overlapping boxes first: the pairs most likely to bring the minimum down.
        {
            std::vector<Pair> storage;
            for (const Pair& p : self_candidates(storage, false)) {
                if (!(min_dist > 0)) return;  // no AABB distance is below it any more
                if (visit(p.i, p.j)) return;
            }
        }
        if (live() < 2 || !(min_dist > 0)) return;
        // A near pair bounds the minimum while nothing has.
        std::optional<Pair> seed;
        if (min_dist == std::numeric_limits<S>::max()) {
            const std::uint32_t a = *first_present();
            const std::uint32_t b = *near_id(boxes[a], a);
            if (!overlaps(boxes[a], boxes[b])) {
                seed = Pair{std::min(a, b), std::max(a, b)};
                if (visit(a, b)) return;
            }
        }
        std::vector<std::uint32_t> ids;
        for (std::uint32_t i = 0; i < slots(); ++i) {
            if (!present(i)) continue;
            if (!(min_dist > 0)) return;
            box_candidates(grown_box(records[i].aabb, min_dist), ids);
            for (std::uint32_t j : ids) {
                if (j <= i || overlaps(boxes[i], boxes[j])) continue;
                if (seed && seed->i == i && seed->j == j) continue;
                if (visit(i, j)) return;
            }
        }
    }

    // collide(other) and distance(other) of manager `self` (this Impl's): `run(impl, items,
    // swapped)` queries a manager's structure with the other side's objects, this one's with
    // `other`'s, or, when `other` is another of ours that is larger, that one's with ours.
    template <class Run>
    void cross_query(const char* where, const CollisionManager& self, const Base& other,
                     Run&& run) const {
        query(where, [&] {
            const auto* ours = dynamic_cast<const CollisionManager*>(&other);
            if (ours != nullptr && ours->size() > self.size())
                return run(*ours->impl_, items_of(self), true);
            run(*this, items_of(other), false);
        });
    }

    // The objects of `other` with their AABBs and boxes: ours as stored, any other manager's
    // as their objects hold them now.
    static std::vector<Item> items_of(const Base& other) {
        std::vector<Item> items;
        if (const auto* ours = dynamic_cast<const CollisionManager*>(&other)) {
            const Impl& o = *ours->impl_;
            items.reserve(o.live());
            for (std::uint32_t i = 0; i < o.slots(); ++i)
                if (o.present(i))
                    items.push_back({o.records[i].object, o.records[i].aabb, o.boxes[i]});
            return items;
        }
        std::vector<Object*> objs;
        other.getObjects(objs);
        items.reserve(objs.size());
        for (Object* obj : objs) items.push_back(item_of(obj));
        return items;
    }
    static Item item_of(Object* obj) {
        return {obj, obj->getAABB(), box_of(obj->getAABB())};
    }

    // The calls of a collide between `items` and this manager's objects: callback(item, ours)
    // when items_first, else callback(ours, item).
    void cross_collide(const std::vector<Item>& items, bool items_first, void* cdata,
                       ::fcl::CollisionCallBack<S> callback) const {
        Count count(*this);
        std::vector<std::uint32_t> ids;
        for (const Item& item : items) {
            box_candidates(item.box, ids);
            count.candidates += ids.size();
            for (std::uint32_t j : ids) {
                if (!aabb_overlap(item.aabb, records[j].aabb)) continue;
                ++count.callbacks;
                Object* ours = records[j].object;
                if (items_first ? callback(item.object, ours, cdata)
                                : callback(ours, item.object, cdata))
                    return;
            }
        }
    }

    // The calls of a distance between `items` and this manager's objects, argument order as
    // cross_collide.
    void cross_distance(const std::vector<Item>& items, bool items_first, void* cdata,
                        ::fcl::DistanceCallBack<S> callback) const {
        Count count(*this);
        if (items.empty() || live() == 0) return;
        S min_dist = std::numeric_limits<S>::max();
        const auto visit = [&](const Item& item, std::uint32_t j) {
            ++count.candidates;
            if (!(item.aabb.distance(records[j].aabb) < min_dist)) return false;
            ++count.callbacks;
            Object* ours = records[j].object;
            return items_first ? callback(item.object, ours, cdata, min_dist)
                               : callback(ours, item.object, cdata, min_dist);
        };
        std::vector<std::uint32_t> ids;
        for (const Item& item : items) {
            box_candidates(item.box, ids);
            for (std::uint32_t j : ids) {
                if (!(min_dist > 0)) return;
                if (visit(item, j)) return;
            }
        }
        if (!(min_dist > 0)) return;
        std::optional<std::uint32_t> seed;  // paired with items[0]
        if (min_dist == std::numeric_limits<S>::max()) {
            const std::uint32_t j = *near_id(items[0].box, std::nullopt);
            if (!overlaps(items[0].box, boxes[j])) {
                seed = j;
                if (visit(items[0], j)) return;
            }
        }
        for (std::size_t k = 0; k < items.size(); ++k) {
            const Item& item = items[k];
            if (!(min_dist > 0)) return;
            box_candidates(grown_box(item.aabb, min_dist), ids);
            for (std::uint32_t j : ids) {
                if (overlaps(item.box, boxes[j]) || (k == 0 && seed == j)) continue;
                if (visit(item, j)) return;
            }
        }
    }

    Status validate() const {
        const auto broken = [](const std::string& what, std::optional<std::size_t> id = {}) {
            return Error{ErrorCode::invariant_violated, "fcl: " + what, id};
        };
        if (boxes.size() != records.size()) return broken("object arrays disagree");
        std::size_t holes = 0;
        for (std::uint32_t i = 0; i < slots(); ++i) {
            if (!present(i)) {
                ++holes;
                continue;
            }
            const auto it = index_of.find(records[i].object);
            if (it == index_of.end() || it->second != i)
                return broken("object map misses an object", i);
            if (!(boxes[i] == box_of(records[i].aabb)))
                return broken("box is not the outward rounding of the AABB", i);
        }
        {
            std::lock_guard<std::mutex> hold(lazy);  // a self collide may be stepping the scene
            if (scene)
                if (Status s = scene->validate(); !s) return s;
        }
        if (index_of.size() + holes != records.size())
            return broken("object map and slots disagree");
        if (free_ids.size() != holes) return broken("free list and free slots disagree");
        for (std::uint32_t id : free_ids)
            if (id >= slots() || present(id)) return broken("free list names a used slot", id);
        if (!index_ready()) return current_status();  // gpu_lbvh: its changes applied
        if (tracker->pending()) return broken("tracker has changes not applied");
        if (tracker->size() != live()) return broken("tracker size differs");
        for (std::uint32_t i = 0; i < slots(); ++i) {
            if (present(i) != tracker->contains(i)) return broken("tracker and slots disagree", i);
            if (present(i) && !(tracker->box(i) == boxes[i]))
                return broken("tracker holds a stale box", i);
        }
        return tracker->validate();
    }
};

template <class S>
CollisionManager<S>::CollisionManager(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

template <class S>
CollisionManager<S>::~CollisionManager() = default;

template <class S>
std::vector<std::string_view> CollisionManager<S>::method_names() {
    std::vector<std::string_view> names = cpu_method_names();
    if (adapters::GpuPairs::available()) names.push_back("gpu_lbvh");
    return names;
}

template <class S>
Result<std::unique_ptr<CollisionManager<S>>> CollisionManager<S>::create(std::string_view method,
                                                                         const Options& options) {
    try {
        auto impl = std::make_unique<Impl>();
        impl->method = std::string(method);
        impl->on_gpu = method == "gpu_lbvh";
        if (impl->on_gpu && !adapters::GpuPairs::available())
            return Error{ErrorCode::unsupported, "gpu_lbvh needs the GPU part of broadphase"};
        // gpu_lbvh: the tracker is a query index over query_method, keeping no pairs.
        PairTracker::Config config;
        config.method = std::string(impl->on_gpu ? options.query_method : method);
        config.pairs = !impl->on_gpu;
        config.margin = options.margin;
        config.prediction = options.prediction;
        config.speed_margin = options.speed_margin;
        Result<std::unique_ptr<PairTracker>> tracker = PairTracker::create(config);
        if (!tracker)
            return impl->on_gpu ? Error{ErrorCode::invalid_argument,
                                        "query_method: " + tracker.error().message}
                                : tracker.error();
        impl->tracker = std::move(*tracker);
        if (impl->on_gpu) {
            adapters::GpuPairsOptions gpu_options;
            gpu_options.keep_pairs = true;  // a self collide walks every pair
            Result<std::unique_ptr<adapters::GpuPairs>> pairs =
                adapters::GpuPairs::create(options.context, gpu_options);
            if (!pairs) return pairs.error();
            impl->scene = std::move(*pairs);
        }
        return std::unique_ptr<CollisionManager>(new CollisionManager(std::move(impl)));
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    return Error{ErrorCode::out_of_memory, "fcl: out of memory creating a manager"};
}

template <class S>
void CollisionManager<S>::registerObjects(const std::vector<Object*>& other_objs) {
    impl_->write("registerObjects", [&] { impl_->add_batch(other_objs); });
}

template <class S>
void CollisionManager<S>::registerObject(Object* obj) {
    impl_->write("registerObject", [&] { impl_->add(obj, false, impl_->next_order++); });
}

template <class S>
void CollisionManager<S>::unregisterObject(Object* obj) {
    impl_->write("unregisterObject", [&] { impl_->remove(obj); });
}

template <class S>
void CollisionManager<S>::setup() {
    impl_->write("setup", [&] { impl_->update_tracker(); });
}

template <class S>
void CollisionManager<S>::update() {
    impl_->write("update", [&] { impl_->update_all(); });
}

template <class S>
void CollisionManager<S>::update(Object* updated_obj) {
    impl_->write("update",
                 [&] { impl_->update_some(std::span<Object* const>(&updated_obj, 1), true); });
}

template <class S>
void CollisionManager<S>::update(const std::vector<Object*>& updated_objs) {
    impl_->write("update", [&] { impl_->update_some(updated_objs, false); });
}

template <class S>
void CollisionManager<S>::clear() {
    impl_->clear();
}

template <class S>
void CollisionManager<S>::getObjects(std::vector<Object*>& objs) const {
    impl_->query("getObjects", [&] {
        objs.clear();
        objs.reserve(impl_->live());
        for (const auto& r : impl_->records)
            if (r.object != nullptr) objs.push_back(r.object);
    });
}

template <class S>
void CollisionManager<S>::collide(Object* obj, void* cdata,
                                  ::fcl::CollisionCallBack<S> callback) const {
    if (obj == nullptr) return;
    impl_->query("collide",
                 [&] { impl_->cross_collide({Impl::item_of(obj)}, false, cdata, callback); });
}

template <class S>
void CollisionManager<S>::distance(Object* obj, void* cdata,
                                   ::fcl::DistanceCallBack<S> callback) const {
    if (obj == nullptr) return;
    impl_->query("distance",
                 [&] { impl_->cross_distance({Impl::item_of(obj)}, false, cdata, callback); });
}

template <class S>
void CollisionManager<S>::collide(void* cdata, ::fcl::CollisionCallBack<S> callback) const {
    impl_->query("collide", [&] { impl_->self_collide(cdata, callback); });
}

template <class S>
void CollisionManager<S>::distance(void* cdata, ::fcl::DistanceCallBack<S> callback) const {
    impl_->query("distance", [&] { impl_->self_distance(cdata, callback); });
}

template <class S>
void CollisionManager<S>::collide(Base* other_manager, void* cdata,
                                  ::fcl::CollisionCallBack<S> callback) const {
    if (other_manager == nullptr) return;
    if (other_manager == this) return collide(cdata, callback);
    impl_->cross_query("collide", *this, *other_manager,
                       [&](const Impl& m, const std::vector<typename Impl::Item>& items,
                           bool swapped) { m.cross_collide(items, swapped, cdata, callback); });
}

template <class S>
void CollisionManager<S>::distance(Base* other_manager, void* cdata,
                                   ::fcl::DistanceCallBack<S> callback) const {
    if (other_manager == nullptr) return;
    if (other_manager == this) return distance(cdata, callback);
    impl_->cross_query("distance", *this, *other_manager,
                       [&](const Impl& m, const std::vector<typename Impl::Item>& items,
                           bool swapped) { m.cross_distance(items, swapped, cdata, callback); });
}

template <class S>
bool CollisionManager<S>::empty() const {
    return impl_->live() == 0;
}

template <class S>
std::size_t CollisionManager<S>::size() const {
    return impl_->live();
}

template <class S>
std::string_view CollisionManager<S>::method() const {
    return impl_->method;
}

template <class S>
Status CollisionManager<S>::status() const {
    return impl_->current_status();
}

template <class S>
Stats CollisionManager<S>::stats() const {
    const Impl& m = *impl_;
    Stats s;
    s.builds = m.builds.load(std::memory_order_relaxed);
    s.gpu_steps = m.gpu_steps.load(std::memory_order_relaxed);
    s.candidates = m.last_candidates.load(std::memory_order_relaxed);
    s.callbacks = m.last_callbacks.load(std::memory_order_relaxed);
    {
        // gpu_lbvh: a query may be applying changes to its index.
        std::unique_lock<std::mutex> hold(m.lazy, std::defer_lock);
        if (m.gpu()) hold.lock();
        s.tracker = m.tracker->stats();
    }
    s.builds += s.tracker.rebuilds;
    return s;
}

template <class S>
Status CollisionManager<S>::validate() const {
    try {
        return impl_->validate();
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    return Error{ErrorCode::out_of_memory, "fcl: out of memory in validate"};
}

template class CollisionManager<float>;
template class CollisionManager<double>;

}  // namespace broadphase::fcl
