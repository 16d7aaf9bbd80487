// broadphase::fcl: the library's structures behind FCL's BroadPhaseCollisionManager
// (include/broadphase/fcl.hpp, docs/fcl.md). Objects live in a dense array whose index is their
// id in the structure (a removal moves the last object into the hole), each with its AABB in S
// and its float box rounded outward. Collide finds candidates on the float boxes and tests them
// again in S; distance prunes with the running minimum the callback writes (overlapping pairs
// first, then a box query of each AABB grown by the minimum), as FCL's own managers do.
#include "broadphase/fcl.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "broadphase/structure.hpp"

#if BROADPHASE_HAS_GPU
#include "broadphase/gpu.hpp"
#include "broadphase/gpu_proxies.hpp"
#endif

namespace broadphase::fcl {

namespace {

// The float at or below v (above, when `up`), clamped to the float range; NaN opens outward.
float outward(double v, bool up) {
    constexpr float kMax = std::numeric_limits<float>::max();
    if (std::isnan(v)) return up ? kMax : -kMax;
    if (v >= double(kMax)) return kMax;
    if (v <= -double(kMax)) return -kMax;
    float f = static_cast<float>(v);
    if (up && double(f) < v) f = std::nextafter(f, std::numeric_limits<float>::infinity());
    if (!up && double(f) > v) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
    return f;
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
    Box b;
    for (int k = 0; k < 3; ++k) {
        // A bound given as min > max (an inverted AABB) still overlaps, in FCL's test, every
        // box that spans [max, min]: the swapped interval keeps those pairs.
        const bool swap = lo[k] > hi[k];
        b.min[k] = outward(swap ? hi[k] : lo[k], false);
        b.max[k] = outward(swap ? lo[k] : hi[k], true);
    }
    return b;
}

template <class S>
struct CollisionManager<S>::Impl {
    using Aabb = ::fcl::AABB<S>;

    struct Record {
        Object* object = nullptr;
        Aabb aabb;                // as read at register or the last update naming it
        std::uint64_t order = 0;  // registration sequence: a pair's earlier object comes first
#if BROADPHASE_HAS_GPU
        ProxyHandle handle = 0;
#endif
    };
    // An object of the side a cross query iterates over (another manager, or one object).
    struct Item {
        Object* object = nullptr;
        Aabb aabb;
        Box box;
    };

    std::string method;
    std::unique_ptr<Structure> structure;  // the method's own, or gpu_lbvh's query mirror
    bool dynamic = false;
    bool built = false;  // the structure holds exactly `boxes`, ids = indices
    // The last build failed and nothing changed since: the queries scan instead of retrying.
    bool build_failed = false;
    std::vector<Record> records;
    std::vector<Box> boxes;  // outward float box of records[i].aabb
    std::unordered_map<const Object*, std::uint32_t> index_of;
    std::uint64_t next_order = 0;
    Status status;
    Stats stats;

#if BROADPHASE_HAS_GPU
    std::unique_ptr<gpu::Context> own_context;  // declared before the scene: destroyed after it
    gpu::Context* context = nullptr;
    std::unique_ptr<gpu::ProxyScene> scene;  // null unless gpu_lbvh and working
    // The scene holds the objects: filled by the first self collide, sized for them, so that
    // a scene registered in one go does not grow frame by frame; followed call by call after.
    bool scene_filled = false;
    std::vector<std::uint32_t> record_of_handle;
    bool scene_dirty = true;
    std::vector<Pair> scene_pairs;  // handles, as of the last step
#endif

    std::uint32_t count() const {
        return static_cast<std::uint32_t>(records.size());
    }

    void fail(const Error& error) {
        if (status) status = error;
    }
    void fail(const Status& s) {
        if (!s) fail(s.error());
    }

    bool gpu_method() const {
#if BROADPHASE_HAS_GPU
        return method == "gpu_lbvh";
#else
        return false;
#endif
    }

#if BROADPHASE_HAS_GPU
    // The scene when it holds the objects, else null.
    gpu::ProxyScene* filled() const {
        return scene_filled ? scene.get() : nullptr;
    }
    // The scene is dropped at its first failure; the mirror answers from then on.
    void scene_failed(const Error& error) {
        fail(error);
        scene.reset();
    }
    void scene_add(std::uint32_t id) {
        if (!filled()) return;
        Result<ProxyHandle> h = scene->add(boxes[id]);
        if (!h) return scene_failed(h.error());
        records[id].handle = *h;
        if (record_of_handle.size() <= *h) record_of_handle.resize(std::size_t(*h) + 1);
        record_of_handle[*h] = id;
        scene_dirty = true;
    }
    // A fresh scene sized for the objects (a quarter more, for those to come), holding them.
    void fill_scene() {
        gpu::ProxySceneOptions options;
        const std::uint32_t capacity = std::max(1024u, count() + count() / 4);
        options.initial_dynamic_capacity = options.initial_handle_capacity = capacity;
        Result<std::unique_ptr<gpu::ProxyScene>> fresh = gpu::ProxyScene::create(*context, options);
        if (!fresh) return scene_failed(fresh.error());
        scene = std::move(*fresh);
        scene_filled = true;
        record_of_handle.assign(count(), 0);
        for (std::uint32_t id = 0; id < count() && scene; ++id) scene_add(id);
        scene_dirty = true;
    }
#endif

    void add(Object* obj) {
        if (obj == nullptr || index_of.contains(obj)) return;
        const std::uint32_t id = count();
        Record r;
        r.object = obj;
        r.aabb = obj->getAABB();
        r.order = next_order++;
        records.push_back(r);
        boxes.push_back(box_of(r.aabb));
        index_of.emplace(obj, id);
        if (built && dynamic) {
            if (Status s = structure->insert(id, boxes[id]); !s) {
                fail(s);
                stale();
            }
        } else {
            stale();
        }
#if BROADPHASE_HAS_GPU
        scene_add(id);
#endif
    }

    void remove(const Object* obj) {
        const auto it = index_of.find(obj);
        if (it == index_of.end()) return;
        const std::uint32_t id = it->second;
        const std::uint32_t last = count() - 1;
        index_of.erase(it);
#if BROADPHASE_HAS_GPU
        if (filled()) {
            if (Status s = scene->remove(records[id].handle); !s) scene_failed(s.error());
            scene_dirty = true;
        }
#endif
        if (built && dynamic) {
            // The last object takes the freed id.
            Status s = structure->remove(last);
            if (s && id != last) s = structure->move(id, boxes[last]);
            if (!s) {
                fail(s);
                stale();
            }
        } else {
            stale();
        }
        if (id != last) {
            records[id] = records[last];
            boxes[id] = boxes[last];
            index_of[records[id].object] = id;
#if BROADPHASE_HAS_GPU
            if (filled()) record_of_handle[records[id].handle] = id;
#endif
        }
        records.pop_back();
        boxes.pop_back();
    }

    // Reads the AABB of object `id` again; true when its float box changed.
    bool reread(std::uint32_t id) {
        Record& r = records[id];
        r.aabb = r.object->getAABB();
        const Box box = box_of(r.aabb);
        if (box == boxes[id]) return false;
        boxes[id] = box;
        return true;
    }

    // Moves the boxes of `moved` (reread) in the structure and the GPU scene. When they are
    // most of the objects and `rebuild_if_most`, a dynamic structure is rebuilt instead: one
    // build costs less than that many moves.
    void apply_moves(const std::vector<std::uint32_t>& moved, bool rebuild_if_most) {
        if (moved.empty()) return;
        if (built && dynamic && !(rebuild_if_most && moved.size() * 2 > records.size())) {
            for (std::uint32_t id : moved) {
                if (Status s = structure->move(id, boxes[id]); !s) {
                    fail(s);
                    stale();
                    break;
                }
            }
        } else {
            stale();
        }
#if BROADPHASE_HAS_GPU
        if (filled()) {
            for (std::uint32_t id : moved) {
                if (Status s = scene->move(records[id].handle, boxes[id]); !s) {
                    scene_failed(s.error());
                    break;
                }
            }
            scene_dirty = true;
        }
#endif
    }

    void clear() {
        records.clear();
        boxes.clear();
        index_of.clear();
        stale();
#if BROADPHASE_HAS_GPU
        scene_filled = false;  // the next self collide starts a fresh scene
        record_of_handle.clear();
        scene_pairs.clear();
#endif
    }

    // What setup() and update() do: a CPU method's structure is brought up to date; gpu_lbvh's
    // mirror is left for the first query that needs it (a program that only self-collides never
    // pays for it), and its scene for the next self collide.
    void prepare() {
        if (!gpu_method()) sync();
    }

    // The structure no longer holds the boxes: the next sync() builds it.
    void stale() {
        built = false;
        build_failed = false;
    }

    // Builds the structure over the boxes when it is out of date; false when that failed, now or
    // since the last change (the queries then scan the boxes).
    bool sync() {
        if (built) return true;
        if (build_failed) return false;
        if (Status s = build_structure(*structure, boxes); !s) {
            fail(s);
            build_failed = true;
            return false;
        }
        built = true;
        ++stats.builds;
        return true;
    }

    // Every pair of ids whose boxes overlap, i < j.
    void self_candidates(std::vector<Pair>& out, bool use_gpu) {
        out.clear();
#if BROADPHASE_HAS_GPU
        if (use_gpu && scene && !scene_filled) fill_scene();
        if (use_gpu && filled()) {
            if (scene_dirty) {
                Result<ProxyFrame> frame = scene->step();
                if (frame) {
                    scene_pairs = std::move(frame->pairs);
                    scene_dirty = false;
                    ++stats.gpu_steps;
                } else {
                    scene_failed(frame.error());
                }
            }
            if (scene) {
                out.reserve(scene_pairs.size());
                for (const Pair& p : scene_pairs) {
                    const std::uint32_t a = record_of_handle[p.i], b = record_of_handle[p.j];
                    out.push_back(a < b ? Pair{a, b} : Pair{b, a});
                }
                return;
            }
        }
#else
        (void)use_gpu;
#endif
        if (sync()) return structure->self_pairs(out);
        for (std::uint32_t i = 0; i < count(); ++i)
            for (std::uint32_t j = i + 1; j < count(); ++j)
                if (overlaps(boxes[i], boxes[j])) out.push_back({i, j});
    }

    // Every id whose box overlaps `region`.
    void box_candidates(const Box& region, std::vector<std::uint32_t>& out) {
        out.clear();
        if (sync()) return structure->query_box(region, out);
        for (std::uint32_t i = 0; i < count(); ++i)
            if (overlaps(boxes[i], region)) out.push_back(i);
    }

    // An id near `box` other than `skip` (the nearest box to its centre where the structure
    // answers nearest(), else the first id that is not `skip`), or none.
    std::optional<std::uint32_t> near_id(const Box& box, std::optional<std::uint32_t> skip) {
        const std::size_t others = count() - (skip ? 1 : 0);
        if (others == 0) return std::nullopt;
        std::vector<Neighbor> found;
        if (sync() && structure->nearest(centroid(box), skip ? 2 : 1, found)) {
            for (const Neighbor& n : found)
                if (n.id != skip) return n.id;
        }
        return skip == 0u ? 1u : 0u;
    }

    Object* first_of(std::uint32_t a, std::uint32_t b) const {
        return records[a].order < records[b].order ? records[a].object : records[b].object;
    }
    Object* second_of(std::uint32_t a, std::uint32_t b) const {
        return records[a].order < records[b].order ? records[b].object : records[a].object;
    }

    void self_collide(void* cdata, ::fcl::CollisionCallBack<S> callback) {
        stats.candidates = stats.callbacks = 0;
        std::vector<Pair> pairs;
        self_candidates(pairs, true);
        stats.candidates = pairs.size();
        for (const Pair& p : pairs) {
            if (!aabb_overlap(records[p.i].aabb, records[p.j].aabb)) continue;
            ++stats.callbacks;
            if (callback(first_of(p.i, p.j), second_of(p.i, p.j), cdata)) return;
        }
    }

    void self_distance(void* cdata, ::fcl::DistanceCallBack<S> callback) {
        stats.candidates = stats.callbacks = 0;
        S min_dist = std::numeric_limits<S>::max();
        const auto visit = [&](std::uint32_t i, std::uint32_t j) {
            ++stats.candidates;
            if (!(records[i].aabb.distance(records[j].aabb) < min_dist)) return false;
            ++stats.callbacks;
            return callback(first_of(i, j), second_of(i, j), cdata, min_dist);
        };
        // Overlapping boxes first: the pairs most likely to bring the minimum down.
        std::vector<Pair> pairs;
        self_candidates(pairs, false);
        for (const Pair& p : pairs) {
            if (!(min_dist > 0)) return;  // no AABB distance is below it any more
            if (visit(p.i, p.j)) return;
        }
        pairs = {};
        if (count() < 2 || !(min_dist > 0)) return;
        // A near pair bounds the minimum while nothing has.
        std::optional<Pair> seed;
        if (min_dist == std::numeric_limits<S>::max()) {
            const std::uint32_t j = *near_id(boxes[0], 0u);
            if (!overlaps(boxes[0], boxes[j])) {
                seed = Pair{std::min(0u, j), std::max(0u, j)};
                if (visit(0, j)) return;
            }
        }
        std::vector<std::uint32_t> ids;
        for (std::uint32_t i = 0; i < count(); ++i) {
            if (!(min_dist > 0)) return;
            box_candidates(grown_box(records[i].aabb, min_dist), ids);
            for (std::uint32_t j : ids) {
                if (j <= i || overlaps(boxes[i], boxes[j])) continue;
                if (seed && seed->i == i && seed->j == j) continue;
                if (visit(i, j)) return;
            }
        }
    }

    // The objects of `other` with their AABBs and boxes: ours as stored, any other manager's
    // as their objects hold them now.
    static std::vector<Item> items_of(const Base& other) {
        std::vector<Item> items;
        if (const auto* ours = dynamic_cast<const CollisionManager*>(&other)) {
            const Impl& o = *ours->impl_;
            items.reserve(o.records.size());
            for (std::uint32_t i = 0; i < o.count(); ++i)
                items.push_back({o.records[i].object, o.records[i].aabb, o.boxes[i]});
            return items;
        }
        std::vector<Object*> objs;
        other.getObjects(objs);
        items.reserve(objs.size());
        for (Object* obj : objs) items.push_back({obj, obj->getAABB(), box_of(obj->getAABB())});
        return items;
    }
    static Item item_of(Object* obj) {
        return {obj, obj->getAABB(), box_of(obj->getAABB())};
    }

    // The calls of a collide between `items` and this manager's objects: callback(item, ours)
    // when items_first, else callback(ours, item).
    void cross_collide(const std::vector<Item>& items, bool items_first, void* cdata,
                       ::fcl::CollisionCallBack<S> callback) {
        stats.candidates = stats.callbacks = 0;
        std::vector<std::uint32_t> ids;
        for (const Item& item : items) {
            box_candidates(item.box, ids);
            stats.candidates += ids.size();
            for (std::uint32_t j : ids) {
                if (!aabb_overlap(item.aabb, records[j].aabb)) continue;
                ++stats.callbacks;
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
                        ::fcl::DistanceCallBack<S> callback) {
        stats.candidates = stats.callbacks = 0;
        if (items.empty() || count() == 0) return;
        S min_dist = std::numeric_limits<S>::max();
        const auto visit = [&](const Item& item, std::uint32_t j) {
            ++stats.candidates;
            if (!(item.aabb.distance(records[j].aabb) < min_dist)) return false;
            ++stats.callbacks;
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

    Status validate() {
        if (index_of.size() != records.size() || boxes.size() != records.size())
            return Error{ErrorCode::invariant_violated, "fcl: object map and arrays disagree"};
        for (std::uint32_t i = 0; i < count(); ++i) {
            const auto it = index_of.find(records[i].object);
            if (it == index_of.end() || it->second != i)
                return Error{ErrorCode::invariant_violated, "fcl: object map misses an object", i};
            if (!(boxes[i] == box_of(records[i].aabb)))
                return Error{ErrorCode::invariant_violated,
                             "fcl: box is not the outward rounding of the AABB", i};
#if BROADPHASE_HAS_GPU
            if (filled() && record_of_handle[records[i].handle] != i)
                return Error{ErrorCode::invariant_violated, "fcl: GPU handle map is stale", i};
#endif
        }
        if (!sync()) return status;
        if (structure->size() != records.size())
            return Error{ErrorCode::invariant_violated, "fcl: structure size differs"};
        std::vector<std::uint32_t> ids;
        for (std::uint32_t i = 0; i < count(); ++i) {
            ids.clear();
            structure->query_box(boxes[i], ids);
            if (std::find(ids.begin(), ids.end(), i) == ids.end())
                return Error{ErrorCode::invariant_violated, "fcl: structure lost a box", i};
        }
        return structure->validate();
    }
};

template <class S>
CollisionManager<S>::CollisionManager(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

template <class S>
CollisionManager<S>::~CollisionManager() = default;

template <class S>
std::vector<std::string_view> CollisionManager<S>::method_names() {
    std::vector<std::string_view> names = cpu_method_names();
#if BROADPHASE_HAS_GPU
    names.push_back("gpu_lbvh");
#endif
    return names;
}

template <class S>
Result<std::unique_ptr<CollisionManager<S>>> CollisionManager<S>::create(std::string_view method,
                                                                         const Options& options) {
    auto impl = std::make_unique<Impl>();
    impl->method = std::string(method);
    if (method == "gpu_lbvh") {
#if BROADPHASE_HAS_GPU
        Result<std::unique_ptr<Structure>> mirror = make_structure(options.query_method);
        if (!mirror)
            return Error{ErrorCode::invalid_argument, "query_method: " + mirror.error().message};
        impl->structure = std::move(*mirror);
        impl->context = options.context;
        if (impl->context == nullptr) {
            Result<std::unique_ptr<gpu::Context>> context = gpu::Context::create();
            if (!context) return context.error();
            impl->own_context = std::move(*context);
            impl->context = impl->own_context.get();
        }
        Result<std::unique_ptr<gpu::ProxyScene>> scene = gpu::ProxyScene::create(*impl->context);
        if (!scene) return scene.error();
        impl->scene = std::move(*scene);
#else
        (void)options;
        return Error{ErrorCode::unsupported, "gpu_lbvh needs the GPU part of broadphase"};
#endif
    } else {
        Result<std::unique_ptr<Structure>> structure = make_structure(method);
        if (!structure) return structure.error();
        impl->structure = std::move(*structure);
    }
    impl->dynamic = impl->structure->is_dynamic();
    return std::unique_ptr<CollisionManager>(new CollisionManager(std::move(impl)));
}

template <class S>
void CollisionManager<S>::registerObjects(const std::vector<Object*>& other_objs) {
    Impl& m = *impl_;
    // A batch as large as what is there is cheaper to build over than to insert one by one.
    if (other_objs.size() >= m.records.size()) m.stale();
    m.records.reserve(m.records.size() + other_objs.size());
    m.boxes.reserve(m.boxes.size() + other_objs.size());
    for (Object* obj : other_objs) m.add(obj);
}

template <class S>
void CollisionManager<S>::registerObject(Object* obj) {
    impl_->add(obj);
}

template <class S>
void CollisionManager<S>::unregisterObject(Object* obj) {
    impl_->remove(obj);
}

template <class S>
void CollisionManager<S>::setup() {
    impl_->prepare();
}

template <class S>
void CollisionManager<S>::update() {
    std::vector<std::uint32_t> moved;
    for (std::uint32_t i = 0; i < impl_->count(); ++i)
        if (impl_->reread(i)) moved.push_back(i);
    impl_->apply_moves(moved, true);
    impl_->prepare();
}

template <class S>
void CollisionManager<S>::update(Object* updated_obj) {
    const auto it = impl_->index_of.find(updated_obj);
    if (it != impl_->index_of.end() && impl_->reread(it->second))
        impl_->apply_moves({it->second}, false);
}

template <class S>
void CollisionManager<S>::update(const std::vector<Object*>& updated_objs) {
    std::vector<std::uint32_t> moved;
    for (Object* obj : updated_objs) {
        const auto it = impl_->index_of.find(obj);
        if (it != impl_->index_of.end() && impl_->reread(it->second)) moved.push_back(it->second);
    }
    impl_->apply_moves(moved, true);
    impl_->prepare();
}

template <class S>
void CollisionManager<S>::clear() {
    impl_->clear();
}

template <class S>
void CollisionManager<S>::getObjects(std::vector<Object*>& objs) const {
    objs.clear();
    objs.reserve(impl_->records.size());
    for (const auto& r : impl_->records) objs.push_back(r.object);
}

template <class S>
void CollisionManager<S>::collide(Object* obj, void* cdata,
                                  ::fcl::CollisionCallBack<S> callback) const {
    if (obj == nullptr) return;
    impl_->cross_collide({Impl::item_of(obj)}, true, cdata, callback);
}

template <class S>
void CollisionManager<S>::distance(Object* obj, void* cdata,
                                   ::fcl::DistanceCallBack<S> callback) const {
    if (obj == nullptr) return;
    impl_->cross_distance({Impl::item_of(obj)}, true, cdata, callback);
}

template <class S>
void CollisionManager<S>::collide(void* cdata, ::fcl::CollisionCallBack<S> callback) const {
    impl_->self_collide(cdata, callback);
}

template <class S>
void CollisionManager<S>::distance(void* cdata, ::fcl::DistanceCallBack<S> callback) const {
    impl_->self_distance(cdata, callback);
}

template <class S>
void CollisionManager<S>::collide(Base* other_manager, void* cdata,
                                  ::fcl::CollisionCallBack<S> callback) const {
    if (other_manager == nullptr) return;
    if (other_manager == this) return collide(cdata, callback);
    // Another of ours that is larger is queried with this manager's objects instead.
    const auto* ours = dynamic_cast<const CollisionManager*>(other_manager);
    if (ours != nullptr && ours->size() > size())
        return ours->impl_->cross_collide(Impl::items_of(*this), true, cdata, callback);
    impl_->cross_collide(Impl::items_of(*other_manager), false, cdata, callback);
}

template <class S>
void CollisionManager<S>::distance(Base* other_manager, void* cdata,
                                   ::fcl::DistanceCallBack<S> callback) const {
    if (other_manager == nullptr) return;
    if (other_manager == this) return distance(cdata, callback);
    const auto* ours = dynamic_cast<const CollisionManager*>(other_manager);
    if (ours != nullptr && ours->size() > size())
        return ours->impl_->cross_distance(Impl::items_of(*this), true, cdata, callback);
    impl_->cross_distance(Impl::items_of(*other_manager), false, cdata, callback);
}

template <class S>
bool CollisionManager<S>::empty() const {
    return impl_->records.empty();
}

template <class S>
std::size_t CollisionManager<S>::size() const {
    return impl_->records.size();
}

template <class S>
std::string_view CollisionManager<S>::method() const {
    return impl_->method;
}

template <class S>
Status CollisionManager<S>::status() const {
    return impl_->status;
}

template <class S>
const Stats& CollisionManager<S>::stats() const {
    return impl_->stats;
}

template <class S>
Status CollisionManager<S>::validate() const {
    return impl_->validate();
}

template class CollisionManager<float>;
template class CollisionManager<double>;

}  // namespace broadphase::fcl
