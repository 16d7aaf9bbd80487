// The GPU-resident simulation end to end: batches of frames run on the GPU with no host work
// between them (the example's integrator and MovingScene::record_step in one command buffer);
// after each batch the last frame's pairs and began/ended events equal brute force's on the
// boxes read back from the GPU, and the validation layer reports nothing. The spawner's bodies
// come and go: every frame equals a CPU proxy world's over brute force, debris never pairs
// with debris though pieces touch, handles are reused, capacities and pair buffers grow.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "broadphase/structure.hpp"
#include "simulation.hpp"
#include "spawner.hpp"

namespace broadphase::simulation {
namespace {

std::vector<Pair> brute(const std::vector<Box>& boxes) {
    auto r = find_pairs_cpu("brute_force", boxes);
    EXPECT_TRUE(r);
    return r ? r.value() : std::vector<Pair>{};
}

std::vector<Pair> minus(const std::vector<Pair>& a, const std::vector<Pair>& b) {
    std::vector<Pair> out;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
    return out;
}

TEST(Simulation, BatchesOfGpuFramesMatchBruteForce) {
    SimulationOptions options;
    options.boxes = 3000;
    options.validation = true;
    auto sim = Simulation::create(options);
    ASSERT_TRUE(sim) << sim.error().message;
    auto initial = sim.value()->boxes();
    ASSERT_TRUE(initial);
    std::size_t events = 0;
    for (std::uint32_t frames : {4u, 1u, 5u}) {
        SCOPED_TRACE("batch of " + std::to_string(frames));
        auto r = sim.value()->run(frames);
        ASSERT_TRUE(r) << r.error().message;
        auto now = sim.value()->boxes();
        auto before = sim.value()->previous_boxes();
        ASSERT_TRUE(now && before);
        const std::vector<Pair> pairs = brute(now.value()), previous = brute(before.value());
        EXPECT_EQ(r->pair_count, pairs.size());
        EXPECT_EQ(r->pairs, pairs);
        EXPECT_EQ(r->began, minus(pairs, previous));
        EXPECT_EQ(r->ended, minus(previous, pairs));
        events += r->began.size() + r->ended.size();
    }
    EXPECT_GT(events, 0u);
    auto final_boxes = sim.value()->boxes();
    ASSERT_TRUE(final_boxes);
    EXPECT_NE(final_boxes.value(), initial.value());  // the integrator moved them
    EXPECT_EQ(sim.value()->context().validation_errors(), 0u);
}

TEST(Spawner, BodiesComeAndGoAndDebrisNeverMeetsDebris) {
    SpawnerOptions options;
    options.spawn_per_frame = 30;
    options.lifetime = 12;
    options.world = 8;   // crowded: crates pile up and debris lands on debris
    options.dt = 0.05f;  // crates land within their life
    options.check_with = "brute_force";
    options.validation = true;
    options.scene.initial_dynamic_capacity = 64;
    options.scene.initial_static_capacity = 8;
    options.scene.initial_handle_capacity = 64;
    options.scene.frames.initial_pair_capacity = 64;
    auto made = Spawner::create(options);
    ASSERT_TRUE(made) << made.error().message;
    Spawner& spawner = *made.value();
    std::size_t added = 5, removed = 0, moved = 0, debris_contacts = 0, began = 0, ended = 0;
    std::size_t regrown = 0, max_debris = 0, ground_contacts = 0;
    ProxyHandle max_handle = 0;
    for (int frame = 0; frame < 40; ++frame) {
        SCOPED_TRACE("frame " + std::to_string(frame));
        auto r = spawner.step();  // an error if the GPU frame differs from brute force's
        ASSERT_TRUE(r) << r.error().message;
        added += r->spawned;
        removed += r->despawned;
        moved += r->moved;
        began += r->frame.began.size();
        ended += r->frame.ended.size();
        regrown += spawner.scene().last_info().regrown ? 1 : 0;
        max_debris = std::max<std::size_t>(max_debris, r->debris);
        std::map<ProxyHandle, const SpawnedBody*> by_handle;
        for (const SpawnedBody& body : spawner.bodies()) {
            by_handle[body.handle] = &body;
            max_handle = std::max(max_handle, body.handle);
        }
        ASSERT_EQ(by_handle.size(), r->live);
        EXPECT_EQ(spawner.scene().size(), r->live);
        EXPECT_EQ(r->frame.pair_count, r->frame.pairs.size());
        for (const Pair& p : r->frame.pairs) {
            const SpawnedBody* a = by_handle.at(p.i);
            const SpawnedBody* b = by_handle.at(p.j);
            EXPECT_FALSE(a->debris && b->debris) << "debris " << p.i << " met debris " << p.j;
            EXPECT_FALSE(a->kind == BodyKind::static_body && b->kind == BodyKind::static_body);
            ground_contacts += a->kind != b->kind ? 1 : 0;
            EXPECT_TRUE(overlaps(a->box, b->box));
        }
        const auto& bodies = spawner.bodies();
        for (std::size_t i = 0; i < bodies.size(); ++i)
            for (std::size_t j = i + 1; j < bodies.size(); ++j)
                if (bodies[i].debris && bodies[j].debris && overlaps(bodies[i].box, bodies[j].box))
                    ++debris_contacts;
    }
    // Bodies came and went, moved, and their handles were reused.
    EXPECT_GT(removed, 500u);
    EXPECT_GT(moved, 1000u);
    EXPECT_GT(max_debris, 100u);
    EXPECT_LT(std::size_t{max_handle} + 1, added) << "freed handles are never reused";
    EXPECT_GT(began, 0u);
    EXPECT_GT(ended, 0u);
    EXPECT_GT(ground_contacts, 100u);  // bodies landed: dynamic-static pairs
    // The filter did something: overlapping debris existed and was never reported.
    EXPECT_GT(debris_contacts, 100u);
    // The scene outgrew its first capacities and pair buffers.
    EXPECT_GT(spawner.scene().dynamic_capacity(), 64u);
    EXPECT_GT(spawner.scene().handle_capacity(), 64u);
    EXPECT_GT(regrown, 0u);
    EXPECT_EQ(spawner.context().validation_errors(), 0u);
}

TEST(Spawner, AnUnknownCheckMethodIsNamed) {
    SpawnerOptions options;
    options.check_with = "octree_not_a_method";
    auto made = Spawner::create(options);
    ASSERT_FALSE(made);
    EXPECT_NE(made.error().message.find("octree_not_a_method"), std::string::npos)
        << made.error().message;
}

}  // namespace
}  // namespace broadphase::simulation
