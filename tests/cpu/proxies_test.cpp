// The proxy world (broadphase/proxies.hpp): HandlePool's rules (Box2D's LIFO free list, a
// released handle free only from the next frame on), diff_sorted_pairs, numbered scenarios
// worked out by hand, the errors, and long seeded sequences of adds, removes, moves, filter
// changes and static bodies over every dynamic method, compared frame by frame with an oracle
// computed directly from a map handle -> (box, filter, kind).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "broadphase/proxies.hpp"
#include "broadphase/structure.hpp"

namespace broadphase {
namespace {

using Pairs = std::vector<Pair>;

Box cube(float x, float y, float z, float size = 1) {
    return {{x, y, z}, {x + size, y + size, z + size}};
}

// ---- HandlePool ----

// A pool that has handed out 0 .. n-1.
HandlePool pool_of(int n) {
    HandlePool pool;
    for (int i = 0; i < n; ++i) (void)pool.acquire();
    return pool;
}

// The next handles `pool` hands out are `expected`, in order.
void expect_acquires(HandlePool& pool, std::initializer_list<ProxyHandle> expected) {
    for (const ProxyHandle h : expected) EXPECT_EQ(pool.acquire(), h);
}

// `pool` has handed out handles below `extent`, `count` of them live.
void expect_extent_and_count(const HandlePool& pool, std::uint32_t extent, std::uint32_t count) {
    EXPECT_EQ(pool.extent(), extent);
    EXPECT_EQ(pool.count(), count);
}

// Test 1: a fresh pool hands out 0, 1, 2, ...; extent and count follow.
TEST(HandlePool, Scenario1_FreshHandlesCountUp) {
    HandlePool pool;
    expect_extent_and_count(pool, 0, 0);
    EXPECT_FALSE(pool.live(0));
    expect_acquires(pool, {0, 1, 2, 3, 4});
    expect_extent_and_count(pool, 5, 5);
    for (ProxyHandle h = 0; h < 5; ++h) EXPECT_TRUE(pool.live(h));
    EXPECT_FALSE(pool.live(5));
}

// Test 2: a released handle is not live, and not reused before end_frame().
TEST(HandlePool, Scenario2_ReleasedIsFreeOnlyAfterEndFrame) {
    HandlePool pool = pool_of(3);
    pool.release(1);
    EXPECT_FALSE(pool.live(1));
    expect_extent_and_count(pool, 3, 2);
    expect_acquires(pool, {3, 4});  // 1 is released, not yet free
    pool.end_frame();
    expect_acquires(pool, {1, 5});
    expect_extent_and_count(pool, 6, 6);
}

// Test 3: last in, first out: handles released 0, 4, 2 come back 2, 4, 0, then new ones.
TEST(HandlePool, Scenario3_LastReleasedIsFirstReused) {
    HandlePool pool = pool_of(5);
    pool.release(0);
    pool.release(4);
    pool.release(2);
    pool.end_frame();
    expect_acquires(pool, {2, 4});
    // Released in a later frame: on top of the ones still free.
    pool.release(3);
    pool.end_frame();
    expect_acquires(pool, {3, 0, 5});
    EXPECT_EQ(pool.count(), 6u);
}

// Test 4: releasing a handle that is not live changes nothing; clear() forgets everything.
TEST(HandlePool, Scenario4_ReleaseOfDeadHandleAndClear) {
    HandlePool pool = pool_of(2);
    pool.release(1);
    pool.release(1);  // twice: no effect
    pool.release(9);  // never acquired
    pool.end_frame();
    EXPECT_EQ(pool.count(), 1u);
    expect_acquires(pool, {1, 2});  // 1 was freed once only
    pool.clear();
    expect_extent_and_count(pool, 0, 0);
    EXPECT_EQ(pool.acquire(), 0u);
}

// ---- diff_sorted_pairs ----

TEST(DiffSortedPairs, BeganAndEndedAreSortedDifferences) {
    const Pairs before = {{0, 1}, {0, 2}, {1, 3}, {2, 5}};
    const Pairs now = {{0, 2}, {1, 2}, {2, 5}, {3, 4}};
    Pairs began = {{9, 9}}, ended = {{8, 8}};  // cleared first
    diff_sorted_pairs(before, now, began, ended);
    EXPECT_EQ(began, (Pairs{{1, 2}, {3, 4}}));
    EXPECT_EQ(ended, (Pairs{{0, 1}, {1, 3}}));
    diff_sorted_pairs({}, now, began, ended);
    EXPECT_EQ(began, now);
    EXPECT_TRUE(ended.empty());
}

// ---- ProxyWorld, by hand ----

std::unique_ptr<ProxyWorld> make_world(std::string_view method = "brute_force",
                                       std::string_view static_method = {}) {
    auto world = ProxyWorld::create(method, static_method);
    EXPECT_TRUE(world.ok()) << (world.ok() ? "" : world.error().message);
    return world.ok() ? std::move(world.value()) : nullptr;
}

ProxyFrame step(ProxyWorld& world) {
    auto frame = world.step();
    EXPECT_TRUE(frame.ok()) << (frame.ok() ? "" : frame.error().message);
    EXPECT_TRUE(world.validate().ok()) << world.validate().error().message;
    return frame.ok() ? std::move(frame.value()) : ProxyFrame{};
}

ProxyHandle add(ProxyWorld& world, const Box& box, const Filter& filter = {},
                BodyKind kind = BodyKind::dynamic_body) {
    auto handle = world.add(box, filter, kind);
    EXPECT_TRUE(handle.ok()) << (handle.ok() ? "" : handle.error().message);
    return handle.ok() ? *handle : ProxyHandle(-1);
}

// Scenario 1: two touching dynamic bodies begin, stay, end when one moves away.
TEST(ProxyWorld, Scenario1_BeginStayEnd) {
    auto world = make_world("dynamic_aabb_tree");
    ASSERT_TRUE(world);
    EXPECT_EQ(add(*world, cube(0, 0, 0)), 0u);
    EXPECT_EQ(add(*world, cube(1, 0, 0)), 1u);  // touching faces overlap
    EXPECT_EQ(add(*world, cube(5, 5, 5)), 2u);
    ProxyFrame f = step(*world);
    EXPECT_EQ(f.pairs, (Pairs{{0, 1}}));
    EXPECT_EQ(f.began, (Pairs{{0, 1}}));
    EXPECT_TRUE(f.ended.empty());
    f = step(*world);
    EXPECT_EQ(f.pairs, (Pairs{{0, 1}}));
    EXPECT_TRUE(f.began.empty() && f.ended.empty());
    ASSERT_TRUE(world->move(1, cube(4.5f, 4.5f, 4.5f)).ok());
    f = step(*world);
    EXPECT_EQ(f.pairs, (Pairs{{1, 2}}));
    EXPECT_EQ(f.began, (Pairs{{1, 2}}));
    EXPECT_EQ(f.ended, (Pairs{{0, 1}}));
    EXPECT_EQ(world->size(), 3u);
}

// Scenario 2: static bodies meet dynamic ones, never each other; a static body can move.
TEST(ProxyWorld, Scenario2_StaticMeetsDynamicOnly) {
    auto world = make_world("brute_force", "dynamic_aabb_tree");
    ASSERT_TRUE(world);
    const ProxyHandle ground =
        add(*world, {{-10, -1, -10}, {10, 0, 10}}, {}, BodyKind::static_body);
    const ProxyHandle wall = add(*world, {{-10, -1, -10}, {-9, 5, 10}}, {}, BodyKind::static_body);
    ProxyFrame f = step(*world);
    EXPECT_TRUE(f.pairs.empty());  // ground and wall overlap, but both are static
    const ProxyHandle ball = add(*world, cube(-9.5f, -0.5f, 0));
    f = step(*world);
    EXPECT_EQ(f.pairs, (Pairs{{ground, ball}, {wall, ball}}));
    EXPECT_EQ(f.began, f.pairs);
    ASSERT_TRUE(world->move(wall, {{-20, -1, -10}, {-19, 5, 10}}).ok());
    f = step(*world);
    EXPECT_EQ(f.pairs, (Pairs{{ground, ball}}));
    EXPECT_EQ(f.ended, (Pairs{{wall, ball}}));
    ASSERT_TRUE(world->remove(ground).ok());
    f = step(*world);
    EXPECT_TRUE(f.pairs.empty());
    EXPECT_EQ(f.ended, (Pairs{{ground, ball}}));
}

// Scenario 3: filters, dynamic against dynamic and against static: masks, a negative group
// that never collides, a positive group that always does, and a change of filter mid-way.
TEST(ProxyWorld, Scenario3_Filters) {
    auto world = make_world("brute_force");
    ASSERT_TRUE(world);
    const Filter player{0x2, 0xFFFFFFFFu & ~0x2u, 0};  // does not meet other players
    const ProxyHandle a = add(*world, cube(0, 0, 0), player);
    const ProxyHandle b = add(*world, cube(0.5f, 0, 0), player);
    const ProxyHandle c = add(*world, cube(0, 0.5f, 0));  // default: meets everyone
    const ProxyHandle s =
        add(*world, cube(0, 0, 0.5f), Filter{0x4, 0x1, 0}, BodyKind::static_body);  // only 0x1
    ProxyFrame f = step(*world);
    EXPECT_EQ(f.pairs, (Pairs{{a, c}, {b, c}, {c, s}}));
    // Same negative group: a and c never meet; same positive group beats the masks: a and b do.
    ASSERT_TRUE(world->set_filter(a, Filter{0x2, ~0x2u, 7}).ok());
    ASSERT_TRUE(world->set_filter(b, Filter{0x2, ~0x2u, 7}).ok());
    f = step(*world);
    EXPECT_EQ(f.pairs, (Pairs{{a, b}, {a, c}, {b, c}, {c, s}}));
    EXPECT_EQ(f.began, (Pairs{{a, b}}));
    ASSERT_TRUE(world->set_filter(c, Filter{1, 0xFFFFFFFFu, -3}).ok());
    ASSERT_TRUE(world->set_filter(a, Filter{1, 0xFFFFFFFFu, -3}).ok());
    f = step(*world);
    // a left group 7 for -3 (c's): a and b fall back to their bits, which allow them.
    EXPECT_EQ(f.pairs, (Pairs{{a, b}, {a, s}, {b, c}, {c, s}}));
    EXPECT_EQ(f.began, (Pairs{{a, s}}));
    EXPECT_EQ(f.ended, (Pairs{{a, c}}));
}

// Scenario 4: a body removed and one added in its place in the same frame get different
// handles, so the frame reports the old pair ended and the new one begun; the next frame's add
// reuses the freed handle, with the default filter rather than the removed body's.
TEST(ProxyWorld, Scenario4_RemoveAndAddInOneFrame) {
    auto world = make_world("brute_force");
    ASSERT_TRUE(world);
    EXPECT_EQ(add(*world, cube(0, 0, 0), Filter{1, 0, 0}), 0u);  // meets nothing
    EXPECT_EQ(add(*world, cube(0, 0, 0)), 1u);
    ProxyFrame f = step(*world);
    EXPECT_TRUE(f.pairs.empty());
    ASSERT_TRUE(world->set_filter(0, Filter{}).ok());
    ASSERT_TRUE(world->remove(1).ok());
    EXPECT_EQ(add(*world, cube(0, 0, 0)), 2u);
    f = step(*world);
    EXPECT_EQ(f.pairs, (Pairs{{0, 2}}));
    ASSERT_TRUE(world->set_filter(2, Filter{1, 0, 0}).ok());
    ASSERT_TRUE(world->remove(2).ok());
    EXPECT_EQ(add(*world, cube(0.5f, 0, 0)), 1u);  // freed last frame
    f = step(*world);
    EXPECT_EQ(f.pairs, (Pairs{{0, 1}}));
    EXPECT_EQ(f.began, (Pairs{{0, 1}}));
    EXPECT_EQ(f.ended, (Pairs{{0, 2}}));
    EXPECT_EQ(add(*world, cube(0.5f, 0.5f, 0)), 2u);  // the filter {1, 0, 0} went with the body
    f = step(*world);
    EXPECT_EQ(f.pairs, (Pairs{{0, 1}, {0, 2}, {1, 2}}));
}

// Scenario 5: the first step of an empty world, and removing everything.
TEST(ProxyWorld, Scenario5_EmptyAndEmptied) {
    auto world = make_world("brute_force");
    ASSERT_TRUE(world);
    ProxyFrame f = step(*world);
    EXPECT_TRUE(f.pairs.empty() && f.began.empty() && f.ended.empty());
    for (int i = 0; i < 4; ++i) add(*world, cube(0.1f * float(i), 0, 0));
    f = step(*world);
    EXPECT_EQ(f.pairs.size(), 6u);
    for (ProxyHandle h = 0; h < 4; ++h) ASSERT_TRUE(world->remove(h).ok());
    EXPECT_EQ(world->size(), 0u);
    f = step(*world);
    EXPECT_TRUE(f.pairs.empty());
    EXPECT_EQ(f.ended.size(), 6u);
    EXPECT_EQ(add(*world, cube(0, 0, 0)), 3u);  // the last removed first
}

// Errors: each names the handle, the call or the method.
TEST(ProxyWorld, ErrorsNameTheHandleOrMethod) {
    auto not_dynamic = ProxyWorld::create("sweep_and_prune");
    ASSERT_FALSE(not_dynamic.ok());
    EXPECT_EQ(not_dynamic.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(not_dynamic.error().message.find("sweep_and_prune"), std::string::npos);
    auto static_not_dynamic = ProxyWorld::create("brute_force", "kd_tree");
    ASSERT_FALSE(static_not_dynamic.ok());
    EXPECT_NE(static_not_dynamic.error().message.find("kd_tree"), std::string::npos);
    auto unknown = ProxyWorld::create("no_such_method");
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().message.find("no_such_method"), std::string::npos);

    auto world = make_world("dynamic_aabb_tree");
    ASSERT_TRUE(world);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto bad = world->add(Box{{0, 0, 0}, {1, nan, 1}});
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code, ErrorCode::invalid_box);
    EXPECT_NE(bad.error().message.find("max.y is NaN"), std::string::npos) << bad.error().message;
    auto inverted = world->add(Box{{0, 2, 0}, {1, 1, 1}});
    ASSERT_FALSE(inverted.ok());
    EXPECT_EQ(world->size(), 0u);
    EXPECT_EQ(add(*world, cube(0, 0, 0)), 0u);  // the failed adds took no handle

    for (const ProxyHandle h : {1u, 7u, 0xFFFFFFFFu}) {
        const std::string name = "handle " + std::to_string(h) + " is not live";
        Status r = world->remove(h);
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("remove: " + name), std::string::npos)
            << r.error().message;
        EXPECT_EQ(r.error().box, std::optional<std::size_t>(h));
        Status m = world->move(h, cube(0, 0, 0));
        ASSERT_FALSE(m.ok());
        EXPECT_NE(m.error().message.find("move: " + name), std::string::npos);
        Status s = world->set_filter(h, Filter{});
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message.find("set_filter: " + name), std::string::npos);
    }
    Status m = world->move(0, Box{{0, 0, 0}, {-1, 1, 1}});
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().code, ErrorCode::invalid_box);
    EXPECT_NE(m.error().message.find("move: handle 0: min.x"), std::string::npos)
        << m.error().message;
    ASSERT_TRUE(world->remove(0).ok());
    Status twice = world->remove(0);  // removed, not yet free: still an error
    ASSERT_FALSE(twice.ok());
    EXPECT_NE(twice.error().message.find("handle 0 is not live"), std::string::npos);
    EXPECT_TRUE(world->validate().ok());
}

// ---- ProxyWorld against an oracle, over every dynamic method ----

struct OracleBody {
    Box box;
    Filter filter;
    BodyKind kind = BodyKind::dynamic_body;
};

/// The pairs of the bodies, straight from the definition.
Pairs oracle_pairs(const std::map<ProxyHandle, OracleBody>& bodies) {
    Pairs pairs;
    for (auto a = bodies.begin(); a != bodies.end(); ++a) {
        for (auto b = std::next(a); b != bodies.end(); ++b) {
            if (a->second.kind == BodyKind::static_body && b->second.kind == BodyKind::static_body)
                continue;
            if (overlaps(a->second.box, b->second.box) &&
                should_collide(a->second.filter, b->second.filter))
                pairs.push_back({a->first, b->first});
        }
    }
    return pairs;  // map order: already sorted
}

struct SequenceOptions {
    std::uint32_t seed = 1;
    int frames = 300;
    bool filters = true;      // random filters and set_filter; false: every filter the default
    bool statics = true;      // static bodies too
    int target_bodies = 120;  // about how many bodies are live
};

Filter random_filter(std::mt19937& rng) {
    static constexpr std::uint32_t kCategories[] = {1, 2, 4, 0x80000000u};
    static constexpr std::uint32_t kMasks[] = {0xFFFFFFFFu, 0xFFFFFFFFu, ~2u, 1 | 4, 0, 2};
    static constexpr std::int32_t kGroups[] = {0, 0, 0, 0, 1, -1, 2, -2};
    return Filter{kCategories[rng() % 4], kMasks[rng() % 6], kGroups[rng() % 8]};
}

Box random_box(std::mt19937& rng) {
    std::uniform_real_distribution<float> at(0, 10);
    std::uniform_real_distribution<float> size(0, 1.6f);
    Box b;
    for (int axis = 0; axis < 3; ++axis) {
        b.min[axis] = at(rng);
        // Now and then flat on an axis, or snapped to a grid so that faces touch exactly.
        const auto kind = rng() % 10;
        if (kind == 0) {
            b.max[axis] = b.min[axis];
        } else if (kind == 1) {
            b.min[axis] = std::floor(b.min[axis]);
            b.max[axis] = b.min[axis] + 1;
        } else {
            b.max[axis] = b.min[axis] + size(rng);
        }
    }
    return b;
}

/// A small move of `b`, or now and then a jump elsewhere.
Box moved(const Box& b, std::mt19937& rng) {
    if (rng() % 8 == 0) return random_box(rng);
    std::uniform_real_distribution<float> step(-0.4f, 0.4f);
    Box out = b;
    for (int axis = 0; axis < 3; ++axis) {
        const float d = step(rng);
        out.min[axis] += d;
        out.max[axis] += d;
    }
    return out;
}

/// Runs a seeded sequence on a world of `method` and compares every frame with the oracle:
/// pairs, began and ended (the oracle's consecutive differences), handles live and size.
void run_sequence(const std::string& method, const std::string& static_method,
                  const SequenceOptions& o) {
    SCOPED_TRACE("seed " + std::to_string(o.seed));
    auto world = make_world(method, static_method);
    ASSERT_TRUE(world);
    std::mt19937 rng(o.seed);
    std::map<ProxyHandle, OracleBody> bodies;
    Pairs previous;
    std::vector<ProxyHandle> released;  // this frame's removes: not reused before the step
    std::vector<ProxyHandle> emptied;   // the handles released when everything was removed
    ProxyHandle last_added = 0;
    auto any_live = [&] {
        auto it = bodies.begin();
        std::advance(it, static_cast<long>(rng() % bodies.size()));
        return it->first;
    };
    auto add_one = [&](BodyKind kind) {
        const Box box = random_box(rng);
        const Filter filter = o.filters ? random_filter(rng) : Filter{};
        auto h = world->add(box, filter, kind);
        ASSERT_TRUE(h.ok()) << h.error().message;
        ASSERT_EQ(bodies.count(*h), 0u) << "handle " << *h << " handed out twice";
        ASSERT_EQ(std::count(released.begin(), released.end(), *h), 0)
            << "handle " << *h << " reused in the frame it was released";
        bodies[*h] = {box, filter, kind};
        last_added = *h;
    };
    auto remove_one = [&](ProxyHandle h) {
        ASSERT_TRUE(world->remove(h).ok());
        bodies.erase(h);
        released.push_back(h);
    };
    for (int frame = 0; frame < o.frames; ++frame) {
        SCOPED_TRACE("frame " + std::to_string(frame));
        if (frame == o.frames / 3 || frame == o.frames / 3 + 1) {
            // Everything removed (and, the frame after, nothing there to remove).
            while (!bodies.empty()) remove_one(bodies.begin()->first);
            if (frame == o.frames / 3) emptied = released;
        } else if (frame == o.frames / 3 + 2) {
            // Refilled at once: the freed handles come back, last released first.
            for (int i = 0; i < o.target_bodies; ++i) {
                add_one(BodyKind::dynamic_body);
                const auto k = static_cast<std::size_t>(i);
                if (k < emptied.size()) {
                    ASSERT_EQ(last_added, emptied[emptied.size() - 1 - k]) << "refill " << i;
                }
            }
        } else {
            const int ops = static_cast<int>(rng() % 24);
            for (int op = 0; op < ops && !::testing::Test::HasFatalFailure(); ++op) {
                const auto r = rng() % 100;
                const bool crowded = static_cast<int>(bodies.size()) > o.target_bodies;
                if (bodies.empty() || (r < 25 && !crowded)) {
                    add_one(o.statics && rng() % 4 == 0 ? BodyKind::static_body
                                                        : BodyKind::dynamic_body);
                } else if (r < 45) {
                    remove_one(any_live());
                } else if (r < 85) {
                    const ProxyHandle h = any_live();
                    // Static bodies move rarely.
                    if (bodies[h].kind == BodyKind::static_body && rng() % 4 != 0) continue;
                    const Box box = moved(bodies[h].box, rng);
                    ASSERT_TRUE(world->move(h, box).ok());
                    bodies[h].box = box;
                } else if (o.filters) {
                    const ProxyHandle h = any_live();
                    const Filter filter = random_filter(rng);
                    ASSERT_TRUE(world->set_filter(h, filter).ok());
                    bodies[h].filter = filter;
                } else {
                    // Removed and added in the same frame.
                    remove_one(any_live());
                    add_one(BodyKind::dynamic_body);
                }
            }
        }
        if (::testing::Test::HasFatalFailure()) return;
        auto got = world->step();
        ASSERT_TRUE(got.ok()) << got.error().message;
        released.clear();
        const Pairs want = oracle_pairs(bodies);
        Pairs began, ended;
        std::set_difference(want.begin(), want.end(), previous.begin(), previous.end(),
                            std::back_inserter(began));
        std::set_difference(previous.begin(), previous.end(), want.begin(), want.end(),
                            std::back_inserter(ended));
        ASSERT_EQ(got->pairs, want);
        ASSERT_EQ(got->began, began);
        ASSERT_EQ(got->ended, ended);
        ASSERT_EQ(world->size(), bodies.size());
        if (frame % 10 == 0) {
            Status valid = world->validate();
            ASSERT_TRUE(valid.ok()) << valid.error().message;
        }
        previous = want;
    }
    EXPECT_GT(previous.size(), 0u);
}

class ProxyWorldSequences : public ::testing::TestWithParam<std::string> {};

// Default filters: tests the bookkeeping (handles, statics, events) of every dynamic method.
TEST_P(ProxyWorldSequences, UnfilteredMatchOracle) {
    for (std::uint32_t seed : {1u, 2u}) {
        SequenceOptions o;
        o.seed = seed;
        o.filters = false;
        run_sequence(GetParam(), {}, o);
        if (HasFatalFailure()) return;
    }
}

// Random filters and filter changes: needs the method's self_pairs to filter.
TEST_P(ProxyWorldSequences, FilteredMatchOracle) {
    for (std::uint32_t seed : {3u, 4u}) {
        SequenceOptions o;
        o.seed = seed;
        run_sequence(GetParam(), {}, o);
        if (HasFatalFailure()) return;
    }
}

// The static world in the method, the dynamic bodies in brute force (filters included: the
// static structure is only queried, the world filters its hits); and the other way round with
// default filters (FilteredMatchOracle covers the method filtering its own self pairs).
TEST_P(ProxyWorldSequences, MixedWithBruteForceMatchOracle) {
    SequenceOptions o;
    o.seed = 5;
    o.frames = 150;
    run_sequence("brute_force", GetParam(), o);
    if (HasFatalFailure()) return;
    o.seed = 6;
    o.filters = false;
    run_sequence(GetParam(), "brute_force", o);
}

std::vector<std::string> dynamic_methods() {
    std::vector<std::string> methods;
    for (const std::string_view m : cpu_method_names()) {
        auto s = make_structure(m);
        if (s.ok() && s.value()->is_dynamic()) methods.emplace_back(m);
    }
    return methods;
}

INSTANTIATE_TEST_SUITE_P(Cpu, ProxyWorldSequences, ::testing::ValuesIn(dynamic_methods()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                             return param.param;
                         });

// Two worlds given the same calls hand out the same handles and report the same frames,
// whatever their methods (what lets the GPU scene's frames compare with the CPU's exactly).
TEST(ProxyWorld, SameCallsSameHandlesAcrossMethods) {
    auto a = make_world("brute_force");
    auto b = make_world("dynamic_aabb_tree", "uniform_grid");
    ASSERT_TRUE(a && b);
    std::mt19937 rng(11);
    std::vector<ProxyHandle> live;
    for (int frame = 0; frame < 60; ++frame) {
        for (int op = 0; op < 10; ++op) {
            if (live.empty() || rng() % 3 != 0) {
                const Box box = random_box(rng);
                const BodyKind kind =
                    rng() % 5 == 0 ? BodyKind::static_body : BodyKind::dynamic_body;
                auto ha = a->add(box, {}, kind);
                auto hb = b->add(box, {}, kind);
                ASSERT_TRUE(ha.ok() && hb.ok());
                ASSERT_EQ(*ha, *hb);
                live.push_back(*ha);
            } else {
                const std::size_t k = rng() % live.size();
                ASSERT_TRUE(a->remove(live[k]).ok());
                ASSERT_TRUE(b->remove(live[k]).ok());
                live.erase(live.begin() + static_cast<long>(k));
            }
        }
        auto fa = a->step();
        auto fb = b->step();
        ASSERT_TRUE(fa.ok() && fb.ok());
        ASSERT_EQ(fa->pairs, fb->pairs);
        ASSERT_EQ(fa->began, fb->began);
        ASSERT_EQ(fa->ended, fb->ended);
    }
}

}  // namespace
}  // namespace broadphase
