// Bounded traversal (layout/common.h, "Bounded traversal"): scenes in which one invocation would
// walk more than 65,535 nodes (lavapipe ends longer loops, real GPUs have watchdogs) give
// exact results through the queued rounds, a recorder with too few rounds or too small a queue
// says so in its status, and the 64-bit pair total carries past 2^32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "broadphase/gpu.hpp"
#include "broadphase/gpu/lbvh_queries.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "device/buffer_sizing.hpp"
#include "device/kernels.hpp"
#include "gpu_test_env.hpp"
#include "lbvh/traversal.hpp"
#include "lbvh_queries.hpp"
#include "lbvh_refit.hpp"
#include "query_batches.hpp"
#include "shaders.hpp"

namespace broadphase::testing {
namespace {

using gpu_layout::TraversalStatus;

// 70,000 disjoint half-unit cubes on a 42 x 42 x 40 grid (ids 1 ..), and box 0 over all of
// them: every traversal from box 0 (or a region like it) visits about 140,000 nodes.
constexpr std::uint32_t kSmall = 70000;
constexpr std::uint32_t kSide = 42;

Box grid_box(std::uint32_t k) {
    const float x = float(k % kSide), y = float((k / kSide) % kSide),
                z = float(k / (kSide * kSide));
    return {{x, y, z}, {x + 0.5f, y + 0.5f, z + 0.5f}};
}

std::vector<Box> big_box_scene(const Box& big) {
    std::vector<Box> boxes{big};
    for (std::uint32_t k = 0; k < kSmall; ++k) boxes.push_back(grid_box(k));
    return boxes;
}

const Box kOverAll{{-1, -1, -1}, {43, 43, 43}};

// The pairs (0, i) of box 0 with every small box it overlaps.
std::vector<Pair> pairs_of_box0(const std::vector<Box>& boxes) {
    std::vector<Pair> pairs;
    for (std::uint32_t i = 1; i < boxes.size(); ++i)
        if (overlaps(boxes[0], boxes[i])) pairs.push_back({0, i});
    return pairs;
}

class BoundedTraversalTest : public GpuTest {};

// Test 1: one box over 70,000 others: all 70,000 pairs, for every code kind.
TEST_F(BoundedTraversalTest, BoxOverSeventyThousandFindsEveryPair) {
    const auto boxes = big_box_scene(kOverAll);
    const auto expected = pairs_of_box0(boxes);
    ASSERT_EQ(expected.size(), kSmall);
    for (gpu::CodeKind code :
         {gpu::CodeKind::morton30, gpu::CodeKind::morton63, gpu::CodeKind::hilbert30}) {
        auto lbvh = gpu::Lbvh::create(gpu_context(), {code});
        ASSERT_TRUE(lbvh);
        auto pairs = (*lbvh)->find_pairs(boxes);
        ASSERT_TRUE(pairs) << pairs.error().message;
        EXPECT_EQ(pairs.value(), expected) << int(code);
    }
}

// Test 2: a region covering 70,000 boxes returns every id, beside small regions in the same
// batch whose hits keep the CPU twin's order; a point inside box 5 finds it.
TEST_F(BoundedTraversalTest, RegionCoveringSeventyThousandReturnsEveryId) {
    std::vector<Box> world;
    for (std::uint32_t k = 0; k < kSmall; ++k) world.push_back(grid_box(k));
    auto queries = gpu::LbvhQueries::create(gpu_context());
    ASSERT_TRUE(queries);
    ASSERT_TRUE((*queries)->build(world));
    const std::vector<Box> regions{
        {{0.2f, 0.2f, 0.2f}, {1.2f, 0.3f, 0.3f}}, kOverAll, {{100, 100, 100}, {101, 101, 101}}};
    auto hits = (*queries)->query_boxes(regions);
    ASSERT_TRUE(hits) << hits.error().message;
    ASSERT_EQ(hits->size(), 3u);
    const auto first = hits->hits(0);
    EXPECT_EQ(std::vector<std::uint32_t>(first.begin(), first.end()),
              (std::vector<std::uint32_t>{0, 1}));
    const auto all = hits->hits(1);
    ASSERT_EQ(all.size(), kSmall);
    for (std::uint32_t k = 0; k < kSmall; ++k) ASSERT_EQ(all[k], k);
    EXPECT_TRUE(hits->hits(2).empty());

    auto points = (*queries)->query_points(std::vector<Vec3>{{5.25f, 0.25f, 0.25f}});
    ASSERT_TRUE(points);
    const auto picked = points->hits(0);
    EXPECT_EQ(std::vector<std::uint32_t>(picked.begin(), picked.end()),
              (std::vector<std::uint32_t>{5}));
}

// Test 3: rays whose candidates all enter at the same t defeat the pruning: 69,000 boxes hit
// at t = 0 (the origin inside all of them) or all at t = 1; the tie goes to the smallest id,
// here not the first box in code order.
TEST_F(BoundedTraversalTest, RaysWithSeventyThousandTiesTakeTheSmallestId) {
    std::vector<Box> world;
    // Ids below 1000 lie further along +x (entry t = 2, 4); ids from 1000 on contain the
    // origin of ray 0 and are entered by ray 1 at t = 1.
    for (std::uint32_t k = 0; k < kSmall; ++k) {
        const float jitter = float(k % 97) * 1e-3f;
        if (k < 1000)
            world.push_back({{3, 0, 0}, {4 + jitter, 1, 1}});
        else
            world.push_back({{0, 0, 0}, {2 + jitter, 1, 1}});
    }
    auto queries = gpu::LbvhQueries::create(gpu_context());
    ASSERT_TRUE(queries);
    ASSERT_TRUE((*queries)->build(world));
    const std::vector<Ray> rays{{{1, 0.5f, 0.5f}, {1, 0, 0}, 100},
                                {{-1, 0.5f, 0.5f}, {1, 0, 0}, 100},
                                {{-1, 5, 5}, {1, 0, 0}, 100}};
    auto hits = (*queries)->ray_cast(rays);
    ASSERT_TRUE(hits) << hits.error().message;
    ASSERT_EQ(hits->size(), 3u);
    ASSERT_TRUE((*hits)[0]);
    EXPECT_EQ((*hits)[0]->id, 1000u);
    EXPECT_EQ((*hits)[0]->t, 0.0f);
    ASSERT_TRUE((*hits)[1]);
    EXPECT_EQ((*hits)[1]->id, 1000u);
    EXPECT_NEAR((*hits)[1]->t, 1.0f, 1e-6f);
    EXPECT_FALSE((*hits)[2]);
}

// The big-box scene built into caller-owned buffers, for the recorder tests.
struct RecordedScene {
    std::uint32_t n = 0;
    gpu::Buffer boxes, nodes, scratch, pairs, status, work;
};

void record_scene(RecordedScene& s, gpu::Lbvh& lbvh, std::span<const Box> boxes,
                  std::uint32_t pair_capacity, std::uint32_t work_capacity) {
    gpu::Context& ctx = gpu_context();
    s.n = static_cast<std::uint32_t>(boxes.size());
    const gpu::LbvhRequirements req = lbvh.requirements(s.n);
    auto make = [&](gpu::Buffer& b, VkDeviceSize bytes) {
        auto r = ctx.create_buffer(bytes, gpu::MemoryKind::device);
        ASSERT_TRUE(r);
        b = std::move(r.value());
    };
    make(s.boxes, s.n * sizeof(gpu_layout::GpuBox));
    make(s.nodes, req.nodes);
    make(s.scratch, req.scratch);
    make(s.pairs, pair_capacity * 8ull);
    make(s.status, sizeof(TraversalStatus));
    make(s.work, gpu::traversal_work_bytes(work_capacity));
    const auto gpu_boxes = gpu::to_gpu_boxes(boxes);
    ASSERT_TRUE(
        ctx.upload(s.boxes, gpu_boxes.data(), gpu_boxes.size() * sizeof(gpu_layout::GpuBox)));
    ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        EXPECT_TRUE(lbvh.record_build(
            cmd, {gpu::whole(s.boxes), gpu::whole(s.nodes), gpu::whole(s.scratch)}, s.n));
        gpu::compute_barrier(cmd);
    }));
}

TraversalStatus record_pairs(RecordedScene& s, gpu::Lbvh& lbvh, std::uint32_t pair_capacity,
                             std::uint32_t work_capacity, std::uint32_t rounds,
                             std::uint32_t budget = 0) {
    gpu::Context& ctx = gpu_context();
    EXPECT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        EXPECT_TRUE(lbvh.record_pairs(cmd, {gpu::whole(s.nodes), s.n},
                                      {gpu::whole(s.pairs),
                                       pair_capacity,
                                       gpu::whole(s.status),
                                       {gpu::whole(s.work), work_capacity, rounds, budget}}));
    }));
    TraversalStatus st{};
    EXPECT_TRUE(ctx.download(s.status, &st, sizeof(st)));
    return st;
}

// Test 4: a recording with too few rounds or too small a queue says so in its status; with
// kTraversalMaxRounds and room it finishes with the exact count.
TEST_F(BoundedTraversalTest, RecorderStatusSaysWhenATraversalDidNotFinish) {
    const auto boxes = big_box_scene(kOverAll);
    auto lbvh = gpu::Lbvh::create(gpu_context());
    ASSERT_TRUE(lbvh);
    const std::uint32_t capacity = 2 * kSmall, work = 4096;
    RecordedScene s;
    record_scene(s, **lbvh, boxes, capacity, work);

    TraversalStatus one = record_pairs(s, **lbvh, capacity, work, 1);
    EXPECT_EQ(one.flags, gpu_layout::kTraversalIncomplete);
    EXPECT_LT(one.count, kSmall);
    EXPECT_FALSE(gpu::traversal_outcome(one, "pairs"));

    TraversalStatus tiny = record_pairs(s, **lbvh, capacity, 4, gpu_layout::kTraversalMaxRounds);
    EXPECT_TRUE(tiny.flags & gpu_layout::kTraversalQueueOverflow);
    EXPECT_FALSE(gpu::traversal_outcome(tiny, "pairs"));

    TraversalStatus full = record_pairs(s, **lbvh, capacity, work, gpu_layout::kTraversalMaxRounds);
    EXPECT_EQ(full.flags, 0u);
    EXPECT_EQ(full.count, kSmall);
    auto total = gpu::traversal_outcome(full, "pairs");
    ASSERT_TRUE(total);
    EXPECT_EQ(total.value(), kSmall);
    EXPECT_GT(full.rounds, 1u);
    // The work count is the twin's, whatever the budget and the rounds: the same tree walked in
    // one round per query would expand the same nodes.
    const std::uint64_t visits = std::uint64_t(full.visits_hi) << 32 | full.visits_lo;
    EXPECT_EQ(
        visits,
        lbvh::pair_traversal_work(lbvh::build_tree(boxes, lbvh::CodeKind::morton30), boxes).visits);
    EXPECT_GT(visits, std::uint64_t(s.n) / 2);  // box 0 alone walks half the tree

    std::vector<Pair> stored(kSmall);
    ASSERT_TRUE(gpu_context().download(s.pairs, stored.data(), kSmall * 8ull));
    std::sort(stored.begin(), stored.end());
    EXPECT_EQ(stored, pairs_of_box0(boxes));
}

// Test 5: the pair total carries into its high word past 2^32 and the count saturates: the
// pairs kernel run on a status whose low word is 10 below the wrap.
TEST_F(BoundedTraversalTest, PairTotalCarriesPast32Bits) {
    gpu::Context& ctx = gpu_context();
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene);
    auto expected = find_pairs_cpu("sweep_and_prune", scene->boxes);
    ASSERT_TRUE(expected);
    ASSERT_GT(expected->size(), 100u);
    auto lbvh = gpu::Lbvh::create(ctx);
    ASSERT_TRUE(lbvh);
    const std::uint32_t capacity = 16, work = 1024;
    RecordedScene s;
    record_scene(s, **lbvh, scene->boxes, capacity, work);

    // Bindings 4 to 6 and 8 (proxies and cross passes) are unused here: they take the nodes.
    auto kernel = gpu::Kernel::create(ctx, shaders::lbvh_pairs, 9, "lbvh_pairs");
    auto rounds = gpu::TraversalRounds::create(ctx);
    ASSERT_TRUE(kernel && rounds);
    TraversalStatus start{};
    start.total_lo = 0xffffffffu - 10;
    ASSERT_TRUE(ctx.upload(s.status, &start, sizeof(start)));
    const std::uint32_t n = s.n;
    ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        gpu_layout::PushConstants pc{};
        pc.count = n;
        pc.capacity = capacity;
        pc.tiles = work;
        const gpu::BufferRange status{s.status.handle(), 0, sizeof(TraversalStatus)};
        const gpu::TreeBindings tree = gpu::tree_bindings(gpu::whole(s.nodes), n);
        const gpu::BufferRange nodes = tree.nodes;
        const std::initializer_list<gpu::BufferRange> bindings = {
            nodes,  {s.pairs.handle(), 0, capacity * 8ull},
            status, {s.work.handle(), 0, gpu::traversal_work_bytes(work)},
            nodes,  nodes,
            nodes,  tree.wide,
            nodes};
        rounds->record(cmd, status, {gpu::whole(s.work), work, 2},
                       [&](VkCommandBuffer c, std::uint32_t round, const gpu::BufferRange& args) {
                           pc.shift = round;
                           if (round == 0)
                               kernel->dispatch(c, bindings, pc,
                                                std::uint32_t(gpu::div_up(n, 256)));
                           else
                               kernel->dispatch_indirect(c, bindings, pc, args);
                       });
    }));
    TraversalStatus st{};
    ASSERT_TRUE(ctx.download(s.status, &st, sizeof(st)));
    EXPECT_EQ(st.total_hi, 1u);
    EXPECT_EQ(st.total_lo, expected->size() - 11);
    EXPECT_EQ(st.count, 0xffffffffu);  // saturated: later kernels see "more than any capacity"
    EXPECT_EQ(st.flags, 0u);
    auto total = gpu::traversal_outcome(st, "pairs");
    ASSERT_TRUE(total);
    EXPECT_EQ(total.value(), (1ull << 32) - 11 + expected->size());
}

// Test 6: the big box shrinking between frames of a moving scene: every pair it leaves ends,
// none is lost to a bounded traversal.
TEST_F(BoundedTraversalTest, ShrinkingBigBoxEndsEveryPairInAMovingScene) {
    auto boxes = big_box_scene(kOverAll);
    auto moving = gpu::MovingScene::create(gpu_context());
    ASSERT_TRUE(moving);
    ASSERT_TRUE((*moving)->reset(boxes));
    const auto before = pairs_of_box0(boxes);
    boxes[0] = {{-1, -1, -1}, {20.75f, 43, 43}};  // keeps the columns x = 0 .. 20
    const auto after = pairs_of_box0(boxes);
    ASSERT_GT(after.size(), kSmall / 3);
    ASSERT_LT(after.size(), kSmall);
    auto frame = (*moving)->step(boxes);
    ASSERT_TRUE(frame) << frame.error().message;
    EXPECT_TRUE(frame->began.empty());
    std::vector<Pair> ended;
    std::set_difference(before.begin(), before.end(), after.begin(), after.end(),
                        std::back_inserter(ended));
    EXPECT_EQ(frame->ended, ended);
    EXPECT_EQ(frame->pair_count, after.size());
    EXPECT_EQ(frame->pairs, after);

    boxes[0] = kOverAll;
    frame = (*moving)->step(boxes);
    ASSERT_TRUE(frame) << frame.error().message;
    EXPECT_EQ(frame->began, ended);
    EXPECT_TRUE(frame->ended.empty());
}

}  // namespace
}  // namespace broadphase::testing

namespace broadphase::testing {
namespace {

// Test 7: identical boxes: every pair found (32 million here), or, past what one storage
// buffer holds on this device (lavapipe: 128 MiB, 16.7 million pairs), an error that gives the
// exact count.
TEST_F(BoundedTraversalTest, IdenticalBoxesGiveEveryPairOrTheExactCount) {
    const std::uint64_t n = 8000, expected = n * (n - 1) / 2;
    const std::vector<Box> boxes(n, Box{{0, 0, 0}, {1, 1, 1}});
    auto lbvh = gpu::Lbvh::create(gpu_context());
    ASSERT_TRUE(lbvh);
    auto pairs = (*lbvh)->find_pairs(boxes);
    if (gpu_context().info().max_storage_buffer_range / 8 < expected) {
        ASSERT_FALSE(pairs);
        EXPECT_EQ(pairs.error().code, ErrorCode::limit_exceeded);
        EXPECT_NE(pairs.error().message.find(std::to_string(expected) + " pairs"),
                  std::string::npos)
            << pairs.error().message;
    } else {
        ASSERT_TRUE(pairs) << pairs.error().message;
        EXPECT_EQ(pairs->size(), expected);
        EXPECT_EQ(pairs->front(), (Pair{0, 1}));
        EXPECT_EQ(pairs->back(), (Pair{std::uint32_t(n - 2), std::uint32_t(n - 1)}));
    }
}

}  // namespace
}  // namespace broadphase::testing

namespace broadphase::testing {
namespace {

// Test 8: many invocations out of budget at once, each with its own stack depth (lavapipe runs
// 8 invocations in lockstep and has lost stores made after an atomic in a loop that others had
// left): 64 boxes over the 70,000, 64 regions over them, 64 rays from inside them.
TEST_F(BoundedTraversalTest, ManyInvocationsOutOfBudgetTogether) {
    std::vector<Box> boxes;
    constexpr std::uint32_t kBig = 64;
    for (std::uint32_t b = 0; b < kBig; ++b) {
        const float grow = float(b) * 0.01f;
        boxes.push_back({{-1 - grow, -1, -1}, {43 + grow, 43, 43}});
    }
    for (std::uint32_t k = 0; k < kSmall; ++k) boxes.push_back(grid_box(k));
    auto lbvh = gpu::Lbvh::create(gpu_context());
    ASSERT_TRUE(lbvh);
    auto pairs = (*lbvh)->find_pairs(boxes);
    ASSERT_TRUE(pairs) << pairs.error().message;
    std::vector<Pair> expected;
    for (std::uint32_t b = 0; b < kBig; ++b)
        for (std::uint32_t j = b + 1; j < boxes.size(); ++j) expected.push_back({b, j});
    EXPECT_EQ(pairs->size(), expected.size());
    EXPECT_EQ(pairs.value(), expected);

    const std::vector<Box> world(boxes.begin() + kBig, boxes.end());
    auto queries = gpu::LbvhQueries::create(gpu_context());
    ASSERT_TRUE(queries);
    ASSERT_TRUE((*queries)->build(world));
    const std::vector<Box> regions(boxes.begin(), boxes.begin() + kBig);
    auto hits = (*queries)->query_boxes(regions);
    ASSERT_TRUE(hits) << hits.error().message;
    for (std::uint32_t q = 0; q < kBig; ++q) ASSERT_EQ(hits->hits(q).size(), kSmall) << q;

    // Rays from inside box 0 of a world where every box contains their origins: all enter at
    // t = 0, the tie goes to id 0.
    std::vector<Box> nested;
    for (std::uint32_t k = 0; k < kSmall; ++k)
        nested.push_back({{0, 0, 0}, {2 + float(k % 89) * 1e-3f, 1 + float(k % 7) * 1e-3f, 1}});
    ASSERT_TRUE((*queries)->build(nested));
    std::vector<Ray> rays;
    for (std::uint32_t r = 0; r < kBig; ++r)
        rays.push_back({{0.5f + float(r) * 0.01f, 0.5f, 0.5f}, {1, float(r % 3) * 0.1f, 0}, 100});
    auto cast = (*queries)->ray_cast(rays);
    ASSERT_TRUE(cast) << cast.error().message;
    for (std::uint32_t r = 0; r < kBig; ++r) {
        ASSERT_TRUE((*cast)[r]) << r;
        EXPECT_EQ((*cast)[r]->id, 0u) << r;
        EXPECT_EQ((*cast)[r]->t, 0.0f) << r;
    }
}

// Test 9: the all-pairs traversal's short stack (gpu_layout::kPairStack). With every stack size
// the pairs equal brute force and the visits the CPU twin's count, on the standard scenes (the
// degenerate ones included); with a one-entry stack, subtrees spill into the work queue, which
// a single round leaves unfinished (it says so), while the default stack finishes the same
// scene in one round. A stack above kPairStack is refused.
TEST_F(BoundedTraversalTest, ShortStackSpillsIntoTheQueueWithTheSameResult) {
    const std::uint32_t work = 1u << 15;
    for (const char* name : {"uniform", "clustered", "degenerate", "level", "multiscale"}) {
        SCOPED_TRACE(name);
        auto scene = generate_scene(name, 4000);
        ASSERT_TRUE(scene);
        const std::vector<Box>& boxes = scene->boxes;
        auto oracle = find_pairs_cpu("brute_force", boxes);
        ASSERT_TRUE(oracle);
        const std::vector<Pair>& expected = oracle.value();
        const auto capacity = static_cast<std::uint32_t>(expected.size() + 1);
        const std::uint64_t twin_visits =
            lbvh::pair_traversal_work(lbvh::build_tree(boxes, lbvh::CodeKind::morton30), boxes)
                .visits;
        for (std::uint32_t stack : {1u, 2u, 5u, gpu_layout::kPairStack}) {
            SCOPED_TRACE(stack);
            gpu::LbvhOptions options;
            options.code = gpu::CodeKind::morton30;
            options.pair_stack = stack;
            auto lbvh = gpu::Lbvh::create(gpu_context(), options);
            ASSERT_TRUE(lbvh);
            RecordedScene s;
            record_scene(s, **lbvh, boxes, capacity, work);
            const TraversalStatus full =
                record_pairs(s, **lbvh, capacity, work, gpu_layout::kTraversalMaxRounds);
            ASSERT_EQ(full.flags, 0u);
            ASSERT_EQ(full.count, expected.size());
            EXPECT_EQ(std::uint64_t(full.visits_hi) << 32 | full.visits_lo, twin_visits);
            std::vector<Pair> stored(full.count);
            ASSERT_TRUE(gpu_context().download(s.pairs, stored.data(), full.count * 8ull));
            std::sort(stored.begin(), stored.end());
            EXPECT_EQ(stored, expected);
            // The largest budget, so that only the stack decides whether one round finishes.
            const TraversalStatus one =
                record_pairs(s, **lbvh, capacity, work, 1, gpu_layout::kTraversalBudget);
            if (stack == 1u) {
                EXPECT_EQ(one.flags, gpu_layout::kTraversalIncomplete);
            } else if (stack == gpu_layout::kPairStack) {
                EXPECT_EQ(one.flags, 0u);
            }
        }
    }
    gpu::LbvhOptions too_deep;
    too_deep.pair_stack = gpu_layout::kPairStack + 1;
    auto refused = gpu::Lbvh::create(gpu_context(), too_deep);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("pair_stack"), std::string::npos);
}

// Test 10: the traversal budget (TraversalBuffers::budget, DeviceInfo::traversal_budget)
// changes the rounds, never the answers. On the standard scenes, with budgets from 1 node to
// kTraversalBudget: the pairs equal brute force and the visits the CPU twin's count; region
// queries return the twin's ids and ray casts its closest hits. With a budget of one node a
// single round cannot finish any of them, while kTraversalBudget finishes the uniform scene's
// pairs in one.
TEST_F(BoundedTraversalTest, BudgetChangesTheRoundsNotTheAnswers) {
    gpu::Context& ctx = gpu_context();
    const std::uint32_t work = 1u << 16;
    auto queries = gpu::LbvhQueries::create(ctx);
    ASSERT_TRUE(queries);
    for (const char* name : {"uniform", "degenerate", "level", "multiscale"}) {
        SCOPED_TRACE(name);
        auto scene = generate_scene(name, 3000);
        ASSERT_TRUE(scene);
        const std::vector<Box>& boxes = scene->boxes;
        const std::vector<Pair> expected = brute_pairs(boxes);
        const auto capacity = static_cast<std::uint32_t>(expected.size() + 1);
        const auto twin = lbvh::build_tree(boxes, lbvh::CodeKind::morton30);
        const std::uint64_t twin_visits = lbvh::pair_traversal_work(twin, boxes).visits;

        // The shared batches (query_batches.hpp: the scene's bounds among the regions) and
        // level's ground slab itself.
        std::vector<Box> regions = regions_of(boxes);
        regions.push_back(boxes[boxes.size() / 2]);
        const std::vector<Ray> rays = rays_of(boxes);
        std::vector<std::uint32_t> want_offsets{0}, want_ids;
        for (const Box& r : regions) {
            std::vector<std::uint32_t> ids;
            lbvh::query_region(twin, r, ids);
            std::sort(ids.begin(), ids.end());
            want_ids.insert(want_ids.end(), ids.begin(), ids.end());
            want_offsets.push_back(static_cast<std::uint32_t>(want_ids.size()));
        }
        const auto count = static_cast<std::uint32_t>(regions.size());
        const auto ray_count = static_cast<std::uint32_t>(rays.size());
        const auto id_capacity = static_cast<std::uint32_t>(want_ids.size() + 1);
        const auto gpu_regions = gpu::to_gpu_boxes(regions);
        std::vector<gpu_layout::GpuRay> gpu_rays;
        for (const Ray& r : rays)
            gpu_rays.push_back(
                {{r.origin.x, r.origin.y, r.origin.z, r.tmax}, {r.dir.x, r.dir.y, r.dir.z, 0}});
        auto qbuf = ctx.create_buffer(count * sizeof(gpu_layout::GpuBox), gpu::MemoryKind::device);
        auto offsets = ctx.create_buffer((count + 1) * 4ull, gpu::MemoryKind::device);
        auto ids = ctx.create_buffer(id_capacity * 4ull, gpu::MemoryKind::device);
        auto scratch =
            ctx.create_buffer((*queries)->scan_scratch_size(count), gpu::MemoryKind::device);
        auto statuses = ctx.create_buffer(3 * 256, gpu::MemoryKind::device);
        auto rbuf =
            ctx.create_buffer(ray_count * sizeof(gpu_layout::GpuRay), gpu::MemoryKind::device);
        auto hbuf =
            ctx.create_buffer(ray_count * sizeof(gpu_layout::GpuRayHit), gpu::MemoryKind::device);
        ASSERT_TRUE(qbuf && offsets && ids && scratch && statuses && rbuf && hbuf);
        ASSERT_TRUE(
            ctx.upload(*qbuf, gpu_regions.data(), gpu_regions.size() * sizeof(gpu_layout::GpuBox)));
        ASSERT_TRUE(
            ctx.upload(*rbuf, gpu_rays.data(), gpu_rays.size() * sizeof(gpu_layout::GpuRay)));

        auto lbvh = gpu::Lbvh::create(ctx, {gpu::CodeKind::morton30});
        ASSERT_TRUE(lbvh);
        RecordedScene s;
        record_scene(s, **lbvh, boxes, capacity, work);
        const gpu::LbvhTree tree{gpu::whole(s.nodes), s.n};
        for (std::uint32_t budget :
             {1u, 3u, gpu_layout::kGpuTraversalBudget, gpu_layout::kTraversalBudget}) {
            SCOPED_TRACE(budget);
            const TraversalStatus full =
                record_pairs(s, **lbvh, capacity, work, gpu_layout::kTraversalMaxRounds, budget);
            ASSERT_EQ(full.flags, 0u);
            ASSERT_EQ(full.count, expected.size());
            EXPECT_EQ(std::uint64_t(full.visits_hi) << 32 | full.visits_lo, twin_visits);
            std::vector<Pair> stored(full.count);
            ASSERT_TRUE(ctx.download(s.pairs, stored.data(), full.count * 8ull));
            std::sort(stored.begin(), stored.end());
            EXPECT_EQ(stored, expected);
            const TraversalStatus one = record_pairs(s, **lbvh, capacity, work, 1, budget);
            if (budget == 1u) {
                EXPECT_EQ(one.flags, gpu_layout::kTraversalIncomplete);
            }
            if (budget == gpu_layout::kTraversalBudget && std::string(name) == "uniform") {
                EXPECT_EQ(one.flags, 0u);
            }

            const gpu::TraversalBuffers traversal{gpu::whole(s.work), work,
                                                  gpu_layout::kTraversalMaxRounds, budget};
            const gpu::RegionQueryBuffers b{gpu::whole(*qbuf),
                                            gpu::whole(*offsets),
                                            gpu::whole(*ids),
                                            id_capacity,
                                            gpu::whole(*scratch),
                                            {statuses->handle(), 0, sizeof(TraversalStatus)},
                                            {statuses->handle(), 256, sizeof(TraversalStatus)},
                                            traversal};
            ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
                gpu::compute_barrier(cmd);
                EXPECT_TRUE((*queries)->record_region_count(cmd, tree, b, count));
                EXPECT_TRUE((*queries)->record_region_fill(cmd, tree, b, count));
                gpu::compute_barrier(cmd);
                EXPECT_TRUE(
                    (*queries)->record_ray_cast(cmd, tree,
                                                {gpu::whole(*rbuf),
                                                 gpu::whole(*hbuf),
                                                 {statuses->handle(), 512, sizeof(TraversalStatus)},
                                                 traversal},
                                                ray_count));
                gpu::compute_barrier(cmd);
            }));
            TraversalStatus st[3];
            for (std::uint32_t k = 0; k < 3; ++k) {
                ASSERT_TRUE(ctx.download(*statuses, &st[k], sizeof(st[k]), 256 * k));
                EXPECT_EQ(st[k].flags, 0u) << k;
            }
            std::vector<std::uint32_t> got_offsets(count + 1), got_ids(want_ids.size());
            ASSERT_TRUE(ctx.download(*offsets, got_offsets.data(), got_offsets.size() * 4));
            ASSERT_TRUE(ctx.download(*ids, got_ids.data(), got_ids.size() * 4));
            EXPECT_EQ(got_offsets, want_offsets);
            for (std::uint32_t q = 0; q < count; ++q)  // hits of a queued query come unordered
                std::sort(got_ids.begin() + got_offsets[q], got_ids.begin() + got_offsets[q + 1]);
            EXPECT_EQ(got_ids, want_ids);
            std::vector<gpu_layout::GpuRayHit> hits(ray_count);
            ASSERT_TRUE(ctx.download(*hbuf, hits.data(), hits.size() * sizeof(hits[0])));
            for (std::uint32_t r = 0; r < ray_count; ++r) {
                const auto want = lbvh::ray_cast_nodes(twin, rays[r]);
                ASSERT_EQ(hits[r].id, want ? want->id : gpu_layout::kInvalidNode) << "ray " << r;
            }
        }
    }
}

}  // namespace
}  // namespace broadphase::testing
