// GPU frustum cull (gpu::Culler) against its CPU twin (cpu_reference/lbvh_cull) exactly and
// against cull_brute_force within float tolerance, on every standard scene from several
// cameras (inside the scene and looking along axes too), both orders; the recorder on
// caller-owned buffers (draw commands, draw count, capacity overflow); hostile input.
#include <algorithm>
#include <cstring>
#include <vector>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/layout/cull.h"
#include "broadphase/scene.hpp"
#include "cull_gpu_test_util.hpp"
#include "cull_test_util.hpp"
#include "device/buffer_sizing.hpp"
#include "device/kernels.hpp"
#include "gpu_test_env.hpp"
#include "lbvh/lbvh_build.hpp"
#include "lbvh/lbvh_pairs.hpp"
#include "lbvh_cull.hpp"
#include "wide_nodes_check.hpp"

namespace broadphase::testing {
namespace {

class CullSceneTest : public GpuTest, public ::testing::WithParamInterface<SceneCase> {};

// Test 1: both orders equal the CPU twin exactly and brute force within tolerance, from
// every camera of cameras_for (outside, inside, along +x, along -y, short far, narrow).
TEST_P(CullSceneTest, MatchesTwinAndBruteForce) {
    auto opened = open_cull_scene(GetParam());
    ASSERT_TRUE(opened);
    auto& [boxes, culler, nodes, n] = *opened;
    int camera = 0;
    std::vector<Frustum> frusta;
    std::vector<std::vector<std::uint32_t>> singles[2];  // [exact, approx][camera]
    for (const Camera& cam : cameras_for(boxes)) {
        Frustum f = frustum_of(cam);
        frusta.push_back(f);
        auto expected = cull_brute_force(f, boxes);
        for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
            const bool exact = order == CullOrder::exact;
            auto got = culler->cull(boxes, f, order);
            ASSERT_TRUE(got) << got.error().message;
            EXPECT_EQ(got.value(), lbvh::cull(nodes, n, f, order))
                << "camera " << camera << (exact ? " exact" : " approx");
            EXPECT_EQ(compare_cull(f, boxes, expected, got.value(), exact), "")
                << "camera " << camera << (exact ? " exact" : " approx");
            singles[exact ? 0 : 1].push_back(std::move(got.value()));
        }
        ++camera;
    }
    // Every camera at once, one traversal (lbvh_cull_views.comp): each chunk's twin writes per
    // view what the one-view twin writes, visiting at most the nodes the separate traversals
    // visit together and at least those of the busiest one; the GPU's views (exact: one shared
    // traversal; approx: one traversal per view) equal the single culls above exactly.
    const std::uint32_t chunks = (n + gpu_layout::kCullChunk - 1) / gpu_layout::kCullChunk;
    std::uint64_t joint = 0, separate = 0, busiest = 0;
    for (std::size_t v = 0; v < frusta.size(); ++v) {
        std::uint64_t visits = 0;
        for (std::uint32_t chunk = 0; chunk < chunks; ++chunk)
            lbvh::cull_chunk_views(nodes, n, std::span<const Frustum>(&frusta[v], 1), chunk,
                                   &visits);
        separate += visits;
        busiest = std::max(busiest, visits);
    }
    for (std::uint32_t chunk = 0; chunk < chunks; ++chunk) {
        auto per_view = lbvh::cull_chunk_views(nodes, n, frusta, chunk, &joint);
        for (std::size_t v = 0; v < frusta.size(); ++v)
            ASSERT_EQ(per_view[v], lbvh::cull_chunk(nodes, n, frusta[v], chunk))
                << "chunk " << chunk << " view " << v;
    }
    EXPECT_LE(joint, separate);
    EXPECT_GE(joint, busiest);
    for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
        auto views = culler->cull_views(boxes, frusta, order);
        ASSERT_TRUE(views) << views.error().message;
        EXPECT_EQ(views.value(), singles[order == CullOrder::exact ? 0 : 1])
            << (order == CullOrder::exact ? "exact" : "approx");
    }
}

INSTANTIATE_TEST_SUITE_P(StandardScenes, CullSceneTest, standard_cull_scenes(), case_name);

class CullTest : public GpuTest {};

// A generated scene and the frustum of its first camera (cameras_for): what the single-view
// tests look at. No boxes, after a failure, when the generator refuses.
struct FirstView {
    std::vector<Box> boxes;
    Frustum f;
};

FirstView first_view(const char* generator, std::size_t count) {
    auto scene = generate_scene(generator, count);
    EXPECT_TRUE(scene) << (scene ? "" : scene.error().message);
    if (!scene) return {};
    const Frustum f = frustum_of(cameras_for(scene->boxes)[0]);
    return {std::move(scene->boxes), f};
}

struct Buffers {
    gpu::Buffer boxes, nodes, build_scratch, scratch, ids, commands, count;
};

// Records build + cull into caller-owned buffers and returns (ids, commands, counts).
void record_cull(std::span<const Box> boxes, const Frustum& f, CullOrder order,
                 std::uint32_t capacity, const gpu::CullOptions& options,
                 std::vector<std::uint32_t>& ids, std::vector<std::uint32_t>& commands,
                 std::uint32_t counts[2]) {
    gpu::Context& ctx = gpu_context();
    auto culler = make_culler(options);
    auto lbvh = gpu::Lbvh::create(ctx);
    ASSERT_TRUE(culler && lbvh);
    const auto n = static_cast<std::uint32_t>(boxes.size());
    auto req = lbvh.value()->requirements(n);
    Buffers b{device_buffer(n * 32ull),
              device_buffer(req.nodes),
              device_buffer(req.scratch),
              device_buffer(culler->scratch_size(n)),
              device_buffer(capacity * 4ull),
              device_buffer(capacity * 20ull),
              device_buffer(8)};
    auto gpu_boxes = gpu::to_gpu_boxes(boxes);
    if (n > 0) {
        ASSERT_TRUE(ctx.upload(b.boxes, gpu_boxes.data(), n * 32ull));
    }
    // Poison the outputs: the cull must overwrite everything it reports.
    Status s = ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::fill(cmd, {b.ids.handle(), 0, b.ids.size()}, 0xdeadbeefu);
        gpu::fill(cmd, {b.commands.handle(), 0, b.commands.size()}, 0xdeadbeefu);
        gpu::fill(cmd, {b.count.handle(), 0, 8}, 0xdeadbeefu);
        gpu::compute_barrier(cmd);
        gpu::LbvhBuildBuffers tree{gpu::whole(b.boxes), gpu::whole(b.nodes),
                                   gpu::whole(b.build_scratch)};
        EXPECT_TRUE(lbvh.value()->record_build(cmd, tree, n));
        gpu::compute_barrier(cmd);
        EXPECT_TRUE(culler->record(
            cmd, {tree.nodes, n}, f, order, gpu::whole(b.scratch),
            {gpu::whole(b.ids), gpu::whole(b.commands), gpu::whole(b.count), capacity}));
        gpu::compute_barrier(cmd);
    });
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_TRUE(ctx.download(b.count, counts, 8));
    ids.assign(capacity, 0);
    commands.assign(capacity * 5ull, 0);
    if (capacity > 0) {
        ASSERT_TRUE(ctx.download(b.ids, ids.data(), capacity * 4ull));
        ASSERT_TRUE(ctx.download(b.commands, commands.data(), capacity * 20ull));
    }
}

// Test 2: recorded into caller buffers: ids, one draw command per id, and the draw count.
TEST_F(CullTest, RecordWritesDrawCommandsAndCount) {
    const auto [boxes, f] = first_view("uniform", 5000);
    ASSERT_FALSE(boxes.empty());
    auto expected = cull_brute_force(f, boxes);
    gpu::CullOptions options{6, 12, -3};
    std::vector<std::uint32_t> ids, commands;
    std::uint32_t counts[2] = {};
    const std::uint32_t capacity = 5000;
    record_cull(boxes, f, CullOrder::exact, capacity, options, ids, commands, counts);
    ASSERT_GT(counts[1], 100u);
    EXPECT_EQ(counts[0], counts[1]);
    ids.resize(counts[0]);
    EXPECT_EQ(compare_cull(f, boxes, expected, ids, true), "");
    for (std::uint32_t i = 0; i < counts[0]; ++i) {
        VkDrawIndexedIndirectCommand cmd{};
        std::memcpy(&cmd, &commands[5ull * i], sizeof(cmd));
        ASSERT_EQ(cmd.indexCount, 6u);
        ASSERT_EQ(cmd.instanceCount, 1u);
        ASSERT_EQ(cmd.firstIndex, 12u);
        ASSERT_EQ(cmd.vertexOffset, -3);
        ASSERT_EQ(cmd.firstInstance, ids[i]);
    }
    // Nothing written past the count.
    if (counts[0] < capacity) {
        EXPECT_EQ(commands[5ull * counts[0]], 0xdeadbeefu);
    }
}

// Test 3: overflow: with room for 7, the count buffer says 7 then the exact number, and the
// 7 stored ids are the 7 nearest (exact order) or the first 7 of the approximate order.
TEST_F(CullTest, CapacityOverflowReportsExactCount) {
    const auto [boxes, f] = first_view("clustered", 3000);
    ASSERT_FALSE(boxes.empty());
    auto culler = make_culler();
    ASSERT_TRUE(culler);
    for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
        auto full = culler->cull(boxes, f, order);
        ASSERT_TRUE(full);
        ASSERT_GT(full->size(), 7u);
        std::vector<std::uint32_t> ids, commands;
        std::uint32_t counts[2] = {};
        record_cull(boxes, f, order, 7, {}, ids, commands, counts);
        EXPECT_EQ(counts[0], 7u);
        EXPECT_EQ(counts[1], full->size());
        EXPECT_EQ(ids, std::vector<std::uint32_t>(full->begin(), full->begin() + 7));
    }
    // Capacity 0: nothing stored, the count still exact.
    std::vector<std::uint32_t> ids, commands;
    std::uint32_t counts[2] = {};
    record_cull(boxes, f, CullOrder::exact, 0, {}, ids, commands, counts);
    EXPECT_EQ(counts[0], 0u);
    EXPECT_EQ(counts[1], cull_brute_force(f, boxes).size());
}

// Test 4: the host helper grows its output past the initial capacity.
TEST_F(CullTest, HostHelperGrows) {
    const auto [boxes, f] = first_view("uniform", 8000);
    ASSERT_FALSE(boxes.empty());
    auto culler = make_culler();
    ASSERT_TRUE(culler);
    auto got = culler->cull(boxes, f, CullOrder::exact);
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_GT(got->size(), 1024u);
    EXPECT_GE(culler->capacity(), got->size());
    EXPECT_EQ(compare_cull(f, boxes, cull_brute_force(f, boxes), got.value(), true), "");
}

// Several views over one build (Culler::cull_views): each view's ids equal the single-view
// cull's, exact and approximate, and brute force's set (and order, when exact), including a view
// that outgrows the output (it grows between views); 0 or more than kMaxCullViews views are
// refused.
TEST_F(CullTest, ViewsOverOneTreeMatchSingleViewCulls) {
    auto scene = generate_scene("clustered", 6000);
    ASSERT_TRUE(scene);
    std::vector<Frustum> frusta;
    for (const Camera& c : cameras_for(scene->boxes)) frusta.push_back(frustum_of(c));
    ASSERT_GE(frusta.size(), 3u);
    auto culler = make_culler();
    auto single = make_culler();
    ASSERT_TRUE(culler && single);
    for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
        auto views = culler->cull_views(scene->boxes, frusta, order);
        ASSERT_TRUE(views) << views.error().message;
        ASSERT_EQ(views->size(), frusta.size());
        std::size_t seen = 0;
        for (std::size_t v = 0; v < frusta.size(); ++v) {
            SCOPED_TRACE("view " + std::to_string(v));
            auto one = single->cull(scene->boxes, frusta[v], order);
            ASSERT_TRUE(one) << one.error().message;
            EXPECT_EQ((*views)[v], one.value());
            EXPECT_EQ(
                compare_cull(frusta[v], scene->boxes, cull_brute_force(frusta[v], scene->boxes),
                             (*views)[v], order == CullOrder::exact),
                "");
            seen += (*views)[v].size();
        }
        EXPECT_GT(seen, 1024u);  // the default output of 1024 ids was outgrown by some view
    }
    EXPECT_FALSE(culler->cull_views(scene->boxes, {}, CullOrder::exact));
    const std::vector<Frustum> nine(gpu::kMaxCullViews + 1, frusta[0]);
    auto refused = culler->cull_views(scene->boxes, nine, CullOrder::exact);
    expect_refused_with(refused, "1 to 8 views");
}

// Several views recorded into the caller's buffers in one traversal (record_views): each view's
// ids, draw commands and counts equal what record() writes for that view alone, including a
// view whose capacity of 7 overflows (its count still exact) and a view that sees nothing;
// mismatched outputs and overlapping view outputs are refused.
TEST_F(CullTest, RecordViewsEqualsOneViewRecords) {
    auto scene = generate_scene("clustered", 4000);
    ASSERT_TRUE(scene);
    gpu::Context& ctx = gpu_context();
    const auto n = static_cast<std::uint32_t>(scene->boxes.size());
    std::vector<Frustum> frusta;
    for (const Camera& c : cameras_for(scene->boxes)) frusta.push_back(frustum_of(c));
    frusta.resize(3);
    // A view looking away from the scene: nothing visible.
    frusta.push_back(frustum_of({{-50, -50, -50}, {-60, -50, -50}, {0, 1, 0}, 30, 1, 1, 5}));
    const std::uint32_t capacities[] = {7, n, n, n};
    const gpu::CullOptions options{6, 12, -3};
    auto culler = make_culler(options);
    auto lbvh = gpu::Lbvh::create(ctx);
    ASSERT_TRUE(culler && lbvh);
    auto req = lbvh.value()->requirements(n);
    gpu::Buffer boxes = device_buffer(n * 32ull), nodes = device_buffer(req.nodes),
                build = device_buffer(req.scratch),
                scratch = device_buffer(culler->views_scratch_size(n, 4));
    std::vector<gpu::Buffer> ids, commands, counts;
    std::vector<gpu::CullOutput> outs;
    for (std::uint32_t cap : capacities) {
        ids.push_back(device_buffer(cap * 4ull));
        commands.push_back(device_buffer(cap * 20ull));
        counts.push_back(device_buffer(8));
        outs.push_back(
            {gpu::whole(ids.back()), gpu::whole(commands.back()), gpu::whole(counts.back()), cap});
    }
    auto gpu_boxes = gpu::to_gpu_boxes(scene->boxes);
    ASSERT_TRUE(ctx.upload(boxes, gpu_boxes.data(), n * 32ull));
    for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
        SCOPED_TRACE(order == CullOrder::exact ? "exact" : "approx");
        Status s = ctx.submit_and_wait([&](VkCommandBuffer cmd) {
            for (std::size_t v = 0; v < outs.size(); ++v) {
                gpu::fill(cmd, {ids[v].handle(), 0, ids[v].size()}, 0xdeadbeefu);
                gpu::fill(cmd, {commands[v].handle(), 0, commands[v].size()}, 0xdeadbeefu);
                gpu::fill(cmd, {counts[v].handle(), 0, 8}, 0xdeadbeefu);
            }
            gpu::compute_barrier(cmd);
            gpu::LbvhBuildBuffers tree{gpu::whole(boxes), gpu::whole(nodes), gpu::whole(build)};
            EXPECT_TRUE(lbvh.value()->record_build(cmd, tree, n));
            gpu::compute_barrier(cmd);
            Status st = culler->record_views(cmd, {tree.nodes, n}, frusta, order,
                                             gpu::whole(scratch), outs);
            EXPECT_TRUE(st) << (st ? "" : st.error().message);
            gpu::compute_barrier(cmd);
        });
        ASSERT_TRUE(s) << s.error().message;
        for (std::size_t v = 0; v < outs.size(); ++v) {
            SCOPED_TRACE("view " + std::to_string(v));
            const std::uint32_t cap = capacities[v];
            std::vector<std::uint32_t> want_ids, want_commands, got_ids(cap), got_commands(cap * 5);
            std::uint32_t want_counts[2] = {}, got_counts[2] = {};
            record_cull(scene->boxes, frusta[v], order, cap, options, want_ids, want_commands,
                        want_counts);
            ASSERT_TRUE(ctx.download(counts[v], got_counts, 8));
            ASSERT_TRUE(ctx.download(ids[v], got_ids.data(), cap * 4ull));
            ASSERT_TRUE(ctx.download(commands[v], got_commands.data(), cap * 20ull));
            EXPECT_EQ(got_counts[0], want_counts[0]);
            EXPECT_EQ(got_counts[1], want_counts[1]);
            // Compared up to the stored count: record_cull poisons the same way, so the rest
            // is poison on both sides too.
            EXPECT_EQ(got_ids, want_ids);
            EXPECT_EQ(got_commands, want_commands);
            if (v == 0) {
                EXPECT_EQ(got_counts[0], 7u);
                EXPECT_GT(got_counts[1], 7u);
            }
            if (v == 3) {
                EXPECT_EQ(got_counts[1], 0u);
            }
        }
    }
    Status refused, overlap;
    Status s = ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        refused = culler->record_views(cmd, {gpu::whole(nodes), n}, frusta, CullOrder::exact,
                                       gpu::whole(scratch), std::span(outs).first(2));
        std::vector<gpu::CullOutput> same{outs[0], outs[0]};
        overlap = culler->record_views(cmd, {gpu::whole(nodes), n}, std::span(frusta).first(2),
                                       CullOrder::exact, gpu::whole(scratch), same);
    });
    ASSERT_TRUE(s);
    expect_refused_with(refused, "one output per view");
    expect_refused_with(overlap, "views 0 and 1");
}

// Test 6: the traversals reach every node but the root through its parent's LbvhWideNode
// (lbvh_cull.comp, lbvh_cull_views.comp, lbvh_cull_occlusion.comp in its early phase): with
// the LbvhNode of every internal node but the root poisoned after the build (all bits set: NaN
// bounds, links far out of range; the compaction reads only leaves), record and record_views
// still equal the twin of the tree as built, both orders; with every child box of the wide
// records moved far outside the views (the LbvhNode leaves untouched), nothing is seen.
TEST_F(CullTest, TraversalsReadChildrenFromWideRecords) {
    auto scene = generate_scene("clustered", 3000);
    ASSERT_TRUE(scene);
    const auto n = static_cast<std::uint32_t>(scene->boxes.size());
    gpu::Context& ctx = gpu_context();
    auto culler = make_culler();
    auto lbvh = gpu::Lbvh::create(ctx);
    ASSERT_TRUE(culler && lbvh);
    std::vector<Frustum> frusta;
    for (const Camera& cam : cameras_for(scene->boxes)) frusta.push_back(frustum_of(cam));
    if (frusta.size() > gpu::kMaxCullViews) frusta.resize(gpu::kMaxCullViews);
    const auto views = static_cast<std::uint32_t>(frusta.size());
    const gpu::LbvhRequirements req = lbvh.value()->requirements(n);
    gpu::Buffer boxes = device_buffer(n * 32ull), nodes = device_buffer(req.nodes),
                build = device_buffer(req.scratch),
                scratch = device_buffer(culler->views_scratch_size(n, views)),
                visibility = device_buffer(n * 4ull);
    std::vector<gpu::Buffer> ids, commands, counts;
    std::vector<gpu::CullOutput> outs;
    for (std::uint32_t v = 0; v < views; ++v) {
        ids.push_back(device_buffer(n * 4ull));
        commands.push_back(device_buffer(n * 20ull));
        counts.push_back(device_buffer(8));
        outs.push_back(
            {gpu::whole(ids.back()), gpu::whole(commands.back()), gpu::whole(counts.back()), n});
    }
    const auto gpu_boxes = gpu::to_gpu_boxes(scene->boxes);
    ASSERT_TRUE(ctx.upload(boxes, gpu_boxes.data(), n * 32ull));
    // The early phase of frame 2 keeps the leaves stamped 1: all of them.
    const std::vector<std::uint32_t> stamped(n, 1);
    ASSERT_TRUE(ctx.upload(visibility, stamped.data(), n * 4ull));
    Status s = ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        EXPECT_TRUE(lbvh.value()->record_build(
            cmd, {gpu::whole(boxes), gpu::whole(nodes), gpu::whole(build)}, n));
    });
    ASSERT_TRUE(s) << s.error().message;
    std::vector<gpu_layout::LbvhNode> built(2 * n - 1);
    ASSERT_TRUE(ctx.download(nodes, built.data(), built.size() * sizeof(built[0])));
    ASSERT_NO_FATAL_FAILURE(expect_wide_nodes_match(ctx, nodes, built));
    s = ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::fill(cmd, {nodes.handle(), sizeof(built[0]), (n - 2ull) * sizeof(built[0])},
                  0xffffffffu);
    });
    ASSERT_TRUE(s) << s.error().message;

    gpu::CullOcclusion early;
    early.phase = gpu::OcclusionPhase::early;
    early.visibility = gpu::whole(visibility);
    early.frame = 2;
    // [order][kind: record, record_views, record with early occlusion][view]: the visible ids.
    auto cull_all = [&](CullOrder order, int kind) {
        std::vector<std::vector<std::uint32_t>> got(views);
        Status st = ctx.submit_and_wait([&](VkCommandBuffer cmd) {
            if (kind == 1) {
                Status r = culler->record_views(cmd, {gpu::whole(nodes), n}, frusta, order,
                                                gpu::whole(scratch), outs);
                EXPECT_TRUE(r) << (r ? "" : r.error().message);
                return;
            }
            for (std::uint32_t v = 0; v < views; ++v) {
                Status r = kind == 2 ? culler->record(cmd, {gpu::whole(nodes), n}, frusta[v], order,
                                                      gpu::whole(scratch), outs[v], nullptr, early)
                                     : culler->record(cmd, {gpu::whole(nodes), n}, frusta[v], order,
                                                      gpu::whole(scratch), outs[v]);
                EXPECT_TRUE(r) << (r ? "" : r.error().message);
                gpu::compute_barrier(cmd);  // the next view reuses the scratch
            }
        });
        EXPECT_TRUE(st) << (st ? "" : st.error().message);
        for (std::uint32_t v = 0; v < views; ++v) {
            std::uint32_t c[2] = {0, 0};
            EXPECT_TRUE(ctx.download(counts[v], c, 8));
            EXPECT_EQ(c[0], c[1]);
            got[v].resize(c[0]);
            if (c[0] > 0) {
                EXPECT_TRUE(ctx.download(ids[v], got[v].data(), c[0] * 4ull));
            }
        }
        return got;
    };
    std::size_t seen = 0;
    for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
        for (int kind = 0; kind < 3; ++kind) {
            SCOPED_TRACE(std::string(order == CullOrder::exact ? "exact" : "approx") + " kind " +
                         std::to_string(kind));
            const auto got = cull_all(order, kind);
            for (std::uint32_t v = 0; v < views; ++v) {
                std::vector<std::uint32_t> stamps = stamped;
                lbvh::CullOcclusionTwin twin;
                twin.phase = gpu_layout::kOcclusionEarly;
                twin.visibility = &stamps;
                twin.frame = 2;
                EXPECT_EQ(got[v],
                          lbvh::cull(built, n, frusta[v], order, kind == 2 ? &twin : nullptr))
                    << "view " << v;
                seen += got[v].size();
            }
        }
    }
    EXPECT_GT(seen, 0u);

    // Every child box of the wide records (bounds only, links kept) turned inside out, lo
    // 1e30 and hi -1e30 on every axis: outside every plane of every view. Only the root's own
    // box (from its LbvhNode) is left to see.
    auto wide = gpu::download_wide_nodes(ctx, nodes, n);
    ASSERT_TRUE(wide) << wide.error().message;
    for (gpu_layout::LbvhWideNode& w : wide.value()) {
        w.a = {1e30f, 1e30f, 1e30f, -1e30f};    // left lo, left hi x
        w.b = {-1e30f, -1e30f, 1e30f, 1e30f};   // left hi y z, right lo x y
        w.c = {1e30f, -1e30f, -1e30f, -1e30f};  // right lo z, right hi
    }
    ASSERT_TRUE(ctx.upload(nodes, wide->data(), wide->size() * sizeof(gpu_layout::LbvhWideNode),
                           gpu::lbvh_wide_offset(n)));
    for (CullOrder order : {CullOrder::exact, CullOrder::approx})
        for (int kind = 0; kind < 3; ++kind)
            for (const auto& got : cull_all(order, kind))
                EXPECT_TRUE(got.empty()) << "kind " << kind << ": " << got.size() << " seen";
}

// Test 5: empty scene; invalid boxes rejected naming the box.
TEST_F(CullTest, EmptyAndHostileInput) {
    auto culler = make_culler();
    ASSERT_TRUE(culler);
    Frustum f = frustum_of({{0, 0, 10}, {0, 0, 0}, {0, 1, 0}, 90, 1, 1, 100});
    auto none = culler->cull({}, f, CullOrder::exact);
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_TRUE(none->empty());
    std::vector<std::uint32_t> ids, commands;
    std::uint32_t counts[2] = {};
    record_cull({}, f, CullOrder::exact, 4, {}, ids, commands, counts);
    EXPECT_EQ(counts[0], 0u);
    EXPECT_EQ(counts[1], 0u);
    std::vector<Box> bad{{{0, 0, 0}, {1, 1, 1}}, {{0, 0, 0}, {1, std::nanf(""), 1}}};
    auto r = culler->cull(bad, f, CullOrder::exact);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::invalid_box);
    EXPECT_EQ(r.error().box, std::optional<std::size_t>(1));
}

}  // namespace
}  // namespace broadphase::testing
