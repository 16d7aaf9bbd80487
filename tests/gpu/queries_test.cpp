// Batched GPU LBVH queries (gpu/lbvh/lbvh_queries.cpp): region queries, point picks, closest-hit
// ray casts and set-versus-set pairs against brute force (exact id sets; ray t within 1e-5
// relative, the GPU's division being allowed 2.5 ulp) and against the CPU twins
// (cpu_reference/lbvh_queries) on the GPU-built tree, on every standard scene; recorders on
// caller buffers; the growth path of the id output; empty batches and trees; hostile input.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "broadphase/gpu/lbvh_queries.hpp"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "device/buffer_sizing.hpp"
#include "device/kernels.hpp"
#include "gpu_test_env.hpp"
#include "lbvh.hpp"
#include "lbvh_queries.hpp"

namespace broadphase::testing {
namespace {

using gpu_layout::GpuBox;
using gpu_layout::kInvalidNode;
using gpu_layout::LbvhNode;
using gpu_layout::LbvhWideNode;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Pipelines shared by the tests of a suite (pipeline creation dominates the run time on
// lavapipe); created in SetUpTestSuite, destroyed in TearDownTestSuite, before the context.
std::unique_ptr<gpu::LbvhQueries> g_queries;
std::unique_ptr<gpu::Lbvh> g_lbvh;

gpu::LbvhQueries* make_queries() {
    return g_queries.get();
}

// The shared LbvhQueries built over `boxes`, or null (a failure recorded) when there is none or
// the build fails.
gpu::LbvhQueries* built_queries(std::span<const Box> boxes) {
    gpu::LbvhQueries* q = make_queries();
    if (!q) {
        ADD_FAILURE() << "no LbvhQueries";
        return nullptr;
    }
    if (Status s = q->build(boxes); !s) {
        ADD_FAILURE() << s.error().message;
        return nullptr;
    }
    return q;
}

// The nodes of the tree of `boxes` as the shared Lbvh builds them; empty, after a failure, when
// there is no Lbvh or the build fails.
std::optional<std::vector<LbvhNode>> shared_nodes(std::span<const Box> boxes) {
    EXPECT_TRUE(g_lbvh) << "no Lbvh";
    if (!g_lbvh) return std::nullopt;
    auto nodes = g_lbvh->build_nodes(boxes);
    EXPECT_TRUE(nodes) << (nodes ? "" : nodes.error().message);
    if (!nodes) return std::nullopt;
    return std::move(nodes.value());
}

// A generated scene with the nodes of its tree as the shared Lbvh builds them.
struct TreeScene {
    std::vector<Box> boxes;
    std::vector<LbvhNode> nodes;
    std::uint32_t n = 0;
};

// The TreeScene of `count` boxes of `generator`; empty, after a failure, when a step fails.
std::optional<TreeScene> tree_scene(const char* generator, std::size_t count) {
    auto scene = generate_scene(generator, count);
    EXPECT_TRUE(scene) << (scene ? "" : scene.error().message);
    if (!scene) return std::nullopt;
    auto nodes = shared_nodes(scene->boxes);
    if (!nodes) return std::nullopt;
    const auto n = static_cast<std::uint32_t>(scene->boxes.size());
    return TreeScene{std::move(scene->boxes), std::move(nodes.value()), n};
}

class QueriesFixture : public GpuTest {
public:
    static void SetUpTestSuite() {
        auto q = gpu::LbvhQueries::create(gpu_context());
        if (q) g_queries = std::move(q.value());
        auto l = gpu::Lbvh::create(gpu_context());
        if (l) g_lbvh = std::move(l.value());
    }
    static void TearDownTestSuite() {
        g_queries.reset();
        g_lbvh.reset();
    }
};

std::unique_ptr<Structure> brute(std::span<const Box> boxes) {
    auto s = make_structure("brute_force");
    EXPECT_TRUE(s);
    EXPECT_TRUE(s.value()->build(boxes));
    return std::move(s.value());
}

// The pairs (a, b) of a box a of `moving` and a box b of the world `oracle` holds, sorted: what
// a set-versus-set query must return, found by one brute-force query per moving box.
std::vector<Pair> brute_pairs_against(const Structure& oracle, std::span<const Box> moving) {
    std::vector<Pair> expected;
    std::vector<std::uint32_t> ids;
    for (std::uint32_t a = 0; a < moving.size(); ++a) {
        ids.clear();
        oracle.query_box(moving[a], ids);
        for (std::uint32_t b : ids) expected.push_back({a, b});
    }
    std::sort(expected.begin(), expected.end());
    return expected;
}

float lerp(float a, float b, float u) {
    return a + (b - a) * u;
}

// Regions of every kind: small and medium ones inside the scene, far-away ones (no hits),
// flat ones, and two covering everything (the growth path of the id output).
std::vector<Box> make_regions(std::span<const Box> boxes, std::size_t count) {
    const Box s = bounds_of(boxes);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<Box> out;
    for (std::size_t i = 0; i < count; ++i) {
        Vec3 c{lerp(s.min.x, s.max.x, u(rng)), lerp(s.min.y, s.max.y, u(rng)),
               lerp(s.min.z, s.max.z, u(rng))};
        const float size = (i % 3 == 0 ? 0.01f : 0.05f) * (s.max.x - s.min.x + 1.0f);
        Box b{c, {c.x + size * u(rng), c.y + size * u(rng), c.z + size * u(rng)}};
        if (i % 7 == 0) b.max.z = b.min.z;  // flat
        out.push_back(b);
    }
    out.push_back(
        {{s.max.x + 10, s.max.y + 10, s.max.z + 10}, {s.max.x + 11, s.max.y + 11, s.max.z + 11}});
    out.push_back(s);
    out.push_back(
        {{s.min.x - 1, s.min.y - 1, s.min.z - 1}, {s.max.x + 1, s.max.y + 1, s.max.z + 1}});
    return out;
}

// Points on box corners and centres, and a miss.
std::vector<Vec3> make_points(std::span<const Box> boxes, std::size_t count) {
    std::vector<Vec3> out;
    for (std::size_t i = 0; i < count && i < boxes.size(); ++i) {
        const Box& b = boxes[(i * 7919) % boxes.size()];
        out.push_back(i % 3 == 0 ? b.min : (i % 3 == 1 ? b.max : Vec3{b.min.x, b.max.y, b.min.z}));
    }
    const Box s = bounds_of(boxes);
    out.push_back({s.max.x + 5, s.max.y, s.max.z});
    return out;
}

// Rays of every kind: random, axis-parallel, starting inside boxes, missing everything,
// with finite, zero and infinite tmax.
std::vector<Ray> make_rays(std::span<const Box> boxes, std::size_t count) {
    const Box s = bounds_of(boxes);
    const float extent = std::max({s.max.x - s.min.x, s.max.y - s.min.y, s.max.z - s.min.z, 1.0f});
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<Ray> out;
    for (std::size_t i = 0; i < count; ++i) {
        Ray r;
        r.origin = {lerp(s.min.x - 0.1f * extent, s.max.x, u(rng)),
                    lerp(s.min.y - 0.1f * extent, s.max.y, u(rng)),
                    lerp(s.min.z - 0.1f * extent, s.max.z, u(rng))};
        r.dir = {u(rng) - 0.3f, u(rng) - 0.3f, u(rng) - 0.3f};
        r.tmax = i % 5 == 0 ? kInf : 2.0f * extent;
        switch (i % 6) {
            case 1:  // axis-parallel
                r.dir = {0, 0, 0};
                r.dir[static_cast<int>(i / 6 % 3)] = (i / 18) % 2 ? 1.0f : -1.0f;
                break;
            case 2:  // starting inside a box (its centre)
                if (!boxes.empty()) {
                    const Box& b = boxes[(i * 104729) % boxes.size()];
                    r.origin = {0.5f * (b.min.x + b.max.x), 0.5f * (b.min.y + b.max.y),
                                0.5f * (b.min.z + b.max.z)};
                }
                break;
            case 3:  // missing everything: outside, pointing away
                r.origin = {s.max.x + extent, s.max.y + extent, s.max.z + extent};
                r.dir = {1, 0.5f, 0.25f};
                break;
            case 4:  // a box corner, two axes parallel
                if (!boxes.empty()) {
                    const Box& b = boxes[(i * 31) % boxes.size()];
                    r.origin = {b.min.x - 0.5f * extent, b.min.y, b.max.z};
                    r.dir = {1, 0, 0};
                }
                break;
            default:
                break;
        }
        if (i % 17 == 0) r.tmax = 0;
        out.push_back(r);
    }
    return out;
}

void expect_near_t(float gpu, float cpu, const std::string& what) {
    EXPECT_LE(std::fabs(gpu - cpu), 1e-5f * std::max(std::fabs(gpu), std::fabs(cpu))) << what;
}

// A tree's whole node range in a new device buffer (gpu/device/buffer_sizing.hpp): its 2n - 1
// `nodes`, then from lbvh_wide_offset(n) its n - 1 `wide` records (what a build writes, or not).
gpu::Buffer upload_tree(std::span<const LbvhNode> nodes, std::span<const LbvhWideNode> wide) {
    auto& ctx = gpu_context();
    const auto n = static_cast<std::uint32_t>((nodes.size() + 1) / 2);
    auto tree = ctx.create_buffer(gpu::lbvh_tree_bytes(n), gpu::MemoryKind::device);
    EXPECT_TRUE(tree) << (tree ? "" : tree.error().message);
    if (!tree) return {};
    EXPECT_TRUE(ctx.upload(*tree, nodes.data(), nodes.size_bytes()));
    if (!wide.empty()) {
        EXPECT_TRUE(ctx.upload(*tree, wide.data(), wide.size_bytes(), gpu::lbvh_wide_offset(n)));
    }
    return std::move(tree.value());
}

void check_scene(std::span<const Box> boxes, std::size_t queries) {
    auto q = built_queries(boxes);
    ASSERT_TRUE(q);
    ASSERT_EQ(q->size(), boxes.size());
    auto oracle = brute(boxes);
    // The twin's tree is the GPU's own (tests/gpu/lbvh_test checks it against the CPU build).
    auto nodes = shared_nodes(boxes);
    ASSERT_TRUE(nodes);

    // Test 1: regions; every hit set equals brute force and the twin.
    std::vector<Box> regions = make_regions(boxes, queries);
    auto hits = q->query_boxes(regions);
    ASSERT_TRUE(hits) << hits.error().message;
    ASSERT_EQ(hits->size(), regions.size());
    for (std::size_t i = 0; i < regions.size(); ++i) {
        std::vector<std::uint32_t> expected, twin;
        oracle->query_box(regions[i], expected);
        std::sort(expected.begin(), expected.end());
        lbvh::query_region(nodes.value(), regions[i], twin);
        std::sort(twin.begin(), twin.end());
        auto got = hits->hits(i);
        ASSERT_EQ(std::vector<std::uint32_t>(got.begin(), got.end()), expected) << "region " << i;
        ASSERT_EQ(twin, expected) << "twin, region " << i;
    }
    if (!boxes.empty()) {
        EXPECT_EQ(hits->hits(regions.size() - 1).size(), boxes.size());
    }

    // Test 2: point picks on corners.
    std::vector<Vec3> points = make_points(boxes, queries);
    auto picks = q->query_points(points);
    ASSERT_TRUE(picks) << picks.error().message;
    for (std::size_t i = 0; i < points.size(); ++i) {
        std::vector<std::uint32_t> expected;
        oracle->query_point(points[i], expected);
        std::sort(expected.begin(), expected.end());
        auto got = picks->hits(i);
        ASSERT_EQ(std::vector<std::uint32_t>(got.begin(), got.end()), expected) << "point " << i;
        if (i + 1 < points.size()) {
            EXPECT_FALSE(expected.empty());
        }
    }

    // Test 3: rays; ids exactly, t within 1e-5 relative (bit-exact against the twin on a
    // device whose division is correctly rounded, as lavapipe's).
    std::vector<Ray> rays = make_rays(boxes, queries);
    auto cast = q->ray_cast(rays);
    ASSERT_TRUE(cast) << cast.error().message;
    ASSERT_EQ(cast->size(), rays.size());
    std::size_t hit_count = 0;
    for (std::size_t i = 0; i < rays.size(); ++i) {
        const auto expected = oracle->ray_cast(rays[i]);
        const auto twin = lbvh::ray_cast_nodes(nodes.value(), rays[i]);
        const auto& got = (*cast)[i];
        ASSERT_EQ(got.has_value(), expected.has_value()) << "ray " << i;
        ASSERT_EQ(twin.has_value(), expected.has_value()) << "twin, ray " << i;
        if (!expected) continue;
        ++hit_count;
        EXPECT_EQ(got->id, expected->id) << "ray " << i;
        EXPECT_EQ(twin->id, expected->id) << "twin, ray " << i;
        EXPECT_EQ(twin->t, expected->t) << "twin, ray " << i;
        expect_near_t(got->t, expected->t, "ray " + std::to_string(i));
    }
    if (!boxes.empty()) {
        EXPECT_GT(hit_count, rays.size() / 10);
    }
}

struct QuerySceneCase {
    const char* generator;
    std::size_t n;
};

class QueriesSceneTest : public QueriesFixture,
                         public ::testing::WithParamInterface<QuerySceneCase> {};

TEST_P(QueriesSceneTest, MatchBruteForceAndTwin) {
    auto scene = generate_scene(GetParam().generator, GetParam().n);
    ASSERT_TRUE(scene) << scene.error().message;
    check_scene(scene->boxes, 300);
}

std::vector<QuerySceneCase> query_scene_cases() {
    std::vector<QuerySceneCase> cases;
    for (std::string_view g : generator_names())
        for (std::size_t n : {0, 1, 2, 3, 100, 5000}) cases.push_back({g.data(), n});
    return cases;
}

INSTANTIATE_TEST_SUITE_P(StandardScenes, QueriesSceneTest, ::testing::ValuesIn(query_scene_cases()),
                         [](const ::testing::TestParamInfo<QuerySceneCase>& param_info) {
                             return std::string(param_info.param.generator) + "_" +
                                    std::to_string(param_info.param.n);
                         });

class QueriesTest : public QueriesFixture {};

// Test 4: batches of zero and one query.
TEST_F(QueriesTest, EmptyAndSingleBatches) {
    auto scene = generate_scene("uniform", 1000);
    ASSERT_TRUE(scene);
    auto q = built_queries(scene->boxes);
    ASSERT_TRUE(q);
    auto none = q->query_boxes({});
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_EQ(none->size(), 0u);
    EXPECT_TRUE(none->ids.empty());
    auto no_rays = q->ray_cast({});
    ASSERT_TRUE(no_rays);
    EXPECT_TRUE(no_rays->empty());
    const Box region = scene->boxes[10];
    auto one = q->query_boxes(std::span<const Box>(&region, 1));
    ASSERT_TRUE(one);
    ASSERT_EQ(one->size(), 1u);
    std::vector<std::uint32_t> expected;
    brute(scene->boxes)->query_box(region, expected);
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(std::vector<std::uint32_t>(one->hits(0).begin(), one->hits(0).end()), expected);
    const Ray ray{{-1, 0.5f, 0.5f}, {1, 0, 0}, kInf};
    auto hit = q->ray_cast(std::span<const Ray>(&ray, 1));
    ASSERT_TRUE(hit);
    auto want = brute(scene->boxes)->ray_cast(ray);
    ASSERT_EQ((*hit)[0].has_value(), want.has_value());
    if (want) {
        EXPECT_EQ((*hit)[0]->id, want->id);
    }
}

// Test 5: many queries hitting everything: far more hits than the first id capacity, so the
// helper grows and runs the fill pass again; nothing is lost.
TEST_F(QueriesTest, HugeRegionsGrowTheOutput) {
    auto scene = generate_scene("clustered", 4000);
    ASSERT_TRUE(scene);
    auto q = built_queries(scene->boxes);
    ASSERT_TRUE(q);
    std::vector<Box> regions(64, Box{{-1e6f, -1e6f, -1e6f}, {1e6f, 1e6f, 1e6f}});
    auto hits = q->query_boxes(regions);
    ASSERT_TRUE(hits) << hits.error().message;
    ASSERT_EQ(hits->ids.size(), 64u * 4000u);
    for (std::size_t i = 0; i < regions.size(); ++i) {
        auto h = hits->hits(i);
        ASSERT_EQ(h.size(), 4000u);
        for (std::uint32_t k = 0; k < 4000; ++k) ASSERT_EQ(h[k], k);
    }
}

// Test 6: the recorders on caller-owned buffers (the tree's range: its nodes, then their wide
// records) with a too-small id capacity: the scanned total is exact, the stored prefix matches
// the twin's traversal order, and after growing the fill pass stores every hit in exactly the
// twin's order.
TEST_F(QueriesTest, RecordersOnCallerBuffers) {
    auto& ctx = gpu_context();
    auto scene = tree_scene("mixed_sizes", 3000);
    ASSERT_TRUE(scene);
    const auto& [boxes, tree_nodes, n] = *scene;
    auto queries = make_queries();
    ASSERT_TRUE(queries);
    std::vector<Box> regions = make_regions(boxes, 200);
    const auto count = static_cast<std::uint32_t>(regions.size());
    std::vector<GpuBox> gpu_regions = gpu::to_gpu_boxes(regions);

    const gpu::Buffer nodes = upload_tree(tree_nodes, lbvh::wide_nodes(tree_nodes));
    auto qbuf = ctx.create_buffer(count * sizeof(GpuBox), gpu::MemoryKind::device);
    auto offsets = ctx.create_buffer((count + 1) * 4, gpu::MemoryKind::device);
    auto scratch = ctx.create_buffer(std::max<VkDeviceSize>(queries->scan_scratch_size(count), 4),
                                     gpu::MemoryKind::device);
    auto count_status =
        ctx.create_buffer(sizeof(gpu_layout::TraversalStatus), gpu::MemoryKind::device);
    auto fill_status =
        ctx.create_buffer(sizeof(gpu_layout::TraversalStatus), gpu::MemoryKind::device);
    const std::uint32_t work_capacity = 256;
    auto work =
        ctx.create_buffer(gpu::traversal_work_bytes(work_capacity), gpu::MemoryKind::device);
    ASSERT_NE(nodes.handle(), VK_NULL_HANDLE);
    ASSERT_TRUE(qbuf && offsets && scratch && count_status && fill_status && work);
    ASSERT_TRUE(ctx.upload(*qbuf, gpu_regions.data(), gpu_regions.size() * sizeof(GpuBox)));

    std::vector<std::uint32_t> expected_offsets{0}, expected_ids;
    for (const Box& r : regions) {
        lbvh::query_region(tree_nodes, r, expected_ids);
        expected_offsets.push_back(static_cast<std::uint32_t>(expected_ids.size()));
    }
    ASSERT_GT(expected_ids.size(), 100u);

    // Every query finishes in the first round with the largest budget, so that its hits come in
    // the twin's order (queued parts come in any order; the budget test of
    // bounded_traversal_test compares those as sets).
    const gpu::TraversalBuffers root_round{gpu::whole(*work), work_capacity,
                                           gpu_layout::kTraversalRounds,
                                           gpu_layout::kTraversalBudget};
    for (std::uint32_t capacity : {100u, static_cast<std::uint32_t>(expected_ids.size())}) {
        auto ids = ctx.create_buffer(capacity * 4ull, gpu::MemoryKind::device);
        ASSERT_TRUE(ids);
        gpu::RegionQueryBuffers b{
            gpu::whole(*qbuf),    gpu::whole(*offsets),      gpu::whole(*ids),         capacity,
            gpu::whole(*scratch), gpu::whole(*count_status), gpu::whole(*fill_status), root_round};
        ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
            gpu::compute_barrier(cmd);
            EXPECT_TRUE(queries->record_region_count(cmd, {gpu::whole(nodes), n}, b, count));
            EXPECT_TRUE(queries->record_region_fill(cmd, {gpu::whole(nodes), n}, b, count));
            gpu::compute_barrier(cmd);
        }));
        std::vector<std::uint32_t> got_offsets(count + 1), got_ids(capacity);
        ASSERT_TRUE(ctx.download(*offsets, got_offsets.data(), got_offsets.size() * 4));
        ASSERT_TRUE(ctx.download(*ids, got_ids.data(), got_ids.size() * 4));
        EXPECT_EQ(got_offsets, expected_offsets);
        EXPECT_TRUE(std::equal(got_ids.begin(), got_ids.end(), expected_ids.begin()))
            << "capacity " << capacity;
        gpu_layout::TraversalStatus st[2];
        ASSERT_TRUE(ctx.download(*count_status, &st[0], sizeof(st[0])));
        ASSERT_TRUE(ctx.download(*fill_status, &st[1], sizeof(st[1])));
        EXPECT_EQ(st[0].flags, 0u);
        EXPECT_EQ(st[1].flags, 0u);
    }
}

// Test 6b: each traversal step reads the expanded node's LbvhWideNode, not the children's
// LbvhNode records: a tree whose nodes are the build's but whose wide records give one leaf
// another box id and shrink another leaf's box answers regions and rays as the twins do over
// nodes carrying the same two changes, which differ from the twins over the built nodes.
TEST_F(QueriesTest, TraversalsReadTheWideRecords) {
    auto& ctx = gpu_context();
    auto scene = tree_scene("mixed_sizes", 3000);
    ASSERT_TRUE(scene);
    const auto& [boxes, original, n] = *scene;
    const std::uint32_t leaf_base = n - 1;
    auto center = [](const Box& b) {
        return Vec3{0.5f * (b.min.x + b.max.x), 0.5f * (b.min.y + b.max.y),
                    0.5f * (b.min.z + b.max.z)};
    };
    // A left leaf child whose box's centre lies in no other box (a ray from there hits it
    // first), and a right leaf child of another node with extent on every axis.
    std::uint32_t renamed = kInvalidNode, shrunk = kInvalidNode;
    for (std::uint32_t i = 0; i < leaf_base && renamed == kInvalidNode; ++i) {
        const std::uint32_t child = original[i].link.x;
        if (child < leaf_base) continue;
        const std::uint32_t id = original[child].link.x;
        const Vec3 c = center(boxes[id]);
        bool alone = true;
        for (std::uint32_t k = 0; k < n && alone; ++k) alone = k == id || !contains(boxes[k], c);
        if (alone) renamed = i;
    }
    for (std::uint32_t i = 0; i < leaf_base && shrunk == kInvalidNode; ++i) {
        const LbvhNode& leaf = original[original[i].link.y];
        if (i != renamed && original[i].link.y >= leaf_base && leaf.lo.x < leaf.hi.x &&
            leaf.lo.y < leaf.hi.y && leaf.lo.z < leaf.hi.z)
            shrunk = i;
    }
    ASSERT_NE(renamed, kInvalidNode);
    ASSERT_NE(shrunk, kInvalidNode);
    const std::uint32_t renamed_leaf = original[renamed].link.x;
    const std::uint32_t renamed_id = original[renamed_leaf].link.x;
    const std::uint32_t shrunk_leaf = original[shrunk].link.y;
    const Box shrunk_box = {
        {original[shrunk_leaf].lo.x, original[shrunk_leaf].lo.y, original[shrunk_leaf].lo.z},
        {original[shrunk_leaf].hi.x, original[shrunk_leaf].hi.y, original[shrunk_leaf].hi.z}};
    const std::uint32_t new_id = n + 5;  // no box has it
    std::vector<LbvhNode> changed = original;
    changed[renamed_leaf].link.x = new_id;
    changed[shrunk_leaf].hi = {center(shrunk_box).x, center(shrunk_box).y, center(shrunk_box).z,
                               changed[shrunk_leaf].hi.w};
    const std::vector<LbvhWideNode> wide = lbvh::wide_nodes(changed);
    ASSERT_EQ(wide[renamed].link.z, new_id);
    // The GPU gets the built nodes with the changed wide records.
    const gpu::Buffer tree = upload_tree(original, wide);
    ASSERT_NE(tree.handle(), VK_NULL_HANDLE);
    auto queries = make_queries();
    ASSERT_TRUE(queries);

    // Regions: the two leaves' boxes, the shrunk one's upper corner, and the usual ones.
    std::vector<Box> regions = make_regions(boxes, 100);
    regions.push_back(boxes[renamed_id]);
    regions.push_back(shrunk_box);
    regions.push_back({shrunk_box.max, shrunk_box.max});
    const auto count = static_cast<std::uint32_t>(regions.size());
    std::vector<std::uint32_t> want_offsets{0}, want_ids, before_ids;
    for (const Box& r : regions) {
        lbvh::query_region(changed, r, want_ids);
        lbvh::query_region(original, r, before_ids);
        want_offsets.push_back(static_cast<std::uint32_t>(want_ids.size()));
    }
    ASSERT_NE(want_ids, before_ids);  // the changes show in the twin's answers
    const auto capacity = static_cast<std::uint32_t>(want_ids.size());
    const std::uint32_t work_capacity = 256;
    const std::vector<GpuBox> gpu_regions = gpu::to_gpu_boxes(regions);
    auto qbuf = ctx.create_buffer(count * sizeof(GpuBox), gpu::MemoryKind::device);
    auto offsets = ctx.create_buffer((count + 1) * 4, gpu::MemoryKind::device);
    auto ids = ctx.create_buffer(capacity * 4ull, gpu::MemoryKind::device);
    auto scratch = ctx.create_buffer(queries->scan_scratch_size(count), gpu::MemoryKind::device);
    auto status = ctx.create_buffer(3 * 256, gpu::MemoryKind::device);
    auto work =
        ctx.create_buffer(gpu::traversal_work_bytes(work_capacity), gpu::MemoryKind::device);
    ASSERT_TRUE(qbuf && offsets && ids && scratch && status && work);
    ASSERT_TRUE(ctx.upload(*qbuf, gpu_regions.data(), gpu_regions.size() * sizeof(GpuBox)));
    // Rays from the renamed box's centre (its box is hit first, at t = 0) and the usual ones.
    std::vector<Ray> rays = make_rays(boxes, 100);
    for (const Vec3& d : {Vec3{1, 0, 0}, Vec3{-0.3f, 1, 0.2f}})
        rays.push_back({center(boxes[renamed_id]), d, kInf});
    rays.push_back({{shrunk_box.max.x, shrunk_box.max.y, shrunk_box.max.z - 1}, {0, 0, 1}, kInf});
    const auto ray_count = static_cast<std::uint32_t>(rays.size());
    std::vector<gpu_layout::GpuRay> gpu_rays;
    for (const Ray& r : rays)
        gpu_rays.push_back(
            {{r.origin.x, r.origin.y, r.origin.z, r.tmax}, {r.dir.x, r.dir.y, r.dir.z, 0}});
    auto rbuf = ctx.create_buffer(ray_count * sizeof(gpu_layout::GpuRay), gpu::MemoryKind::device);
    auto hbuf =
        ctx.create_buffer(ray_count * sizeof(gpu_layout::GpuRayHit), gpu::MemoryKind::device);
    ASSERT_TRUE(rbuf && hbuf);
    ASSERT_TRUE(ctx.upload(*rbuf, gpu_rays.data(), gpu_rays.size() * sizeof(gpu_layout::GpuRay)));

    const gpu::LbvhTree gpu_tree{gpu::whole(tree), n};
    // The largest budget: every query finishes in the first round, its hits in the twin's order.
    const gpu::TraversalBuffers traversal{gpu::whole(*work), work_capacity,
                                          gpu_layout::kTraversalRounds,
                                          gpu_layout::kTraversalBudget};
    const gpu::RegionQueryBuffers b{gpu::whole(*qbuf),
                                    gpu::whole(*offsets),
                                    gpu::whole(*ids),
                                    capacity,
                                    gpu::whole(*scratch),
                                    {status->handle(), 0, sizeof(gpu_layout::TraversalStatus)},
                                    {status->handle(), 256, sizeof(gpu_layout::TraversalStatus)},
                                    traversal};
    ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        EXPECT_TRUE(queries->record_region_count(cmd, gpu_tree, b, count));
        EXPECT_TRUE(queries->record_region_fill(cmd, gpu_tree, b, count));
        gpu::compute_barrier(cmd);
        EXPECT_TRUE(
            queries->record_ray_cast(cmd, gpu_tree,
                                     {gpu::whole(*rbuf),
                                      gpu::whole(*hbuf),
                                      {status->handle(), 512, sizeof(gpu_layout::TraversalStatus)},
                                      traversal},
                                     ray_count));
        gpu::compute_barrier(cmd);
    }));
    gpu_layout::TraversalStatus st[3];
    for (std::uint32_t k = 0; k < 3; ++k) {
        ASSERT_TRUE(ctx.download(*status, &st[k], sizeof(st[k]), 256 * k));
        EXPECT_EQ(st[k].flags, 0u) << k;
    }
    std::vector<std::uint32_t> got_offsets(count + 1), got_ids(capacity);
    ASSERT_TRUE(ctx.download(*offsets, got_offsets.data(), got_offsets.size() * 4));
    ASSERT_TRUE(ctx.download(*ids, got_ids.data(), got_ids.size() * 4));
    EXPECT_EQ(got_offsets, want_offsets);
    EXPECT_EQ(got_ids, want_ids);

    std::vector<gpu_layout::GpuRayHit> hits(ray_count);
    ASSERT_TRUE(ctx.download(*hbuf, hits.data(), hits.size() * sizeof(hits[0])));
    std::size_t differ = 0;
    for (std::uint32_t i = 0; i < ray_count; ++i) {
        const auto want = lbvh::ray_cast_nodes(changed, rays[i]);
        const auto before = lbvh::ray_cast_nodes(original, rays[i]);
        if (want.has_value() != before.has_value() || (want && want->id != before->id)) ++differ;
        ASSERT_EQ(hits[i].id, want ? want->id : kInvalidNode) << "ray " << i;
        if (!want) continue;
        float t;
        std::memcpy(&t, &hits[i].t_bits, sizeof(t));
        expect_near_t(t, want->t, "ray " + std::to_string(i));
    }
    EXPECT_GE(differ, 2u);  // both rays from the renamed box's centre now report new_id
}

// Test 7: set versus set: moving boxes A against a static world B.
TEST_F(QueriesTest, SetVersusSetPairs) {
    auto world = generate_scene("uniform", 5000);
    auto moving = generate_scene("mixed_sizes", 800, 3);
    ASSERT_TRUE(world && moving);
    auto q = make_queries();
    ASSERT_TRUE(q);
    auto pairs = q->find_pairs_against(moving->boxes, world->boxes);
    ASSERT_TRUE(pairs) << pairs.error().message;
    const std::vector<Pair> expected = brute_pairs_against(*brute(world->boxes), moving->boxes);
    EXPECT_GT(expected.size(), 100u);
    EXPECT_EQ(pairs.value(), expected);
    EXPECT_TRUE(std::is_sorted(pairs->begin(), pairs->end()));
    // Either set empty.
    auto none = q->find_pairs_against({}, world->boxes);
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
    auto none2 = q->find_pairs_against(moving->boxes, {});
    ASSERT_TRUE(none2);
    EXPECT_TRUE(none2->empty());
}

// Test 7b: the static world is built once and kept; the moving set is queried against it over
// several frames (shifted each frame), each frame's pairs equal brute force's.
TEST_F(QueriesTest, SetVersusSetAgainstKeptWorld) {
    auto world = generate_scene("clustered", 4000);
    auto moving = generate_scene("uniform", 600, 9);
    ASSERT_TRUE(world && moving);
    auto q = built_queries(world->boxes);
    ASSERT_TRUE(q);
    auto oracle = brute(world->boxes);
    for (int frame = 0; frame < 3; ++frame) {
        SCOPED_TRACE("frame " + std::to_string(frame));
        std::vector<Box> boxes = moving->boxes;
        for (Box& b : boxes) {
            const float d = 0.07f * float(frame);
            b.min = {b.min.x + d, b.min.y - d, b.min.z};
            b.max = {b.max.x + d, b.max.y - d, b.max.z};
        }
        auto pairs = q->pairs_against(boxes);
        ASSERT_TRUE(pairs) << pairs.error().message;
        const std::vector<Pair> expected = brute_pairs_against(*oracle, boxes);
        EXPECT_GT(expected.size(), 50u);
        EXPECT_EQ(pairs.value(), expected);
        EXPECT_EQ(q->size(), world->boxes.size());
    }
    std::vector<Box> bad(2, moving->boxes[0]);
    bad[1].min.x = std::nanf("");
    auto rejected = q->pairs_against(bad);
    ASSERT_FALSE(rejected);
    EXPECT_NE(rejected.error().message.find("query box 1"), std::string::npos)
        << rejected.error().message;
}

// Test 8: hostile input is rejected with the offending query named.
TEST_F(QueriesTest, RejectsInvalidQueries) {
    auto q = built_queries(std::vector<Box>{{{0, 0, 0}, {1, 1, 1}}});
    ASSERT_TRUE(q);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<Box> regions{{{0, 0, 0}, {1, 1, 1}}, {{0, nan, 0}, {1, 1, 1}}};
    auto r = q->query_boxes(regions);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().box, 1u);
    std::vector<Box> inverted{{{2, 0, 0}, {1, 1, 1}}};
    EXPECT_FALSE(q->query_boxes(inverted));
    std::vector<Vec3> points{{0, 0, kInf}};
    EXPECT_FALSE(q->query_points(points));
    std::vector<Ray> rays{{{0, 0, 0}, {1, 0, 0}, 1}, {{0, 0, 0}, {nan, 0, 0}, 1}};
    auto rc = q->ray_cast(rays);
    ASSERT_FALSE(rc);
    EXPECT_NE(rc.error().message.find("query 1"), std::string::npos) << rc.error().message;
    std::vector<Box> bad{{{0, 0, 0}, {nan, 1, 1}}};
    EXPECT_FALSE(q->build(bad));
    EXPECT_EQ(q->size(), 0u);
}

}  // namespace
}  // namespace broadphase::testing
