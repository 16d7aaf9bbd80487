// Device limits of every GPU host path (issue "Moving scenes and batched queries on the GPU",
// item 6), on a context whose maxStorageBufferRange is capped at 32 MiB
// (ContextOptions::max_storage_buffer_range), so that every device runs every case. Test 1-4:
// a scene just over the range (the node buffer, 48 bytes x (2n-1), is the largest per-box
// buffer: n = range / 96 + 1000) is refused by Lbvh::find_pairs, Lbvh::build_nodes,
// Culler::cull, LbvhQueries::build and MovingScene::reset with limit_exceeded and a message
// naming the buffer and the limit, before any allocation. Test 5: a scene just under it builds.
// Test 6: an absurd buffer size comes back as out_of_memory or limit_exceeded, not a crash.
// Test 7: the size arithmetic at 10M, 100M and 2^32 - 1 boxes is 64-bit.
// Scale (issue 15, item 6; gpu/device/buffer_sizing.hpp), pure size arithmetic with no device, at n
// = 10M, 100M, 2^31 and 2^32 - 1 and against fake DeviceLimits of 128 MiB, 2 GiB and 2^32 - 1
// bytes: Test 8: Lbvh requirements, byte for byte against the layout re-derived here (and literal
// totals). Test 9: the radix sort's scratch, likewise. Test 10: the cull's scratch (one view
// and four, with and without grouped meshes). Test 11: the largest scene per binding range,
// and the refusal one box past it naming the node buffer, its bytes and the range; 10M boxes
// fit 2 GiB, 100M fit no Vulkan device (their boxes would; their nodes cannot). Test 12:
// check_bindings names every binding over the range. Test 13: dispatches of 2^32 - 1
// invocations fold within 65,535 x 257 workgroups. Test 14: pair totals past 2^32 are exact
// and refused with that count. Test 15 (device): the pairs pass's 32-bit counter carries past
// 2^32 - 1 on the GPU (its count saturates, total_hi counts the wrap, the stored pairs are
// real pairs), on both append paths. Test 16: Lbvh::requirements and the Culler's scratch sizes
// are the pure functions. Test 17 (device): more pairs than one binding stores are refused with
// their exact count by Lbvh::find_pairs and MovingScene::reset.
#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/layout/cull.h"
#include "broadphase/gpu/lbvh_queries.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/scene.hpp"
#include "device/buffer_sizing.hpp"
#include "device/context_impl.hpp"
#include "device/kernels.hpp"
#include "gpu_test_env.hpp"
#include "lbvh/lbvh_build.hpp"
#include "lbvh/lbvh_pairs.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::testing {
namespace {

constexpr VkDeviceSize kCappedRange = VkDeviceSize(32) << 20;

class LimitsTest : public OwnContextTest {
protected:
    void SetUp() override {
        OwnContextTest::SetUp();
        // A tree's arrays bound whole, as on a device with too few storage descriptors to split
        // them (split bindings: tests/gpu/split_bindings_test.cpp).
        own_ = capped_context(kCappedRange, false);
        ASSERT_TRUE(own_);
        ASSERT_EQ(own_->info().max_storage_buffer_range,
                  std::min(kCappedRange, gpu_context().info().max_storage_buffer_range));
    }

    gpu::Context& ctx() { return *own_; }
    VkDeviceSize range() const { return own_->info().max_storage_buffer_range; }

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

// Test 6b (issue 15, item 6): maxMemoryAllocationSize is a soft limit (the spec lets a larger
// allocation succeed or fail with VK_ERROR_OUT_OF_DEVICE_MEMORY; NVIDIA's drivers report about
// 4 GiB and allocate more, and a 100M-box tree needs 16 GB in one buffer): create_buffer tries a
// buffer past it, which the driver allocates here, and its last word round-trips. maxBufferSize
// is a hard limit: a buffer past it is refused, naming it. The test's own context reports
// limits of 1 MiB and 2 MiB (the device's own are larger than lavapipe's one heap of 2 GiB).
TEST_F(LimitsTest, AllocationLimitIsSoftBufferLimitIsNot) {
    auto context = own_context({});
    ASSERT_TRUE(context);
    gpu::DeviceInfo& info = impl_of(*context).info;
    ASSERT_GE(info.max_memory_allocation_size, VkDeviceSize(1) << 21);
    ASSERT_GE(info.max_buffer_size, VkDeviceSize(1) << 21);
    info.max_memory_allocation_size = VkDeviceSize(1) << 20;
    info.max_buffer_size = VkDeviceSize(2) << 20;
    const VkDeviceSize past = info.max_memory_allocation_size + 65536;
    auto buffer = context->create_buffer(past, gpu::MemoryKind::device);
    ASSERT_TRUE(buffer) << buffer.error().message;
    const std::uint32_t word = 0x5eed5eedu;
    ASSERT_TRUE(context->upload(*buffer, &word, 4, past - 4));
    std::uint32_t back = 0;
    ASSERT_TRUE(context->download(*buffer, &back, 4, past - 4));
    EXPECT_EQ(back, word);
    auto refused = context->create_buffer(info.max_buffer_size + 4, gpu::MemoryKind::device);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, ErrorCode::limit_exceeded);
    EXPECT_NE(refused.error().message.find("maxBufferSize"), std::string::npos)
        << refused.error().message;
    EXPECT_TRUE(context->create_buffer(info.max_buffer_size, gpu::MemoryKind::device));
    EXPECT_EQ(context->validation_errors(), 0u);
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
        EXPECT_EQ(req.nodes, ((2 * n - 1) * node + 255) / 256 * 256 + (n - 1) * 64);
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

// The layouts of the scratch buffers, re-derived here from their documented rules rather than
// taken from the library: each array starts at a multiple of 256 bytes (Arena) and takes at
// least 4 bytes.
constexpr std::uint64_t a256(std::uint64_t bytes) {
    return (std::max<std::uint64_t>(bytes, 4) + 255) / 256 * 256;
}
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
    return (a + b - 1) / b;
}
// A scan of `count` uints: one array of tile sums per level (2048 uints a tile) until one tile.
std::uint64_t scan_bytes(std::uint64_t count) {
    std::uint64_t bytes = 0;
    do {
        count = ceil_div(count, 2048);
        bytes += a256(4 * count);
    } while (count > 1);
    return bytes;
}
// A radix sort of n elements: the larger of reduce-then-scan's histograms (256 counts per tile
// of 4096) and their scan, and the one-sweep state (64 counters, 8 x 256 global counts, then
// 256 look-back words per pass and tile, for 8 passes).
std::uint64_t sort_bytes(std::uint64_t n) {
    const std::uint64_t tiles = std::max<std::uint64_t>(ceil_div(n, 4096), 1);
    const std::uint64_t hist = 256 * tiles;
    return std::max(a256(4 * hist) + scan_bytes(hist), a256(4 * (64 + 8 * 256 + 8 * tiles * 256)));
}
// An LBVH build: bounds (32 B), keys, ids, their ping-pong, split flags, the sort; refinable
// kinds with refine take 64-bit keys and the first codes beside them (4 B per box more), run
// bounds (24 B per box), a refine word and three indirect dispatch commands (36 B).
// soa: a tree too large for one descriptor is built into three arrays of 16 B per node first.
std::uint64_t lbvh_scratch_bytes(std::uint64_t n, gpu::CodeKind code, bool refine, bool soa) {
    const bool refined = code != gpu::CodeKind::morton63 && refine;
    const std::uint64_t key = n * (refined || code == gpu::CodeKind::morton63 ? 8 : 4);
    std::uint64_t bytes = a256(32) + 2 * (a256(key) + a256(4 * n)) +
                          a256(4 * std::max<std::uint64_t>(n, 1)) + a256(sort_bytes(n));
    if (refined) bytes += a256(4 * n) + a256(24 * n) + a256(4) + a256(36);
    if (soa) bytes += 3 * a256(16 * (2 * std::max<std::uint64_t>(n, 1) - 1));
    return bytes;
}
// A cull: params (128 B; 256 per further view), slots (a 256-aligned stride per further
// view), ranks, chunk counts (32 boxes a chunk, plus the total; a stride per further view),
// 64-bit keys, values, their ping-pong, the larger of the sort's and the counts' scan scratch,
// the visible count, two indirect dispatch commands, the occlusion parameters (80 B), and
// 2 (meshes + 1) uints of run bounds.
std::uint64_t cull_scratch_bytes(std::uint64_t n, std::uint64_t meshes, std::uint64_t views) {
    const std::uint64_t more = views - 1, chunks = ceil_div(n, 32);
    std::uint64_t bytes = a256(more * 256 + 128) + a256(more * a256(4 * n) + 4 * n) + a256(4 * n) +
                          a256(more * a256(4 * (chunks + 1)) + 4 * (chunks + 1)) +
                          2 * (a256(8 * n) + a256(4 * n)) +
                          a256(std::max(sort_bytes(n), scan_bytes(chunks + 1))) + a256(4) +
                          a256(24) + a256(80);  // the occlusion parameters
    if (meshes > 0) bytes += a256(8 * (meshes + 1));
    return bytes;
}

constexpr std::uint64_t kScaleCounts[] = {10'000'000ull, 100'000'000ull, 1ull << 31,
                                          4'294'967'295ull};
constexpr gpu::CodeKind kCodes[] = {gpu::CodeKind::morton30, gpu::CodeKind::morton63,
                                    gpu::CodeKind::hilbert30};
constexpr VkDeviceSize k128MiB = VkDeviceSize(128) << 20, k2GiB = VkDeviceSize(2) << 30;

// Test 8: Lbvh requirements at scale, exact, for every code kind and refine option; the
// default's totals as literals (no 32-bit wrap: the node bytes pass 2^32 from 100M on).
TEST(LimitsArithmetic, LbvhRequirementsExactAtScale) {
    for (const std::uint64_t n : kScaleCounts) {
        SCOPED_TRACE(n);
        const auto n32 = static_cast<std::uint32_t>(n);
        for (const gpu::CodeKind code : kCodes) {
            for (const bool refine : {false, true}) {
                for (const bool soa : {false, true}) {
                    const gpu::LbvhRequirements req =
                        gpu::lbvh_requirements(n32, code, refine, soa);
                    EXPECT_EQ(req.boxes, 32 * n);
                    // The nodes, then from a 256-byte boundary the n - 1 wide records.
                    EXPECT_EQ(req.nodes, (48 * (2 * n - 1) + 255) / 256 * 256 + 64 * (n - 1));
                    EXPECT_EQ(req.scratch, lbvh_scratch_bytes(n, code, refine, soa))
                        << int(code) << " refine " << refine << " soa " << soa;
                }
            }
        }
    }
    const gpu::LbvhRequirements m10 =
        gpu::lbvh_requirements(10'000'000, gpu::CodeKind::morton30, true, false);
    EXPECT_EQ(m10.nodes, 1'599'999'936ull);
    EXPECT_EQ(m10.scratch, 580'014'080ull);
    const gpu::LbvhRequirements m100 =
        gpu::lbvh_requirements(100'000'000, gpu::CodeKind::morton30, true, false);
    EXPECT_EQ(m100.boxes, 3'200'000'000ull);
    EXPECT_EQ(m100.nodes, 15'999'999'936ull);
    EXPECT_EQ(m100.scratch, 5'800'016'896ull);
    // 100M boxes' tree is split on every device (9.6 GB of nodes): 3 x 3.2 GB more scratch,
    // each array within one 2^32 - 1 byte binding.
    EXPECT_EQ(gpu::lbvh_requirements(100'000'000, gpu::CodeKind::morton30, true, true).scratch,
              15'400'016'896ull);
    EXPECT_EQ(gpu::soa_array_bytes(100'000'000), 3'199'999'984ull);
    EXPECT_EQ(gpu::soa_array_bytes(134'217'727), 4'294'967'248ull);  // the box buffer's limit
    EXPECT_EQ(gpu::lbvh_requirements(4'294'967'295u, gpu::CodeKind::morton30, true, false).nodes,
              687'194'767'232ull);
    EXPECT_EQ(gpu::lbvh_nodes_bytes(0), 48u);
    EXPECT_EQ(gpu::lbvh_nodes_bytes(1), 48u);
    // Fewer than two boxes: one (unused) wide record at offset 256.
    EXPECT_EQ(gpu::lbvh_tree_bytes(0), 256u + 64u);
    EXPECT_EQ(gpu::lbvh_tree_bytes(1), 256u + 64u);
    EXPECT_EQ(gpu::lbvh_wide_offset(3), 256u);  // 5 nodes: 240 bytes
    EXPECT_EQ(gpu::lbvh_wide_offset(6), 768u);  // 11 nodes: 528 bytes
}

// Test 9: the radix sort's scratch at scale, exact (the one-sweep state is the larger:
// about 2 bytes per element), and the scan's.
TEST(LimitsArithmetic, SortScratchExactAtScale) {
    for (const std::uint64_t n : kScaleCounts) {
        SCOPED_TRACE(n);
        const auto n32 = static_cast<std::uint32_t>(n);
        EXPECT_EQ(gpu::RadixSort::scratch_size(n32), sort_bytes(n));
        EXPECT_EQ(gpu::RadixSort::scan_scratch_size(n32), scan_bytes(n));
    }
    EXPECT_EQ(gpu::RadixSort::scratch_size(10'000'000), 20'013'312ull);
    EXPECT_EQ(gpu::RadixSort::scratch_size(4'294'967'295u), 8'589'943'040ull);
}

// Test 10: the cull's scratch at scale, exact, for one view and four, with and without
// grouped meshes.
TEST(LimitsArithmetic, CullScratchExactAtScale) {
    for (const std::uint64_t n : kScaleCounts) {
        SCOPED_TRACE(n);
        const auto n32 = static_cast<std::uint32_t>(n);
        EXPECT_EQ(gpu::cull_scratch_size(n32, 0, 1), cull_scratch_bytes(n, 0, 1));
        EXPECT_EQ(gpu::cull_scratch_size(n32, 7, 1), cull_scratch_bytes(n, 7, 1));
        EXPECT_EQ(gpu::cull_scratch_size(n32, 0, 4), cull_scratch_bytes(n, 0, 4));
        EXPECT_GT(gpu::cull_scratch_size(n32, 0, 4), gpu::cull_scratch_size(n32, 0, 1));
    }
    EXPECT_GT(gpu::cull_scratch_size(4'294'967'295u, 0, 1), VkDeviceSize(1) << 32);
}

// Test 11: the largest LBVH per binding range is set by the node buffer, (2n - 1) x 48 <= range,
// for every code kind; one box more is refused naming the node buffer, its bytes and the range.
// 10M boxes fit 2 GiB and 2^32 - 1 but not 128 MiB; 100M fit no Vulkan device: their boxes
// (3.2 GB) would, their nodes (9.6 GB) cannot, and the error says so.
TEST(LimitsArithmetic, LargestSceneByBindingRange) {
    struct Case {
        VkDeviceSize range;
        std::uint32_t largest;
    };
    const Case cases[] = {
        {k128MiB, 1'398'101}, {k2GiB, 22'369'621}, {gpu::kMaxStorageRange, 44'739'243}};
    for (const Case& c : cases) {
        SCOPED_TRACE(c.range);
        const gpu::DeviceLimits limits = gpu::limits_of_range(c.range);
        for (const gpu::CodeKind code : kCodes) {
            for (const bool refine : {false, true}) {
                EXPECT_EQ(gpu::largest_lbvh_boxes(limits, code, refine), c.largest);
            }
        }
        EXPECT_TRUE(gpu::check_bindings(
            limits, "x", gpu::lbvh_bindings(c.largest, gpu::CodeKind::morton30, true)));
        const Status over = gpu::check_bindings(
            limits, "an LBVH", gpu::lbvh_bindings(c.largest + 1, gpu::CodeKind::morton30, true));
        ASSERT_FALSE(over);
        EXPECT_EQ(over.error().code, ErrorCode::limit_exceeded);
        EXPECT_EQ(over.error().message, "an LBVH: the node buffer needs " +
                                            std::to_string(96ull * (c.largest + 1) - 48) +
                                            " bytes bound as one storage buffer, over the device's "
                                            "maxStorageBufferRange of " +
                                            std::to_string(c.range));
    }
    // The nodes are the largest binding of a build from a few hundred boxes on.
    for (const std::uint64_t n : {4096ull, 10'000'000ull, 100'000'000ull, (1ull << 31) - 1}) {
        for (const gpu::CodeKind code : kCodes) {
            for (const gpu::BindingSize& b :
                 gpu::lbvh_bindings(static_cast<std::uint32_t>(n), code, true)) {
                EXPECT_LE(b.bytes, gpu::lbvh_nodes_bytes(n)) << b.name << " at " << n;
            }
        }
    }
    const auto fits = [](std::uint32_t n, VkDeviceSize range) {
        return static_cast<bool>(
            gpu::check_bindings(gpu::limits_of_range(range), "x",
                                gpu::lbvh_bindings(n, gpu::CodeKind::morton30, true)));
    };
    EXPECT_FALSE(fits(10'000'000, k128MiB));
    EXPECT_TRUE(fits(10'000'000, k2GiB));
    EXPECT_TRUE(fits(10'000'000, gpu::kMaxStorageRange));
    const Status hundred =
        gpu::check_bindings(gpu::limits_of_range(gpu::kMaxStorageRange), "100M boxes",
                            gpu::lbvh_bindings(100'000'000, gpu::CodeKind::morton30, true));
    ASSERT_FALSE(hundred);
    EXPECT_NE(hundred.error().message.find("the node buffer needs 9599999952 bytes"),
              std::string::npos)
        << hundred.error().message;
    EXPECT_EQ(hundred.error().message.find("box buffer"), std::string::npos)
        << hundred.error().message;
}

// Test 12: check_bindings names every binding over the range, in order, and passes one of
// exactly the range; 0-byte bindings are not checked.
TEST(LimitsArithmetic, CheckBindingsNamesEveryBindingOverTheRange) {
    const gpu::DeviceLimits limits = gpu::limits_of_range(1000);
    const gpu::BindingSize ok[] = {{"a", 1000}, {"b", 0}, {"c", 4}};
    EXPECT_TRUE(gpu::check_bindings(limits, "w", ok));
    const gpu::BindingSize bad[] = {
        {"the a buffer", 1001}, {"b", 1000}, {"the c buffer", 1ull << 40}};
    const Status s = gpu::check_bindings(limits, "w", bad);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, ErrorCode::limit_exceeded);
    EXPECT_EQ(s.error().message,
              "w: the a buffer needs 1001 bytes bound as one storage buffer, over the device's "
              "maxStorageBufferRange of 1000; the c buffer needs 1099511627776 bytes bound as one "
              "storage buffer, over the device's maxStorageBufferRange of 1000");
}

// Test 13: 2^32 - 1 invocations (2^24 workgroups of 256) fold into 65,535 x 257 workgroups, within
// the 65,535 every device allows in y.
TEST(LimitsArithmetic, DispatchFoldsWithinWorkgroupLimits) {
    const std::uint64_t groups = ceil_div(4'294'967'295ull, gpu_layout::kWorkgroupSize);
    ASSERT_EQ(groups, 1ull << 24);
    const gpu::GroupCounts folded = gpu::fold_groups(groups, 65535);
    EXPECT_EQ(folded.x, 65535u);
    EXPECT_EQ(folded.y, 257u);
    EXPECT_GE(std::uint64_t(folded.x) * folded.y, groups);
    EXPECT_LT(std::uint64_t(folded.x) * (folded.y - 1), groups);  // no whole row spare
    const gpu::GroupCounts small = gpu::fold_groups(1000, 65535);
    EXPECT_EQ(small.x, 1000u);
    EXPECT_EQ(small.y, 1u);
    EXPECT_EQ(gpu::fold_groups(0, 65535).x, 0u);
    EXPECT_LE(folded.y, 65535u);  // maxComputeWorkGroupCount[1] of every device
    EXPECT_EQ(gpu::fold_groups(groups, 1u << 31).x, 1u << 24);
    EXPECT_EQ(gpu::fold_groups(groups, 1u << 31).y, 1u);
}

// Test 14: a traversal's pair total is exact past 2^32 (total_lo plus its carries), and a total
// past what one binding stores is refused with that exact total, not the saturated count.
TEST(LimitsArithmetic, PairTotalsPastTwoToThe32AreExactAndRefused) {
    gpu_layout::TraversalStatus st{};
    st.count = 0xffffffffu;
    st.total_lo = 5;
    st.total_hi = 1;
    EXPECT_EQ(gpu::pair_total(st), (1ull << 32) + 5);
    auto outcome = gpu::traversal_outcome(st, "all pairs");
    ASSERT_TRUE(outcome);
    EXPECT_EQ(outcome.value(), (1ull << 32) + 5);
    const gpu::DeviceLimits limits = gpu::limits_of_range(gpu::kMaxStorageRange);
    EXPECT_EQ(gpu::max_stored_pairs(limits), 536'870'911u);
    EXPECT_TRUE(gpu::check_pair_total(limits, "w", 536'870'911));
    const Status just_over = gpu::check_pair_total(limits, "w", 536'870'912);
    ASSERT_FALSE(just_over);
    const Status s = gpu::check_pair_total(limits, "all pairs", gpu::pair_total(st));
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, ErrorCode::limit_exceeded);
    EXPECT_EQ(s.error().message,
              "all pairs: 4294967301 pairs do not fit one storage buffer (device limit 536870911 "
              "pairs of 8 bytes)");
    EXPECT_EQ(gpu::max_stored_pairs(gpu::limits_of_range(k128MiB)), 16'777'216u);
}

// Test 15: the pairs pass's counter past 2^32 - 1 on the device. The status starts kBefore
// short of 2^32 and the pass appends to it (ProxyPairs::append), so the scene's P pairs carry
// the 32-bit counter over: total_hi becomes 1, total_lo P - kBefore, the count saturates at
// 2^32 - 1, the exact total is 2^32 - kBefore + P, and the slots that wrapped below the
// capacity hold distinct real pairs (brute force's). Both append paths where the device has them.
TEST_F(LimitsTest, PairCounterCarriesPastTwoToThe32) {
    auto scene = generate_scene("clustered", 2000);
    ASSERT_TRUE(scene);
    const auto n = static_cast<std::uint32_t>(scene->boxes.size());
    const std::vector<Pair> expected = brute_pairs(scene->boxes);
    ASSERT_GT(expected.size(), 200u);
    const std::set<Pair> real(expected.begin(), expected.end());
    const auto p = static_cast<std::uint32_t>(expected.size());
    constexpr std::uint32_t kBefore = 37;
    std::vector<gpu::PairAppend> appends{gpu::PairAppend::atomic};
    if (ctx().info().subgroup_ballot) appends.push_back(gpu::PairAppend::subgroup);
    for (const gpu::PairAppend append : appends) {
        SCOPED_TRACE(int(append));
        gpu::LbvhOptions options;
        options.pair_append = append;
        auto lbvh = gpu::Lbvh::create(ctx(), options);
        ASSERT_TRUE(lbvh) << lbvh.error().message;
        const gpu::LbvhRequirements req = lbvh.value()->requirements(n);
        const std::uint32_t work_capacity = 1u << 16;
        auto make = [&](VkDeviceSize bytes) {
            auto b = ctx().create_buffer(bytes, gpu::MemoryKind::device);
            EXPECT_TRUE(b) << b.error().message;
            return b ? std::move(b.value()) : gpu::Buffer();
        };
        gpu::Buffer boxes = make(req.boxes), nodes = make(req.nodes), scratch = make(req.scratch),
                    pairs = make(p * 8ull), status = make(sizeof(gpu_layout::TraversalStatus)),
                    work = make(gpu::traversal_work_bytes(work_capacity));
        ASSERT_TRUE(work.handle());
        const std::vector<gpu_layout::GpuBox> gpu_boxes = gpu::to_gpu_boxes(scene->boxes);
        ASSERT_TRUE(ctx().upload(boxes, gpu_boxes.data(), req.boxes));
        gpu_layout::TraversalStatus start{};
        start.total_lo = 0u - kBefore;
        ASSERT_TRUE(ctx().upload(status, &start, sizeof(start)));
        gpu::ProxyPairs proxy;
        proxy.append = true;
        Status recorded;
        ASSERT_TRUE(ctx().submit_and_wait([&](VkCommandBuffer cmd) {
            gpu::compute_barrier(cmd);
            recorded = lbvh.value()->record_build(
                cmd, {gpu::whole(boxes), gpu::whole(nodes), gpu::whole(scratch)}, n);
            if (!recorded) return;
            gpu::compute_barrier(cmd);
            recorded = gpu::record_proxy_pairs(
                *lbvh.value(), cmd, {gpu::whole(nodes), n},
                {gpu::whole(pairs), p, gpu::whole(status), {gpu::whole(work), work_capacity}},
                proxy);
            gpu::compute_barrier(cmd);
        }));
        ASSERT_TRUE(recorded) << recorded.error().message;
        gpu_layout::TraversalStatus st{};
        ASSERT_TRUE(ctx().download(status, &st, sizeof(st)));
        EXPECT_EQ(st.flags, 0u);
        EXPECT_EQ(st.total_hi, 1u);
        EXPECT_EQ(st.total_lo, p - kBefore);
        EXPECT_EQ(st.count, 0xffffffffu);
        EXPECT_EQ(gpu::pair_total(st), (1ull << 32) - kBefore + p);
        auto outcome = gpu::traversal_outcome(st, "all pairs");
        ASSERT_TRUE(outcome) << outcome.error().message;
        EXPECT_EQ(outcome.value(), (1ull << 32) - kBefore + p);
        const Status refused =
            gpu::check_pair_total(gpu::device_limits(ctx().info()), "all pairs", outcome.value());
        ASSERT_FALSE(refused);
        EXPECT_NE(refused.error().message.find(std::to_string(outcome.value())), std::string::npos);
        // Slots [0, P - kBefore) were written after the wrap: distinct pairs of the scene.
        std::vector<Pair> stored(p - kBefore);
        ASSERT_TRUE(ctx().download(pairs, stored.data(), stored.size() * sizeof(Pair)));
        const std::set<Pair> distinct(stored.begin(), stored.end());
        EXPECT_EQ(distinct.size(), stored.size());
        for (const Pair& pair : stored) EXPECT_TRUE(real.count(pair)) << pair.i << " " << pair.j;
    }
}

// Test 16: the Lbvh and the Culler size their buffers by the pure functions tested above.
TEST_F(LimitsTest, RecordersUseThePureSizeFunctions) {
    auto culler = gpu::Culler::create(gpu_context());
    ASSERT_TRUE(culler);
    for (const gpu::CodeKind code : kCodes) {
        for (const bool refine : {false, true}) {
            gpu::LbvhOptions options;
            options.code = code;
            options.refine = refine;
            auto lbvh = gpu::Lbvh::create(gpu_context(), options);
            ASSERT_TRUE(lbvh);
            for (const std::uint64_t n : kScaleCounts) {
                const auto n32 = static_cast<std::uint32_t>(n);
                const gpu::LbvhRequirements got = lbvh.value()->requirements(n32);
                // Split where the device splits and the nodes or wide nodes pass one binding.
                const gpu::DeviceInfo& info = gpu_context().info();
                const bool soa = info.tree_parts > 1 &&
                                 (gpu::lbvh_nodes_bytes(n) > info.max_storage_buffer_range ||
                                  gpu::lbvh_wide_bytes(n) > info.max_storage_buffer_range);
                const gpu::LbvhRequirements want = gpu::lbvh_requirements(n32, code, refine, soa);
                EXPECT_EQ(got.boxes, want.boxes);
                EXPECT_EQ(got.nodes, want.nodes);
                EXPECT_EQ(got.scratch, want.scratch);
            }
        }
    }
    for (const std::uint64_t n : kScaleCounts) {
        const auto n32 = static_cast<std::uint32_t>(n);
        EXPECT_EQ(culler.value()->scratch_size(n32, 3), gpu::cull_scratch_size(n32, 3, 1));
        EXPECT_EQ(culler.value()->views_scratch_size(n32, 4), gpu::cull_scratch_size(n32, 0, 4));
    }
}

// Test 17: more pairs than one binding stores are refused with their exact count, by
// Lbvh::find_pairs and by MovingScene::reset, on a context capped at 1 MiB (131,072 pairs of 8
// bytes): 600 boxes that all overlap have 179,700 pairs.
TEST_F(LimitsTest, PairsOverOneBindingAreRefusedWithTheirExactCount) {
    auto small = capped_context(VkDeviceSize(1) << 20, true);
    ASSERT_TRUE(small);
    gpu::Context& c = *small;
    std::vector<Box> boxes(600);
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        const float x = 0.001f * float(i);
        boxes[i] = {{x, 0, 0}, {x + 1, 1, 1}};
    }
    const std::string over =
        "179700 pairs do not fit one storage buffer (device limit 131072 pairs of 8 bytes)";
    auto lbvh = gpu::Lbvh::create(c);
    ASSERT_TRUE(lbvh);
    auto pairs = lbvh.value()->find_pairs(boxes);
    ASSERT_FALSE(pairs);
    EXPECT_EQ(pairs.error().code, ErrorCode::limit_exceeded);
    EXPECT_EQ(pairs.error().message, "Lbvh::find_pairs: " + over);
    auto moving = gpu::MovingScene::create(c);
    ASSERT_TRUE(moving);
    const Status reset = moving.value()->reset(boxes);
    ASSERT_FALSE(reset);
    EXPECT_EQ(reset.error().code, ErrorCode::limit_exceeded);
    EXPECT_EQ(reset.error().message, "all pairs of the frame: " + over);
    EXPECT_EQ(c.validation_errors(), 0u);
}

}  // namespace
}  // namespace broadphase::testing
