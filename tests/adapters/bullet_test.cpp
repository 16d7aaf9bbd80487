// broadphase::bullet (broadphase/bullet.hpp) against oracles written here from Bullet's
// definitions: pairs by testing every pair of proxies (closed boxes of m_aabbMin/m_aabbMax,
// (g0 & m1) && (g1 & m0), or the cache's filter callback), box queries by testing every proxy,
// rays by ray_box_entry on every proxy's box. Then in Bullet's own worlds: the pair cache
// after every step of a btDiscreteDynamicsWorld whose bodies come and go, the world's ray
// tests against btCollisionWorld::rayTestSingle over every object, and falling boxes that must
// come to rest where they rest on btDbvtBroadphase.
#include <BulletCollision/CollisionDispatch/btGhostObject.h>
#include <BulletDynamics/Character/btKinematicCharacterController.h>
#include <btBulletDynamicsCommon.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "broadphase/bullet.hpp"
#include "broadphase/structure.hpp"

#if BROADPHASE_HAS_GPU
#include "broadphase/gpu.hpp"
#endif

namespace broadphase::testing {
namespace {

using bullet::Broadphase;
using UidPair = std::pair<int, int>;

#if BROADPHASE_HAS_GPU
/// One Vulkan context for the process (validation on with BROADPHASE_VALIDATION=1).
gpu::Context* shared_context() {
    static std::unique_ptr<gpu::Context> context = [] {
        auto made = gpu::Context::create();
        EXPECT_TRUE(made) << (made ? "" : made.error().message);
        return made ? std::move(made.value()) : nullptr;
    }();
    return context.get();
}
#endif

std::uint64_t validation_errors() {
#if BROADPHASE_HAS_GPU
    return shared_context() ? shared_context()->validation_errors() : 0;
#else
    return 0;
#endif
}

/// The methods every entry-point test runs on: a dynamic tree, two static structures that are
/// rebuilt, brute force, and the GPU.
std::vector<std::string> methods() {
    std::vector<std::string> names = {"dynamic_aabb_tree", "sweep_and_prune", "kd_tree",
                                      "brute_force"};
#if BROADPHASE_HAS_GPU
    names.push_back("gpu_lbvh");
#endif
    return names;
}

std::unique_ptr<Broadphase> make(const std::string& method, bullet::Options options = {}) {
#if BROADPHASE_HAS_GPU
    if (method == "gpu_lbvh") options.context = shared_context();
#endif
    auto made = Broadphase::create(method, options);
    EXPECT_TRUE(made) << (made ? "" : made.error().message);
    return made ? std::move(made.value()) : nullptr;
}

Box box_of(const btBroadphaseProxy* p) {
    return {{p->m_aabbMin.x(), p->m_aabbMin.y(), p->m_aabbMin.z()},
            {p->m_aabbMax.x(), p->m_aabbMax.y(), p->m_aabbMax.z()}};
}

bool bullet_rule(const btBroadphaseProxy* a, const btBroadphaseProxy* b) {
    return (a->m_collisionFilterGroup & b->m_collisionFilterMask) != 0 &&
           (b->m_collisionFilterGroup & a->m_collisionFilterMask) != 0;
}

UidPair uid_pair(const btBroadphaseProxy* a, const btBroadphaseProxy* b) {
    return std::minmax(a->m_uniqueId, b->m_uniqueId);
}

/// The oracle: every pair of proxies with overlapping closed boxes that `accept` lets through.
template <class Accept>
std::vector<UidPair> brute_pairs(const std::vector<btBroadphaseProxy*>& proxies, Accept&& accept) {
    std::vector<UidPair> out;
    for (std::size_t i = 0; i < proxies.size(); ++i)
        for (std::size_t j = i + 1; j < proxies.size(); ++j)
            if (overlaps(box_of(proxies[i]), box_of(proxies[j])) && accept(proxies[i], proxies[j]))
                out.push_back(uid_pair(proxies[i], proxies[j]));
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<UidPair> brute_pairs(const std::vector<btBroadphaseProxy*>& proxies) {
    return brute_pairs(proxies, bullet_rule);
}

/// The cache's pairs, sorted (duplicates kept, so that they show).
std::vector<UidPair> cache_pairs(btOverlappingPairCache& cache) {
    std::vector<UidPair> out;
    const btBroadphasePairArray& array = cache.getOverlappingPairArray();
    for (int k = 0; k < array.size(); ++k)
        out.push_back(uid_pair(array[k].m_pProxy0, array[k].m_pProxy1));
    std::sort(out.begin(), out.end());
    return out;
}

btVector3 bt(const Vec3& v) {
    return {v.x, v.y, v.z};
}

class Scene {
public:
    explicit Scene(unsigned seed) : rng_(seed) {}

    float uniform(float lo, float hi) {
        return std::uniform_real_distribution<float>(lo, hi)(rng_);
    }
    int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

    Box random_box(float world, float size) {
        const Vec3 lo{uniform(0, world), uniform(0, world), uniform(0, world)};
        return {lo, {lo.x + uniform(0, size), lo.y + uniform(0, size), lo.z + uniform(0, size)}};
    }

    /// Bullet's default filter most of the time; otherwise one group bit and a random mask.
    std::pair<int, int> random_filter() {
        if (pick(0, 9) < 6) return {btBroadphaseProxy::DefaultFilter, btBroadphaseProxy::AllFilter};
        return {1 << pick(0, 3), pick(0, 15)};
    }

    btBroadphaseProxy* add(Broadphase& bp, const Box& box) {
        const auto [group, mask] = random_filter();
        btBroadphaseProxy* p = bp.createProxy(bt(box.min), bt(box.max), BOX_SHAPE_PROXYTYPE,
                                              nullptr, group, mask, nullptr);
        proxies.push_back(p);
        return p;
    }

    /// `count` proxies on random boxes (random_box(world, size)), in the order add() takes them.
    void add_random(Broadphase& bp, int count, float world, float size) {
        for (int i = 0; i < count; ++i) add(bp, random_box(world, size));
    }

    void remove(Broadphase& bp, std::size_t at) {
        bp.destroyProxy(proxies[at], nullptr);
        proxies.erase(proxies.begin() + std::ptrdiff_t(at));
    }

    std::vector<btBroadphaseProxy*> proxies;

private:
    std::mt19937 rng_;
};

/// Collects what a query calls back.
struct Collect : btBroadphaseAabbCallback {
    std::vector<int> uids;
    bool process(const btBroadphaseProxy* proxy) override {
        uids.push_back(proxy->m_uniqueId);
        return true;
    }
};

/// A ray callback as btCollisionWorld's sets one up (normalised direction, m_lambda_max the
/// ray's length), recording each proxy with the ray's entry distance into its box; with
/// `stop_at_first` it shortens m_lambda_max to the first entry, as a closest-hit search would.
struct RayCollect : btBroadphaseRayCallback {
    RayCollect(const btVector3& from, const btVector3& to, bool stop_at_first = false)
        : from_(from), stop_(stop_at_first) {
        btVector3 dir = to - from;
        const btScalar length = dir.length();
        dir_ = length > 0 ? dir / length : btVector3(0, 0, 0);
        for (int axis = 0; axis < 3; ++axis) {
            m_rayDirectionInverse[axis] =
                dir_[axis] == 0 ? btScalar(BT_LARGE_FLOAT) : 1 / dir_[axis];
            m_signs[axis] = m_rayDirectionInverse[axis] < 0;
        }
        m_lambda_max = length;
    }
    bool process(const btBroadphaseProxy* proxy) override {
        Ray ray{{from_.x(), from_.y(), from_.z()}, {dir_.x(), dir_.y(), dir_.z()}, m_lambda_max};
        const auto t = ray_box_entry(ray, box_of(proxy));
        entries.push_back({proxy->m_uniqueId, t ? *t : -1.0f});
        if (stop_ && t) m_lambda_max = *t;
        return true;
    }
    std::vector<std::pair<int, float>> entries;  // uid, entry distance (-1: a miss)

private:
    btVector3 from_, dir_;
    bool stop_;
};

std::string method_name(const ::testing::TestParamInfo<std::string>& method) {
    return method.param;
}

class BulletEntryPoints : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override { errors_before_ = validation_errors(); }
    void TearDown() override {
        EXPECT_EQ(validation_errors(), errors_before_) << "Vulkan validation errors (stderr)";
    }
    std::uint64_t errors_before_ = 0;
};

// Test 1: create, getAabb and setAabb keep the boxes as given; unique ids count from 1.
TEST_P(BulletEntryPoints, ProxiesKeepTheirBoxes) {
    auto bp = make(GetParam());
    ASSERT_TRUE(bp);
    EXPECT_EQ(bp->method(), GetParam());
    const btVector3 lo(1, 2, 3), hi(4, 5, 6);
    int marker = 7;
    btBroadphaseProxy* a = bp->createProxy(lo, hi, BOX_SHAPE_PROXYTYPE, &marker, 2, 5, nullptr);
    btBroadphaseProxy* b = bp->createProxy(hi, hi + btVector3(1, 1, 1), SPHERE_SHAPE_PROXYTYPE,
                                           nullptr, 1, -1, nullptr);
    EXPECT_EQ(a->m_uniqueId, 1);
    EXPECT_EQ(b->m_uniqueId, 2);
    EXPECT_EQ(a->m_clientObject, &marker);
    EXPECT_EQ(a->m_collisionFilterGroup, 2);
    EXPECT_EQ(a->m_collisionFilterMask, 5);
    EXPECT_EQ(a->m_aabbMin, lo);
    EXPECT_EQ(a->m_aabbMax, hi);
    btVector3 got_lo, got_hi;
    bp->getAabb(a, got_lo, got_hi);
    EXPECT_EQ(got_lo, lo);
    EXPECT_EQ(got_hi, hi);
    bp->setAabb(a, lo - btVector3(1, 1, 1), hi + btVector3(0.5f, 0, 0), nullptr);
    EXPECT_EQ(a->m_aabbMin, lo - btVector3(1, 1, 1));
    EXPECT_EQ(a->m_aabbMax, hi + btVector3(0.5f, 0, 0));
    bp->getAabb(a, got_lo, got_hi);
    EXPECT_EQ(got_hi, hi + btVector3(0.5f, 0, 0));
    EXPECT_TRUE(bp->validate()) << bp->validate().error().message;
    EXPECT_EQ(bp->stats().proxies, 2u);
    bp->destroyProxy(a, nullptr);
    bp->destroyProxy(b, nullptr);
    EXPECT_EQ(bp->stats().proxies, 0u);
    EXPECT_TRUE(bp->validate());
}

// Test 2: under creates, destroys, moves, filters changed on the proxies and pairs removed
// from the cache by hand, the cache equals the oracle after every call.
TEST_P(BulletEntryPoints, PairCacheEqualsBruteForce) {
    auto bp = make(GetParam());
    ASSERT_TRUE(bp);
    Scene scene(7);
    scene.add_random(*bp, 150, 10, 1.5f);
    // Exact contacts: a face, an edge and a corner touching, and a box inside another.
    scene.add(*bp, {{20, 20, 20}, {21, 21, 21}});
    scene.add(*bp, {{21, 20, 20}, {22, 21, 21}});
    scene.add(*bp, {{22, 21, 20}, {23, 22, 21}});
    scene.add(*bp, {{23, 22, 21}, {24, 23, 22}});
    scene.add(*bp, {{20.2f, 20.2f, 20.2f}, {20.3f, 20.3f, 20.3f}});
    btOverlappingPairCache& cache = *bp->getOverlappingPairCache();
    for (int frame = 0; frame < 12; ++frame) {
        bp->calculateOverlappingPairs(nullptr);
        ASSERT_EQ(cache_pairs(cache), brute_pairs(scene.proxies)) << "frame " << frame;
        ASSERT_TRUE(bp->validate()) << bp->validate().error().message;
        EXPECT_EQ(bp->stats().pairs, std::uint64_t(cache.getNumOverlappingPairs()));
        EXPECT_TRUE(bp->status());
        // Moves, some far (teleports), some not at all; on odd frames few enough that a
        // dynamic structure updates the last pairs instead of finding them all.
        for (btBroadphaseProxy* p : scene.proxies) {
            const int what = scene.pick(0, 9);
            if (what < (frame % 2 ? 9 : 5)) continue;
            Box b = box_of(p);
            const Vec3 d = what == 9
                               ? Vec3{scene.uniform(-8, 8), scene.uniform(-8, 8), 0}
                               : Vec3{scene.uniform(-0.3f, 0.3f), 0, scene.uniform(-0.3f, 0.3f)};
            b.min = {b.min.x + d.x, b.min.y + d.y, b.min.z + d.z};
            b.max = {b.max.x + d.x, b.max.y + d.y, b.max.z + d.z};
            bp->setAabb(p, bt(b.min), bt(b.max), nullptr);
        }
        // Destroys: none of the destroyed proxy's pairs stays, at once.
        for (int k = 0; k < 6; ++k) {
            const std::size_t at = std::size_t(scene.pick(0, int(scene.proxies.size()) - 1));
            const int uid = scene.proxies[at]->m_uniqueId;
            scene.remove(*bp, at);
            for (const UidPair& p : cache_pairs(cache))
                ASSERT_TRUE(p.first != uid && p.second != uid) << "a pair of a destroyed proxy";
        }
        scene.add_random(*bp, 8, 10, 1.5f);
        // Filters written on the proxies, as btCollisionWorld and users do, are read at the
        // proxy's next setAabb (btCollisionWorld::updateAabbs calls it for every object each
        // step), with the same box here.
        for (int k = 0; k < 5; ++k) {
            btBroadphaseProxy* p = scene.proxies[std::size_t(scene.pick(0, 100))];
            const auto [group, mask] = scene.random_filter();
            p->m_collisionFilterGroup = group;
            p->m_collisionFilterMask = mask;
            bp->setAabb(p, p->m_aabbMin, p->m_aabbMax, nullptr);
        }
        // Pairs removed from the cache by someone else come back at the next call.
        if (cache.getNumOverlappingPairs() > 4)
            for (int k = 0; k < 3; ++k) {
                btBroadphasePair& pair = cache.getOverlappingPairArray()[k];
                cache.removeOverlappingPair(pair.m_pProxy0, pair.m_pProxy1, nullptr);
            }
    }
    // Frames with moves and nothing removed from the cache by hand: a CPU method applied each
    // change at its setAabb, and the call finds the cache as it left it (no sync).
    bp->calculateOverlappingPairs(nullptr);  // syncs: the last frame removed pairs by hand
    const std::uint64_t updates_before = bp->stats().updates;
    for (int frame = 0; frame < 4; ++frame) {
        for (btBroadphaseProxy* p : scene.proxies) {
            if (scene.pick(0, 9) < 7) continue;
            Box b = box_of(p);
            const float dx = scene.uniform(-0.3f, 0.3f);
            b.min.x += dx;
            b.max.x += dx;
            bp->setAabb(p, bt(b.min), bt(b.max), nullptr);
        }
        bp->calculateOverlappingPairs(nullptr);
        ASSERT_EQ(cache_pairs(cache), brute_pairs(scene.proxies)) << "quiet frame " << frame;
    }
    if (GetParam() != std::string("gpu_lbvh")) {
        EXPECT_EQ(bp->stats().updates, updates_before + 4);
    }
    // Pairs removed from the cache come back at a call with nothing else changed.
    bp->calculateOverlappingPairs(nullptr);
    ASSERT_GT(cache.getNumOverlappingPairs(), 2);
    btBroadphasePair& gone = cache.getOverlappingPairArray()[1];
    cache.removeOverlappingPair(gone.m_pProxy0, gone.m_pProxy1, nullptr);
    bp->calculateOverlappingPairs(nullptr);
    EXPECT_EQ(bp->stats().pairs_added, 1u);
    EXPECT_EQ(cache_pairs(cache), brute_pairs(scene.proxies));
    // A call with nothing changed leaves the cache as it is.
    bp->calculateOverlappingPairs(nullptr);
    const auto before = cache_pairs(cache);
    bp->calculateOverlappingPairs(nullptr);
    EXPECT_EQ(cache_pairs(cache), before);
    EXPECT_EQ(bp->stats().pairs_added + bp->stats().pairs_removed, 0u);
    EXPECT_EQ(before, brute_pairs(scene.proxies));
}

/// Accepts the pairs whose unique ids have an even sum, whatever their filters.
struct EvenSum : btOverlapFilterCallback {
    bool needBroadphaseCollision(btBroadphaseProxy* a, btBroadphaseProxy* b) const override {
        return (a->m_uniqueId + b->m_uniqueId) % 2 == 0;
    }
};

// Test 3: the cache's overlap filter callback replaces the group/mask rule (as Bullet's
// needsBroadphaseCollision does) for pairs added and for pairs kept; unset, the rule is back.
TEST_P(BulletEntryPoints, OverlapFilterCallbackDecides) {
    auto bp = make(GetParam());
    ASSERT_TRUE(bp);
    Scene scene(11);
    scene.add_random(*bp, 120, 8, 1.5f);
    btOverlappingPairCache& cache = *bp->getOverlappingPairCache();
    bp->calculateOverlappingPairs(nullptr);
    ASSERT_EQ(cache_pairs(cache), brute_pairs(scene.proxies));
    EvenSum even;
    cache.setOverlapFilterCallback(&even);
    bp->calculateOverlappingPairs(nullptr);
    const auto accept = [&](btBroadphaseProxy* a, btBroadphaseProxy* b) {
        return even.needBroadphaseCollision(a, b);
    };
    EXPECT_EQ(cache_pairs(cache), brute_pairs(scene.proxies, accept));
    EXPECT_NE(brute_pairs(scene.proxies, accept), brute_pairs(scene.proxies));
    cache.setOverlapFilterCallback(nullptr);
    bp->calculateOverlappingPairs(nullptr);
    EXPECT_EQ(cache_pairs(cache), brute_pairs(scene.proxies));
}

// Test 4: a cache with deferred removal (btSortedOverlappingPairCache, btAxisSweep3's) given
// in the options is kept exact as well.
TEST_P(BulletEntryPoints, SortedPairCacheGiven) {
    btSortedOverlappingPairCache sorted;
    bullet::Options options;
    options.pair_cache = &sorted;
    auto bp = make(GetParam(), options);
    ASSERT_TRUE(bp);
    EXPECT_EQ(bp->getOverlappingPairCache(), &sorted);
    Scene scene(13);
    scene.add_random(*bp, 100, 8, 1.5f);
    for (int frame = 0; frame < 4; ++frame) {
        bp->calculateOverlappingPairs(nullptr);
        ASSERT_EQ(cache_pairs(sorted), brute_pairs(scene.proxies)) << "frame " << frame;
        for (btBroadphaseProxy* p : scene.proxies) {
            const Box b = scene.random_box(8, 1.5f);
            if (scene.pick(0, 1)) bp->setAabb(p, bt(b.min), bt(b.max), nullptr);
        }
        scene.remove(*bp, 0);
    }
    while (!scene.proxies.empty()) scene.remove(*bp, 0);
    EXPECT_EQ(sorted.getNumOverlappingPairs(), 0);
}

/// The oracle of a region: the unique ids of the proxies whose closed boxes overlap it, sorted.
std::vector<int> brute_region(const std::vector<btBroadphaseProxy*>& proxies, const Box& region) {
    std::vector<int> out;
    for (const btBroadphaseProxy* p : proxies)
        if (overlaps(box_of(p), region)) out.push_back(p->m_uniqueId);
    std::sort(out.begin(), out.end());
    return out;
}

// Test 5: aabbTest calls back exactly the proxies whose closed boxes overlap the region, once
// each, touching ones included; an invalid region reports nothing.
TEST_P(BulletEntryPoints, AabbTestEqualsBruteForce) {
    auto bp = make(GetParam());
    ASSERT_TRUE(bp);
    Scene scene(17);
    scene.add_random(*bp, 200, 10, 1.5f);
    scene.add(*bp, {{30, 30, 30}, {31, 31, 31}});
    std::vector<Box> regions = {{{31, 31, 31}, {32, 32, 32}},         // touches a corner
                                {{29, 30.5f, 30.5f}, {30, 32, 32}}};  // touches a face
    for (int q = 0; q < 40; ++q) regions.push_back(scene.random_box(10, 3));
    for (const Box& region : regions) {
        Collect got;
        bp->aabbTest(bt(region.min), bt(region.max), got);
        EXPECT_EQ(got.uids, brute_region(scene.proxies, region));  // increasing unique id, once
    }
    EXPECT_EQ(regions.size(), 42u);
    Collect everything;
    const float inf = std::numeric_limits<float>::infinity();
    bp->aabbTest(btVector3(-inf, -inf, -inf), btVector3(inf, inf, inf), everything);
    EXPECT_EQ(everything.uids.size(), scene.proxies.size());
    Collect none;
    bp->aabbTest(btVector3(5, 5, 5), btVector3(4, 6, 6), none);  // min > max
    bp->aabbTest(btVector3(std::nanf(""), 0, 0), btVector3(6, 6, 6), none);
    EXPECT_TRUE(none.uids.empty());
}

/// The oracle of a ray: every proxy whose box it enters within `length`, by entry distance.
std::vector<std::pair<int, float>> brute_ray(const std::vector<btBroadphaseProxy*>& proxies,
                                             const btVector3& from, const btVector3& to) {
    btVector3 dir = to - from;
    const btScalar length = dir.length();
    dir /= length;
    const Ray ray{{from.x(), from.y(), from.z()}, {dir.x(), dir.y(), dir.z()}, length};
    std::vector<std::pair<int, float>> out;
    for (const btBroadphaseProxy* p : proxies)
        if (const auto t = ray_box_entry(ray, box_of(p))) out.push_back({p->m_uniqueId, *t});
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return std::tie(a.second, a.first) < std::tie(b.second, b.first);
    });
    return out;
}

// Test 6: rayTest calls back every proxy the ray touches, in increasing entry distance:
// random long and short rays, axis-parallel rays along faces, a ray from inside a box.
TEST_P(BulletEntryPoints, RayTestEqualsBruteForce) {
    auto bp = make(GetParam());
    ASSERT_TRUE(bp);
    Scene scene(19);
    scene.add_random(*bp, 300, 10, 2);
    scene.add(*bp, {{40, 40, 40}, {41, 41, 41}});
    std::vector<std::pair<btVector3, btVector3>> rays = {
        {{35, 40, 40.5f}, {45, 40, 40.5f}},     // along the face y = 40
        {{40.5f, 40.5f, 40.5f}, {50, 50, 50}},  // from inside
        {{41, 41, 30}, {41, 41, 50}},           // along an edge
        {{-5, -5, -5}, {15, 15, 15}}};          // the whole scene's diagonal
    for (int r = 0; r < 40; ++r) {
        const btVector3 from(scene.uniform(-3, 13), scene.uniform(-3, 13), scene.uniform(-3, 13));
        const btVector3 to(scene.uniform(-3, 13), scene.uniform(-3, 13), scene.uniform(-3, 13));
        rays.push_back({from, to});
    }
    std::size_t hits = 0;
    for (const auto& [from, to] : rays) {
        RayCollect got(from, to);
        bp->rayTest(from, to, got);
        const auto expected = brute_ray(scene.proxies, from, to);
        ASSERT_EQ(got.entries.size(), expected.size())
            << "ray from " << from.x() << " " << from.y();
        for (std::size_t k = 0; k < expected.size(); ++k) {
            EXPECT_EQ(got.entries[k].first, expected[k].first);
            EXPECT_EQ(got.entries[k].second, expected[k].second);
        }
        hits += expected.size();
    }
    EXPECT_GT(hits, 100u);  // the rays do cross the scene
    // A callback that shortens m_lambda_max at its first hit hears of nothing further.
    const btVector3 from(-5, -5, -5), to(15, 15, 15);
    RayCollect first(from, to, true);
    bp->rayTest(from, to, first);
    const auto expected = brute_ray(scene.proxies, from, to);
    ASSERT_FALSE(expected.empty());
    ASSERT_FALSE(first.entries.empty());
    for (const auto& [uid, t] : first.entries) EXPECT_LE(t, expected.front().second) << uid;
}

// Test 7: the cast shape's box grows every proxy's box as btDbvt::rayTestInternal grows its
// nodes ([min - aabbMax, max - aabbMin]); a zero-length ray reports the boxes holding its point.
TEST_P(BulletEntryPoints, RayTestGrownAndZeroLength) {
    auto bp = make(GetParam());
    ASSERT_TRUE(bp);
    btBroadphaseProxy* a =
        bp->createProxy(btVector3(0, 0, 0), btVector3(1, 1, 1), 0, nullptr, 1, -1, nullptr);
    btBroadphaseProxy* b =
        bp->createProxy(btVector3(5, 0, 0), btVector3(6, 1, 1), 0, nullptr, 1, -1, nullptr);
    // A ray along y = 1.4 misses both boxes, but a cast sphere of radius 0.5 touches both.
    const btVector3 from(-3, 1.4f, 0.5f), to(10, 1.4f, 0.5f);
    RayCollect thin(from, to);
    bp->rayTest(from, to, thin);
    EXPECT_TRUE(thin.entries.empty());
    RayCollect thick(from, to);
    bp->rayTest(from, to, thick, btVector3(-0.5f, -0.5f, -0.5f), btVector3(0.5f, 0.5f, 0.5f));
    ASSERT_EQ(thick.entries.size(), 2u);
    EXPECT_EQ(thick.entries[0].first, a->m_uniqueId);
    EXPECT_EQ(thick.entries[1].first, b->m_uniqueId);
    RayCollect point(btVector3(5.5f, 0.5f, 0.5f), btVector3(5.5f, 0.5f, 0.5f));
    bp->rayTest(btVector3(5.5f, 0.5f, 0.5f), btVector3(5.5f, 0.5f, 0.5f), point);
    ASSERT_EQ(point.entries.size(), 1u);
    EXPECT_EQ(point.entries[0].first, b->m_uniqueId);
}

// Test 8: getBroadphaseAabb bounds every proxy (the zero box when empty); resetPool restarts
// the unique ids only when no proxy is alive; printStats prints.
TEST_P(BulletEntryPoints, BoundsResetPoolStats) {
    auto bp = make(GetParam());
    ASSERT_TRUE(bp);
    btVector3 lo, hi;
    bp->getBroadphaseAabb(lo, hi);
    EXPECT_EQ(lo, btVector3(0, 0, 0));
    EXPECT_EQ(hi, btVector3(0, 0, 0));
    btBroadphaseProxy* a =
        bp->createProxy(btVector3(-1, 2, 3), btVector3(0, 4, 5), 0, nullptr, 1, -1, nullptr);
    btBroadphaseProxy* b =
        bp->createProxy(btVector3(2, -7, 3), btVector3(3, 0, 9), 0, nullptr, 1, -1, nullptr);
    bp->getBroadphaseAabb(lo, hi);
    EXPECT_EQ(lo, btVector3(-1, -7, 3));
    EXPECT_EQ(hi, btVector3(3, 4, 9));
    bp->calculateOverlappingPairs(nullptr);
    bp->resetPool(nullptr);  // proxies alive: nothing happens
    EXPECT_TRUE(bp->validate());
    btBroadphaseProxy* c =
        bp->createProxy(btVector3(0, 0, 0), btVector3(1, 1, 1), 0, nullptr, 1, -1, nullptr);
    EXPECT_EQ(c->m_uniqueId, 3);
    ::testing::internal::CaptureStdout();
    bp->printStats();
    const std::string printed = ::testing::internal::GetCapturedStdout();
    EXPECT_NE(printed.find(GetParam()), std::string::npos) << printed;
    EXPECT_NE(printed.find("3 proxies"), std::string::npos) << printed;
    for (btBroadphaseProxy* p : {a, b, c}) bp->destroyProxy(p, nullptr);
    bp->calculateOverlappingPairs(nullptr);
    bp->resetPool(nullptr);
    btBroadphaseProxy* d =
        bp->createProxy(btVector3(0, 0, 0), btVector3(1, 1, 1), 0, nullptr, 1, -1, nullptr);
    btBroadphaseProxy* e =
        bp->createProxy(btVector3(0, 0, 0), btVector3(1, 1, 1), 0, nullptr, 1, -1, nullptr);
    EXPECT_EQ(d->m_uniqueId, 1);
    bp->calculateOverlappingPairs(nullptr);
    EXPECT_EQ(cache_pairs(*bp->getOverlappingPairCache()), (std::vector<UidPair>{{1, 2}}));
    EXPECT_TRUE(bp->validate()) << bp->validate().error().message;
    bp->destroyProxy(d, nullptr);
    bp->destroyProxy(e, nullptr);
}

// Test 9: a proxy with a NaN, an infinity or min > max is stored as given but kept out of
// pairs and queries until a valid box comes; nothing fails.
TEST_P(BulletEntryPoints, InvalidBoxesKeptOut) {
    auto bp = make(GetParam());
    ASSERT_TRUE(bp);
    btBroadphaseProxy* good =
        bp->createProxy(btVector3(0, 0, 0), btVector3(2, 2, 2), 0, nullptr, 1, -1, nullptr);
    const float nan = std::nanf("");
    btBroadphaseProxy* bad =
        bp->createProxy(btVector3(nan, 0, 0), btVector3(1, 1, 1), 0, nullptr, 1, -1, nullptr);
    EXPECT_TRUE(std::isnan(bad->m_aabbMin.x()));
    EXPECT_EQ(bp->stats().invalid_proxies, 1u);
    bp->calculateOverlappingPairs(nullptr);
    btOverlappingPairCache& cache = *bp->getOverlappingPairCache();
    EXPECT_EQ(cache.getNumOverlappingPairs(), 0);
    Collect found;
    bp->aabbTest(btVector3(-10, -10, -10), btVector3(10, 10, 10), found);
    EXPECT_EQ(found.uids, std::vector<int>{good->m_uniqueId});
    bp->setAabb(bad, btVector3(1, 1, 1), btVector3(3, 3, 3), nullptr);
    EXPECT_EQ(bp->stats().invalid_proxies, 0u);
    bp->calculateOverlappingPairs(nullptr);
    EXPECT_EQ(cache.getNumOverlappingPairs(), 1);
    bp->setAabb(bad, btVector3(1, 4, 1), btVector3(3, 3, 3), nullptr);  // min > max
    bp->calculateOverlappingPairs(nullptr);
    EXPECT_EQ(cache.getNumOverlappingPairs(), 0);
    const float inf = std::numeric_limits<float>::infinity();
    bp->setAabb(bad, btVector3(-inf, 0, 0), btVector3(3, 3, 3), nullptr);
    bp->calculateOverlappingPairs(nullptr);
    EXPECT_EQ(cache.getNumOverlappingPairs(), 0);
    EXPECT_EQ(bp->stats().invalid_proxies, 1u);
    EXPECT_TRUE(bp->validate()) << bp->validate().error().message;
    EXPECT_TRUE(bp->status());
    bp->destroyProxy(bad, nullptr);
    EXPECT_EQ(bp->stats().invalid_proxies, 0u);
    bp->destroyProxy(good, nullptr);
}

INSTANTIATE_TEST_SUITE_P(Methods, BulletEntryPoints, ::testing::ValuesIn(methods()), method_name);

TEST(BulletAdapter, CreateRejectsUnknownMethods) {
    auto unknown = Broadphase::create("no_such_method");
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(unknown.error().message.find("no_such_method"), std::string::npos);
#if BROADPHASE_HAS_GPU
    bullet::Options options;
    options.context = shared_context();
    options.query_method = "no_such_mirror";
    auto mirror = Broadphase::create("gpu_lbvh", options);
    ASSERT_FALSE(mirror);
    EXPECT_NE(mirror.error().message.find("no_such_mirror"), std::string::npos);
#endif
    auto fine = Broadphase::create();
    ASSERT_TRUE(fine);
    EXPECT_EQ(fine.value()->method(), "dynamic_aabb_tree");
}

// Every CPU method, static and dynamic, behind the same adapter: churn, then the oracle.
#if BROADPHASE_HAS_GPU
// gpu_lbvh's queries read a CPU index over Options::query_method that follows the changed
// proxies: a static one (kd_tree) is rebuilt once at the first query after changes, not at each
// setAabb, and nothing is rebuilt while nothing changes; its answers are brute force's.
TEST(BulletGpu, StaticQueryIndexFollowsTheChanges) {
    bullet::Options options;
    options.query_method = "kd_tree";
    auto bp = make("gpu_lbvh", options);
    ASSERT_TRUE(bp);
    Scene scene(23);
    scene.add_random(*bp, 300, 10, 1.5f);
    const auto check = [&] {
        for (int q = 0; q < 10; ++q) {
            const Box region = scene.random_box(10, 3);
            Collect got;
            bp->aabbTest(bt(region.min), bt(region.max), got);
            EXPECT_EQ(got.uids, brute_region(scene.proxies, region));
        }
        const btVector3 from(-1, -1, -1), to(11, 11, 11);
        RayCollect got(from, to);
        bp->rayTest(from, to, got);
        const auto expected = brute_ray(scene.proxies, from, to);
        ASSERT_EQ(got.entries.size(), expected.size());
        for (std::size_t k = 0; k < expected.size(); ++k)
            EXPECT_EQ(got.entries[k].first, expected[k].first);
    };
    check();
    const std::uint64_t built = bp->stats().rebuilds;
    EXPECT_EQ(built, 1u);  // the first query built it
    check();
    bp->calculateOverlappingPairs(nullptr);
    EXPECT_EQ(bp->stats().rebuilds, built);  // no change: no rebuild
    for (int k = 0; k < 40; ++k) {           // 40 moves, one rebuild at the next query
        btBroadphaseProxy* p = scene.proxies[std::size_t(scene.pick(0, 299))];
        const Box moved = scene.random_box(10, 1.5f);
        bp->setAabb(p, bt(moved.min), bt(moved.max), nullptr);
    }
    scene.remove(*bp, 7);
    scene.add(*bp, {{5, 5, 5}, {6, 6, 6}});
    check();
    EXPECT_EQ(bp->stats().rebuilds, built + 1);
    ASSERT_TRUE(bp->validate()) << bp->validate().error().message;
}

// gpu_lbvh's pairs reach the cache from the GPU step's began and ended events: one step per
// call with changes, none without, the cache synced against every pair only when it drifted
// (stats.updates counts the calls that did not sync), and a proxy destroyed and created again
// in its slot before the next call gets its pairs as a new body.
TEST(BulletGpu, EventsFollowTheChanges) {
    auto bp = make("gpu_lbvh");
    ASSERT_TRUE(bp);
    std::vector<btBroadphaseProxy*> proxies;
    for (int i = 0; i < 512; ++i) {  // an 8 x 8 x 8 block of touching unit boxes
        const btVector3 lo(float(i % 8), float(i / 8 % 8), float(i / 64));
        proxies.push_back(bp->createProxy(lo, lo + btVector3(1, 1, 1), 0, nullptr, 1, -1, nullptr));
    }
    btOverlappingPairCache& cache = *bp->getOverlappingPairCache();
    bp->calculateOverlappingPairs(nullptr);
    EXPECT_EQ(cache_pairs(cache), brute_pairs(proxies));
    const bullet::Stats first = bp->stats();
    EXPECT_EQ(first.gpu_steps, 1u);
    EXPECT_EQ(first.pairs, brute_pairs(proxies).size());

    bp->calculateOverlappingPairs(nullptr);  // nothing changed: no step, no sync
    EXPECT_EQ(bp->stats().gpu_steps, 1u);
    EXPECT_EQ(bp->stats().updates, first.updates + 1);

    // A corner box moves out of the block: its 7 pairs end, by events, without a sync.
    bp->setAabb(proxies[0], btVector3(-5, -5, -5), btVector3(-4, -4, -4), nullptr);
    bp->calculateOverlappingPairs(nullptr);
    EXPECT_EQ(bp->stats().gpu_steps, 2u);
    EXPECT_EQ(bp->stats().updates, first.updates + 2);
    EXPECT_EQ(bp->stats().pairs_removed, 7u);
    EXPECT_EQ(bp->stats().pairs_added, 0u);
    EXPECT_EQ(cache_pairs(cache), brute_pairs(proxies));

    // A box at the block's centre destroyed and another created in its slot, in its place:
    // the new proxy's 26 pairs are in the cache.
    const btVector3 lo = proxies[9 * 8 + 3]->m_aabbMin;
    bp->destroyProxy(proxies[9 * 8 + 3], nullptr);
    proxies[9 * 8 + 3] = bp->createProxy(lo, lo + btVector3(1, 1, 1), 0, nullptr, 1, -1, nullptr);
    bp->calculateOverlappingPairs(nullptr);
    EXPECT_EQ(bp->stats().gpu_steps, 3u);
    EXPECT_EQ(bp->stats().pairs_added, 26u);
    EXPECT_EQ(cache_pairs(cache), brute_pairs(proxies));
    EXPECT_TRUE(bp->validate()) << bp->validate().error().message;
    EXPECT_TRUE(bp->status());
    for (btBroadphaseProxy* p : proxies) bp->destroyProxy(p, nullptr);
    EXPECT_EQ(validation_errors(), 0u);
}
#endif

TEST(BulletAdapter, EveryCpuMethodEqualsBruteForce) {
    for (const std::string_view method : cpu_method_names()) {
        SCOPED_TRACE(std::string(method));
        auto bp = make(std::string(method));
        ASSERT_TRUE(bp);
        Scene scene(23);
        scene.add_random(*bp, 80, 6, 1.5f);
        for (int frame = 0; frame < 4; ++frame) {
            bp->calculateOverlappingPairs(nullptr);
            ASSERT_EQ(cache_pairs(*bp->getOverlappingPairCache()), brute_pairs(scene.proxies));
            ASSERT_TRUE(bp->validate()) << bp->validate().error().message;
            for (int k = 0; k < 20; ++k) {
                btBroadphaseProxy* p = scene.proxies[std::size_t(scene.pick(0, 60))];
                const Box b = scene.random_box(6, 1.5f);
                bp->setAabb(p, bt(b.min), bt(b.max), nullptr);
            }
            scene.remove(*bp, std::size_t(scene.pick(0, 60)));
            scene.add(*bp, scene.random_box(6, 1.5f));
        }
    }
}

// Rays and box queries cast from 4 threads at once over one broadphase, once its pairs are up
// to date, answer as from one thread (run under ThreadSanitizer by scripts/sanitize.sh).
TEST(BulletAdapter, ConcurrentQueriesAgree) {
    for (const std::string method : {"dynamic_aabb_tree", "sweep_and_prune"}) {
        SCOPED_TRACE(method);
        auto bp = make(method);
        ASSERT_TRUE(bp);
        Scene scene(41);
        scene.add_random(*bp, 400, 10, 1.5f);
        bp->calculateOverlappingPairs(nullptr);
        std::vector<std::pair<btVector3, btVector3>> rays;
        std::vector<Box> regions;
        for (int r = 0; r < 60; ++r) {
            rays.push_back({{scene.uniform(-1, 11), scene.uniform(-1, 11), scene.uniform(-1, 11)},
                            {scene.uniform(-1, 11), scene.uniform(-1, 11), scene.uniform(-1, 11)}});
            regions.push_back(scene.random_box(10, 3));
        }
        auto answer = [&] {
            std::vector<std::vector<int>> out;
            for (const auto& [from, to] : rays) {
                RayCollect got(from, to);
                bp->rayTest(from, to, got);
                out.emplace_back();
                for (const auto& e : got.entries) out.back().push_back(e.first);
            }
            for (const Box& region : regions) {
                Collect got;
                bp->aabbTest(bt(region.min), bt(region.max), got);
                out.push_back(got.uids);
            }
            return out;
        };
        const auto expected = answer();
        constexpr int kThreads = 4;
        std::vector<std::vector<std::vector<int>>> got(kThreads);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t] {
                for (int round = 0; round < 5; ++round) got[std::size_t(t)] = answer();
            });
        for (std::thread& thread : threads) thread.join();
        for (int t = 0; t < kThreads; ++t) EXPECT_EQ(got[std::size_t(t)], expected) << t;
    }
}

// ---- Bullet worlds ----

/// A btDiscreteDynamicsWorld on a given broadphase, with its bodies. Members are destroyed in
/// reverse order: the world first, while its bodies and broadphase still exist.
struct World {
    explicit World(std::unique_ptr<btBroadphaseInterface> bp) : broadphase(std::move(bp)) {
        world = std::make_unique<btDiscreteDynamicsWorld>(&dispatcher, broadphase.get(), &solver,
                                                          &configuration);
        world->setGravity(btVector3(0, -10, 0));
        ground_shape = std::make_unique<btBoxShape>(btVector3(60, 1, 60));
        btRigidBody::btRigidBodyConstructionInfo info(0, nullptr, ground_shape.get());
        info.m_startWorldTransform.setOrigin(btVector3(0, -1, 0));
        ground = std::make_unique<btRigidBody>(info);
        world->addRigidBody(ground.get());
    }
    ~World() {
        for (auto& body : bodies)
            if (body) world->removeRigidBody(body.get());
        world->removeRigidBody(ground.get());
    }

    /// A dynamic body of `shape` at `origin` turned by `rotation`; returns its index.
    std::size_t add(btCollisionShape* shape, const btVector3& origin, const btQuaternion& rotation,
                    int group = 0, int mask = 0) {
        btVector3 inertia(0, 0, 0);
        shape->calculateLocalInertia(1, inertia);
        btRigidBody::btRigidBodyConstructionInfo info(1, nullptr, shape, inertia);
        info.m_startWorldTransform.setOrigin(origin);
        info.m_startWorldTransform.setRotation(rotation);
        bodies.push_back(std::make_unique<btRigidBody>(info));
        if (group)
            world->addRigidBody(bodies.back().get(), group, mask);
        else
            world->addRigidBody(bodies.back().get());
        return bodies.size() - 1;
    }

    void remove(std::size_t at) {
        world->removeRigidBody(bodies[at].get());
        bodies[at].reset();
    }

    std::vector<btBroadphaseProxy*> proxies() const {
        std::vector<btBroadphaseProxy*> out;
        const btCollisionObjectArray& objects = world->getCollisionObjectArray();
        for (int k = 0; k < objects.size(); ++k) out.push_back(objects[k]->getBroadphaseHandle());
        return out;
    }

    btDefaultCollisionConfiguration configuration;
    btCollisionDispatcher dispatcher{&configuration};
    btSequentialImpulseConstraintSolver solver;
    std::unique_ptr<btBroadphaseInterface> broadphase;
    std::unique_ptr<btBoxShape> ground_shape;
    std::unique_ptr<btRigidBody> ground;
    std::vector<std::unique_ptr<btRigidBody>> bodies;
    std::unique_ptr<btDiscreteDynamicsWorld> world;
};

class BulletWorld : public BulletEntryPoints {};

// Test 10: a world whose bodies come and go mid-run, some with restrictive filters and one
// whose filter is rewritten on its proxy: after every step the cache holds exactly the
// oracle's pairs (the dispatcher frees the algorithms of those removed).
TEST_P(BulletWorld, PairCacheEqualsBruteForceEveryStep) {
    auto bp = make(GetParam());
    ASSERT_TRUE(bp);
    World w(std::move(bp));
    btBoxShape cube(btVector3(0.5f, 0.5f, 0.5f));
    btSphereShape ball(0.6f);
    Scene scene(29);
    auto drop = [&] {
        const btVector3 at(scene.uniform(-4, 4), scene.uniform(0.5f, 8), scene.uniform(-4, 4));
        const btQuaternion turn(scene.uniform(0, 3), scene.uniform(0, 1), 0);
        const int kind = scene.pick(0, 5);
        if (kind == 0)  // a debris body that meets only the ground
            return w.add(&cube, at, turn, btBroadphaseProxy::DebrisFilter,
                         btBroadphaseProxy::StaticFilter);
        return w.add(kind < 3 ? static_cast<btCollisionShape*>(&cube) : &ball, at, turn);
    };
    for (int i = 0; i < 60; ++i) drop();
    // A second static body overlapping the ground: static bodies (group StaticFilter, mask
    // without it) never pair with each other.
    btBoxShape wall_shape(btVector3(0.5f, 3, 6));
    btRigidBody::btRigidBodyConstructionInfo wall_info(0, nullptr, &wall_shape);
    wall_info.m_startWorldTransform.setOrigin(btVector3(5, 1, 0));
    btRigidBody wall(wall_info);
    w.world->addRigidBody(&wall);
    // A ghost object told of its pairs by the cache's ghost pair callback.
    btGhostPairCallback ghost_callback;
    w.broadphase->getOverlappingPairCache()->setInternalGhostPairCallback(&ghost_callback);
    btBoxShape ghost_shape(btVector3(3, 2, 3));
    btPairCachingGhostObject ghost;
    ghost.setCollisionShape(&ghost_shape);
    ghost.getWorldTransform().setOrigin(btVector3(0, 2, 0));
    ghost.setCollisionFlags(btCollisionObject::CF_NO_CONTACT_RESPONSE);
    w.world->addCollisionObject(&ghost, btBroadphaseProxy::SensorTrigger,
                                btBroadphaseProxy::AllFilter);
    std::size_t max_pairs = 0, max_ghost = 0;
    for (int step = 0; step < 90; ++step) {
        w.world->stepSimulation(1.0f / 60, 0);
        const auto expected = brute_pairs(w.proxies());
        ASSERT_EQ(cache_pairs(*w.broadphase->getOverlappingPairCache()), expected)
            << "step " << step;
        EXPECT_EQ(std::count(expected.begin(), expected.end(),
                             uid_pair(wall.getBroadphaseHandle(), w.ground->getBroadphaseHandle())),
                  0);
        std::vector<int> ghost_expected, ghost_got;
        const int ghost_uid = ghost.getBroadphaseHandle()->m_uniqueId;
        for (const UidPair& p : expected) {
            if (p.first == ghost_uid) ghost_expected.push_back(p.second);
            if (p.second == ghost_uid) ghost_expected.push_back(p.first);
        }
        for (int k = 0; k < ghost.getNumOverlappingObjects(); ++k)
            ghost_got.push_back(ghost.getOverlappingObject(k)->getBroadphaseHandle()->m_uniqueId);
        std::sort(ghost_expected.begin(), ghost_expected.end());
        std::sort(ghost_got.begin(), ghost_got.end());
        ASSERT_EQ(ghost_got, ghost_expected) << "step " << step;
        max_ghost = std::max(max_ghost, ghost_got.size());
        max_pairs = std::max(max_pairs, expected.size());
        if (step % 10 == 5) {
            for (int k = 0; k < 4; ++k) {
                const std::size_t at = std::size_t(scene.pick(0, int(w.bodies.size()) - 1));
                if (w.bodies[at]) w.remove(at);
            }
            for (int k = 0; k < 4; ++k) drop();
        }
        if (step == 20) {  // a body stops meeting the ground, written on its proxy
            for (auto& body : w.bodies)
                if (body) {
                    body->getBroadphaseHandle()->m_collisionFilterMask =
                        btBroadphaseProxy::DefaultFilter;
                    break;
                }
        }
    }
    EXPECT_GT(max_pairs, 60u);  // the bodies did land on the ground and on each other
    EXPECT_GT(max_ghost, 5u);
    auto* ours = dynamic_cast<Broadphase*>(w.broadphase.get());
    ASSERT_TRUE(ours);
    EXPECT_TRUE(ours->validate()) << ours->validate().error().message;
    EXPECT_TRUE(ours->status());
    w.world->removeCollisionObject(&ghost);
    w.world->removeRigidBody(&wall);
    w.broadphase->getOverlappingPairCache()->setInternalGhostPairCallback(nullptr);
}

/// Every object's hits of one ray, as rayTestSingle finds them object by object: the oracle of
/// btCollisionWorld::rayTest.
template <class Callback>
void brute_ray_test(const btCollisionWorld& world, const btVector3& from, const btVector3& to,
                    Callback& callback) {
    btTransform from_t, to_t;
    from_t.setIdentity();
    from_t.setOrigin(from);
    to_t.setIdentity();
    to_t.setOrigin(to);
    const btCollisionObjectArray& objects = world.getCollisionObjectArray();
    for (int k = 0; k < objects.size(); ++k) {
        btCollisionObject* object = objects[k];
        if (!callback.needsCollision(object->getBroadphaseHandle())) continue;
        btCollisionWorld::rayTestSingle(from_t, to_t, object, object->getCollisionShape(),
                                        object->getWorldTransform(), callback);
    }
}

std::vector<std::pair<const btCollisionObject*, btScalar>> all_hits(
    const btCollisionWorld::AllHitsRayResultCallback& hits) {
    std::vector<std::pair<const btCollisionObject*, btScalar>> out;
    for (int k = 0; k < hits.m_collisionObjects.size(); ++k)
        out.push_back({hits.m_collisionObjects[k], hits.m_hitFractions[k]});
    std::sort(out.begin(), out.end());
    return out;
}

// Test 11: btCollisionWorld::rayTest through the adapter finds what rayTestSingle finds over
// every object, with AllHits and ClosestRay callbacks, a filtered ray among them.
TEST_P(BulletWorld, RayTestsEqualRayTestSingle) {
    auto bp = make(GetParam());
    ASSERT_TRUE(bp);
    World w(std::move(bp));
    btBoxShape cube(btVector3(0.5f, 0.5f, 0.5f));
    btSphereShape ball(0.6f);
    Scene scene(31);
    for (int i = 0; i < 80; ++i) {
        const btVector3 at(scene.uniform(-6, 6), scene.uniform(0.5f, 6), scene.uniform(-6, 6));
        w.add(i % 2 ? static_cast<btCollisionShape*>(&cube) : &ball, at,
              btQuaternion(scene.uniform(0, 3), scene.uniform(0, 1), 0));
    }
    for (int step = 0; step < 5; ++step) w.world->stepSimulation(1.0f / 60, 0);
    std::size_t total = 0;
    for (int r = 0; r < 40; ++r) {
        const btVector3 from(scene.uniform(-8, 8), 10, scene.uniform(-8, 8));
        const btVector3 to(scene.uniform(-8, 8), r % 4 == 0 ? 3.0f : -0.5f, scene.uniform(-8, 8));
        btCollisionWorld::AllHitsRayResultCallback got(from, to), expected(from, to);
        if (r % 5 == 0) {  // a ray that skips the ground
            got.m_collisionFilterMask = expected.m_collisionFilterMask =
                btBroadphaseProxy::DefaultFilter;
        }
        w.world->rayTest(from, to, got);
        brute_ray_test(*w.world, from, to, expected);
        EXPECT_EQ(all_hits(got), all_hits(expected)) << "ray " << r;
        total += std::size_t(expected.m_collisionObjects.size());
        btCollisionWorld::ClosestRayResultCallback closest(from, to), closest_expected(from, to);
        w.world->rayTest(from, to, closest);
        brute_ray_test(*w.world, from, to, closest_expected);
        EXPECT_EQ(closest.m_collisionObject, closest_expected.m_collisionObject) << "ray " << r;
        EXPECT_EQ(closest.m_closestHitFraction, closest_expected.m_closestHitFraction);
    }
    EXPECT_GT(total, 40u);
}

// Test 12: btCollisionWorld::convexSweepTest (rayTest with the cast shape's box) finds the
// closest hit objectQuerySingle finds over every object.
TEST_P(BulletWorld, ConvexSweepsEqualObjectQuerySingle) {
    auto bp = make(GetParam());
    ASSERT_TRUE(bp);
    World w(std::move(bp));
    btBoxShape cube(btVector3(0.5f, 0.5f, 0.5f));
    Scene scene(41);
    for (int i = 0; i < 60; ++i)
        w.add(&cube, btVector3(scene.uniform(-6, 6), scene.uniform(0.5f, 6), scene.uniform(-6, 6)),
              btQuaternion(scene.uniform(0, 3), scene.uniform(0, 1), 0));
    w.world->stepSimulation(1.0f / 60, 0);
    btSphereShape probe(0.4f);
    btBoxShape slab(btVector3(1.5f, 0.2f, 0.8f));
    int hits = 0;
    for (int r = 0; r < 30; ++r) {
        btTransform from, to;
        from.setIdentity();
        to.setIdentity();
        from.setOrigin(btVector3(scene.uniform(-8, 8), 9, scene.uniform(-8, 8)));
        to.setOrigin(btVector3(scene.uniform(-8, 8), 1, scene.uniform(-8, 8)));
        from.setRotation(btQuaternion(scene.uniform(0, 3), 0, 0));
        to.setRotation(btQuaternion(scene.uniform(0, 3), 0.3f, 0));
        const btConvexShape* shape = r % 2 ? static_cast<btConvexShape*>(&probe) : &slab;
        btCollisionWorld::ClosestConvexResultCallback got(from.getOrigin(), to.getOrigin());
        btCollisionWorld::ClosestConvexResultCallback expected(from.getOrigin(), to.getOrigin());
        w.world->convexSweepTest(shape, from, to, got);
        const btCollisionObjectArray& objects = w.world->getCollisionObjectArray();
        for (int k = 0; k < objects.size(); ++k) {
            btCollisionObject* object = objects[k];
            if (!expected.needsCollision(object->getBroadphaseHandle())) continue;
            btCollisionWorld::objectQuerySingle(shape, from, to, object,
                                                object->getCollisionShape(),
                                                object->getWorldTransform(), expected, 0);
        }
        EXPECT_EQ(got.m_hitCollisionObject, expected.m_hitCollisionObject) << "sweep " << r;
        EXPECT_EQ(got.m_closestHitFraction, expected.m_closestHitFraction) << "sweep " << r;
        hits += expected.hasHit() && expected.m_hitCollisionObject != w.ground.get() ? 1 : 0;
    }
    EXPECT_GT(hits, 5);  // some sweeps hit a body before the ground
}

/// Drops a grid of boxes, each turned a little, onto the ground of `w` and steps until all
/// sleep (at most `max_steps`); returns the steps taken.
int drop_and_settle(World& w, btBoxShape& cube, int max_steps) {
    std::mt19937 rng(37);
    std::uniform_real_distribution<float> angle(-0.4f, 0.4f);
    for (int x = 0; x < 5; ++x)
        for (int z = 0; z < 5; ++z)
            w.add(&cube,
                  btVector3(3.0f * float(x) - 6, 1.5f + 0.25f * float(x + z), 3.0f * float(z) - 6),
                  btQuaternion(angle(rng), angle(rng), angle(rng)));
    for (int step = 1; step <= max_steps; ++step) {
        w.world->stepSimulation(1.0f / 60, 0);
        const bool asleep = std::all_of(w.bodies.begin(), w.bodies.end(), [](const auto& b) {
            return b->getActivationState() == ISLAND_SLEEPING;
        });
        if (asleep) return step;
    }
    return max_steps + 1;
}

// Test 13: falling boxes come to rest on our broadphase where they rest on btDbvtBroadphase:
// every body asleep, lying on the ground, within a small distance of its Dbvt twin.
TEST_P(BulletWorld, FallingBoxesRestAsOnDbvt) {
    auto bp = make(GetParam());
    ASSERT_TRUE(bp);
    World ours(std::move(bp));
    World dbvt(std::make_unique<btDbvtBroadphase>());
    btBoxShape cube(btVector3(0.5f, 0.5f, 0.5f));
    const int ours_steps = drop_and_settle(ours, cube, 900);
    const int dbvt_steps = drop_and_settle(dbvt, cube, 900);
    EXPECT_LE(ours_steps, 900) << "not every body came to rest";
    EXPECT_LE(dbvt_steps, 900);
    EXPECT_GT(ours_steps, 120);  // a body sleeps after 2 s at rest: they did fall and settle
    EXPECT_NEAR(ours_steps, dbvt_steps, 30);
    ASSERT_EQ(ours.bodies.size(), dbvt.bodies.size());
    for (std::size_t k = 0; k < ours.bodies.size(); ++k) {
        const btTransform& a = ours.bodies[k]->getWorldTransform();
        const btTransform& b = dbvt.bodies[k]->getWorldTransform();
        EXPECT_LT((a.getOrigin() - b.getOrigin()).length(), 1e-3f) << "body " << k;
        EXPECT_NEAR(a.getOrigin().y(), 0.5f, 0.05f) << "body " << k << " is not on the ground";
        const btScalar turn = a.getRotation().angleShortestPath(b.getRotation());
        EXPECT_LT(turn, 1e-3f) << "body " << k;
    }
}

INSTANTIATE_TEST_SUITE_P(Methods, BulletWorld, ::testing::ValuesIn(methods()), method_name);

// ---- Ghost objects and a character controller: pairs at setAabb ----

/// The CPU methods (gpu_lbvh finds its pairs at calculateOverlappingPairs: docs/bullet.md).
std::vector<std::string> cpu_methods() {
    return {"dynamic_aabb_tree", "sweep_and_prune", "kd_tree", "brute_force"};
}

class BulletGhosts : public ::testing::TestWithParam<std::string> {};
class BulletGhostPairs : public ::testing::TestWithParam<std::string> {};

/// The objects of `world` whose broadphase boxes overlap `proxy`'s and whose filters meet its
/// (Bullet's group/mask rule), by uid: what a ghost's own pair cache must hold.
std::set<int> overlapping_uids(btCollisionWorld& world, btBroadphaseProxy* proxy) {
    std::set<int> out;
    const btCollisionObjectArray& objects = world.getCollisionObjectArray();
    for (int k = 0; k < objects.size(); ++k) {
        btBroadphaseProxy* other = objects[k]->getBroadphaseHandle();
        if (other == proxy || !bullet_rule(proxy, other)) continue;
        if (overlaps(box_of(proxy), box_of(other))) out.insert(other->m_uniqueId);
    }
    return out;
}

std::set<int> ghost_uids(btPairCachingGhostObject& ghost) {
    std::set<int> out;
    btBroadphasePairArray& pairs = ghost.getOverlappingPairCache()->getOverlappingPairArray();
    for (int k = 0; k < pairs.size(); ++k) {
        const btBroadphaseProxy* other =
            pairs[k].m_pProxy0->m_clientObject == &ghost ? pairs[k].m_pProxy1 : pairs[k].m_pProxy0;
        out.insert(other->m_uniqueId);
    }
    return out;
}

// Test 14: a btPairCachingGhostObject's own pair cache holds its overlaps right after its
// setAabb, and right after another body's setAabb, with no calculateOverlappingPairs between,
// as on btDbvtBroadphase (whose fat boxes may add more), on the dynamic methods.
TEST_P(BulletGhostPairs, GhostPairsAtSetAabb) {
    // Declared before the world, which they outlive (it destroys the ghost's proxy).
    btGhostPairCallback ghost_callback;
    btCapsuleShape capsule(0.4f, 1.0f);
    btPairCachingGhostObject ghost;
    btBoxShape cube(btVector3(0.5f, 0.5f, 0.5f));
    auto bp = make(GetParam());
    ASSERT_TRUE(bp);
    World w(std::move(bp));
    w.broadphase->getOverlappingPairCache()->setInternalGhostPairCallback(&ghost_callback);
    for (int i = 0; i < 25; ++i)
        w.add(&cube, btVector3(float(i % 5) * 1.5f - 3, 0.5f, float(i / 5) * 1.5f - 3),
              btQuaternion::getIdentity());
    w.world->stepSimulation(1.0f / 60, 0);
    ghost.setCollisionShape(&capsule);
    ghost.setCollisionFlags(btCollisionObject::CF_NO_CONTACT_RESPONSE);
    btTransform at = btTransform::getIdentity();
    at.setOrigin(btVector3(-10, 1, -10));
    ghost.setWorldTransform(at);
    w.world->addCollisionObject(&ghost, btBroadphaseProxy::SensorTrigger,
                                btBroadphaseProxy::AllFilter & ~btBroadphaseProxy::SensorTrigger);
    btBroadphaseProxy* proxy = ghost.getBroadphaseHandle();
    btBroadphaseInterface* broadphase = w.world->getBroadphase();
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> pos(-4, 4);
    int seen = 0;
    for (int k = 0; k < 40; ++k) {
        at.setOrigin(btVector3(pos(rng), 0.8f, pos(rng)));
        ghost.setWorldTransform(at);
        btVector3 lo, hi;
        capsule.getAabb(at, lo, hi);
        broadphase->setAabb(proxy, lo, hi, w.world->getDispatcher());
        const std::set<int> expected = overlapping_uids(*w.world, proxy);
        ASSERT_EQ(ghost_uids(ghost), expected) << "after the ghost's setAabb " << k;
        seen += int(expected.size());
        // A body moved onto the ghost: in the ghost's cache at once.
        btRigidBody* body = w.bodies[std::size_t(k % 25)].get();
        btVector3 blo, bhi;
        body->getCollisionShape()->getAabb(at, blo, bhi);
        broadphase->setAabb(body->getBroadphaseHandle(), blo, bhi, w.world->getDispatcher());
        ASSERT_TRUE(ghost_uids(ghost).count(body->getBroadphaseHandle()->m_uniqueId))
            << "after a body's setAabb " << k;
        ASSERT_EQ(ghost_uids(ghost), overlapping_uids(*w.world, proxy)) << k;
    }
    EXPECT_GT(seen, 20);  // the ghost did meet the boxes
    auto* ours = dynamic_cast<Broadphase*>(w.broadphase.get());
    ASSERT_TRUE(ours);
    EXPECT_TRUE(ours->validate()) << ours->validate().error().message;
    w.world->removeCollisionObject(&ghost);
    w.broadphase->getOverlappingPairCache()->setInternalGhostPairCallback(nullptr);
}

/// Walks a btKinematicCharacterController into a wall for `steps` steps on `broadphase`;
/// returns where it ends.
btVector3 walk_into_wall(std::unique_ptr<btBroadphaseInterface> broadphase, int steps) {
    // Declared before the world, which they outlive.
    btGhostPairCallback ghost_callback;
    btBoxShape wall_shape(btVector3(0.2f, 2, 4));
    btRigidBody::btRigidBodyConstructionInfo info(0, nullptr, &wall_shape);
    info.m_startWorldTransform.setOrigin(btVector3(3, 2, 0));
    btRigidBody wall(info);
    btBoxShape crate(btVector3(0.5f, 0.5f, 0.5f));  // boxes beside the way
    btCapsuleShape capsule(0.4f, 1.0f);
    btPairCachingGhostObject ghost;
    World w(std::move(broadphase));
    w.broadphase->getOverlappingPairCache()->setInternalGhostPairCallback(&ghost_callback);
    w.world->addRigidBody(&wall);
    for (int i = 0; i < 6; ++i)
        w.add(&crate, btVector3(-2.0f + float(i), 0.5f, 2.5f), btQuaternion::getIdentity());
    btTransform start = btTransform::getIdentity();
    start.setOrigin(btVector3(-2, 1.0f, 0));
    ghost.setWorldTransform(start);
    ghost.setCollisionShape(&capsule);
    ghost.setCollisionFlags(btCollisionObject::CF_CHARACTER_OBJECT);
    btKinematicCharacterController character(&ghost, &capsule, 0.35f);
    w.world->addCollisionObject(&ghost, btBroadphaseProxy::CharacterFilter,
                                btBroadphaseProxy::StaticFilter | btBroadphaseProxy::DefaultFilter);
    w.world->addAction(&character);
    character.setWalkDirection(btVector3(0.1f, 0, 0));  // 6 units a second, towards the wall
    for (int step = 0; step < steps; ++step) w.world->stepSimulation(1.0f / 60, 0);
    const btVector3 end = ghost.getWorldTransform().getOrigin();
    w.world->removeAction(&character);
    w.world->removeCollisionObject(&ghost);
    w.world->removeRigidBody(&wall);
    w.broadphase->getOverlappingPairCache()->setInternalGhostPairCallback(nullptr);
    return end;
}

// Test 15: a btKinematicCharacterController walking into a wall stops where it stops on
// btDbvtBroadphase: its recoverFromPenetration calls setAabb on its ghost and reads the ghost's
// pair cache at once, so pairs that appeared only at the next step would let it sink into the
// wall.
TEST_P(BulletGhosts, CharacterControllerStopsAtTheWall) {
    const btVector3 dbvt = walk_into_wall(std::make_unique<btDbvtBroadphase>(), 90);
    const btVector3 ours = walk_into_wall(make(GetParam()), 90);
    EXPECT_LT(dbvt.x(), 3 - 0.2f - 0.4f + 0.05f);  // stopped at the wall's face, not through it
    EXPECT_NEAR(ours.x(), dbvt.x(), 0.02f);
    EXPECT_NEAR(ours.y(), dbvt.y(), 0.02f);
    EXPECT_NEAR(ours.z(), dbvt.z(), 0.02f);
}

INSTANTIATE_TEST_SUITE_P(Methods, BulletGhosts, ::testing::ValuesIn(cpu_methods()), method_name);
// The dynamic methods (a static one is rebuilt once per look, not at each setAabb: its ghosts
// see a setAabb's pairs at the next calculateOverlappingPairs, docs/bullet.md).
INSTANTIATE_TEST_SUITE_P(Methods, BulletGhostPairs,
                         ::testing::Values(std::string("dynamic_aabb_tree"),
                                           std::string("brute_force")),
                         method_name);

}  // namespace
}  // namespace broadphase::testing
