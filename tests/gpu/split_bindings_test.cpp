// Split tree bindings (issue 15, item 6; layout/common.h, "Split tree bindings";
// shaders/lbvh/tree_parts.glsl): a tree whose node array or wide-node array is larger than one
// storage descriptor is bound as up to kTreeParts descriptors, the kernels compiled as their
// split variants. Run on contexts whose maxStorageBufferRange is capped at 128 KiB (256 KiB for
// the frames, whose own buffers need more), so that trees of a few thousand boxes split on any
// device, lavapipe included (3000 boxes at 128 KiB: 5999 nodes of 48 B over 3 parts of 2048,
// 2999 wide records of 64 B over 2 parts of 2048). Every result is compared with the uncapped
// context's, whose whole bindings the rest of the suite checks against the twins.
// Test 1: the context splits (tree_parts) where the option allows; the part shifts.
// Test 2: every standard scene's tree, wide records and pairs equal the uncapped context's bit
// for bit, the twin's wide records and brute force's pairs; the split kernels ran
// (ContextImpl::split_dispatches).
// Test 3: region queries and ray casts equal the uncapped context's and the twin's.
// Test 4: culls (both orders, LODs flat and grouped, occlusion, several views at once) equal
// the uncapped context's.
// Test 5: moving-scene frames (refit, SAH, rebuild, pairs, began and ended) equal the uncapped
// context's and brute force.
// Test 5b: MovingScene::record_refit on the caller's ranges refits a split tree into the
// arrays after its flags (refit_flags_bytes), equal to the uncapped context's refit, and
// refuses a flags range of only the n - 1 flags.
// Test 6: a proxy scene (cross passes between its trees) equals the uncapped context's.
// Test 7: a tree over kTreeParts parts is refused, naming the parts; with splitting off, a tree
// over one descriptor is refused as before.
// Test 8 (no device): the size arithmetic of split trees, 100M boxes included.
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/lbvh_queries.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/gpu/proxy_scene.hpp"
#include "broadphase/occlusion.hpp"
#include "broadphase/scene.hpp"
#include "cull_test_util.hpp"
#include "device/buffer_sizing.hpp"
#include "device/kernels.hpp"
#include "gpu_test_env.hpp"
#include "lbvh/lbvh_build.hpp"
#include "lbvh/lbvh_pairs.hpp"
#include "lbvh_queries.hpp"
#include "query_batches.hpp"
#include "wide_nodes_check.hpp"

namespace broadphase::testing {
namespace {

using gpu_layout::kTreeParts;

constexpr VkDeviceSize kSplitRange = 128 * 1024;
// The frames' own buffers (a moving scene's pair sort scratch, about 14 bytes per pair of
// capacity at these sizes; a proxy batch, 96 bytes per body) need more than 128 KiB: 256 KiB,
// parts of 4096 nodes and 4096 wide records, and initial pair capacities below the default.
constexpr VkDeviceSize kFramesRange = 256 * 1024;
constexpr std::uint32_t kBoxes = 3000;

std::vector<Box> scene_boxes(const char* generator, std::uint32_t n = kBoxes) {
    auto scene = generate_scene(generator, n);
    EXPECT_TRUE(scene) << (scene ? "" : scene.error().message);
    return scene ? std::move(scene->boxes) : std::vector<Box>{};
}

std::uint64_t split_dispatches(gpu::Context& context) {
    return gpu::impl_of(context).split_dispatches;
}

// Moves every third box (from seed % 3) by up to `reach` in each axis (deterministic).
void jitter_boxes(std::vector<Box>& boxes, unsigned seed, float reach) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-reach, reach);
    for (std::size_t i = seed % 3; i < boxes.size(); i += 3) {
        const Vec3 m{d(rng), d(rng), d(rng)};
        boxes[i].min = {boxes[i].min.x + m.x, boxes[i].min.y + m.y, boxes[i].min.z + m.z};
        boxes[i].max = {boxes[i].max.x + m.x, boxes[i].max.y + m.y, boxes[i].max.z + m.z};
    }
}

// The split context's scene holds the uncapped context's tree bit for bit, and wide records
// that are bit copies of its nodes' bounds.
void expect_same_tree(gpu::Context& split, gpu::MovingScene& on_split, gpu::MovingScene& on_whole) {
    auto nodes = on_split.nodes();
    auto want_nodes = on_whole.nodes();
    ASSERT_TRUE(nodes && want_nodes);
    ASSERT_EQ(nodes->size(), want_nodes->size());
    EXPECT_EQ(std::memcmp(nodes->data(), want_nodes->data(),
                          nodes->size() * sizeof(gpu_layout::LbvhNode)),
              0);
    expect_wide_nodes_match(split, gpu::helper_nodes(on_split), nodes.value());
}

class SplitBindingsTest : public OwnContextTest {
protected:
    void SetUp() override {
        OwnContextTest::SetUp();
        own_ = capped_context(kSplitRange, true);
        ASSERT_TRUE(own_);
        ASSERT_EQ(own_->info().max_storage_buffer_range, kSplitRange);
        ASSERT_EQ(own_->info().tree_parts, kTreeParts)
            << "the device allows too few storage descriptors per stage";
    }

    gpu::Context& split() { return *own_; }
};

// Test 1: the capped context splits a tree's arrays in parts of 2^11 elements (48 << 11 =
// 98,304 and 64 << 11 = 131,072 bytes, each within the 128 KiB range); with the option off it
// binds them whole.
TEST_F(SplitBindingsTest, ContextSplitsWhereTheOptionAllows) {
    EXPECT_EQ(gpu::impl_of(split()).node_shift, 11u);
    EXPECT_EQ(gpu::impl_of(split()).wide_shift, 11u);
    auto whole = capped_context(kSplitRange, false);
    ASSERT_TRUE(whole);
    EXPECT_EQ(whole->info().tree_parts, 1u);
}

// Test 2: trees and pairs.
TEST_F(SplitBindingsTest, TreesAndPairsEqualTheWholeBindings) {
    for (const char* generator : {"uniform", "level", "degenerate", "clustered", "multiscale"}) {
        SCOPED_TRACE(generator);
        const std::vector<Box> boxes = scene_boxes(generator);
        ASSERT_GT(gpu::lbvh_nodes_bytes(boxes.size()), kSplitRange);
        auto on_split = gpu::Lbvh::create(split());
        auto on_whole = gpu::Lbvh::create(gpu_context());
        ASSERT_TRUE(on_split && on_whole);
        const std::uint64_t before = split_dispatches(split());
        auto nodes = (*on_split)->build_nodes(boxes);
        ASSERT_TRUE(nodes) << nodes.error().message;
        EXPECT_GT(split_dispatches(split()), before) << "the build ran unsplit";
        auto expected = (*on_whole)->build_nodes(boxes);
        ASSERT_TRUE(expected) << expected.error().message;
        ASSERT_EQ(nodes->size(), expected->size());
        EXPECT_EQ(std::memcmp(nodes->data(), expected->data(),
                              nodes->size() * sizeof(gpu_layout::LbvhNode)),
                  0);
        expect_wide_nodes_match(split(), gpu::helper_nodes(**on_split), nodes.value());
        const std::uint64_t before_pairs = split_dispatches(split());
        auto pairs = (*on_split)->find_pairs(boxes);
        ASSERT_TRUE(pairs) << pairs.error().message;
        EXPECT_GT(split_dispatches(split()), before_pairs) << "the pairs pass ran unsplit";
        EXPECT_EQ(pairs.value(), brute_pairs(boxes));
    }
}

// Test 3: region queries and ray casts.
TEST_F(SplitBindingsTest, QueriesEqualTheWholeBindingsAndTheTwin) {
    for (const char* generator : {"uniform", "level", "clustered"}) {
        SCOPED_TRACE(generator);
        const std::vector<Box> boxes = scene_boxes(generator);
        auto on_split = gpu::LbvhQueries::create(split());
        auto on_whole = gpu::LbvhQueries::create(gpu_context());
        ASSERT_TRUE(on_split && on_whole);
        ASSERT_TRUE((*on_split)->build(boxes));
        ASSERT_TRUE((*on_whole)->build(boxes));
        auto lbvh = gpu::Lbvh::create(gpu_context());
        ASSERT_TRUE(lbvh);
        auto nodes = (*lbvh)->build_nodes(boxes);
        ASSERT_TRUE(nodes);
        const std::vector<Box> regions = regions_of(boxes);
        const std::uint64_t before = split_dispatches(split());
        auto hits = (*on_split)->query_boxes(regions);
        ASSERT_TRUE(hits) << hits.error().message;
        EXPECT_GT(split_dispatches(split()), before);
        auto want_hits = (*on_whole)->query_boxes(regions);
        ASSERT_TRUE(want_hits);
        for (std::size_t i = 0; i < regions.size(); ++i) {
            auto got = hits->hits(i);
            auto want = want_hits->hits(i);
            ASSERT_EQ(std::vector<std::uint32_t>(got.begin(), got.end()),
                      std::vector<std::uint32_t>(want.begin(), want.end()))
                << "region " << i;
            std::vector<std::uint32_t> twin;
            lbvh::query_region(nodes.value(), regions[i], twin);
            std::vector<std::uint32_t> sorted(got.begin(), got.end());
            std::sort(sorted.begin(), sorted.end());
            std::sort(twin.begin(), twin.end());
            ASSERT_EQ(sorted, twin) << "twin, region " << i;
        }
        const std::vector<Ray> rays = rays_of(boxes);
        auto cast = (*on_split)->ray_cast(rays);
        ASSERT_TRUE(cast) << cast.error().message;
        auto want_cast = (*on_whole)->ray_cast(rays);
        ASSERT_TRUE(want_cast);
        ASSERT_EQ(cast->size(), rays.size());
        for (std::size_t i = 0; i < rays.size(); ++i) {
            const auto& got = (*cast)[i];
            const auto& want = (*want_cast)[i];
            ASSERT_EQ(got.has_value(), want.has_value()) << "ray " << i;
            const auto twin = lbvh::ray_cast_nodes(nodes.value(), rays[i]);
            ASSERT_EQ(got.has_value(), twin.has_value()) << "twin, ray " << i;
            if (!got) continue;
            EXPECT_EQ(got->id, want->id) << "ray " << i;
            EXPECT_EQ(got->t, want->t) << "ray " << i;
            EXPECT_EQ(got->id, twin->id) << "twin, ray " << i;
        }
    }
}

// Test 4: culls, every kernel that reads the tree (traversal, occlusion, views, compaction,
// LOD emit and grouping).
TEST_F(SplitBindingsTest, CullsEqualTheWholeBindings) {
    const std::vector<Box> boxes = scene_boxes("clustered");
    auto on_split = gpu::Culler::create(split());
    auto on_whole = gpu::Culler::create(gpu_context());
    ASSERT_TRUE(on_split && on_whole);
    std::vector<Frustum> frusta;
    std::vector<std::array<float, 16>> matrices;
    for (const Camera& cam : cameras_for(boxes)) {
        frusta.push_back(frustum_of(cam));
        matrices.push_back(cam.view_projection());
    }
    std::vector<gpu::Mesh> meshes(3);
    meshes[0].lods = {{12, 0, 0, 0}};
    meshes[1].lods = {{36, 12, 0, 0}, {24, 48, 0, 5.0f}};
    meshes[2].lods = {{6, 72, 0, 0}, {3, 78, 0, 2.0f}, {1, 81, 0, 8.0f}};
    std::vector<std::uint32_t> mesh_ids(boxes.size());
    for (std::size_t i = 0; i < boxes.size(); ++i) mesh_ids[i] = std::uint32_t(i * 7 % 3);
    const std::uint32_t kDepthSide = 64;
    auto pyramid = DepthPyramid::build(kDepthSide, kDepthSide,
                                       std::vector<float>(kDepthSide * kDepthSide, 0.97f));
    ASSERT_TRUE(pyramid);
    const std::uint64_t before = split_dispatches(split());
    for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
        const bool exact = order == CullOrder::exact;
        SCOPED_TRACE(exact ? "exact" : "approx");
        for (std::size_t c = 0; c < frusta.size(); ++c) {
            SCOPED_TRACE(c);
            auto got = (*on_split)->cull(boxes, frusta[c], order);
            auto want = (*on_whole)->cull(boxes, frusta[c], order);
            ASSERT_TRUE(got) << got.error().message;
            ASSERT_TRUE(want);
            EXPECT_EQ(got.value(), want.value());
            for (bool grouped : {false, true}) {
                auto draws =
                    (*on_split)->cull_lods(boxes, frusta[c], order, meshes, mesh_ids, grouped);
                auto want_draws =
                    (*on_whole)->cull_lods(boxes, frusta[c], order, meshes, mesh_ids, grouped);
                ASSERT_TRUE(draws) << draws.error().message;
                ASSERT_TRUE(want_draws);
                EXPECT_EQ(draws.value(), want_draws.value()) << (grouped ? "grouped" : "flat");
            }
            auto hidden =
                (*on_split)->cull_occluded(boxes, frusta[c], order, *pyramid, matrices[c]);
            auto want_hidden =
                (*on_whole)->cull_occluded(boxes, frusta[c], order, *pyramid, matrices[c]);
            ASSERT_TRUE(hidden) << hidden.error().message;
            ASSERT_TRUE(want_hidden);
            EXPECT_EQ(hidden.value(), want_hidden.value()) << "occlusion";
        }
        auto views = (*on_split)->cull_views(boxes, frusta, order);
        auto want_views = (*on_whole)->cull_views(boxes, frusta, order);
        ASSERT_TRUE(views) << views.error().message;
        ASSERT_TRUE(want_views);
        EXPECT_EQ(views.value(), want_views.value()) << "views";
    }
    EXPECT_GT(split_dispatches(split()), before);
}

// Test 5: moving-scene frames, refit and rebuild (5000 boxes at 256 KiB: 9999 nodes over 3
// parts of 4096, 4999 wide records over 2 parts of 4096).
TEST_F(SplitBindingsTest, MovingFramesEqualTheWholeBindings) {
    auto frames = capped_context(kFramesRange, true);
    ASSERT_TRUE(frames);
    std::vector<Box> boxes = scene_boxes("uniform", 5000);
    {
        gpu::MovingSceneOptions options;
        options.initial_pair_capacity = 12000;
        auto on_split = gpu::MovingScene::create(*frames, options);
        auto on_whole = gpu::MovingScene::create(gpu_context(), options);
        ASSERT_TRUE(on_split && on_whole);
        const Status reset = (*on_split)->reset(boxes);
        ASSERT_TRUE(reset) << reset.error().message;
        ASSERT_TRUE((*on_whole)->reset(boxes));
        const std::uint64_t before = split_dispatches(*frames);
        bool rebuilt = false, refitted = false;
        for (unsigned frame = 1; frame <= 6; ++frame) {
            SCOPED_TRACE(frame);
            jitter_boxes(boxes, frame, frame == 4 ? 40.0f : 0.5f);  // frame 4 scatters: a rebuild
            auto got = (*on_split)->step(boxes);
            auto want = (*on_whole)->step(boxes);
            ASSERT_TRUE(got) << got.error().message;
            ASSERT_TRUE(want) << want.error().message;
            EXPECT_EQ(got->path, want->path);
            EXPECT_EQ(got->pairs, want->pairs);
            EXPECT_EQ(got->began, want->began);
            EXPECT_EQ(got->ended, want->ended);
            EXPECT_EQ(got->pairs, brute_pairs(boxes));
            rebuilt = rebuilt || got->path != gpu::FramePath::refit;
            refitted = refitted || got->path == gpu::FramePath::refit;
        }
        EXPECT_TRUE(rebuilt && refitted);
        EXPECT_GT(split_dispatches(*frames), before);
        expect_same_tree(*frames, **on_split, **on_whole);
    }
    EXPECT_EQ(frames->validation_errors(), 0u);
}

// Test 5b: the public refit of a split tree, on the caller's boxes and flags.
TEST_F(SplitBindingsTest, RefitOnCallerRangesEqualsTheWholeBindings) {
    auto frames = capped_context(kFramesRange, true);
    ASSERT_TRUE(frames);
    std::vector<Box> boxes = scene_boxes("clustered", 5000);
    const auto n = static_cast<std::uint32_t>(boxes.size());
    auto on_split = gpu::MovingScene::create(*frames);
    auto on_whole = gpu::MovingScene::create(gpu_context());
    ASSERT_TRUE(on_split && on_whole);
    ASSERT_TRUE((*on_split)->reset(boxes));
    ASSERT_TRUE((*on_whole)->reset(boxes));
    EXPECT_EQ((*on_whole)->refit_flags_bytes(n), (n - 1) * 4ull);
    const VkDeviceSize flag_bytes = (*on_split)->refit_flags_bytes(n);
    // The n - 1 flags from 0, then two arrays of 2n - 1 vec4 from 256-byte boundaries.
    EXPECT_EQ(flag_bytes,
              gpu::align_up(gpu::align_up((n - 1) * 4ull, 256) + 16 * (2 * n - 1), 256) +
                  16 * (2 * n - 1));
    jitter_boxes(boxes, 7, 0.5f);
    const std::vector<gpu_layout::GpuBox> gpu_boxes = gpu::to_gpu_boxes(boxes);
    // Refits the scene's own tree from `next` boxes with a caller's flags range of `bytes`.
    auto refit = [&](gpu::Context& ctx, const gpu::MovingScene& scene, VkDeviceSize bytes) {
        auto box_buffer =
            ctx.create_buffer(n * sizeof(gpu_layout::GpuBox), gpu::MemoryKind::device);
        auto flags = ctx.create_buffer(bytes, gpu::MemoryKind::device);
        EXPECT_TRUE(box_buffer && flags);
        if (!box_buffer || !flags) return Status{};
        EXPECT_TRUE(ctx.upload(*box_buffer, gpu_boxes.data(), n * sizeof(gpu_layout::GpuBox)));
        Status recorded;
        EXPECT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
            recorded =
                scene.record_refit(cmd, gpu::whole(*box_buffer), scene.tree(), gpu::whole(*flags));
        }));
        return recorded;
    };
    const Status refused = refit(*frames, **on_split, (n - 1) * 4ull);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("flags"), std::string::npos) << refused.error().message;
    const std::uint64_t before = split_dispatches(*frames);
    const Status split_refit = refit(*frames, **on_split, flag_bytes);
    ASSERT_TRUE(split_refit) << split_refit.error().message;
    EXPECT_EQ(split_dispatches(*frames), before + 2);  // lbvh_refit_soa, lbvh_assemble
    ASSERT_TRUE(refit(gpu_context(), **on_whole, (n - 1) * 4ull));
    expect_same_tree(*frames, **on_split, **on_whole);
    // The refit moved the tree's bounds: every leaf holds its box's new bounds.
    auto nodes = (*on_split)->nodes();
    ASSERT_TRUE(nodes);
    for (std::uint32_t leaf = n - 1; leaf < 2 * n - 1; ++leaf) {
        const gpu_layout::LbvhNode& node = (*nodes)[leaf];
        ASSERT_EQ(node.lo.x, boxes[node.link.x].min.x) << "leaf " << leaf;
        ASSERT_EQ(node.hi.z, boxes[node.link.x].max.z) << "leaf " << leaf;
    }
    EXPECT_EQ(frames->validation_errors(), 0u);
}

// Test 6: a proxy scene, whose dynamic bodies are tested against the static and fresh trees
// (the pairs kernel's cross pass, both trees' node arrays split: 2500 bodies each, added in
// batches of 1250).
TEST_F(SplitBindingsTest, ProxyFramesEqualTheWholeBindings) {
    auto frames = capped_context(kFramesRange, true);
    ASSERT_TRUE(frames);
    std::vector<Box> dynamic = scene_boxes("uniform", 2500);
    const std::vector<Box> fixed = scene_boxes("clustered", 2500);
    {
        gpu::ProxySceneOptions options;
        options.frames.initial_pair_capacity = 8000;
        auto on_split = gpu::ProxyScene::create(*frames, options);
        auto on_whole = gpu::ProxyScene::create(gpu_context(), options);
        ASSERT_TRUE(on_split && on_whole);
        std::vector<ProxyHandle> handles;
        auto step_both = [&](const char* what) {
            auto got = (*on_split)->step();
            auto want = (*on_whole)->step();
            ASSERT_TRUE(got) << what << ": " << got.error().message;
            ASSERT_TRUE(want) << what << ": " << want.error().message;
            EXPECT_EQ(got->pairs, want->pairs) << what;
            EXPECT_EQ(got->began, want->began) << what;
            EXPECT_EQ(got->ended, want->ended) << what;
        };
        for (std::size_t first = 0; first < fixed.size(); first += 1250) {
            for (std::size_t i = first; i < first + 1250; ++i) {
                ASSERT_TRUE((*on_split)->add(fixed[i], {}, BodyKind::static_body));
                ASSERT_TRUE((*on_whole)->add(fixed[i], {}, BodyKind::static_body));
            }
            ASSERT_NO_FATAL_FAILURE(step_both("static batch"));
        }
        for (std::size_t first = 0; first < dynamic.size(); first += 1250) {
            for (std::size_t i = first; i < first + 1250; ++i) {
                auto h = (*on_split)->add(dynamic[i]);
                ASSERT_TRUE(h && (*on_whole)->add(dynamic[i]));
                handles.push_back(h.value());
            }
            ASSERT_NO_FATAL_FAILURE(step_both("dynamic batch"));
        }
        const std::uint64_t before = split_dispatches(*frames);
        for (unsigned frame = 1; frame <= 3; ++frame) {
            SCOPED_TRACE(frame);
            jitter_boxes(dynamic, frame, 1.0f);
            for (std::size_t i = 0; i < handles.size(); i += 3) {
                ASSERT_TRUE((*on_split)->move(handles[i], dynamic[i]));
                ASSERT_TRUE((*on_whole)->move(handles[i], dynamic[i]));
            }
            ASSERT_NO_FATAL_FAILURE(step_both("moved"));
        }
        EXPECT_GT(split_dispatches(*frames), before);
    }
    EXPECT_EQ(frames->validation_errors(), 0u);
}

// Test 7: a tree over kTreeParts parts (5000 boxes: 9999 nodes, 479,952 bytes, over 4 parts of
// 98,304) is refused naming the parts; with splitting off, the 3000-box tree is refused as one
// descriptor.
TEST_F(SplitBindingsTest, TreesOverThePartsAreRefused) {
    // find_pairs of `n` uniform boxes on `context` is refused with limit_exceeded saying `words`.
    auto expect_refused = [](gpu::Context& context, std::uint32_t n, const std::string& words) {
        auto lbvh = gpu::Lbvh::create(context);
        ASSERT_TRUE(lbvh);
        auto pairs = (*lbvh)->find_pairs(scene_boxes("uniform", n));
        ASSERT_FALSE(pairs);
        EXPECT_EQ(pairs.error().code, ErrorCode::limit_exceeded);
        EXPECT_NE(pairs.error().message.find(words), std::string::npos) << pairs.error().message;
    };
    expect_refused(split(), 5000,
                   "the node buffer needs 479952 bytes, over the 4 storage descriptors of 98304 "
                   "bytes");
    auto whole = capped_context(kSplitRange, false);
    ASSERT_TRUE(whole);
    expect_refused(*whole, kBoxes,
                   "the node buffer needs 287952 bytes bound as one storage buffer");
    EXPECT_EQ(whole->validation_errors(), 0u);
}

// Test 8: with kTreeParts parts a tree's arrays stop limiting a scene: the box buffer (32 B per
// box) does, 134,217,727 boxes at 2^32 - 1 bytes (nodes: 4 parts of 2^26 nodes; wide: 4 of
// 2^25 records), so 100M boxes fit every binding; a part's shift is the largest whose part
// fits the range.
TEST(LimitsArithmetic, SplitTreesAreLimitedByTheBoxBuffer) {
    const VkDeviceSize kRange128MiB = VkDeviceSize(1) << 27, kRange2GiB = VkDeviceSize(1) << 31;
    EXPECT_EQ(gpu::part_shift(gpu::kMaxStorageRange, 48), 26u);
    EXPECT_EQ(gpu::part_shift(gpu::kMaxStorageRange, 64), 25u);  // 64 << 26 = 2^32 > range
    EXPECT_EQ(gpu::part_shift(kRange128MiB, 48), 21u);
    EXPECT_EQ(gpu::part_shift(kRange128MiB, 64), 21u);  // exactly the range
    EXPECT_EQ(gpu::part_bytes(kSplitRange, 48), 98'304u);
    struct Case {
        VkDeviceSize range;
        std::uint32_t largest;
    };
    for (const Case& c : {Case{kRange128MiB, 4'194'304}, Case{kRange2GiB, 67'108'864},
                          Case{gpu::kMaxStorageRange, 134'217'727}}) {
        SCOPED_TRACE(c.range);
        const gpu::DeviceLimits limits = gpu::limits_of_range(c.range, kTreeParts);
        for (const bool refine : {false, true}) {
            EXPECT_EQ(gpu::largest_lbvh_boxes(limits, gpu::CodeKind::morton30, refine), c.largest);
            EXPECT_EQ(gpu::largest_lbvh_boxes(limits, gpu::CodeKind::morton63, refine), c.largest);
        }
    }
    const gpu::DeviceLimits four_gib = gpu::limits_of_range(gpu::kMaxStorageRange, kTreeParts);
    EXPECT_TRUE(gpu::check_bindings(
        four_gib, "100M boxes", gpu::lbvh_bindings(100'000'000, gpu::CodeKind::morton30, true)));
    // The node array of 100M boxes (9.6 GB) takes three of its parts, the wide array three.
    const VkDeviceSize node_part = gpu::part_bytes(gpu::kMaxStorageRange, 48);
    const VkDeviceSize wide_part = gpu::part_bytes(gpu::kMaxStorageRange, 64);
    EXPECT_EQ(gpu::div_up(gpu::lbvh_nodes_bytes(100'000'000), node_part), 3u);
    EXPECT_EQ(gpu::div_up(gpu::lbvh_wide_bytes(100'000'000), wide_part), 3u);
    // Past the box buffer's limit the refusal names the box buffer, not the tree.
    const Status over = gpu::check_bindings(
        four_gib, "x", gpu::lbvh_bindings(134'217'728, gpu::CodeKind::morton30, true));
    ASSERT_FALSE(over);
    EXPECT_NE(over.error().message.find("the box buffer"), std::string::npos)
        << over.error().message;
    EXPECT_EQ(over.error().message.find("node buffer"), std::string::npos) << over.error().message;
}

}  // namespace
}  // namespace broadphase::testing
