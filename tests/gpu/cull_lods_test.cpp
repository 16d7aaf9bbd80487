// GPU cull with per-instance meshes and levels of detail (gpu::CullLods, Culler::cull_lods,
// shaders/cull/lbvh_cull_emit_lods.comp and the grouping per mesh) against its CPU twin
// (lbvh::cull_draws) exactly: on every standard scene from every camera of cameras_for, both
// orders, flat and grouped, four meshes of 1, 3, 8 and 2 LODs; the caller's buffers byte for
// byte (poisoned beforehand) with overflowing groups and out-of-range mesh ids; the host helper's
// growth; the LOD rule against double-precision distances; hostile mesh tables and ids.
#include <algorithm>
#include <cmath>
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
#include "lbvh_cull.hpp"

namespace broadphase::testing {
namespace {

using gpu_layout::CullMesh;
using gpu_layout::kNoLod;

constexpr std::uint32_t kPoison = 0xdeadbeefu;

float scene_size(std::span<const Box> boxes) {
    if (boxes.empty()) return 1;
    Box bounds = boxes[0];
    for (const Box& b : boxes) bounds = merge(bounds, b);
    return std::max({bounds.max.x - bounds.min.x, bounds.max.y - bounds.min.y,
                     bounds.max.z - bounds.min.z, 1e-3f});
}

// Four meshes of 1, 3, 8 and 2 LODs, switch distances spread over the scene's size (cameras_for
// sees boxes from 0 to about 4 sizes away), each LOD's draw parameters distinct.
std::vector<gpu::Mesh> test_meshes(float size) {
    auto lod = [](std::uint32_t m, std::uint32_t k, float d) {
        return gpu::MeshLod{36 - 4 * k, 1000 * m + 40 * k, -static_cast<std::int32_t>(m + k), d};
    };
    std::vector<gpu::Mesh> meshes(4);
    meshes[0].lods = {lod(0, 0, 0)};
    meshes[1].lods = {lod(1, 0, 0), lod(1, 1, 0.3f * size), lod(1, 2, 0.9f * size)};
    for (std::uint32_t k = 0; k < 8; ++k)
        meshes[2].lods.push_back(lod(2, k, 0.2f * size * static_cast<float>(k)));
    meshes[3].lods = {lod(3, 0, 0), lod(3, 1, 0.5f * size)};
    return meshes;
}

// Box i's mesh: a scrambled pattern over the four meshes.
std::vector<std::uint32_t> test_mesh_ids(std::size_t n, std::uint32_t mesh_count) {
    std::vector<std::uint32_t> ids(n);
    for (std::size_t i = 0; i < n; ++i)
        ids[i] = static_cast<std::uint32_t>((i * 2654435761ull >> 7) % mesh_count);
    return ids;
}

std::vector<std::uint32_t> instances_per_mesh(std::span<const std::uint32_t> mesh_ids,
                                              std::uint32_t mesh_count) {
    std::vector<std::uint32_t> count(mesh_count, 0);
    for (std::uint32_t m : mesh_ids)
        if (m < mesh_count) ++count[m];
    return count;
}

// The twin's draws as the host helper returns them (no group overflows: each group's capacity
// is its mesh's instance count).
std::vector<gpu::CullDraw> twin_draws(const std::vector<gpu_layout::LbvhNode>& nodes,
                                      std::uint32_t n, const Frustum& f, CullOrder order,
                                      std::span<const gpu::Mesh> meshes,
                                      std::span<const std::uint32_t> mesh_ids, bool grouped) {
    const auto mesh_count = static_cast<std::uint32_t>(meshes.size());
    const std::vector<std::uint32_t> caps = instances_per_mesh(mesh_ids, mesh_count);
    auto table = gpu::pack_mesh_table(
        meshes, grouped ? std::span<const std::uint32_t>(caps) : std::span<const std::uint32_t>());
    EXPECT_TRUE(table);
    if (!table) return {};
    lbvh::CullDraws d =
        lbvh::cull_draws(nodes, n, f, order, table.value(), mesh_ids, grouped, n, kPoison);
    std::vector<gpu::CullDraw> draws;
    if (!grouped) {
        for (std::uint32_t i = 0; i < d.draw_count[0]; ++i)
            draws.push_back({d.ids[i], mesh_ids[d.ids[i]], d.lods[i]});
        return draws;
    }
    const std::vector<std::uint32_t> first = gpu::group_first(caps);
    for (std::uint32_t m = 0; m < mesh_count; ++m)
        for (std::uint32_t r = 0; r < d.group_counts[m]; ++r)
            draws.push_back({d.ids[first[m] + r], m, d.lods[first[m] + r]});
    return draws;
}

// Empty when every draw's LOD agrees with the rule in double precision (the largest k with
// distance >= switch distance), allowing a relative 1e-6 either side of each switch.
std::string check_lod_rule(const Frustum& f, std::span<const Box> boxes,
                           std::span<const gpu::Mesh> meshes,
                           const std::vector<gpu::CullDraw>& draws) {
    for (const gpu::CullDraw& d : draws) {
        const std::vector<gpu::MeshLod>& lods = meshes[d.mesh].lods;
        if (d.lod >= lods.size()) return "draw of " + std::to_string(d.id) + " has no such LOD";
        const double dist = cull_distance_d(f.eye, boxes[d.id]);
        const double slack = 1e-6 * std::max(dist, 1e-30);
        if (dist + slack < lods[d.lod].switch_distance)
            return "box " + std::to_string(d.id) + " at " + std::to_string(dist) + " took LOD " +
                   std::to_string(d.lod) + " switching at " +
                   std::to_string(lods[d.lod].switch_distance);
        if (d.lod + 1 < lods.size() && dist - slack >= lods[d.lod + 1].switch_distance)
            return "box " + std::to_string(d.id) + " at " + std::to_string(dist) + " took LOD " +
                   std::to_string(d.lod) + ", LOD " + std::to_string(d.lod + 1) + " switches at " +
                   std::to_string(lods[d.lod + 1].switch_distance);
    }
    return "";
}

class CullLodsSceneTest : public GpuTest, public ::testing::WithParamInterface<SceneCase> {};

// Test 1: on every standard scene and camera, both orders, flat and grouped: the host helper's
// draws equal the twin's exactly; flat keeps the cull's ids and order (cull()), grouped is the
// flat list stably partitioned by mesh; every LOD obeys the rule in double precision.
TEST_P(CullLodsSceneTest, MatchesTwinFlatAndGrouped) {
    auto opened = open_cull_scene(GetParam());
    ASSERT_TRUE(opened);
    auto& [boxes, culler, nodes, n] = *opened;
    const std::vector<gpu::Mesh> meshes = test_meshes(scene_size(boxes));
    const std::vector<std::uint32_t> mesh_ids = test_mesh_ids(n, 4);
    int camera = 0;
    std::vector<char> lods_seen(8, 0);
    for (const Camera& cam : cameras_for(boxes)) {
        const Frustum f = frustum_of(cam);
        for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
            SCOPED_TRACE("camera " + std::to_string(camera) +
                         (order == CullOrder::exact ? " exact" : " approx"));
            auto plain = culler->cull(boxes, f, order);
            ASSERT_TRUE(plain) << plain.error().message;
            auto flat = culler->cull_lods(boxes, f, order, meshes, mesh_ids, false);
            ASSERT_TRUE(flat) << flat.error().message;
            EXPECT_EQ(flat.value(), twin_draws(nodes, n, f, order, meshes, mesh_ids, false));
            std::vector<std::uint32_t> flat_ids;
            for (const gpu::CullDraw& d : flat.value()) flat_ids.push_back(d.id);
            EXPECT_EQ(flat_ids, plain.value());
            EXPECT_EQ(check_lod_rule(f, boxes, meshes, flat.value()), "");
            auto grouped = culler->cull_lods(boxes, f, order, meshes, mesh_ids, true);
            ASSERT_TRUE(grouped) << grouped.error().message;
            EXPECT_EQ(grouped.value(), twin_draws(nodes, n, f, order, meshes, mesh_ids, true));
            std::vector<gpu::CullDraw> partitioned = flat.value();
            std::stable_sort(
                partitioned.begin(), partitioned.end(),
                [](const gpu::CullDraw& a, const gpu::CullDraw& b) { return a.mesh < b.mesh; });
            EXPECT_EQ(grouped.value(), partitioned);
            for (const gpu::CullDraw& d : flat.value()) lods_seen[d.lod] = 1;
        }
        ++camera;
    }
    // The scenes of thousands of boxes see near and far instances: several LODs are drawn.
    if (n >= 1000) {
        EXPECT_GE(std::count(lods_seen.begin(), lods_seen.end(), 1), 3);
    }
}

INSTANTIATE_TEST_SUITE_P(StandardScenes, CullLodsSceneTest, standard_cull_scenes(), case_name);

class CullLodsTest : public GpuTest {};

// What Culler::record with CullLods left in the caller's (poisoned) buffers.
struct RecordedLods {
    std::vector<std::uint32_t> ids, commands, lods, group_counts;
    std::uint32_t draw_count[2] = {0, 0};
};

RecordedLods record_lods(gpu::Culler& culler, std::span<const Box> boxes, const Frustum& f,
                         CullOrder order, std::span<const CullMesh> table,
                         std::span<const std::uint32_t> mesh_ids, bool grouped,
                         std::uint32_t capacity) {
    gpu::Context& ctx = gpu_context();
    auto lbvh = gpu::Lbvh::create(ctx);
    EXPECT_TRUE(lbvh);
    RecordedLods r;
    if (!lbvh) return r;
    const auto n = static_cast<std::uint32_t>(boxes.size());
    const auto mesh_count = static_cast<std::uint32_t>(table.size());
    auto req = lbvh.value()->requirements(n);
    gpu::Buffer box_buf = device_buffer(n * 32ull), nodes = device_buffer(req.nodes),
                build = device_buffer(req.scratch),
                scratch = device_buffer(culler.scratch_size(n, grouped ? mesh_count : 0)),
                ids = device_buffer(capacity * 4ull), commands = device_buffer(capacity * 20ull),
                count = device_buffer(8), table_buf = device_buffer(table.size_bytes()),
                mesh_buf = device_buffer(n * 4ull),
                groups = device_buffer((2ull * mesh_count + 1) * 4),
                lods = device_buffer(capacity * 4ull);
    auto gpu_boxes = gpu::to_gpu_boxes(boxes);
    if (n > 0) {
        EXPECT_TRUE(ctx.upload(box_buf, gpu_boxes.data(), n * 32ull));
        EXPECT_TRUE(ctx.upload(mesh_buf, mesh_ids.data(), n * 4ull));
    }
    EXPECT_TRUE(ctx.upload(table_buf, table.data(), table.size_bytes()));
    Status s = ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        for (gpu::Buffer* b : {&ids, &commands, &count, &groups, &lods})
            gpu::fill(cmd, {b->handle(), 0, b->size()}, kPoison);
        gpu::compute_barrier(cmd);
        gpu::LbvhBuildBuffers tree{gpu::whole(box_buf), gpu::whole(nodes), gpu::whole(build)};
        EXPECT_TRUE(lbvh.value()->record_build(cmd, tree, n));
        gpu::compute_barrier(cmd);
        const gpu::CullLods cull_lods{
            gpu::whole(table_buf), gpu::whole(mesh_buf), mesh_count, grouped,
            gpu::whole(groups),    gpu::whole(lods)};
        Status st = culler.record(
            cmd, {tree.nodes, n}, f, order, gpu::whole(scratch),
            {gpu::whole(ids), gpu::whole(commands), gpu::whole(count), capacity}, cull_lods);
        EXPECT_TRUE(st) << (st ? "" : st.error().message);
        gpu::compute_barrier(cmd);
    });
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    r.ids.assign(capacity, 0);
    r.lods.assign(capacity, 0);
    r.commands.assign(capacity * 5ull, 0);
    r.group_counts.assign(2ull * mesh_count + 1, 0);
    EXPECT_TRUE(ctx.download(count, r.draw_count, 8));
    if (capacity > 0) {
        EXPECT_TRUE(ctx.download(ids, r.ids.data(), capacity * 4ull));
        EXPECT_TRUE(ctx.download(lods, r.lods.data(), capacity * 4ull));
        EXPECT_TRUE(ctx.download(commands, r.commands.data(), capacity * 20ull));
    }
    EXPECT_TRUE(ctx.download(groups, r.group_counts.data(), r.group_counts.size() * 4));
    return r;
}

// Test 2: recorded into the caller's poisoned buffers, every word equals the twin's (commands
// not written stay poisoned), flat and grouped, both orders: with room for everything, with
// overflowing groups (capacities 0, 5, 3, 40) and a flat capacity of 7, and with some
// instances' mesh ids out of range (flat: no-op draws; grouped: counted apart, in no group).
TEST_F(CullLodsTest, RecordMatchesTwinWordForWord) {
    auto opened = open_cull_scene({"clustered", 3000});
    ASSERT_TRUE(opened);
    auto& [boxes, culler, nodes, n] = *opened;
    const std::vector<gpu::Mesh> meshes = test_meshes(scene_size(boxes));
    std::vector<std::uint32_t> mesh_ids = test_mesh_ids(n, 4);
    std::vector<std::uint32_t> bad_ids = mesh_ids;
    for (std::uint32_t i = 0; i < n; i += 11) bad_ids[i] = i % 2 ? 4u : 0xffffffffu;
    const Frustum f = frustum_of(cameras_for(boxes)[0]);
    const std::vector<std::uint32_t> roomy = instances_per_mesh(mesh_ids, 4);
    const std::vector<std::uint32_t> tight{0, 5, 3, 40};
    int checked_overflow = 0, checked_bad = 0;
    for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
        for (const std::vector<std::uint32_t>* ids : {&mesh_ids, &bad_ids}) {
            for (bool grouped : {false, true}) {
                for (bool overflow : {false, true}) {
                    SCOPED_TRACE(std::string(order == CullOrder::exact ? "exact" : "approx") +
                                 (ids == &bad_ids ? " bad ids" : "") +
                                 (grouped ? " grouped" : " flat") + (overflow ? " overflow" : ""));
                    const std::vector<std::uint32_t>& caps = overflow ? tight : roomy;
                    auto table =
                        gpu::pack_mesh_table(meshes, grouped ? caps : std::vector<std::uint32_t>());
                    ASSERT_TRUE(table) << table.error().message;
                    const std::uint32_t capacity =
                        grouped ? gpu::group_first(caps).back() : (overflow ? 7u : n);
                    RecordedLods got = record_lods(*culler, boxes, f, order, table.value(), *ids,
                                                   grouped, capacity);
                    lbvh::CullDraws want = lbvh::cull_draws(nodes, n, f, order, table.value(), *ids,
                                                            grouped, capacity, kPoison);
                    EXPECT_EQ(got.draw_count[0], want.draw_count[0]);
                    EXPECT_EQ(got.draw_count[1], want.draw_count[1]);
                    EXPECT_EQ(got.ids, want.ids);
                    EXPECT_EQ(got.commands, want.commands);
                    EXPECT_EQ(got.lods, want.lods);
                    if (grouped) {
                        EXPECT_EQ(got.group_counts, want.group_counts);
                    } else {  // flat output leaves group_counts alone
                        EXPECT_EQ(got.group_counts,
                                  std::vector<std::uint32_t>(got.group_counts.size(), kPoison));
                    }
                    // The exact totals: the cull's visible count, split per mesh (+ bad ids).
                    const std::uint32_t visible =
                        static_cast<std::uint32_t>(cull_brute_force(f, boxes).size());
                    EXPECT_NEAR(got.draw_count[1], visible, visible / 100 + 1);
                    if (grouped) {
                        std::uint32_t sum = 0;
                        for (std::uint32_t m = 0; m <= 4; ++m) sum += got.group_counts[4 + m];
                        EXPECT_EQ(sum, got.draw_count[1]);
                        if (overflow) {
                            EXPECT_LT(got.draw_count[0], got.draw_count[1]);
                            EXPECT_EQ(got.group_counts[0], 0u);
                            EXPECT_GT(got.group_counts[4 + 0], 0u);
                            EXPECT_EQ(got.group_counts[1], 5u);
                            ++checked_overflow;
                        }
                    } else if (overflow) {
                        EXPECT_EQ(got.draw_count[0], 7u);
                        ++checked_overflow;
                    }
                    if (ids == &bad_ids) {
                        if (grouped) {
                            EXPECT_GT(got.group_counts[8], 0u);
                        } else {
                            bool noop = false;
                            for (std::uint32_t i = 0; i < got.draw_count[0]; ++i)
                                if (got.lods[i] == kNoLod) {
                                    noop = true;
                                    EXPECT_EQ(got.commands[5ull * i + 1], 0u);  // instanceCount
                                    EXPECT_EQ(got.commands[5ull * i + 4], got.ids[i]);
                                }
                            EXPECT_TRUE(noop || overflow);
                        }
                        ++checked_bad;
                    }
                }
            }
        }
    }
    EXPECT_EQ(checked_overflow, 8);
    EXPECT_EQ(checked_bad, 8);
}

// Test 3: the host helper grows the flat output past its 1024 first ids and every group past
// its first 256 draws, and its draws then equal the twin's.
TEST_F(CullLodsTest, HostHelperGrowsGroupsAndFlatOutput) {
    auto opened = open_cull_scene({"uniform", 12000});
    ASSERT_TRUE(opened);
    auto& [boxes, culler, nodes, n] = *opened;
    const std::vector<gpu::Mesh> meshes = test_meshes(scene_size(boxes));
    const std::vector<std::uint32_t> mesh_ids = test_mesh_ids(n, 4);
    const Frustum f = frustum_of(cameras_for(boxes)[3]);  // inside, looking along -y
    for (bool grouped : {true, false}) {
        auto got = culler->cull_lods(boxes, f, CullOrder::exact, meshes, mesh_ids, grouped);
        ASSERT_TRUE(got) << got.error().message;
        EXPECT_EQ(got.value(),
                  twin_draws(nodes, n, f, CullOrder::exact, meshes, mesh_ids, grouped));
        std::vector<std::uint32_t> per_mesh(4, 0);
        for (const gpu::CullDraw& d : got.value()) ++per_mesh[d.mesh];
        EXPECT_GT(got->size(), 1024u);
        EXPECT_GT(*std::min_element(per_mesh.begin(), per_mesh.end()), 256u);
    }
}

// Test 5: the switch rule at its edges: boxes exactly at a switch distance from the eye take
// that LOD, boxes just nearer the one before (eye at the origin looking along +x, switches at
// 0, 2 and 4, boxes [d, d + 1] along x straddling the view axis).
TEST_F(CullLodsTest, SwitchDistanceIsInclusive) {
    const float ds[] = {0.5f, 1.999f, 2.0f, 3.999f, 4.0f, 50.0f};
    std::vector<Box> boxes;
    for (float d : ds) boxes.push_back({{d, -0.5f, -0.5f}, {d + 1, 0.5f, 0.5f}});
    const std::vector<gpu::Mesh> meshes{{{{36, 0, 0, 0}, {24, 36, 0, 2}, {12, 60, 0, 4}}}};
    const std::vector<std::uint32_t> mesh_ids(boxes.size(), 0);
    const Frustum f = frustum_of({{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, 60, 1, 0.1f, 100});
    auto culler = make_culler();
    ASSERT_TRUE(culler);
    for (bool grouped : {false, true}) {
        auto got = culler->cull_lods(boxes, f, CullOrder::exact, meshes, mesh_ids, grouped);
        ASSERT_TRUE(got) << got.error().message;
        const std::vector<gpu::CullDraw> want{{0, 0, 0}, {1, 0, 0}, {2, 0, 1},
                                              {3, 0, 1}, {4, 0, 2}, {5, 0, 2}};
        EXPECT_EQ(got.value(), want);
    }
}

// Test 4: hostile mesh tables and mesh ids are refused with messages naming the mesh, LOD or
// box; record refuses a mesh count of 0 and a too small group_counts range.
TEST_F(CullLodsTest, RefusesBadTablesAndIds) {
    auto check = [](std::vector<gpu::Mesh> meshes, const char* words) {
        auto r = gpu::pack_mesh_table(meshes);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
        EXPECT_NE(r.error().message.find(words), std::string::npos) << r.error().message;
    };
    const gpu::MeshLod l0{36, 0, 0, 0};
    check({}, "1 to 2^24 meshes");
    check({gpu::Mesh{}}, "mesh 0 has 0 LODs");
    check({{{l0}}, {std::vector<gpu::MeshLod>(9, l0)}}, "mesh 1 has 9 LODs");
    check({{{{36, 0, 0, 1.0f}}}}, "mesh 0 LOD 0 switch distance");
    check({{{l0, {36, 0, 0, 2.0f}, {36, 0, 0, 2.0f}}}}, "mesh 0 LOD 2");
    check({{{l0, {36, 0, 0, 2.0f}, {36, 0, 0, 1.0f}}}}, "mesh 0 LOD 2");
    check({{{l0, {36, 0, 0, std::nanf("")}}}}, "mesh 0 LOD 1");
    check({{{l0, {36, 0, 0, INFINITY}}}}, "mesh 0 LOD 1");
    const std::vector<gpu::Mesh> ok{{{l0}}, {{l0, {36, 0, 0, 1.0f}}}};
    ASSERT_TRUE(gpu::pack_mesh_table(ok));
    const std::uint32_t three[] = {1, 2, 3};
    EXPECT_FALSE(gpu::pack_mesh_table(ok, three));
    const std::uint32_t huge[] = {0xffffffffu, 1};
    EXPECT_FALSE(gpu::pack_mesh_table(ok, huge));

    auto culler = make_culler();
    ASSERT_TRUE(culler);
    const std::vector<Box> boxes{{{0, 0, 0}, {1, 1, 1}}, {{2, 0, 0}, {3, 1, 1}}};
    const Frustum f = frustum_of({{0, 0, 10}, {0, 0, 0}, {0, 1, 0}, 90, 1, 1, 100});
    const std::uint32_t bad[] = {0, 2};
    auto r = culler->cull_lods(boxes, f, CullOrder::exact, ok, bad, true);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().box, std::optional<std::size_t>(1));
    EXPECT_NE(r.error().message.find("box 1 has mesh id 2"), std::string::npos);
    const std::uint32_t one[] = {0};
    EXPECT_FALSE(culler->cull_lods(boxes, f, CullOrder::exact, ok, one, false));
    const std::uint32_t good[] = {1, 0};
    auto fine = culler->cull_lods(boxes, f, CullOrder::exact, ok, good, true);
    ASSERT_TRUE(fine) << fine.error().message;
    EXPECT_EQ(fine->size(), 2u);

    // record: mesh count 0, group counts too small for the meshes, and an overlap of the
    // LOD ranges with the outputs.
    gpu::Context& ctx = gpu_context();
    auto buf = ctx.create_buffer(1 << 16, gpu::MemoryKind::device);
    ASSERT_TRUE(buf);
    const VkBuffer h = buf->handle();
    const gpu::LbvhTree tree{{h, 10240, gpu::lbvh_tree_bytes(2)}, 2};
    const gpu::BufferRange scratch{h, 256, 8192}, table{h, 8448, 288}, ids{h, 8960, 256};
    const gpu::CullOutput out{{h, 9216, 256}, {h, 9472, 256}, {h, 9728, 256}, 2};
    Status zero, small, overlap;
    Status s = ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        zero = culler->record(cmd, tree, f, CullOrder::exact, scratch, out,
                              gpu::CullLods{table, ids, 0, false, {}});
        small = culler->record(cmd, tree, f, CullOrder::exact, scratch, out,
                               gpu::CullLods{table, ids, 2, true, {h, 9984, 8}});
        overlap = culler->record(cmd, tree, f, CullOrder::exact, scratch, out,
                                 gpu::CullLods{table, ids, 2, false, {}, out.visible_ids});
    });
    ASSERT_TRUE(s);
    expect_refused_with(zero, "mesh_count");
    expect_refused_with(small, "group_counts");
    expect_refused_with(overlap, "draw_lods");
}

}  // namespace
}  // namespace broadphase::testing
