// broadphase::fcl against FCL's NaiveCollisionManager, the oracle: every entry point of the
// BroadPhaseCollisionManager, for float and double, on random boxes, spheres and meshes
// (BVHModel<OBBRSS>), on every method (each CPU structure, and gpu_lbvh on the process's one
// Vulkan device, with no validation error allowed). Collide must show the callback exactly the
// pairs the naive manager shows it (and the narrowphase callback the same result); distance must
// end at the naive manager's minimum while calling the callback on fewer pairs. The callbacks'
// argument order is DynamicAABBTreeCollisionManager's, the manager ours replaces. The
// narrowphase callbacks are FCL's DefaultCollisionFunction and DefaultDistanceFunction for
// double, and callbacks of the same protocol over the objects' AABBs for float (Narrowphase).
#include "broadphase/fcl.hpp"

#include <fcl/broadphase/broadphase_bruteforce.h>
#include <fcl/broadphase/broadphase_dynamic_AABB_tree.h>
#include <fcl/broadphase/default_broadphase_callbacks.h>
#include <fcl/geometry/bvh/BVH_model.h>
#include <fcl/geometry/shape/box.h>
#include <fcl/geometry/shape/sphere.h>
#include <fcl/math/bv/OBBRSS.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <memory>
#include <new>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "broadphase/structure.hpp"

#ifndef BROADPHASE_HAS_GPU
#define BROADPHASE_HAS_GPU 0  // a build without the GPU part (Test 8 counts the methods with it)
#endif
#if BROADPHASE_HAS_GPU
#include "broadphase/gpu.hpp"
#endif

namespace {

using broadphase::fcl::CollisionManager;

template <class S>
using Object = ::fcl::CollisionObject<S>;
template <class S>
using Vec = ::fcl::Vector3<S>;
using Key = std::pair<const void*, const void*>;

// One device for the process (validation when BROADPHASE_VALIDATION=1); null, and a failure
// of the test that first asked, when none can be created.
broadphase::gpu::Context* gpu_context() {
#if BROADPHASE_HAS_GPU
    static std::unique_ptr<broadphase::gpu::Context> context = [] {
        auto made = broadphase::gpu::Context::create();
        EXPECT_TRUE(made) << made.error().message;
        return made ? std::move(*made) : nullptr;
    }();
    return context.get();
#else
    return nullptr;
#endif
}

// The methods every test runs: every CPU structure and, when built (and a device is found),
// the GPU LBVH.
std::vector<std::string> methods() {
    std::vector<std::string> names;
    for (std::string_view name : CollisionManager<double>::method_names())
        if (name != "gpu_lbvh" || gpu_context() != nullptr) names.emplace_back(name);
    return names;
}

template <class S>
std::unique_ptr<CollisionManager<S>> make_manager(const std::string& method) {
    broadphase::fcl::Options options;
    if (method == "gpu_lbvh") options.context = gpu_context();
    auto made = CollisionManager<S>::create(method, options);
    EXPECT_TRUE(made) << made.error().message;
    return made ? std::move(*made) : nullptr;
}

// Objects of three kinds (box, sphere, octahedron mesh), randomly placed and turned in
// [0, extent]^3, about `size` across.
template <class S>
struct Scene {
    std::vector<std::unique_ptr<Object<S>>> objects;

    std::vector<Object<S>*> pointers() const {
        std::vector<Object<S>*> out;
        for (const auto& o : objects) out.push_back(o.get());
        return out;
    }
};

template <class S>
std::shared_ptr<::fcl::CollisionGeometry<S>> octahedron(S r) {
    auto mesh = std::make_shared<::fcl::BVHModel<::fcl::OBBRSS<S>>>();
    const std::vector<Vec<S>> v = {{r, 0, 0},  {-r, 0, 0}, {0, r, 0},
                                   {0, -r, 0}, {0, 0, r},  {0, 0, -r}};
    const std::vector<::fcl::Triangle> t = {{0, 2, 4}, {2, 1, 4}, {1, 3, 4}, {3, 0, 4},
                                            {2, 0, 5}, {1, 2, 5}, {3, 1, 5}, {0, 3, 5}};
    mesh->beginModel();
    mesh->addSubModel(v, t);
    mesh->endModel();
    return mesh;
}

template <class S>
void place(Object<S>& o, std::mt19937& rng, S extent) {
    std::uniform_real_distribution<S> pos(0, extent), angle(0, S(6.28));
    const Vec<S> axis = Vec<S>(pos(rng) + S(0.1), pos(rng), pos(rng)).normalized();
    o.setTransform(::fcl::Transform3<S>(::fcl::AngleAxis<S>(angle(rng), axis)));
    o.setTranslation(Vec<S>(pos(rng), pos(rng), pos(rng)));
    o.computeAABB();
}

template <class S>
Scene<S> make_scene(unsigned seed, int n, S extent, S size) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<S> scale(S(0.5), S(1.5));
    Scene<S> scene;
    for (int i = 0; i < n; ++i) {
        std::shared_ptr<::fcl::CollisionGeometry<S>> g;
        const S s = size * scale(rng);
        if (i % 3 == 0) g = std::make_shared<::fcl::Box<S>>(s, s * scale(rng), s * scale(rng));
        if (i % 3 == 1) g = std::make_shared<::fcl::Sphere<S>>(s / 2);
        if (i % 3 == 2) g = octahedron<S>(s / 2);
        scene.objects.push_back(std::make_unique<Object<S>>(g));
        place(*scene.objects.back(), rng, extent);
    }
    return scene;
}

// What a callback saw, and after how many calls it asks to stop.
template <class S>
struct Recorder {
    std::vector<Key> calls;
    std::size_t stop_after = std::numeric_limits<std::size_t>::max();
};

template <class S>
bool record(Object<S>* a, Object<S>* b, void* data) {
    auto* r = static_cast<Recorder<S>*>(data);
    r->calls.emplace_back(a, b);
    return r->calls.size() >= r->stop_after;
}

// Records without lowering the distance: the manager must then offer every pair (none is
// pruned by a minimum that never drops).
template <class S>
bool record_distance(Object<S>* a, Object<S>* b, void* data, S&) {
    return record<S>(a, b, data);
}

std::vector<Key> swapped(std::vector<Key> calls) {
    for (Key& k : calls) std::swap(k.first, k.second);
    return calls;
}

std::set<Key> unordered(const std::vector<Key>& calls) {
    std::set<Key> out;
    for (auto [a, b] : calls) out.insert(a < b ? Key{a, b} : Key{b, a});
    return out;
}

// The calls whose objects' AABBs overlap (NaiveCollisionManager's collide(obj) offers every
// object; the tree managers offer the overlapping ones).
template <class S>
std::vector<Key> overlapping(const std::vector<Key>& calls) {
    std::vector<Key> out;
    for (Key k : calls) {
        const auto* a = static_cast<const Object<S>*>(k.first);
        const auto* b = static_cast<const Object<S>*>(k.second);
        if (a->getAABB().overlap(b->getAABB())) out.push_back(k);
    }
    return out;
}

// The callbacks that stand for a narrowphase: for double, FCL's DefaultCollisionFunction and
// DefaultDistanceFunction, which libfcl compiles once (its extern templates). For float they
// would instantiate the whole of FCL's narrowphase in this file: 6 minutes and 5 GB of compiler
// under AddressSanitizer, for what FCL's float narrowphase computes and not what the manager
// does. Float's stand-ins follow the same protocol over the objects' AABBs: collide counts the
// overlapping pairs and is done at max contacts; distance keeps the smallest AABB gap, writes
// it into its S& argument (which prunes what follows) and is done at 0.
template <class S>
struct Narrowphase;

template <>
struct Narrowphase<double> {
    struct Collision {
        explicit Collision(std::size_t max_contacts) {
            data.request.num_max_contacts = max_contacts;
        }
        std::size_t contacts() const { return data.result.numContacts(); }
        ::fcl::DefaultCollisionData<double> data;
    };
    struct Distance {
        double min_distance() const { return data.result.min_distance; }
        ::fcl::DefaultDistanceData<double> data;
    };
    static bool collide(Object<double>* a, Object<double>* b, void* c) {
        return ::fcl::DefaultCollisionFunction<double>(a, b, &static_cast<Collision*>(c)->data);
    }
    static bool distance(Object<double>* a, Object<double>* b, void* d, double& dist) {
        return ::fcl::DefaultDistanceFunction<double>(a, b, &static_cast<Distance*>(d)->data, dist);
    }
};

template <>
struct Narrowphase<float> {
    struct Collision {
        explicit Collision(std::size_t max_contacts) : max(max_contacts) {}
        std::size_t contacts() const { return count; }
        std::size_t max = 1, count = 0;
        bool done = false;
    };
    struct Distance {
        float min_distance() const { return min; }
        float min = std::numeric_limits<float>::max();
        bool done = false;
    };
    static bool collide(Object<float>* a, Object<float>* b, void* data) {
        Collision& c = *static_cast<Collision*>(data);
        if (c.done) return true;
        if (a->getAABB().overlap(b->getAABB())) ++c.count;
        c.done = c.count >= c.max;
        return c.done;
    }
    static bool distance(Object<float>* a, Object<float>* b, void* data, float& dist) {
        Distance& d = *static_cast<Distance*>(data);
        if (!d.done) d.min = std::min(d.min, a->getAABB().distance(b->getAABB()));
        dist = d.min;
        d.done = d.done || d.min <= 0;
        return d.done;
    }
};

// Narrowphase<S>::distance with its objects turned around: (b, a) for the manager's (a, b).
template <class S>
bool distance_turned(Object<S>* a, Object<S>* b, void* data, S& dist) {
    return Narrowphase<S>::distance(b, a, data, dist);
}

template <class S>
std::size_t default_contacts(const ::fcl::BroadPhaseCollisionManager<S>& m,
                             std::size_t max_contacts) {
    typename Narrowphase<S>::Collision data(max_contacts);
    m.collide(&data, Narrowphase<S>::collide);
    return data.contacts();
}

template <class S>
S default_distance(const ::fcl::BroadPhaseCollisionManager<S>& m) {
    typename Narrowphase<S>::Distance data;
    m.distance(&data, Narrowphase<S>::distance);
    return data.min_distance();
}

// The minimum distances of two managers with DefaultDistanceFunction: equal when positive (the
// gap of the nearest pair); when objects collide, both at or below 0. FCL's distance of a
// colliding pair is not a penetration depth to compare (-1 from GJK, the overlap for sphere
// pairs, 0 or rounding noise for others) and the callback stops at the first one, so the value
// depends on which colliding pair a manager meets first.
template <class S>
void expect_same_min_distance(S ours, S naive) {
    if (naive > 0) {
        EXPECT_EQ(ours, naive);
    } else {
        EXPECT_LE(ours, S(0)) << "the naive manager found a collision (" << naive << ")";
    }
}

// Collide and distance with one object or another manager, `q` for `m` and `naive_q` for
// `naive` (whose distance callback is `naive_distance`): the same DefaultCollisionFunction
// contacts (at most `max_contacts`) and the same minimum distance.
template <class S, class Q, class NaiveQ>
void expect_same_narrowphase_with(const ::fcl::BroadPhaseCollisionManager<S>& m, Q* q,
                                  const ::fcl::NaiveCollisionManager<S>& naive, NaiveQ* naive_q,
                                  std::size_t max_contacts,
                                  ::fcl::DistanceCallBack<S> naive_distance) {
    typename Narrowphase<S>::Collision a(max_contacts), b(max_contacts);
    m.collide(q, &a, Narrowphase<S>::collide);
    naive.collide(naive_q, &b, Narrowphase<S>::collide);
    EXPECT_EQ(a.contacts(), b.contacts());
    typename Narrowphase<S>::Distance da, db;
    m.distance(q, &da, Narrowphase<S>::distance);
    naive.distance(naive_q, &db, naive_distance);
    expect_same_min_distance(da.min_distance(), db.min_distance());
}

// The same pairs called back as the naive manager's, each as often: the same set and count.
void expect_same_calls(const std::vector<Key>& ours, const std::vector<Key>& expected) {
    EXPECT_EQ(std::set<Key>(ours.begin(), ours.end()),
              std::set<Key>(expected.begin(), expected.end()));
    EXPECT_EQ(ours.size(), expected.size());
}

template <class S>
void expect_valid(const CollisionManager<S>& m) {
    const broadphase::Status v = m.validate();
    EXPECT_TRUE(v) << v.error().message;
    EXPECT_TRUE(m.status()) << m.status().error().message;
}

// The self collide of `m` against the naive manager's: the same unordered pairs, each once,
// the earlier registered object first, and the same DefaultCollisionFunction results.
template <class S>
void expect_self_collide_as_naive(const CollisionManager<S>& m,
                                  const ::fcl::NaiveCollisionManager<S>& naive) {
    Recorder<S> ours, theirs;
    m.collide(&ours, record<S>);
    naive.collide(&theirs, record<S>);
    EXPECT_EQ(unordered(ours.calls).size(), ours.calls.size()) << "a pair was reported twice";
    EXPECT_EQ(unordered(ours.calls), unordered(theirs.calls));
    EXPECT_EQ(default_contacts(m, 1), default_contacts(naive, 1));
    EXPECT_EQ(default_contacts(m, 100000), default_contacts(naive, 100000));
}

template <class S>
class FclManager : public ::testing::Test {
protected:
    void SetUp() override {
#if BROADPHASE_HAS_GPU
        if (gpu_context() != nullptr) errors_before_ = gpu_context()->validation_errors();
#endif
    }
    void TearDown() override {
#if BROADPHASE_HAS_GPU
        if (gpu_context() != nullptr) {
            EXPECT_EQ(gpu_context()->validation_errors(), errors_before_)
                << "the Vulkan validation layer reported errors during this test (see stderr)";
        }
#endif
    }

private:
    std::uint64_t errors_before_ = 0;
};

using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(FclManager, Scalars);

// Test 1: self collide on 300 objects (about 3 overlaps each) and on degenerate sets (none,
// one, one object twice, every object at one place): the pairs and contacts of the naive
// manager, registered one by one and in a batch.
TYPED_TEST(FclManager, SelfCollideSeesTheNaivePairs) {
    using S = TypeParam;
    const Scene<S> scene = make_scene<S>(1, 300, S(20), S(2));
    ::fcl::NaiveCollisionManager<S> naive;
    naive.registerObjects(scene.pointers());
    naive.setup();
    Recorder<S> all;
    naive.collide(&all, record<S>);
    ASSERT_GT(all.calls.size(), 100u) << "the scene should have many overlapping pairs";
    ASSERT_GT(default_contacts(naive, 100000), 10u);

    const Scene<S> stacked = make_scene<S>(2, 40, S(0), S(1));  // all at the origin
    ::fcl::NaiveCollisionManager<S> naive_stacked;
    naive_stacked.registerObjects(stacked.pointers());

    for (const std::string& method : methods()) {
        SCOPED_TRACE(method);
        auto batch = make_manager<S>(method);
        ASSERT_TRUE(batch);
        Recorder<S> none;
        batch->collide(&none, record<S>);
        EXPECT_TRUE(none.calls.empty());

        batch->registerObjects(scene.pointers());
        batch->setup();
        expect_self_collide_as_naive(*batch, naive);
        expect_valid(*batch);
        EXPECT_GT(batch->stats().candidates, 0u);
        if (method == "gpu_lbvh") {
            // The empty manager's collide needs no step; all the objects, one: the GPU's pairs.
            EXPECT_EQ(batch->stats().gpu_steps, 1u);
        }

        auto single = make_manager<S>(method);
        for (Object<S>* o : scene.pointers()) single->registerObject(o);
        single->registerObject(scene.objects[0].get());  // twice: ignored
        single->registerObject(nullptr);
        EXPECT_EQ(single->size(), scene.objects.size());
        expect_self_collide_as_naive(*single, naive);  // no setup(): the query brings it up
        expect_valid(*single);

        auto one = make_manager<S>(method);
        one->registerObject(scene.objects[0].get());
        Recorder<S> alone;
        one->collide(&alone, record<S>);
        EXPECT_TRUE(alone.calls.empty());

        auto same = make_manager<S>(method);
        same->registerObjects(stacked.pointers());
        expect_self_collide_as_naive(*same, naive_stacked);
    }
}

// Test 2: collide and distance against one object, registered or not: the overlapping pairs
// the naive manager offers (it offers every object), the object second; the same contacts and
// the same minimum distance.
TYPED_TEST(FclManager, CollideAndDistanceWithOneObject) {
    using S = TypeParam;
    const Scene<S> scene = make_scene<S>(3, 200, S(20), S(2));
    const Scene<S> probes = make_scene<S>(4, 6, S(20), S(4));
    ::fcl::NaiveCollisionManager<S> naive;
    naive.registerObjects(scene.pointers());
    std::vector<Object<S>*> queries = probes.pointers();
    queries.push_back(scene.objects[7].get());  // a registered one: it meets itself too

    for (const std::string& method : methods()) {
        SCOPED_TRACE(method);
        auto m = make_manager<S>(method);
        m->registerObjects(scene.pointers());
        m->setup();
        for (Object<S>* q : queries) {
            Recorder<S> ours, theirs;
            m->collide(q, &ours, record<S>);
            naive.collide(q, &theirs, record<S>);
            EXPECT_EQ(ours.calls, overlapping<S>(ours.calls)) << "a pair that does not overlap";
            // The naive manager calls (q, o), the dynamic tree (o, q), as ours.
            const std::vector<Key> expected = swapped(overlapping<S>(theirs.calls));
            expect_same_calls(ours.calls, expected);
            for (Key k : ours.calls) EXPECT_EQ(k.second, q);
            // FCL's distance of a pair depends on its argument order in the last bits: the
            // naive manager's calls are turned around to compare exactly.
            expect_same_narrowphase_with(*m, q, naive, q, 1000, distance_turned<S>);
        }
        // Far from everything: the distance still finds the nearest object.
        Object<S> far(std::make_shared<::fcl::Sphere<S>>(S(1)));
        far.setTranslation(Vec<S>(S(100), S(-50), S(30)));
        far.computeAABB();
        typename Narrowphase<S>::Distance da, db;
        m->distance(&far, &da, Narrowphase<S>::distance);
        naive.distance(&far, &db, distance_turned<S>);
        EXPECT_GT(db.min_distance(), S(50));
        expect_same_min_distance(da.min_distance(), db.min_distance());
        EXPECT_LT(m->stats().callbacks, scene.objects.size() / 4) << "distance did not prune";
    }
}

// Test 3: collide and distance with another manager: a naive one, and one of ours (smaller
// and larger than this one, so both sides get queried); the pairs of naive x naive, this
// manager's object first.
TYPED_TEST(FclManager, CollideAndDistanceWithAnotherManager) {
    using S = TypeParam;
    const Scene<S> scene = make_scene<S>(5, 150, S(20), S(2));
    const Scene<S> small = make_scene<S>(6, 40, S(20), S(2));
    const Scene<S> large = make_scene<S>(7, 250, S(20), S(2));
    ::fcl::NaiveCollisionManager<S> naive, naive_small, naive_large;
    naive.registerObjects(scene.pointers());
    naive_small.registerObjects(small.pointers());
    naive_large.registerObjects(large.pointers());

    for (const std::string& method : methods()) {
        SCOPED_TRACE(method);
        auto m = make_manager<S>(method);
        m->registerObjects(scene.pointers());
        auto m_small = make_manager<S>(method);
        m_small->registerObjects(small.pointers());
        auto m_large = make_manager<S>("dynamic_aabb_tree");
        m_large->registerObjects(large.pointers());

        const std::vector<
            std::pair<::fcl::BroadPhaseCollisionManager<S>*, ::fcl::NaiveCollisionManager<S>*>>
            others = {{&naive_small, &naive_small},
                      {m_small.get(), &naive_small},
                      {m_large.get(), &naive_large}};
        for (auto [other, naive_other] : others) {
            Recorder<S> ours, theirs;
            m->collide(other, &ours, record<S>);
            naive.collide(naive_other, &theirs, record<S>);
            ASSERT_GT(theirs.calls.size(), 5u);
            expect_same_calls(ours.calls, theirs.calls);
            expect_same_narrowphase_with(*m, other, naive, naive_other, 100000,
                                         Narrowphase<S>::distance);
        }
        // Itself as the other: the self collide.
        Recorder<S> self, theirs;
        m->collide(m.get(), &self, record<S>);
        naive.collide(&theirs, record<S>);
        EXPECT_EQ(unordered(self.calls), unordered(theirs.calls));
    }
}

// Test 4: a callback returning true stops the search at once, in every entry point.
TYPED_TEST(FclManager, CallbackReturningTrueStops) {
    using S = TypeParam;
    const Scene<S> scene = make_scene<S>(8, 200, S(10), S(2));
    const Scene<S> other = make_scene<S>(9, 50, S(10), S(2));
    ::fcl::NaiveCollisionManager<S> naive_other;
    naive_other.registerObjects(other.pointers());
    Object<S> big(std::make_shared<::fcl::Box<S>>(S(8), S(8), S(8)));
    big.setTranslation(Vec<S>(S(5), S(5), S(5)));
    big.computeAABB();

    for (const std::string& method : methods()) {
        SCOPED_TRACE(method);
        auto m = make_manager<S>(method);
        m->registerObjects(scene.pointers());
        for (std::size_t stop : {std::size_t(1), std::size_t(7)}) {
            Recorder<S> self, one, cross, dist_self, dist_one, dist_cross;
            for (Recorder<S>* r : {&self, &one, &cross, &dist_self, &dist_one, &dist_cross})
                r->stop_after = stop;
            m->collide(&self, record<S>);
            m->collide(&big, &one, record<S>);
            m->collide(&naive_other, &cross, record<S>);
            m->distance(&dist_self, record_distance<S>);
            m->distance(&big, &dist_one, record_distance<S>);
            m->distance(&naive_other, &dist_cross, record_distance<S>);
            for (Recorder<S>* r : {&self, &one, &cross, &dist_self, &dist_one, &dist_cross})
                EXPECT_EQ(r->calls.size(), stop);
        }
        // A distance callback that never lowers the minimum is offered every pair once.
        Recorder<S> every;
        m->distance(&every, record_distance<S>);
        EXPECT_EQ(every.calls.size(), scene.objects.size() * (scene.objects.size() - 1) / 2);
        EXPECT_EQ(unordered(every.calls).size(), every.calls.size());
    }
}

// Test 5: the self distance on a sparse scene (no overlaps: the minimum is a gap) and a dense
// one (overlaps: the minimum is a penetration) ends at the naive manager's minimum, offering
// the callback far fewer pairs than all of them.
TYPED_TEST(FclManager, SelfDistanceEqualsNaive) {
    using S = TypeParam;
    for (auto [seed, extent] : {std::pair{10u, S(80)}, std::pair{11u, S(15)}}) {
        const Scene<S> scene = make_scene<S>(seed, 250, extent, S(1));
        ::fcl::NaiveCollisionManager<S> naive;
        naive.registerObjects(scene.pointers());
        const S expected = default_distance(naive);
        for (const std::string& method : methods()) {
            SCOPED_TRACE(method + " extent " + std::to_string(double(extent)));
            auto m = make_manager<S>(method);
            m->registerObjects(scene.pointers());
            m->setup();
            expect_same_min_distance(default_distance(*m), expected);
            EXPECT_LT(m->stats().callbacks, scene.objects.size() * 2);
        }
        // Moved and updated: the new minimum.
        std::mt19937 rng(seed);
        for (const std::string& method : methods()) {
            SCOPED_TRACE(method + " moved, extent " + std::to_string(double(extent)));
            auto m = make_manager<S>(method);
            m->registerObjects(scene.pointers());
            m->setup();
            for (auto& o : scene.objects) place(*o, rng, extent);
            m->update();
            naive.update();
            expect_same_min_distance(default_distance(*m), default_distance(naive));
        }
    }
}

// Test 6: register, unregister and update (the three forms) after moving objects
// (setTranslation + computeAABB), with self collide and distance checked after each change.
TYPED_TEST(FclManager, RegisterUnregisterUpdate) {
    using S = TypeParam;
    Scene<S> scene = make_scene<S>(12, 240, S(20), S(2));
    std::mt19937 rng(13);
    std::uniform_real_distribution<S> step(S(-0.5), S(0.5));
    const auto nudge = [&](Object<S>& o) {
        o.setTranslation(o.getTranslation() + Vec<S>(step(rng), step(rng), step(rng)));
        o.computeAABB();
    };
    for (const std::string& method : methods()) {
        SCOPED_TRACE(method);
        auto m = make_manager<S>(method);
        ::fcl::NaiveCollisionManager<S> naive;
        std::vector<Object<S>*> all = scene.pointers();
        const std::vector<Object<S>*> first(all.begin(), all.begin() + 200);
        m->registerObjects(first);
        naive.registerObjects(first);
        m->setup();
        expect_self_collide_as_naive(*m, naive);

        // Unregister every third, register the rest one by one.
        for (std::size_t i = 0; i < 200; i += 3) {
            m->unregisterObject(all[i]);
            naive.unregisterObject(all[i]);
        }
        m->unregisterObject(all[0]);  // gone already: ignored
        for (std::size_t i = 200; i < all.size(); ++i) {
            m->registerObject(all[i]);
            naive.registerObject(all[i]);
        }
        EXPECT_EQ(m->size(), naive.size());
        expect_valid(*m);
        expect_self_collide_as_naive(*m, naive);

        // update(): everything moves.
        for (Object<S>* o : all) nudge(*o);
        m->update();
        expect_valid(*m);
        expect_self_collide_as_naive(*m, naive);
        expect_same_min_distance(default_distance(*m), default_distance(naive));

        // update(obj): a few move.
        for (std::size_t i = 1; i < all.size(); i += 17) {
            nudge(*all[i]);
            m->update(all[i]);
        }
        expect_valid(*m);
        expect_self_collide_as_naive(*m, naive);

        // update(vector): half move.
        std::vector<Object<S>*> moved;
        for (std::size_t i = 0; i < all.size(); i += 2) {
            nudge(*all[i]);
            moved.push_back(all[i]);
        }
        m->update(moved);
        expect_valid(*m);
        expect_self_collide_as_naive(*m, naive);
        expect_same_min_distance(default_distance(*m), default_distance(naive));
    }
}

// Test 7: clear, empty, size and getObjects.
TYPED_TEST(FclManager, ClearEmptySizeObjects) {
    using S = TypeParam;
    const Scene<S> scene = make_scene<S>(14, 60, S(10), S(2));
    for (const std::string& method : methods()) {
        SCOPED_TRACE(method);
        auto m = make_manager<S>(method);
        EXPECT_TRUE(m->empty());
        EXPECT_EQ(m->size(), 0u);
        EXPECT_EQ(m->method(), method);
        m->registerObjects(scene.pointers());
        EXPECT_FALSE(m->empty());
        EXPECT_EQ(m->size(), scene.objects.size());
        std::vector<Object<S>*> got = {nullptr};  // replaced, not appended to
        m->getObjects(got);
        const std::vector<Object<S>*> want = scene.pointers();
        EXPECT_EQ(std::set<Object<S>*>(got.begin(), got.end()),
                  std::set<Object<S>*>(want.begin(), want.end()));
        EXPECT_EQ(got.size(), want.size());
        Recorder<S> before;
        m->collide(&before, record<S>);
        EXPECT_FALSE(before.calls.empty());

        m->clear();
        EXPECT_TRUE(m->empty());
        EXPECT_EQ(m->size(), 0u);
        m->getObjects(got);
        EXPECT_TRUE(got.empty());
        Recorder<S> after;
        m->collide(&after, record<S>);
        m->distance(&after, record_distance<S>);
        EXPECT_TRUE(after.calls.empty());
        expect_valid(*m);

        m->registerObjects(scene.pointers());  // usable again
        Recorder<S> again;
        m->collide(&again, record<S>);
        EXPECT_EQ(unordered(again.calls), unordered(before.calls));
    }
}

// Test 8: method_names lists every CPU method (and gpu_lbvh); unknown names and bad tracker
// settings are refused.
TEST(FclManagerCreate, MethodsAndErrors) {
    const std::vector<std::string_view> names = CollisionManager<double>::method_names();
    EXPECT_EQ(names.size(), broadphase::cpu_method_names().size() + (BROADPHASE_HAS_GPU ? 1 : 0));
    for (std::string_view name : broadphase::cpu_method_names()) {
        auto m = CollisionManager<float>::create(name);
        EXPECT_TRUE(m) << name;
    }
    EXPECT_FALSE(CollisionManager<double>::create("no_such_method"));
    broadphase::fcl::Options bad_margin;
    bad_margin.margin = -1;
    auto refused_margin = CollisionManager<double>::create("dynamic_aabb_tree", bad_margin);
    ASSERT_FALSE(refused_margin);
    EXPECT_EQ(refused_margin.error().code, broadphase::ErrorCode::invalid_argument);
    EXPECT_NE(refused_margin.error().message.find("margin"), std::string::npos);
#if BROADPHASE_HAS_GPU
    ASSERT_NE(gpu_context(), nullptr);
    broadphase::fcl::Options bad;
    bad.context = gpu_context();
    bad.query_method = "no_such_method";
    auto refused = CollisionManager<double>::create("gpu_lbvh", bad);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("query_method"), std::string::npos);
#endif
}

// Test 9: outward_box contains the double box, at most one float from it, and keeps the
// pairs a double scene has: bounds not representable in float, past the float range,
// infinite, NaN and inverted.
TEST(FclOutwardBox, ContainsTheDoubleBox) {
    std::mt19937 rng(15);
    std::uniform_real_distribution<double> coord(-1e3, 1e3);
    for (int i = 0; i < 1000; ++i) {
        double lo[3], hi[3];
        for (int k = 0; k < 3; ++k) {
            lo[k] = coord(rng);
            hi[k] = lo[k] + std::abs(coord(rng)) * 1e-3;
        }
        const broadphase::Box b = broadphase::fcl::outward_box(lo, hi);
        for (int k = 0; k < 3; ++k) {
            EXPECT_LE(double(b.min[k]), lo[k]);
            EXPECT_GE(double(b.max[k]), hi[k]);
            EXPECT_GT(double(std::nextafter(b.min[k], 1e30f)), lo[k]);
            EXPECT_LT(double(std::nextafter(b.max[k], -1e30f)), hi[k]);
        }
    }
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double lo[3] = {-1e300, nan, 5};
    const double hi[3] = {inf, 1, 4};  // z inverted
    const broadphase::Box b = broadphase::fcl::outward_box(lo, hi);
    EXPECT_EQ(b.min.x, -FLT_MAX);
    EXPECT_EQ(b.max.x, FLT_MAX);
    EXPECT_EQ(b.min.y, -FLT_MAX);
    EXPECT_GE(b.max.y, 1.0f);
    EXPECT_EQ(b.min.z, 4.0f);
    EXPECT_EQ(b.max.z, 5.0f);
}

// Test 9b: the rounding is std::nextafter's, bound by bound, on values around zero, the
// subnormals, both signs and the ends of the float range.
TEST(FclOutwardBox, StepsAsNextafter) {
    const double tiny = double(std::numeric_limits<float>::denorm_min());
    const std::vector<double> values = {
        0.0,          -0.0,        1e-50,      -1e-50,
        tiny * 0.5,   -tiny * 0.5, tiny * 1.5, 0.1,
        -0.1,         1.0 / 3.0,   -1.0 / 3.0, 1e30 + 1e14,
        -1e30 - 1e14, 3.4e38,      -3.4e38,    double(FLT_MAX) * (1 - 1e-12),
        1e-39,        -1e-39};
    const auto rounded = [](double v, bool up) {
        if (std::abs(v) >= double(FLT_MAX)) return v < 0 ? -FLT_MAX : FLT_MAX;  // clamped
        float f = static_cast<float>(v);
        if (up ? double(f) < v : double(f) > v) f = std::nextafter(f, up ? FLT_MAX : -FLT_MAX);
        return f;
    };
    for (const double v : values) {
        const float down = rounded(v, false), up = rounded(v, true);
        // Each axis a value of its own (v, -v, v / 3, and a wider max), so that each bound of
        // the box, rounded together, is checked against its own.
        const double lo[3] = {v, -v, v / 3}, hi[3] = {v, -v + std::abs(v) * 1e-6, v / 3 + 1};
        const broadphase::Box b = broadphase::fcl::outward_box(lo, hi);
        for (int k = 0; k < 3; ++k) {
            EXPECT_EQ(b.min[k], rounded(lo[k], false)) << v << " axis " << k;
            EXPECT_EQ(b.max[k], rounded(hi[k], true)) << v << " axis " << k;
        }
        EXPECT_EQ(b.min.x, down) << v;
        EXPECT_EQ(b.max.x, up) << v;
        EXPECT_LE(double(b.min.x), v);
        EXPECT_GE(double(b.max.x), v);
        // The same with a NaN on another axis: the box takes the checked path, value by value
        // (the NaN bound opens to the float range), and rounds v alike.
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double lo2[3] = {v, nan, v}, hi2[3] = {v, v, v};
        const broadphase::Box checked = broadphase::fcl::outward_box(lo2, hi2);
        EXPECT_EQ(checked.min.x, down) << v;
        EXPECT_EQ(checked.max.x, up) << v;
        EXPECT_EQ(checked.min.y, -FLT_MAX) << v;
    }
}

// Test 10: double boxes meeting at values float cannot hold pair as in the naive manager: a
// row of boxes each touching the next at 0.1 * k, pairs past the float range, and boxes
// 1e-12 apart (one float box after rounding, no pair in double: a candidate the test in S
// rejects).
TEST(FclManagerDouble, RoundingKeepsExactlyTheDoublePairs) {
    using S = double;
    // An object whose AABB is given exactly (computeAABB would round centre +- half size).
    struct Exact : Object<S> {
        Exact(Vec<S> lo, Vec<S> hi) : Object<S>(std::make_shared<::fcl::Box<S>>(hi - lo)) {
            this->aabb.min_ = lo;
            this->aabb.max_ = hi;
        }
    };
    std::vector<std::unique_ptr<Object<S>>> objects;
    const auto add = [&](Vec<S> lo, Vec<S> hi) {
        objects.push_back(std::make_unique<Exact>(lo, hi));
    };
    for (int k = 0; k < 8; ++k) add({0.1 * k, 0, 0}, {0.1 * (k + 1), 1, 1});  // touching
    add({10, 0, 0}, {10.3, 1, 1});
    add({std::nextafter(10.3, 11.0) + 1e-12, 0, 0}, {11, 1, 1});  // 1e-12 apart: no pair
    add({1e39, 0, 0}, {2e39, 1, 1});                              // past FLT_MAX
    add({1.5e39, 0, 0}, {3e39, 1, 1});
    add({4e39, 0, 0}, {5e39, 1, 1});  // beyond them: no pair, one float box

    ::fcl::NaiveCollisionManager<S> naive;
    for (auto& o : objects) naive.registerObject(o.get());
    Recorder<S> theirs;
    naive.collide(&theirs, record<S>);
    ASSERT_EQ(theirs.calls.size(), 8u);  // 7 touching + 1 past the float range

    for (const std::string& method : methods()) {
        SCOPED_TRACE(method);
        auto m = make_manager<S>(method);
        for (auto& o : objects) m->registerObject(o.get());
        Recorder<S> ours;
        m->collide(&ours, record<S>);
        EXPECT_EQ(unordered(ours.calls), unordered(theirs.calls));
        EXPECT_GT(m->stats().candidates, ours.calls.size()) << "rounding should join some boxes";
        expect_valid(*m);
    }
}

// Test 11: the callbacks' arguments in DynamicAABBTreeCollisionManager's order, the manager ours
// replaces: collide(obj) and distance(obj) call (registered, obj), collide(other) and
// distance(other) (this manager's object, the other's). The self collide gives each pair once,
// as the tree does; the tree's order follows its leaves, ours the registration (the earlier
// object first), which is the tree's too for two objects registered one by one.
TYPED_TEST(FclManager, CallbackOrderIsTheDynamicTrees) {
    using S = TypeParam;
    const Scene<S> scene = make_scene<S>(16, 150, S(15), S(2));
    const Scene<S> probes = make_scene<S>(17, 6, S(15), S(4));
    const Scene<S> other = make_scene<S>(18, 40, S(15), S(2));
    ::fcl::DynamicAABBTreeCollisionManager<S> tree, tree_other;
    tree.registerObjects(scene.pointers());
    tree.setup();
    tree_other.registerObjects(other.pointers());
    tree_other.setup();
    const auto ordered = [](const std::vector<Key>& calls) {
        return std::set<Key>(calls.begin(), calls.end());
    };
    const auto rank = [&](const void* o) {
        for (std::size_t i = 0; i < scene.objects.size(); ++i)
            if (scene.objects[i].get() == o) return i;
        return scene.objects.size();
    };
    const Scene<S> two = make_scene<S>(19, 2, S(0), S(1));  // both at the origin: one pair

    for (const std::string& method : methods()) {
        SCOPED_TRACE(method);
        auto m = make_manager<S>(method);
        m->registerObjects(scene.pointers());
        m->setup();
        std::size_t with_probes = 0;
        for (Object<S>* q : probes.pointers()) {
            Recorder<S> ours, theirs;
            m->collide(q, &ours, record<S>);
            tree.collide(q, &theirs, record<S>);
            with_probes += theirs.calls.size();
            EXPECT_EQ(ordered(ours.calls), ordered(theirs.calls));
            for (Key k : theirs.calls) EXPECT_EQ(k.second, q) << "the tree's order changed";
            // A distance callback that never lowers the minimum is offered every object.
            Recorder<S> ours_d, theirs_d;
            m->distance(q, &ours_d, record_distance<S>);
            tree.distance(q, &theirs_d, record_distance<S>);
            EXPECT_EQ(theirs_d.calls.size(), scene.objects.size());
            EXPECT_EQ(ordered(ours_d.calls), ordered(theirs_d.calls));
        }
        EXPECT_GT(with_probes, 10u);

        // Another manager: FCL's tree, or one of ours (the larger side is queried then).
        auto ours_other = make_manager<S>(method);
        ours_other->registerObjects(other.pointers());
        auto ours_larger = make_manager<S>(method);
        ours_larger->registerObjects(scene.pointers());
        Recorder<S> theirs;
        tree.collide(&tree_other, &theirs, record<S>);
        ASSERT_GT(theirs.calls.size(), 5u);
        for (::fcl::BroadPhaseCollisionManager<S>* o :
             {static_cast<::fcl::BroadPhaseCollisionManager<S>*>(&tree_other),
              static_cast<::fcl::BroadPhaseCollisionManager<S>*>(ours_other.get())}) {
            Recorder<S> ours;
            m->collide(o, &ours, record<S>);
            EXPECT_EQ(ordered(ours.calls), ordered(theirs.calls));
            Recorder<S> ours_d, theirs_d;
            m->distance(o, &ours_d, record_distance<S>);
            tree.distance(&tree_other, &theirs_d, record_distance<S>);
            EXPECT_EQ(theirs_d.calls.size(), scene.objects.size() * other.objects.size());
            EXPECT_EQ(ordered(ours_d.calls), ordered(theirs_d.calls));
        }
        // This (smaller) manager with a larger one of ours: still this one's object first.
        Recorder<S> ours_first, tree_first;
        ours_other->collide(ours_larger.get(), &ours_first, record<S>);
        tree_other.collide(&tree, &tree_first, record<S>);
        EXPECT_EQ(ordered(ours_first.calls), ordered(tree_first.calls));

        // Self collide: the tree's pairs, each once, the earlier registered object first.
        Recorder<S> self, tree_self;
        m->collide(&self, record<S>);
        tree.collide(&tree_self, record<S>);
        EXPECT_EQ(unordered(self.calls), unordered(tree_self.calls));
        EXPECT_EQ(unordered(self.calls).size(), self.calls.size());
        for (Key k : self.calls) EXPECT_LT(rank(k.first), rank(k.second));

        ::fcl::DynamicAABBTreeCollisionManager<S> tree_two;
        auto m_two = make_manager<S>(method);
        for (Object<S>* o : two.pointers()) {
            tree_two.registerObject(o);
            m_two->registerObject(o);
        }
        Recorder<S> two_ours, two_tree;
        m_two->collide(&two_ours, record<S>);
        tree_two.collide(&two_tree, record<S>);
        ASSERT_EQ(two_tree.calls.size(), 1u);
        EXPECT_EQ(two_ours.calls, two_tree.calls);
        EXPECT_EQ(two_tree.calls[0], Key(two.objects[0].get(), two.objects[1].get()));
    }
}

// Test 12: a world, frame after frame: most objects move a little (setTranslation +
// computeAABB), a few jump across it, some are unregistered and others registered (taking the
// freed slots), and the update takes its three forms in turn; every frame's self collide shows
// the naive manager's pairs, and validate() (the tracker's brute-force check included) holds.
TYPED_TEST(FclManager, FramesFollowTheNaivePairs) {
    using S = TypeParam;
    Scene<S> scene = make_scene<S>(20, 260, S(18), S(2));
    const std::vector<Object<S>*> all = scene.pointers();
    for (const std::string& method : methods()) {
        SCOPED_TRACE(method);
        auto m = make_manager<S>(method);
        ::fcl::NaiveCollisionManager<S> naive;  // reads every AABB at the query
        std::vector<bool> in(all.size(), false);
        std::vector<Object<S>*> first(all.begin(), all.begin() + 200);
        m->registerObjects(first);
        naive.registerObjects(first);
        std::fill(in.begin(), in.begin() + 200, true);
        std::mt19937 rng(21);
        std::uniform_real_distribution<S> step(S(-0.3), S(0.3));
        std::uniform_int_distribution<std::size_t> pick(0, all.size() - 1);
        std::uniform_real_distribution<double> coin(0, 1);
        for (int frame = 0; frame < 30; ++frame) {
            SCOPED_TRACE("frame " + std::to_string(frame));
            std::vector<Object<S>*> moved;
            for (std::size_t i = 0; i < all.size(); ++i) {
                const double c = coin(rng);
                if (c < 0.02) {
                    place(*all[i], rng, S(18));  // a jump
                } else if (c < 0.9) {
                    all[i]->setTranslation(all[i]->getTranslation() +
                                           Vec<S>(step(rng), step(rng), step(rng)));
                    all[i]->computeAABB();
                } else {
                    continue;
                }
                if (in[i]) moved.push_back(all[i]);
            }
            switch (frame % 3) {
                case 0:
                    m->update();
                    break;
                case 1:
                    m->update(moved);
                    break;
                default:
                    for (Object<S>* o : moved) m->update(o);
                    break;
            }
            for (int k = 0; k < 4; ++k) {
                const std::size_t i = pick(rng);
                if (in[i]) {
                    m->unregisterObject(all[i]);
                    naive.unregisterObject(all[i]);
                } else {
                    m->registerObject(all[i]);
                    naive.registerObject(all[i]);
                }
                in[i] = !in[i];
            }
            ASSERT_EQ(m->size(), naive.size());
            expect_valid(*m);
            Recorder<S> ours, theirs;
            m->collide(&ours, record<S>);
            naive.collide(&theirs, record<S>);
            EXPECT_EQ(unordered(ours.calls).size(), ours.calls.size());
            ASSERT_EQ(unordered(ours.calls), unordered(theirs.calls));
        }
        expect_self_collide_as_naive(*m, naive);
    }
}

// What one thread's queries answer, for Test 13.
template <class S>
struct Answers {
    std::set<Key> self, cross;
    std::vector<std::vector<Key>> with_object;
    std::vector<S> distance_to_object;
    S self_distance = 0, cross_distance = 0;
    std::size_t objects = 0;
    bool operator==(const Answers&) const = default;
};

template <class S>
Answers<S> ask(const CollisionManager<S>& m, const std::vector<Object<S>*>& probes,
               ::fcl::BroadPhaseCollisionManager<S>& other) {
    Answers<S> a;
    Recorder<S> self, cross;
    m.collide(&self, record<S>);
    a.self = unordered(self.calls);
    m.collide(&other, &cross, record<S>);
    a.cross = std::set<Key>(cross.calls.begin(), cross.calls.end());
    for (Object<S>* q : probes) {
        Recorder<S> r;
        m.collide(q, &r, record<S>);
        std::sort(r.calls.begin(), r.calls.end());
        a.with_object.push_back(r.calls);
        typename Narrowphase<S>::Distance d;
        m.distance(q, &d, Narrowphase<S>::distance);
        a.distance_to_object.push_back(d.min_distance());
    }
    a.self_distance = default_distance(m);
    typename Narrowphase<S>::Distance d;
    m.distance(&other, &d, Narrowphase<S>::distance);
    a.cross_distance = d.min_distance();
    std::vector<Object<S>*> objs;
    m.getObjects(objs);
    a.objects = objs.size();
    return a;
}

// Test 13: the const queries from 4 threads at once over one manager, no write meanwhile, give
// what one thread gets: self collide and distance, collide and distance with objects and with
// another manager, getObjects. (Under ThreadSanitizer it also looks for races.)
TYPED_TEST(FclManager, ConcurrentConstQueriesAgree) {
    using S = TypeParam;
    const Scene<S> scene = make_scene<S>(22, 200, S(15), S(2));
    const Scene<S> probes = make_scene<S>(23, 6, S(15), S(3));
    const Scene<S> other = make_scene<S>(24, 30, S(15), S(2));
    ::fcl::NaiveCollisionManager<S> naive_other;
    naive_other.registerObjects(other.pointers());
    constexpr int kThreads = 4;
    for (const std::string& method : methods()) {
        SCOPED_TRACE(method);
        auto m = make_manager<S>(method);
        m->registerObjects(scene.pointers());
        const Answers<S> one = ask(*m, probes.pointers(), naive_other);
        EXPECT_FALSE(one.self.empty());
        EXPECT_FALSE(one.cross.empty());
        // A fresh manager, so that gpu_lbvh's lazy work (its frame, its query index) races too.
        auto fresh = make_manager<S>(method);
        fresh->registerObjects(scene.pointers());
        for (const CollisionManager<S>* shared : {m.get(), fresh.get()}) {
            std::vector<Answers<S>> got(kThreads * 3);
            std::vector<std::thread> threads;
            for (int t = 0; t < kThreads; ++t) {
                threads.emplace_back([&, t] {
                    for (int round = 0; round < 3; ++round)
                        got[t * 3 + round] = ask(*shared, probes.pointers(), naive_other);
                });
            }
            for (std::thread& t : threads) t.join();
            for (const Answers<S>& a : got) EXPECT_TRUE(a == one);
            expect_valid(*shared);
        }
    }
}

template <class S>
bool throw_bad_alloc(Object<S>*, Object<S>*, void*) {
    throw std::bad_alloc();
}
template <class S>
bool throw_length_error(Object<S>*, Object<S>*, void*, S&) {
    throw std::length_error("too long");
}

// Test 14: memory running out inside a query (here the callback's std::bad_alloc and
// std::length_error) is kept in status() as out_of_memory, not thrown; the manager answers as
// before afterwards.
TYPED_TEST(FclManager, MemoryFailuresGoToStatus) {
    using S = TypeParam;
    const Scene<S> scene = make_scene<S>(25, 80, S(10), S(2));
    ::fcl::NaiveCollisionManager<S> naive;
    naive.registerObjects(scene.pointers());
    for (const std::string& method : methods()) {
        SCOPED_TRACE(method);
        auto m = make_manager<S>(method);
        m->registerObjects(scene.pointers());
        EXPECT_TRUE(m->status());
        EXPECT_NO_THROW(m->collide(nullptr, throw_bad_alloc<S>));
        ASSERT_FALSE(m->status());
        EXPECT_EQ(m->status().error().code, broadphase::ErrorCode::out_of_memory);
        EXPECT_NE(m->status().error().message.find("collide"), std::string::npos);
        EXPECT_NO_THROW(m->distance(scene.objects[0].get(), nullptr, throw_length_error<S>));
        EXPECT_NO_THROW(m->collide(&naive, nullptr, throw_bad_alloc<S>));
        const broadphase::Status v = m->validate();
        EXPECT_TRUE(v) << v.error().message;
        Recorder<S> ours, theirs;
        m->collide(&ours, record<S>);
        naive.collide(&theirs, record<S>);
        EXPECT_EQ(unordered(ours.calls), unordered(theirs.calls));
    }
}

}  // namespace
