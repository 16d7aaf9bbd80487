// Tests of PairTracker (include/broadphase/pair_tracker.hpp, cpu_reference/pair_tracker.cpp):
// the pairs of a changing world kept from its changed bodies alone. Each scenario checks the
// tracker against brute force over the same boxes and filters after every update (validate()
// does the O(n^2) check), and the events against the difference of consecutive pair sets.
#include "broadphase/pair_tracker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "broadphase/proxies.hpp"
#include "broadphase/structure.hpp"

namespace broadphase {
namespace {

std::unique_ptr<PairTracker> make(const std::string& method, float hysteresis = 0) {
    PairTracker::Config config;
    config.method = method;
    config.hysteresis = hysteresis;
    auto made = PairTracker::create(config);
    EXPECT_TRUE(made) << (made ? "" : made.error().message);
    return std::move(made.value());
}

std::vector<Pair> sorted(std::span<const Pair> pairs) {
    std::vector<Pair> out(pairs.begin(), pairs.end());
    std::sort(out.begin(), out.end());
    return out;
}

/// The world the tracker should see: boxes, filters, static flags, present flags.
struct World {
    std::vector<Box> boxes;
    std::vector<Filter> filters;
    std::vector<bool> is_static, present;
    std::mt19937 rng{7};

    float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); }
    int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
    Box random_box(float world, float size) {
        const Vec3 lo{uniform(0, world), uniform(0, world), uniform(0, world)};
        const float s = uniform(0.2f, 1.0f) * size;
        return {lo, {lo.x + s, lo.y + s * uniform(0.5f, 1.5f), lo.z + s}};
    }
    Filter random_filter() {
        Filter f;
        f.category = 1u << pick(0, 2);
        f.mask = pick(0, 3) == 0 ? 0xFFFFFFFFu : (1u << pick(0, 2)) | 1u;
        f.group = pick(0, 5) == 0 ? pick(-2, 2) : 0;
        return f;
    }
    std::vector<Pair> brute() const {
        std::vector<Pair> out;
        for (std::uint32_t i = 0; i < boxes.size(); ++i)
            for (std::uint32_t j = i + 1; j < boxes.size(); ++j)
                if (present[i] && present[j] && !(is_static[i] && is_static[j]) &&
                    should_collide(filters[i], filters[j]) && overlaps(boxes[i], boxes[j]))
                    out.push_back({i, j});
        return out;
    }
};

/// Checks the tracker against brute force and the events against the pair sets' difference.
void check_update(PairTracker& tracker, const World& w, std::vector<Pair>& last,
                  const std::string& where, bool one_by_one = false,
                  const std::vector<std::uint32_t>& changed = {}) {
    std::vector<Pair> began, ended;
    if (one_by_one) {
        for (const std::uint32_t id : changed) ASSERT_TRUE(tracker.update(id, began, ended));
    }
    ASSERT_TRUE(tracker.update(began, ended)) << where;
    ASSERT_FALSE(tracker.pending()) << where;
    const std::vector<Pair> now = sorted(tracker.pairs());
    ASSERT_EQ(now, w.brute()) << where;
    std::vector<Pair> overlapping;  // a tracker that keeps pairs gives them
    tracker.overlapping_pairs(overlapping);
    ASSERT_EQ(sorted(overlapping), now) << where;
    ASSERT_TRUE(tracker.validate()) << where << ": " << tracker.validate().error().message;
    std::vector<std::vector<std::uint32_t>> expect_partners(w.boxes.size());
    for (const Pair& p : now) {
        expect_partners[p.i].push_back(p.j);
        expect_partners[p.j].push_back(p.i);
    }
    for (std::uint32_t id = 0; id < w.boxes.size(); id += 7) {  // partners() agrees
        std::vector<std::uint32_t> got;
        tracker.partners(id, got);
        std::sort(got.begin(), got.end());
        std::sort(expect_partners[id].begin(), expect_partners[id].end());
        ASSERT_EQ(got, expect_partners[id]) << where << ", partners of " << id;
    }
    std::vector<Pair> expect_began, expect_ended;
    diff_sorted_pairs(last, now, expect_began, expect_ended);
    std::sort(began.begin(), began.end());
    std::sort(ended.begin(), ended.end());
    if (!one_by_one) {
        ASSERT_EQ(began, expect_began) << where;
        ASSERT_EQ(ended, expect_ended) << where;
    } else {
        // One by one, a pair may end and begin again within the step; the net is the same.
        std::vector<Pair> net_began, net_ended;
        std::set_difference(began.begin(), began.end(), ended.begin(), ended.end(),
                            std::back_inserter(net_began));
        std::set_difference(ended.begin(), ended.end(), began.begin(), began.end(),
                            std::back_inserter(net_ended));
        ASSERT_EQ(net_began, expect_began) << where;
        ASSERT_EQ(net_ended, expect_ended) << where;
    }
    last = now;
}

/// Runs a world of `n` bodies for `frames` frames of moves (some far), inserts, removes and
/// filter changes on `method`.
/// `still` of 20 bodies keep still in a frame (8: most move, and an update tests every
/// candidate at once; 17: a few move, and it tests the changed bodies' lists; -1: 8 and 17 in
/// turn, so that each test through the lists follows one of every candidate).
/// `level`: every third body has Bullet's static filter (category 2, a mask without it), the
/// largest class whose bodies never pair with each other (the bulk fill keeps it apart).
void run_world(const std::string& method, int n, int frames, bool one_by_one, int still = 8,
               bool level = false) {
    auto tracker = make(method);
    ASSERT_TRUE(tracker);
    World w;
    std::vector<Pair> last;
    for (int i = 0; i < n; ++i) {
        w.boxes.push_back(w.random_box(12, 1.5f));
        w.filters.push_back(level && i % 3 == 0 ? Filter{2, ~2u, 0}
                            : i % 7 == 0        ? w.random_filter()
                                                : Filter{});
        w.is_static.push_back(i % 11 == 0);
        w.present.push_back(true);
        ASSERT_TRUE(tracker->insert(std::uint32_t(i), w.boxes.back(), w.filters.back(),
                                    w.is_static.back()));
    }
    // Touching faces, edges and corners, and a box inside another.
    const Box touching[] = {{{20, 20, 20}, {21, 21, 21}},
                            {{21, 20, 20}, {22, 21, 21}},
                            {{22, 21, 20}, {23, 22, 21}},
                            {{23, 22, 21}, {24, 23, 22}},
                            {{20.2f, 20.2f, 20.2f}, {20.3f, 20.3f, 20.3f}}};
    for (const Box& b : touching) {
        const std::uint32_t id = std::uint32_t(w.boxes.size());
        w.boxes.push_back(b);
        w.filters.push_back({});
        w.is_static.push_back(false);
        w.present.push_back(true);
        ASSERT_TRUE(tracker->insert(id, b));
    }
    check_update(*tracker, w, last, method + " frame 0");
    for (int frame = 1; frame <= frames; ++frame) {
        std::vector<std::uint32_t> changed;
        for (std::uint32_t id = 0; id < w.boxes.size(); ++id) {
            if (!w.present[id] || w.is_static[id]) continue;
            const int what = w.pick(0, 19);
            if (what < (still >= 0 ? still : frame % 2 ? 8 : 17)) continue;
            Box& b = w.boxes[id];
            Vec3 d{w.uniform(-0.2f, 0.2f), w.uniform(-0.3f, 0.1f), w.uniform(-0.2f, 0.2f)};
            if (what == 19) d = {w.uniform(-8, 8), w.uniform(-8, 8), 0};  // a teleport
            b = {{b.min.x + d.x, b.min.y + d.y, b.min.z + d.z},
                 {b.max.x + d.x, b.max.y + d.y, b.max.z + d.z}};
            ASSERT_TRUE(tracker->move(id, b));
            changed.push_back(id);
        }
        for (int k = 0; k < 3; ++k) {  // removes, and inserts into free ids
            const std::uint32_t id = std::uint32_t(w.pick(0, int(w.boxes.size()) - 1));
            if (w.present[id]) {
                w.present[id] = false;
                ASSERT_TRUE(tracker->remove(id));
            } else {
                w.present[id] = true;
                w.boxes[id] = w.random_box(12, 1.5f);
                ASSERT_TRUE(tracker->insert(id, w.boxes[id], w.filters[id], w.is_static[id]));
            }
            changed.push_back(id);
        }
        for (int k = 0; k < 2; ++k) {  // filter changes
            const std::uint32_t id = std::uint32_t(w.pick(0, int(w.boxes.size()) - 1));
            if (!w.present[id]) continue;
            w.filters[id] = w.random_filter();
            ASSERT_TRUE(tracker->set_filter(id, w.filters[id]));
            changed.push_back(id);
        }
        check_update(*tracker, w, last, method + " frame " + std::to_string(frame), one_by_one,
                     changed);
    }
}

// Test 1: every CPU method, all changes applied together, 30 frames of 300 bodies, most of
// them moving; the dynamic tree with few moving too.
TEST(PairTracker, EveryMethodEqualsBruteForce) {
    for (const std::string_view method : cpu_method_names()) {
        SCOPED_TRACE(std::string(method));
        run_world(std::string(method), 300, 30, false);
    }
    run_world("dynamic_aabb_tree", 300, 30, false, 17);
    run_world("dynamic_aabb_tree", 300, 30, false, -1);
    run_world("dynamic_aabb_tree", 300, 30, true, -1);
    run_world("dynamic_aabb_tree", 300, 10, false, 8, true);
    run_world("sweep_and_prune", 300, 10, false, 8, true);
}

// Test 1b: a query index (Config::pairs false) keeps no candidates or pairs, reports no event,
// and answers region queries and overlapping_pairs (filters and static bodies applied) as brute
// force, on a dynamic and on a static method.
TEST(PairTracker, QueryIndexKeepsNoPairs) {
    for (const char* method : {"dynamic_aabb_tree", "kd_tree"}) {
        SCOPED_TRACE(method);
        PairTracker::Config config;
        config.method = method;
        config.pairs = false;
        auto made = PairTracker::create(config);
        ASSERT_TRUE(made);
        PairTracker& index = *made.value();
        World w;
        for (std::uint32_t id = 0; id < 300; ++id) {
            w.boxes.push_back(w.random_box(12, 1.5f));
            w.filters.push_back(w.random_filter());
            w.is_static.push_back(id % 7 == 0);
            w.present.push_back(true);
            ASSERT_TRUE(index.insert(id, w.boxes.back(), w.filters.back(), w.is_static.back()));
        }
        std::vector<Pair> began, ended;
        for (int frame = 0; frame < 5; ++frame) {
            for (std::uint32_t id = 0; id < 300; id += 3) {
                w.boxes[id] = w.random_box(12, 1.5f);
                ASSERT_TRUE(index.move(id, w.boxes[id]));
            }
            ASSERT_TRUE(index.update(began, ended));
            EXPECT_TRUE(began.empty());
            EXPECT_TRUE(ended.empty());
            EXPECT_TRUE(index.pairs().empty());
            ASSERT_TRUE(index.validate()) << index.validate().error().message;
            std::vector<Pair> overlapping;
            index.overlapping_pairs(overlapping);
            std::sort(overlapping.begin(), overlapping.end());
            EXPECT_EQ(overlapping, w.brute());
            for (int q = 0; q < 10; ++q) {
                const Box region = w.random_box(12, 3);
                std::vector<std::uint32_t> got, expected;
                index.query_box(region, got);
                for (std::uint32_t id = 0; id < 300; ++id)
                    if (overlaps(w.boxes[id], region)) expected.push_back(id);
                std::sort(got.begin(), got.end());
                EXPECT_EQ(got, expected);
            }
        }
        EXPECT_EQ(index.stats().candidate_tests, 0u);
        EXPECT_EQ(index.stats().requeries, 0u);
    }
}

// Test 2: changes applied body by body (a Bullet setAabb), then the rest together.
TEST(PairTracker, OneByOneEqualsBruteForce) {
    run_world("dynamic_aabb_tree", 400, 30, true);
    run_world("sweep_and_prune", 200, 20, true);  // a static method's side list
}

// Test 3: a batch filling the empty tracker costs one build; unchanged and sleeping bodies
// cost nothing: an update with no change tests no candidate; an update of one body tests that
// body's candidates alone.
TEST(PairTracker, CostFollowsTheChanges) {
    auto tracker = make("dynamic_aabb_tree");
    std::vector<Pair> began, ended;
    // A 20 x 20 layer of touching unit boxes: each has up to 8 partners.
    for (int i = 0; i < 400; ++i) {
        const float x = float(i % 20), z = float(i / 20);
        ASSERT_TRUE(tracker->insert(std::uint32_t(i), {{x, 0, z}, {x + 1, 1, z + 1}}));
    }
    ASSERT_TRUE(tracker->update(began, ended));
    EXPECT_EQ(began.size(), tracker->pairs().size());
    // The batch of ids 0 .. 399 filled the empty tracker by one build, with no query.
    EXPECT_EQ(tracker->stats().rebuilds, 1u);
    EXPECT_EQ(tracker->stats().requeries, 0u);
    ASSERT_TRUE(tracker->validate());
    const PairTrackerStats before = tracker->stats();
    ASSERT_TRUE(tracker->update(began, ended));
    EXPECT_EQ(tracker->stats().candidate_tests, before.candidate_tests);
    EXPECT_EQ(tracker->stats().requeries, before.requeries);
    // Body 210 (x 10, z 10) moves a little, inside its fat box: no requery, its candidates
    // tested once each.
    ASSERT_TRUE(tracker->move(210, {{10.01f, 0, 10}, {11.01f, 1, 11}}));
    began.clear();
    ended.clear();
    ASSERT_TRUE(tracker->update(began, ended));
    const PairTrackerStats after = tracker->stats();
    EXPECT_EQ(after.requeries, before.requeries);
    std::vector<std::uint32_t> partners;
    tracker->partners(210, partners);
    EXPECT_EQ(partners.size(), 5u);  // x 11 and the same x; no longer x 10
    EXPECT_EQ(after.candidate_tests - before.candidate_tests, 8u);  // its 8 candidates
    // It moved off the face of 209 (x 9) and the edges of 189 and 229: those pairs ended.
    std::sort(ended.begin(), ended.end());
    EXPECT_EQ(ended, (std::vector<Pair>{{189, 210}, {209, 210}, {210, 229}}));
    EXPECT_TRUE(began.empty());
    ASSERT_TRUE(tracker->validate());
}

// Test 4: with hysteresis h, a pair lasts until the boxes are more than h apart.
TEST(PairTracker, HysteresisKeepsPairsUntilApart) {
    auto tracker = make("dynamic_aabb_tree", 0.5f);
    std::vector<Pair> began, ended;
    ASSERT_TRUE(tracker->insert(0, {{0, 0, 0}, {1, 1, 1}}));
    ASSERT_TRUE(tracker->insert(1, {{1.2f, 0, 0}, {2.2f, 1, 1}}));  // 0.2 apart: no pair yet
    ASSERT_TRUE(tracker->update(began, ended));
    EXPECT_TRUE(tracker->pairs().empty());
    ASSERT_TRUE(tracker->move(1, {{1, 0, 0}, {2, 1, 1}}));  // touching: begins
    ASSERT_TRUE(tracker->update(began, ended));
    EXPECT_EQ(began, (std::vector<Pair>{{0, 1}}));
    ASSERT_TRUE(tracker->move(1, {{1.4f, 0, 0}, {2.4f, 1, 1}}));  // 0.4 apart: kept
    ASSERT_TRUE(tracker->update(began, ended));
    EXPECT_EQ(tracker->pairs().size(), 1u);
    EXPECT_TRUE(ended.empty());
    ASSERT_TRUE(tracker->move(1, {{1.6f, 0, 0}, {2.6f, 1, 1}}));  // 0.6 apart: ends
    ASSERT_TRUE(tracker->update(began, ended));
    EXPECT_EQ(ended, (std::vector<Pair>{{0, 1}}));
    ASSERT_TRUE(tracker->validate());
}

// Test 5: bad input is named; a removed body inserted again under its id within one update
// keeps its pairs out of the events.
TEST(PairTracker, BadInputAndRebirth) {
    auto tracker = make("dynamic_aabb_tree");
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto bad = tracker->insert(3, {{0, 0, 0}, {nan, 1, 1}});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, ErrorCode::invalid_box);
    EXPECT_EQ(bad.error().box, std::size_t(3));
    EXPECT_FALSE(tracker->move(9, {{0, 0, 0}, {1, 1, 1}}));    // not present
    EXPECT_FALSE(tracker->insert(1, {{2, 0, 0}, {1, 1, 1}}));  // min > max
    std::vector<Pair> began, ended;
    ASSERT_TRUE(tracker->insert(0, {{0, 0, 0}, {1, 1, 1}}));
    ASSERT_TRUE(tracker->insert(1, {{0.5f, 0, 0}, {1.5f, 1, 1}}));
    EXPECT_FALSE(tracker->insert(1, {{0, 0, 0}, {1, 1, 1}}));  // already present
    ASSERT_TRUE(tracker->update(began, ended));
    began.clear();
    ASSERT_TRUE(tracker->remove(1));
    ASSERT_TRUE(tracker->insert(1, {{0.7f, 0, 0}, {1.7f, 1, 1}}));
    ASSERT_TRUE(tracker->update(began, ended));
    EXPECT_TRUE(began.empty());
    EXPECT_TRUE(ended.empty());
    EXPECT_EQ(tracker->pairs().size(), 1u);
    ASSERT_TRUE(tracker->validate());
    PairTracker::Config config;
    config.margin = -1;
    EXPECT_FALSE(PairTracker::create(config));
    config = {};
    config.method = "no_such_method";
    EXPECT_FALSE(PairTracker::create(config));
}

// Test 6: a ray, its boxes grown by a swept shape's extent, finds exactly the boxes brute
// force finds, with their entry t, on every method (one walk of the dynamic tree; the others'
// box query of the ray's bounds).
TEST(PairTracker, RayQueryEqualsBruteForce) {
    for (const std::string_view method : cpu_method_names()) {
        SCOPED_TRACE(std::string(method));
        auto tracker = make(std::string(method));
        World w;
        for (std::uint32_t i = 0; i < 300; ++i) {
            w.boxes.push_back(w.random_box(12, 1.5f));
            ASSERT_TRUE(tracker->insert(i, w.boxes.back()));
        }
        std::vector<Pair> began, ended;
        ASSERT_TRUE(tracker->update(began, ended));
        for (int r = 0; r < 50; ++r) {
            Ray ray;
            ray.origin = {w.uniform(-2, 14), w.uniform(-2, 14), w.uniform(-2, 14)};
            ray.dir = {w.uniform(-1, 1), w.uniform(-1, 1), r % 5 == 0 ? 0.0f : w.uniform(-1, 1)};
            ray.tmax = w.uniform(0, 20);
            const float g = r % 2 ? w.uniform(0, 0.5f) : 0.0f;
            const Vec3 lo{-g, -g, -g}, hi{g, g, g};
            std::vector<RayHit> got;
            tracker->query_ray(ray, lo, hi, got);
            std::vector<std::pair<std::uint32_t, float>> got_sorted, expected;
            for (const RayHit& h : got) got_sorted.push_back({h.id, h.t});
            for (std::uint32_t i = 0; i < w.boxes.size(); ++i) {
                const Box& b = w.boxes[i];
                const Box grown{{b.min.x - g, b.min.y - g, b.min.z - g},
                                {b.max.x + g, b.max.y + g, b.max.z + g}};
                float t_near = 0, t_far = ray.tmax;
                if (ray_box_slabs(ray, grown, t_near, t_far) && t_near <= t_far)
                    expected.push_back({i, t_near});
            }
            std::sort(got_sorted.begin(), got_sorted.end());
            ASSERT_EQ(got_sorted, expected) << "ray " << r;
        }
    }
}

// Test 7: bodies on a random walk (no steady course: the prediction does not help) leave their
// fat boxes less often with the speed margin, and the pairs stay exact either way. The cost is
// deterministic: the requeries over 60 frames.
TEST(PairTracker, SpeedMarginKeepsWanderingBodiesInside) {
    std::uint64_t requeries[2] = {0, 0};
    const float speed_margins[2] = {0.0f, 4.0f};
    for (int run = 0; run < 2; ++run) {
        PairTracker::Config config;
        config.speed_margin = speed_margins[run];
        auto made = PairTracker::create(config);
        ASSERT_TRUE(made);
        PairTracker& tracker = **made;
        World w;
        const int n = 1000;
        for (int i = 0; i < n; ++i) {
            w.boxes.push_back(w.random_box(20, 1.0f));
            w.filters.push_back({});
            w.is_static.push_back(false);
            w.present.push_back(true);
            ASSERT_TRUE(tracker.insert(std::uint32_t(i), w.boxes.back()));
        }
        std::vector<Pair> last;
        check_update(tracker, w, last, "frame 0");
        for (int frame = 1; frame <= 60; ++frame) {
            for (std::uint32_t id = 0; id < std::uint32_t(n); ++id) {
                const Vec3 d{w.uniform(-0.05f, 0.05f), w.uniform(-0.05f, 0.05f),
                             w.uniform(-0.05f, 0.05f)};
                Box& b = w.boxes[id];
                b = {{b.min.x + d.x, b.min.y + d.y, b.min.z + d.z},
                     {b.max.x + d.x, b.max.y + d.y, b.max.z + d.z}};
                ASSERT_TRUE(tracker.move(id, b));
            }
            check_update(tracker, w, last, "frame " + std::to_string(frame));
        }
        requeries[run] = tracker.stats().requeries;
    }
    // Measured: 6,004 without, 2,432 with the default speed margin (2.5 times fewer).
    EXPECT_LT(2 * requeries[1], requeries[0]) << requeries[0] << " " << requeries[1];
    PairTracker::Config bad;
    bad.speed_margin = -1;
    EXPECT_FALSE(PairTracker::create(bad));
}

// Test 8: one body overlapping more than 65,535 others (a world-sized trigger over a grid of
// small boxes) keeps every pair, as it enters, moves inside its fat box and leaves.
TEST(PairTracker, OneBodyOverlapsSeventyThousand) {
    auto tracker = make("dynamic_aabb_tree");
    const std::uint32_t side = 42, n = side * side * side;  // 74,088 boxes, apart
    for (std::uint32_t i = 0; i < n; ++i) {
        const float x = float(i % side) * 2, y = float(i / side % side) * 2,
                    z = float(i / (side * side)) * 2;
        ASSERT_TRUE(tracker->insert(i, {{x, y, z}, {x + 1, y + 1, z + 1}}));
    }
    std::vector<Pair> began, ended;
    ASSERT_TRUE(tracker->update(began, ended));
    EXPECT_TRUE(began.empty());
    const std::uint32_t big = n;
    ASSERT_TRUE(tracker->insert(big, {{-1, -1, -1}, {100, 100, 100}}));
    ASSERT_TRUE(tracker->update(began, ended));
    EXPECT_EQ(began.size(), n);
    EXPECT_EQ(tracker->pairs().size(), n);
    std::vector<std::uint32_t> partners;
    tracker->partners(big, partners);
    EXPECT_EQ(partners.size(), n);
    // A small move inside its fat box: every candidate tested, no pair lost.
    began.clear();
    ASSERT_TRUE(tracker->move(big, {{-0.5f, -0.5f, -0.5f}, {100.5f, 100.5f, 100.5f}}));
    ASSERT_TRUE(tracker->update(began, ended));
    EXPECT_TRUE(began.empty());
    EXPECT_TRUE(ended.empty());
    EXPECT_EQ(tracker->pairs().size(), n);
    // Shrunk to the first layer (z below 1): the others' pairs end.
    ASSERT_TRUE(tracker->move(big, {{-1, -1, -1}, {100, 100, 0.5f}}));
    ASSERT_TRUE(tracker->update(began, ended));
    EXPECT_EQ(tracker->pairs().size(), std::size_t(side) * side);
    EXPECT_EQ(ended.size(), n - std::size_t(side) * side);
    ASSERT_TRUE(tracker->remove(big));
    ended.clear();
    ASSERT_TRUE(tracker->update(began, ended));
    EXPECT_EQ(ended.size(), std::size_t(side) * side);
    EXPECT_TRUE(tracker->pairs().empty());
}

}  // namespace
}  // namespace broadphase
