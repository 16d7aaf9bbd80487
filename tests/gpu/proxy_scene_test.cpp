// gpu::ProxyScene against an oracle written here from the definitions alone: every live body
// in a map, each frame's pairs by testing every pair of live bodies (dynamic-dynamic and
// dynamic-static, never static-static, kept when should_collide allows), the events by
// std::set_difference of consecutive frames. Long random sequences of adds, removes, moves and
// filter changes of both kinds, with capacities, pair buffers and work queues small enough that
// frames grow each of them; removing everything and re-adding into the freed handles.
#include <algorithm>
#include <iterator>
#include <map>
#include <random>
#include <vector>

#include "broadphase/gpu/instruments.hpp"
#include "broadphase/gpu/proxy_scene.hpp"
#include "gpu_test_env.hpp"

namespace broadphase::testing {
namespace {

struct OracleBody {
    Box box;
    Filter filter;
    BodyKind kind;
};

class Oracle {
public:
    std::map<ProxyHandle, OracleBody> bodies;
    std::vector<Pair> previous;

    std::vector<Pair> pairs(bool filtered = true) const {
        std::vector<Pair> out;
        for (auto a = bodies.begin(); a != bodies.end(); ++a) {
            for (auto b = std::next(a); b != bodies.end(); ++b) {
                if (a->second.kind == BodyKind::static_body &&
                    b->second.kind == BodyKind::static_body)
                    continue;
                if (!overlaps(a->second.box, b->second.box)) continue;
                if (filtered && !should_collide(a->second.filter, b->second.filter)) continue;
                out.push_back({a->first, b->first});
            }
        }
        return out;  // the map's order: sorted
    }
};

std::vector<Pair> minus(const std::vector<Pair>& a, const std::vector<Pair>& b) {
    std::vector<Pair> out;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
    return out;
}

class ProxySceneTest : public GpuTest {
protected:
    std::mt19937 rng{12345};

    float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); }

    Box random_box(float world, float size) {
        Vec3 lo{uniform(0, world), uniform(0, world), uniform(0, world)};
        return {
            lo,
            {lo.x + uniform(0.1f, size), lo.y + uniform(0.1f, size), lo.z + uniform(0.1f, size)}};
    }

    Filter random_filter() {
        Filter f;
        const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
        if (kind < 5) return f;  // the default
        f.category = 1u << std::uniform_int_distribution<int>(0, 3)(rng);
        f.mask = std::uniform_int_distribution<std::uint32_t>(0, 15)(rng) | 1u;
        if (kind == 8) f.group = std::uniform_int_distribution<int>(1, 3)(rng);
        if (kind == 9) f.group = -std::uniform_int_distribution<int>(1, 3)(rng);
        return f;
    }

    // Removes a proxy picked at random from `live` from the scene, the oracle and `live`.
    void remove_random(gpu::ProxyScene& scene, Oracle& oracle, std::vector<ProxyHandle>& live) {
        const std::size_t at = std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng);
        ASSERT_TRUE(scene.remove(live[at]));
        oracle.bodies.erase(live[at]);
        live[at] = live.back();
        live.pop_back();
    }

    // Steps the scene and checks the frame against the oracle.
    void check_step(gpu::ProxyScene& scene, Oracle& oracle, int frame) {
        check_frame(scene.step(), oracle, frame);
    }
    // Checks a frame (from step or read_step) against the oracle.
    void check_frame(const Result<ProxyFrame>& r, Oracle& oracle, int frame) {
        ASSERT_TRUE(r) << r.error().message;
        const std::vector<Pair> expected = oracle.pairs();
        ASSERT_EQ(r->pairs, expected) << "frame " << frame;
        ASSERT_EQ(r->began, minus(expected, oracle.previous)) << "frame " << frame;
        ASSERT_EQ(r->ended, minus(oracle.previous, expected)) << "frame " << frame;
        oracle.previous = expected;
    }
};

TEST_F(ProxySceneTest, RandomSequencesMatchTheOracle) {
    gpu::ProxySceneOptions options;
    options.initial_dynamic_capacity = 64;
    options.initial_static_capacity = 16;
    options.initial_handle_capacity = 64;
    options.frames.initial_pair_capacity = 32;
    options.frames.initial_work_capacity = 256;
    auto made = gpu::ProxyScene::create(gpu_context(), options);
    ASSERT_TRUE(made) << made.error().message;
    gpu::ProxyScene& scene = **made;
    Oracle oracle;
    std::vector<ProxyHandle> live;
    const float world = 20;
    auto add = [&](BodyKind kind) {
        const Box box = random_box(world, kind == BodyKind::static_body ? 4.0f : 2.0f);
        const Filter filter = random_filter();
        auto h = scene.add(box, filter, kind);
        ASSERT_TRUE(h) << h.error().message;
        ASSERT_EQ(oracle.bodies.count(*h), 0u) << "handle " << *h << " is live already";
        oracle.bodies[*h] = {box, filter, kind};
        live.push_back(*h);
    };
    for (int i = 0; i < 300; ++i) add(i % 5 == 0 ? BodyKind::static_body : BodyKind::dynamic_body);
    check_step(scene, oracle, 0);
    EXPECT_TRUE(scene.last_info().grown);

    std::size_t refits_with_churn = 0, filtered_out = 0, migrations = 0;
    std::size_t regrown = scene.last_info().regrown ? 1 : 0;
    for (int frame = 1; frame <= 200; ++frame) {
        if (frame == 60 || frame == 150) {
            // Remove everything; the next frame re-adds into the freed handles.
            for (ProxyHandle h : live) ASSERT_TRUE(scene.remove(h));
            live.clear();
            oracle.bodies.clear();
        } else {
            const int adds = std::uniform_int_distribution<int>(0, 12)(rng);
            const int removes = std::min<int>(std::uniform_int_distribution<int>(0, 10)(rng),
                                              static_cast<int>(live.size()));
            for (int k = 0; k < removes; ++k)
                ASSERT_NO_FATAL_FAILURE(remove_random(scene, oracle, live));
            const int extra = frame == 61 || frame == 151 ? 250 : 0;
            for (int k = 0; k < adds + extra; ++k)
                add(k % 7 == 0 ? BodyKind::static_body : BodyKind::dynamic_body);
            for (ProxyHandle h : live) {
                OracleBody& body = oracle.bodies[h];
                const int what = std::uniform_int_distribution<int>(0, 99)(rng);
                if (body.kind == BodyKind::static_body && what > 1) continue;  // rarely
                if (what < 60) {
                    const float d = what < 2 ? 8.0f : 0.3f;  // a few jump far
                    const Vec3 step{uniform(-d, d), uniform(-d, d), uniform(-d, d)};
                    body.box.min = {body.box.min.x + step.x, body.box.min.y + step.y,
                                    body.box.min.z + step.z};
                    body.box.max = {body.box.max.x + step.x, body.box.max.y + step.y,
                                    body.box.max.z + step.z};
                    ASSERT_TRUE(scene.move(h, body.box));
                } else if (what < 63) {
                    body.filter = random_filter();
                    ASSERT_TRUE(scene.set_filter(h, body.filter));
                }
            }
        }
        check_step(scene, oracle, frame);
        const gpu::ProxyStepInfo& info = scene.last_info();
        if (!info.grown && info.path == gpu::FramePath::refit && info.dynamic_updates > 0)
            ++refits_with_churn;
        migrations += info.migrated ? 1 : 0;
        regrown += info.regrown ? 1 : 0;
        filtered_out += oracle.pairs(false).size() - oracle.pairs(true).size();
        EXPECT_EQ(scene.size(), live.size());
    }
    // Frames with adds and removes refit (the policy rebuilds only when it must), the
    // capacities grew past their small first values, and the filters removed pairs.
    EXPECT_GT(refits_with_churn, 30u);
    EXPECT_GT(scene.dynamic_capacity(), 64u);
    EXPECT_GT(scene.static_capacity(), 16u);
    EXPECT_GT(filtered_out, 0u);
    // New bodies went to the fresh tree and moved into the dynamic one when it filled.
    EXPECT_GT(migrations, 0u);
    // Some frame overflowed the pair buffers (32 pairs at first) and grew them.
    EXPECT_GT(regrown, 0u);
}

// The fresh tree is built over the slots in use, not its capacity: a migration empties it and
// new bodies refill it from slot 0 (a deterministic cost: leaves built per frame).
TEST_F(ProxySceneTest, TheFreshTreeIsBuiltOverItsSlotsInUse) {
    gpu::ProxySceneOptions options;
    options.initial_dynamic_capacity = 4096;  // the fresh tree: 512 slots, migrating past 512
    auto made = gpu::ProxyScene::create(gpu_context(), options);
    ASSERT_TRUE(made) << made.error().message;
    gpu::ProxyScene& scene = **made;
    Oracle oracle;
    auto add = [&](float x) {
        const Box box{{x, 0, 0}, {x + 1.5f, 1, 1}};  // each meets its neighbours
        auto h = scene.add(box);
        ASSERT_TRUE(h) << h.error().message;
        oracle.bodies[*h] = {box, {}, BodyKind::dynamic_body};
    };
    float x = 0;
    for (int i = 0; i < 100; ++i) add(x++);
    check_step(scene, oracle, 0);
    for (int i = 0; i < 10; ++i) add(x++);
    check_step(scene, oracle, 1);
    EXPECT_EQ(scene.last_info().fresh, 110u);
    EXPECT_EQ(scene.last_info().fresh_leaves, 110u);
    // Past an eighth of the dynamic slots, the step migrates them all into the dynamic tree.
    for (int i = 0; i < 450; ++i) add(x++);
    check_step(scene, oracle, 2);
    EXPECT_TRUE(scene.last_info().migrated);
    EXPECT_EQ(scene.last_info().fresh, 0u);
    EXPECT_EQ(scene.last_info().fresh_leaves, 0u);
    for (int i = 0; i < 5; ++i) add(x++);
    check_step(scene, oracle, 3);
    EXPECT_FALSE(scene.last_info().migrated);
    EXPECT_EQ(scene.last_info().fresh, 5u);
    EXPECT_EQ(scene.last_info().fresh_leaves, 5u);  // refilled from slot 0, not from 559 down
    for (int i = 0; i < 3; ++i) add(x++);
    check_step(scene, oracle, 4);
    EXPECT_EQ(scene.last_info().fresh_leaves, 8u);

    // The instruments: the batch (three records, one proxy_update dispatch) and the fresh
    // tree's build of 8 leaves (the dispatches of an Lbvh's build of 8 boxes), then the
    // dynamic tree's frame stages; the batch's bytes follow the model in
    // gpu/frames/proxy_scene.cpp.
    auto report = last_report(scene);
    ASSERT_TRUE(report) << report.error().message;
    ASSERT_EQ(report->size(), 7u);
    EXPECT_EQ((*report)[0].name, "batch + trees");
    EXPECT_EQ((*report)[1].name, "refit + cost + decision");
    EXPECT_EQ((*report)[6].name, "differences");
    gpu::LbvhOptions recorded;  // every build records the refinement's steps, as the scene's
    recorded.refine_on_demand = false;
    auto lbvh = gpu::Lbvh::create(gpu_context(), recorded);
    ASSERT_TRUE(lbvh);
    std::vector<Box> eight;
    for (int i = 0; i < 8; ++i) eight.push_back({{float(2 * i), 0, 0}, {float(2 * i) + 1, 1, 1}});
    ASSERT_TRUE((*lbvh)->find_pairs(eight));
    auto build = last_report(**lbvh);
    ASSERT_TRUE(build);
    std::uint32_t build_dispatches = 0;
    for (std::size_t s = 0; s < 4; ++s) build_dispatches += build.value()[s].dispatches;
    EXPECT_EQ((*report)[0].dispatches, 1 + build_dispatches);
    EXPECT_GT((*report)[0].bytes_read, 64u * 3);
    EXPECT_GT((*report)[0].bytes_written, 48u * 3 + 32 + 4 + 4 * 8);
}

// Frames recorded into the caller's command buffer (record_step, the caller's submit,
// read_step) equal the oracle's, alternating with step(); while one is pending every change
// and step is refused; the first frame, and a frame that outgrows the capacities, must be
// step()s (the error says so) and nothing is lost: the refused batch goes into that step.
TEST_F(ProxySceneTest, RecordedFramesMatchTheOracle) {
    gpu::ProxySceneOptions options;
    options.initial_dynamic_capacity = 512;
    options.initial_static_capacity = 64;
    options.initial_handle_capacity = 1024;
    options.frames.initial_pair_capacity = 16;  // recorded frames overflow: read_step repairs
    auto made = gpu::ProxyScene::create(gpu_context(), options);
    ASSERT_TRUE(made) << made.error().message;
    gpu::ProxyScene& scene = **made;
    Oracle oracle;
    std::vector<ProxyHandle> live;
    auto add = [&](BodyKind kind) {
        const Box box = random_box(12, kind == BodyKind::static_body ? 3.0f : 1.5f);
        const Filter filter = random_filter();
        auto h = scene.add(box, filter, kind);
        ASSERT_TRUE(h) << h.error().message;
        oracle.bodies[*h] = {box, filter, kind};
        live.push_back(*h);
    };
    for (int i = 0; i < 100; ++i) add(i % 6 == 0 ? BodyKind::static_body : BodyKind::dynamic_body);
    {
        Status early = gpu_context().submit_and_wait(
            [&](VkCommandBuffer cmd) { EXPECT_FALSE(scene.record_step(cmd)); });
        ASSERT_TRUE(early);
    }
    check_step(scene, oracle, 0);  // the first frame is a step()
    std::size_t recorded = 0;
    for (int frame = 1; frame <= 40; ++frame) {
        for (int k = 0; k < 4 && !live.empty(); ++k)
            ASSERT_NO_FATAL_FAILURE(remove_random(scene, oracle, live));
        for (int k = 0; k < 5; ++k) add(k == 0 ? BodyKind::static_body : BodyKind::dynamic_body);
        for (ProxyHandle h : live) {
            OracleBody& body = oracle.bodies[h];
            if (body.kind == BodyKind::static_body) continue;
            const Vec3 d{uniform(-0.3f, 0.3f), uniform(-0.3f, 0.3f), uniform(-0.3f, 0.3f)};
            body.box = {{body.box.min.x + d.x, body.box.min.y + d.y, body.box.min.z + d.z},
                        {body.box.max.x + d.x, body.box.max.y + d.y, body.box.max.z + d.z}};
            ASSERT_TRUE(scene.move(h, body.box));
        }
        if (frame % 3 == 0) {
            check_step(scene, oracle, frame);
            continue;
        }
        Status recorded_ok;
        ASSERT_TRUE(gpu_context().submit_and_wait(
            [&](VkCommandBuffer cmd) { recorded_ok = scene.record_step(cmd); }));
        ASSERT_TRUE(recorded_ok) << recorded_ok.error().message;
        ++recorded;
        // Pending: nothing is accepted.
        EXPECT_FALSE(scene.add({{0, 0, 0}, {1, 1, 1}}));
        EXPECT_FALSE(scene.move(live.front(), oracle.bodies[live.front()].box));
        EXPECT_FALSE(scene.remove(live.front()));
        EXPECT_FALSE(scene.set_filter(live.front(), {}));
        EXPECT_FALSE(scene.step());
        check_frame(scene.read_step(), oracle, frame);
        if (HasFatalFailure()) return;
        EXPECT_FALSE(scene.read_step()) << "a second read_step has nothing to read";
    }
    EXPECT_GT(recorded, 20u);
    // Outgrowing the dynamic slots: record_step refuses and names the capacities; the step()
    // after it grows and carries the same batch.
    while (live.size() < 700) add(BodyKind::dynamic_body);
    Status refused;
    ASSERT_TRUE(gpu_context().submit_and_wait(
        [&](VkCommandBuffer cmd) { refused = scene.record_step(cmd); }));
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, ErrorCode::limit_exceeded);
    EXPECT_NE(refused.error().message.find("call step()"), std::string::npos)
        << refused.error().message;
    check_step(scene, oracle, 41);
    EXPECT_TRUE(scene.last_info().grown);
}

TEST_F(ProxySceneTest, HandlesFollowThePoolAndErrorsNameThem) {
    auto made = gpu::ProxyScene::create(gpu_context());
    ASSERT_TRUE(made) << made.error().message;
    gpu::ProxyScene& scene = **made;
    const Box box{{0, 0, 0}, {1, 1, 1}};
    auto a = scene.add(box), b = scene.add(box), c = scene.add(box, {}, BodyKind::static_body);
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(*a, 0u);
    EXPECT_EQ(*b, 1u);
    EXPECT_EQ(*c, 2u);
    auto first = scene.step();
    ASSERT_TRUE(first) << first.error().message;
    EXPECT_EQ(first->pairs, (std::vector<Pair>{{0, 1}, {0, 2}, {1, 2}}));
    EXPECT_EQ(first->began, first->pairs);
    // A removed handle is not reused within its frame: the new body gets 3, and the events
    // keep the removed body's pairs apart from the new one's.
    ASSERT_TRUE(scene.remove(*a));
    auto d = scene.add(box);
    ASSERT_TRUE(d);
    EXPECT_EQ(*d, 3u);
    auto second = scene.step();
    ASSERT_TRUE(second) << second.error().message;
    EXPECT_EQ(second->pairs, (std::vector<Pair>{{1, 2}, {1, 3}, {2, 3}}));
    EXPECT_EQ(second->began, (std::vector<Pair>{{1, 3}, {2, 3}}));
    EXPECT_EQ(second->ended, (std::vector<Pair>{{0, 1}, {0, 2}}));
    // After that frame, handle 0 is free again.
    auto e = scene.add(box);
    ASSERT_TRUE(e);
    EXPECT_EQ(*e, 0u);

    const Status gone = scene.remove(7);
    ASSERT_FALSE(gone);
    EXPECT_NE(gone.error().message.find("handle 7"), std::string::npos) << gone.error().message;
    const Status bad_move = scene.move(*b, Box{{0, 0, 0}, {-1, 1, 1}});
    ASSERT_FALSE(bad_move);
    EXPECT_EQ(bad_move.error().code, ErrorCode::invalid_box);
    EXPECT_NE(bad_move.error().message.find("handle 1"), std::string::npos)
        << bad_move.error().message;
}

}  // namespace
}  // namespace broadphase::testing
