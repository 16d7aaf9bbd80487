// The GPU-resident simulation end to end: batches of frames run on the GPU with no host work
// between them (the example's integrator and MovingScene::record_step in one command buffer);
// after each batch the last frame's pairs and began/ended events equal brute force's on the
// boxes read back from the GPU, and the validation layer reports nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>

#include "broadphase/structure.hpp"
#include "simulation.hpp"

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

}  // namespace
}  // namespace broadphase::simulation
