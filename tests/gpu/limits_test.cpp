// Device limits of every GPU host path (issue "Moving scenes and batched queries on the GPU",
// item 6), on a context whose maxStorageBufferRange is capped at 32 MiB
// (ContextOptions::max_storage_buffer_range), so that every device runs every case. Test 1-4:
// a scene just over the range (the node buffer, 48 bytes x (2n-1), is the largest per-box
// buffer: n = range / 96 + 1000) is refused by Lbvh::find_pairs, Lbvh::build_nodes,
// Culler::cull, LbvhQueries::build and MovingScene::reset with limit_exceeded and a message
// naming the buffer and the limit, before any allocation. Test 5: a scene just under it builds.
// Test 6: an absurd buffer size comes back as out_of_memory or limit_exceeded, not a crash.
// Test 7: the size arithmetic at 10M, 100M and 2^32 - 1 boxes is 64-bit.
#include <chrono>
#include <string>
#include <vector>

#include "broadphase/gpu_cull.hpp"
#include "broadphase/gpu_frames.hpp"
#include "broadphase/gpu_queries.hpp"
#include "gpu_test_env.hpp"

namespace broadphase::testing {
namespace {

constexpr VkDeviceSize kCappedRange = VkDeviceSize(32) << 20;

class LimitsTest : public GpuTest {
protected:
    std::unique_ptr<gpu::Context> context_;

    void SetUp() override {
        GpuTest::SetUp();
        gpu::ContextOptions options;
        options.validation = true;
        options.max_storage_buffer_range = kCappedRange;
        auto context = gpu::Context::create(options);
        ASSERT_TRUE(context) << context.error().message;
        context_ = std::move(context.value());
        ASSERT_EQ(context_->info().max_storage_buffer_range,
                  std::min(kCappedRange, gpu_context().info().max_storage_buffer_range));
    }
    void TearDown() override {
        if (context_) {
            EXPECT_EQ(context_->validation_errors(), 0u) << "validation errors";
        }
        context_.reset();
        GpuTest::TearDown();
    }

    gpu::Context& ctx() { return *context_; }
    VkDeviceSize range() const { return context_->info().max_storage_buffer_range; }

    // Box count whose node buffer (48 bytes x (2n-1)) is just over (or under) the range.
    std::size_t over_count() const { return std::size_t(range() / 96 + 1000); }
    std::size_t under_count() const { return std::size_t(range() / 96 - 1000); }

    // Cheap valid boxes: identical unit cubes (validation passes; nothing is built).
    static std::vector<Box> cheap_boxes(std::size_t n) {
        return std::vector<Box>(n, Box{{0, 0, 0}, {1, 1, 1}});
    }

    // `result` (a Status or a Result) is the refusal of `path`: limit_exceeded, naming the node
    // buffer and the range. Call through ASSERT_NO_FATAL_FAILURE: a success ends the test.
    template <class R>
    void expect_refused(const R& result, const char* path) {
        ASSERT_FALSE(result) << path;
        const Error& e = result.error();
        EXPECT_EQ(e.code, ErrorCode::limit_exceeded) << path << ": " << e.message;
        EXPECT_NE(e.message.find("node buffer"), std::string::npos) << path << ": " << e.message;
        EXPECT_NE(e.message.find(std::to_string(range())), std::string::npos)
            << path << ": " << e.message;
    }
};

// Test 1: Lbvh::find_pairs and Lbvh::build_nodes refuse the scene.
TEST_F(LimitsTest, LbvhRefusesSceneOverStorageRange) {
    auto lbvh = gpu::Lbvh::create(ctx());
    ASSERT_TRUE(lbvh);
    const std::vector<Box> boxes = cheap_boxes(over_count());
    auto pairs = lbvh.value()->find_pairs(boxes);
    ASSERT_NO_FATAL_FAILURE(expect_refused(pairs, "Lbvh::find_pairs"));
    auto nodes = lbvh.value()->build_nodes(boxes);
    ASSERT_NO_FATAL_FAILURE(expect_refused(nodes, "Lbvh::build_nodes"));
}

// Test 2: Culler::cull refuses the scene.
TEST_F(LimitsTest, CullerRefusesSceneOverStorageRange) {
    auto culler = gpu::Culler::create(ctx());
    ASSERT_TRUE(culler);
    auto visible = culler.value()->cull(cheap_boxes(over_count()), Frustum{}, CullOrder::exact);
    ASSERT_NO_FATAL_FAILURE(expect_refused(visible, "Culler::cull"));
}

// Test 3: LbvhQueries::build (and so every query helper after it) refuses the scene.
TEST_F(LimitsTest, QueriesRefuseSceneOverStorageRange) {
    auto queries = gpu::LbvhQueries::create(ctx());
    ASSERT_TRUE(queries);
    const std::vector<Box> boxes = cheap_boxes(over_count());
    Status s = queries.value()->build(boxes);
    ASSERT_NO_FATAL_FAILURE(expect_refused(s, "LbvhQueries::build"));
    EXPECT_EQ(queries.value()->size(), 0u);
    auto against = queries.value()->find_pairs_against(cheap_boxes(1), boxes);
    ASSERT_NO_FATAL_FAILURE(expect_refused(against, "LbvhQueries::find_pairs_against"));
}

// Test 4: MovingScene::reset refuses the scene, and step afterwards is an error, not a crash.
TEST_F(LimitsTest, MovingSceneRefusesSceneOverStorageRange) {
    auto moving = gpu::MovingScene::create(ctx());
    ASSERT_TRUE(moving);
    const std::vector<Box> boxes = cheap_boxes(over_count());
    Status s = moving.value()->reset(boxes);
    ASSERT_NO_FATAL_FAILURE(expect_refused(s, "MovingScene::reset"));
    auto step = moving.value()->step(boxes);
    ASSERT_FALSE(step);
    EXPECT_EQ(step.error().code, ErrorCode::invalid_argument);
}

// Test 5: a scene just under the limit builds; its root covers every box.
TEST_F(LimitsTest, LbvhBuildsSceneJustUnderStorageRange) {
    const std::size_t n = under_count();
    std::vector<Box> boxes(n);
    for (std::size_t i = 0; i < n; ++i) {
        const float x = float(i % 128), y = float((i / 128) % 128), z = float(i / (128 * 128));
        boxes[i] = {{x, y, z}, {x + 0.5f, y + 0.5f, z + 0.5f}};
    }
    auto lbvh = gpu::Lbvh::create(ctx());
    ASSERT_TRUE(lbvh);
    auto nodes = lbvh.value()->build_nodes(boxes);
    ASSERT_TRUE(nodes) << nodes.error().message;
    ASSERT_EQ(nodes->size(), 2 * n - 1);
    const gpu_layout::LbvhNode& root = (*nodes)[0];
    EXPECT_EQ(root.lo.x, 0.0f);
    EXPECT_EQ(root.lo.z, 0.0f);
    EXPECT_EQ(root.hi.x, 127.5f);
    EXPECT_EQ(root.hi.z, float((n - 1) / (128 * 128)) + 0.5f);
}

// Test 6: an absurd buffer size is an error value, never a crash or a validation error.
TEST_F(LimitsTest, AbsurdBufferSizeIsOutOfMemory) {
    for (gpu::MemoryKind kind :
         {gpu::MemoryKind::device, gpu::MemoryKind::upload, gpu::MemoryKind::readback}) {
        auto buffer = ctx().create_buffer(VkDeviceSize(1) << 50, kind);
        ASSERT_FALSE(buffer);
        EXPECT_TRUE(buffer.error().code == ErrorCode::out_of_memory ||
                    buffer.error().code == ErrorCode::limit_exceeded)
            << buffer.error().message;
    }
}

// Test 7 (issue 15, item 6): the size arithmetic of 10M, 100M and 2^32 - 1 boxes is done in
// 64 bits: every requirement is at least its exact per-box lower bound (computed here in 64
// bits), grows with n, and the largest passes 2^32 bytes without wrapping. Nothing is
// allocated.
TEST_F(LimitsTest, SizeArithmeticIsSixtyFourBitAtScale) {
    auto lbvh = gpu::Lbvh::create(gpu_context());
    auto culler = gpu::Culler::create(gpu_context());
    auto queries = gpu::LbvhQueries::create(gpu_context());
    ASSERT_TRUE(lbvh && culler && queries);
    const std::uint64_t node = sizeof(gpu_layout::LbvhNode), box = sizeof(gpu_layout::GpuBox);
    gpu::LbvhRequirements before{};
    VkDeviceSize cull_before = 0;
    for (const std::uint64_t n : {10'000'000ull, 100'000'000ull, 4'294'967'295ull}) {
        SCOPED_TRACE(n);
        const auto n32 = static_cast<std::uint32_t>(n);
        const gpu::LbvhRequirements req = lbvh.value()->requirements(n32);
        EXPECT_EQ(req.boxes, n * box);
        EXPECT_EQ(req.nodes, (2 * n - 1) * node);
        // codes (8 B) and ids (4 B), twice for the sort's ping-pong
        EXPECT_GE(req.scratch, n * 24);
        EXPECT_GT(req.scratch, before.scratch);
        const VkDeviceSize cull = culler.value()->scratch_size(n32);
        // slots, ranks, keys (8 B), values, their ping-pong: 32 B per box at least
        EXPECT_GE(cull, n * 32);
        EXPECT_GT(cull, cull_before);
        EXPECT_GE(queries.value()->scan_scratch_size(n32), n / gpu_layout::kScanTile * 4);
        before = req;
        cull_before = cull;
    }
    EXPECT_GT(before.nodes, VkDeviceSize(1) << 32);
    EXPECT_GT(cull_before, VkDeviceSize(1) << 32);
    // Two queues of (query, node) items, 8 bytes each, at the largest capacity.
    EXPECT_GE(gpu::traversal_work_bytes(4'294'967'295u), 2 * 8 * 4'294'967'295ull);
}

}  // namespace
}  // namespace broadphase::testing
