// The instruments of gpu::Culler's host helpers (Culler::last_report, last_visits) as numbered
// scenarios: the traversal's GPU visit count (internal nodes expanded) equals the CPU twin's
// (lbvh::cull_chunk's `expanded`) exactly for both orders, with occlusion and for several views;
// each stage's dispatches and modelled bytes follow the byte model of
// gpu/instruments/cull_report.cpp for the visible count and visits, the tree build's equal the
// Lbvh's own report of the same build, and every run of the same cull reports the same dispatches
// and bytes.
#include <algorithm>
#include <bit>
#include <numeric>
#include <vector>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/instruments.hpp"
#include "broadphase/gpu/layout/cull.h"
#include "broadphase/occlusion.hpp"
#include "broadphase/scene.hpp"
#include "cull_gpu_test_util.hpp"
#include "cull_test_util.hpp"
#include "gpu_test_env.hpp"
#include "lbvh_build_report.hpp"
#include "lbvh_cull.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::testing {
namespace {

using gpu::StageReport;

// The scenes of these tests: the four of issue 15 at 5,000 boxes, and two tiny ones.
auto report_scenes() {
    return ::testing::Values(SceneCase{"uniform", 5000}, SceneCase{"degenerate", 5000},
                             SceneCase{"level", 5000}, SceneCase{"multiscale", 5000},
                             SceneCase{"uniform", 1}, SceneCase{"clustered", 33});
}

// The culler's last report, after expecting its last visit count to be `visits` (the twin's);
// empty, after a failure, when either is missing.
std::vector<StageReport> report_after_visits(gpu::Culler& culler, std::uint64_t visits,
                                             const std::string& where) {
    auto counted = culler.last_visits();
    EXPECT_TRUE(counted) << (counted ? "" : counted.error().message);
    if (counted) {
        EXPECT_EQ(counted.value(), visits) << where;
    }
    auto report = last_report(culler);
    EXPECT_TRUE(report) << (report ? "" : report.error().message);
    return report ? std::move(report.value()) : std::vector<StageReport>{};
}

std::uint64_t chunks_of(std::uint32_t n) {
    return (n + gpu_layout::kCullChunk - 1) / gpu_layout::kCullChunk;
}

// The traversal's and compaction's bytes by gpu/instruments/cull_report.cpp's model, written out
// again here (the test fails when either side changes alone).
gpu::Traffic traversal_bytes(std::uint32_t n, std::uint64_t visible, std::uint64_t visits,
                             bool exact) {
    const std::uint64_t chunks = chunks_of(n);
    return {128 + 32 * chunks + 64 * visits + 4 * chunks,
            visible * (exact ? 4 : 8) + 4 * (chunks + 1) + 4 * chunks};
}
gpu::Traffic compact_bytes(std::uint32_t n, std::uint64_t visible, bool exact) {
    const std::uint64_t chunks = chunks_of(n);
    gpu::Traffic t = gpu::RadixSort::scan_traffic(static_cast<std::uint32_t>(chunks + 1));
    // Exact writes each key alone (the id in its low bits), approx a value and a rank.
    t += {4 * (chunks + 1) + visible * (exact ? 40 : 12) + (exact ? 128 : 0), visible * 8};
    return t;
}

class CullReportSceneTest : public GpuTest, public ::testing::WithParamInterface<SceneCase> {};

// Test 1: from every camera of cameras_for and in both orders, the GPU visit count equals the
// twin's expanded nodes exactly, the approximate order expanding at least as many (it descends
// accepted subtrees for their ranks); the report names the stages, and the traversal's,
// compaction's and emit's bytes follow the model for the visible count and visits.
TEST_P(CullReportSceneTest, VisitsEqualTwinAndBytesFollowModel) {
    auto opened = open_cull_scene(GetParam());
    ASSERT_TRUE(opened);
    auto& [boxes, culler, nodes, n] = *opened;
    int camera = 0;
    for (const Camera& cam : cameras_for(boxes)) {
        const Frustum f = frustum_of(cam);
        std::uint64_t twin_visits[2] = {0, 0};
        for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
            const bool exact = order == CullOrder::exact;
            const std::string where =
                "camera " + std::to_string(camera) + (exact ? " exact" : " approx");
            auto got = culler->cull(boxes, f, order);
            ASSERT_TRUE(got) << got.error().message;
            std::uint64_t expanded = 0;
            EXPECT_EQ(got.value(), lbvh::cull(nodes, n, f, order, nullptr, &expanded)) << where;
            twin_visits[exact ? 0 : 1] = expanded;
            const std::vector<StageReport> report = report_after_visits(*culler, expanded, where);
            std::vector<std::string> names;
            for (const StageReport& s : report) names.push_back(s.name);
            EXPECT_EQ(names, (std::vector<std::string>{"tree build", "cull", "compact",
                                                       "order sort", "emit"}))
                << where;
            const std::uint64_t visible = got->size();
            const StageReport* cull = find_stage(report, "cull");
            const StageReport* compact = find_stage(report, "compact");
            const StageReport* sort = find_stage(report, "order sort");
            const StageReport* emit = find_stage(report, "emit");
            ASSERT_TRUE(cull && compact && sort && emit) << where;
            const gpu::Traffic t = traversal_bytes(n, visible, expanded, exact);
            EXPECT_EQ(cull->bytes_read, t.read) << where;
            EXPECT_EQ(cull->bytes_written, t.written) << where;
            EXPECT_EQ(cull->dispatches, 1u) << where;
            const gpu::Traffic c = compact_bytes(n, visible, exact);
            EXPECT_EQ(compact->bytes_read, c.read) << where;
            EXPECT_EQ(compact->bytes_written, c.written) << where;
            const std::uint64_t stored = std::min<std::uint64_t>(visible, culler->capacity());
            // Exact reads each id from its sorted key (8 B counted), approx a sorted value.
            EXPECT_EQ(emit->bytes_read, 128 + 4 + (exact ? 8 : 4) * stored) << where;
            EXPECT_EQ(emit->bytes_written, 24 * stored + 8) << where;
            EXPECT_EQ(emit->dispatches, 1u) << where;
            // Exact: the distance key above the id's bits; approx: the ranks' bits.
            const std::uint32_t id_bits = std::max<std::uint32_t>(1, std::bit_width(n - 1));
            const std::uint32_t key_bits = exact ? 32 + id_bits : id_bits;
            EXPECT_EQ(sort->passes, n > 1 ? (key_bits + 7) / 8 : 0u) << where;
            if (n > 1) {
                EXPECT_GT(sort->dispatches, 1u) << where;  // count_args and the passes
                EXPECT_GT(sort->bytes_read, visible * 8) << where;
                // Exact moves the keys alone: the copy of the total and count_args, then a
                // keys-only sort of the visible keys.
                gpu::Traffic keys_only{8, 32};
                keys_only += gpu::RadixSort::count_traffic(
                    n, static_cast<std::uint32_t>(visible), exact ? 2 : 1, key_bits, exact,
                    gpu_context().info().sort_path, nullptr, false);
                EXPECT_EQ(sort->bytes_read, keys_only.read) << where;
                EXPECT_EQ(sort->bytes_written, keys_only.written) << where;
            }
        }
        EXPECT_GE(twin_visits[1], twin_visits[0]) << "camera " << camera;
        ++camera;
    }
}

// Test 2: the tree build's stage is the Lbvh's own: its dispatches and bytes equal the sum of
// the first four stages of Lbvh::last_report over the same boxes (plus the build's scratch
// fills: 32 B of bounds, the refine word, 4 B of flags per box), and repeating the cull gives
// the same dispatches and bytes in every stage.
TEST_P(CullReportSceneTest, BuildMatchesLbvhAndRunsRepeat) {
    auto opened = open_cull_scene(GetParam());
    ASSERT_TRUE(opened);
    auto& [boxes, culler, nodes, n] = *opened;
    const Frustum f = frustum_of(cameras_for(boxes).front());
    ASSERT_TRUE(culler->cull(boxes, f, CullOrder::exact));
    auto first = last_report(*culler);
    ASSERT_TRUE(first) << first.error().message;
    ASSERT_TRUE(culler->cull(boxes, f, CullOrder::exact));
    auto second = last_report(*culler);
    ASSERT_TRUE(second) << second.error().message;
    ASSERT_EQ(first->size(), second->size());
    for (std::size_t k = 0; k < first->size(); ++k) {
        EXPECT_EQ((*first)[k].dispatches, (*second)[k].dispatches) << (*first)[k].name;
        EXPECT_EQ((*first)[k].bytes_read, (*second)[k].bytes_read) << (*first)[k].name;
        EXPECT_EQ((*first)[k].bytes_written, (*second)[k].bytes_written) << (*first)[k].name;
        EXPECT_EQ((*first)[k].passes, (*second)[k].passes) << (*first)[k].name;
    }
    const std::optional<StageReport> lbvh_build = lbvh_build_totals(boxes);
    ASSERT_TRUE(lbvh_build);
    const StageReport& build = first->front();
    ASSERT_EQ(build.name, "tree build");
    EXPECT_EQ(build.dispatches, lbvh_build->dispatches);
    EXPECT_EQ(build.bytes_read, lbvh_build->bytes_read);
    EXPECT_EQ(build.bytes_written,
              lbvh_build->bytes_written + (n == 0 ? 0 : 36 + (n > 1 ? 4ull * n : 0)));
    EXPECT_EQ(build.passes, lbvh_build->passes);
}

INSTANTIATE_TEST_SUITE_P(StandardScenes, CullReportSceneTest, report_scenes(), case_name);

class CullReportTest : public GpuTest {};

// Test 3: several views of one scene in one cull_views: the exact order's shared traversal
// expands exactly the nodes the views twin expands over every chunk; the approximate order
// culls each view on its own, and its count is the sum of the one-view twins'. The stages are
// named as record_views times them.
TEST_F(CullReportTest, ViewsVisitsEqualTwin) {
    auto opened = open_cull_scene({"multiscale", 5000});
    ASSERT_TRUE(opened);
    auto& [boxes, culler, nodes, n] = *opened;
    std::vector<Frustum> frusta;
    for (const Camera& cam : cameras_for(boxes)) frusta.push_back(frustum_of(cam));
    ASSERT_TRUE(culler->cull_views(boxes, frusta, CullOrder::exact));
    std::uint64_t joint = 0;
    for (std::uint32_t c = 0; c < chunks_of(n); ++c)
        lbvh::cull_chunk_views(nodes, n, frusta, c, nullptr, &joint);
    std::vector<StageReport> report = report_after_visits(*culler, joint, "exact");
    ASSERT_EQ(report.size(), 3u);
    EXPECT_EQ(report[1].name, "cull (views together)");
    EXPECT_EQ(report[1].dispatches, 1u);
    EXPECT_EQ(report[2].name, "compact, sort, emit");
    // The exact keys: the distance key above the id's 13 bits (n = 5000), 6 passes of 8 bits.
    EXPECT_EQ(n, 5000u);
    EXPECT_EQ(report[2].passes, 6u);

    ASSERT_TRUE(culler->cull_views(boxes, frusta, CullOrder::approx));
    std::uint64_t separate = 0;
    for (const Frustum& f : frusta) {
        std::uint64_t one = 0;
        lbvh::cull_positions(nodes, n, f, CullOrder::approx, nullptr, &one);
        separate += one;
    }
    report = report_after_visits(*culler, separate, "approx");
    ASSERT_EQ(report.size(), 2u);
    EXPECT_EQ(report[1].name, "cull, compact, sort, emit");
    EXPECT_GE(report[1].dispatches, frusta.size() * 3);
}

// Test 4: cull_occluded behind a wall over the middle of the image at the median depth of the
// seen boxes' centres: the visit count equals the occlusion twin's expanded nodes for both
// orders; the depth pyramid stage has one dispatch per level above 0 and reads every texel but
// the top one and writes every texel above level 0 (4 B each).
TEST_F(CullReportTest, OcclusionVisitsEqualTwinAndPyramidBytes) {
    for (const char* generator : {"uniform", "degenerate", "level", "multiscale"}) {
        auto opened = open_cull_scene({generator, 5000});
        ASSERT_TRUE(opened);
        auto& [boxes, culler, nodes, n] = *opened;
        const Camera cam = cameras_for(boxes).front();
        const Frustum f = frustum_of(cam);
        const std::array<float, 16> m = cam.view_projection();
        std::vector<float> depths;
        for (std::uint32_t id : cull_brute_force(f, boxes)) {
            const Box& b = boxes[id];
            double c[4];
            const double p[3] = {(double(b.min.x) + b.max.x) / 2, (double(b.min.y) + b.max.y) / 2,
                                 (double(b.min.z) + b.max.z) / 2};
            for (int r = 0; r < 4; ++r)
                c[r] = m[r] * p[0] + m[4 + r] * p[1] + m[8 + r] * p[2] + m[12 + r];
            if (c[3] > 0) depths.push_back(float(std::clamp(c[2] / c[3], 0.0, 1.0)));
        }
        std::sort(depths.begin(), depths.end());
        const float wall = depths.empty() ? 1.0f : depths[depths.size() / 2];
        constexpr std::uint32_t kW = 80, kH = 60;
        std::vector<float> image(kW * kH, 1.0f);
        for (std::uint32_t y = kH / 4; y < 3 * kH / 4; ++y)
            for (std::uint32_t x = kW / 4; x < 3 * kW / 4; ++x) image[y * kW + x] = wall;
        auto pyramid = DepthPyramid::build(kW, kH, image);
        ASSERT_TRUE(pyramid) << pyramid.error().message;
        for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
            const std::string where =
                std::string(generator) + (order == CullOrder::exact ? " exact" : " approx");
            auto got = culler->cull_occluded(boxes, f, order, pyramid.value(), m);
            ASSERT_TRUE(got) << got.error().message;
            lbvh::CullOcclusionTwin twin;
            twin.phase = gpu_layout::kOcclusionSingle;
            twin.pyramid = &pyramid.value();
            twin.view_projection = m;
            std::uint64_t expanded = 0;
            EXPECT_EQ(got.value(), lbvh::cull(nodes, n, f, order, &twin, &expanded)) << where;
            const std::vector<StageReport> report = report_after_visits(*culler, expanded, where);
            const StageReport* p = find_stage(report, "depth pyramid");
            const StageReport* cull = find_stage(report, "cull + occlusion");
            ASSERT_TRUE(p && cull) << where;
            const std::vector<DepthLevel> levels = depth_pyramid_levels(kW, kH);
            const std::uint64_t texels = levels.back().offset + 1ull;
            EXPECT_EQ(p->dispatches, levels.size() - 1) << where;
            EXPECT_EQ(p->bytes_read, 4 * (texels - 1)) << where;
            EXPECT_EQ(p->bytes_written, 4 * (texels - kW * kH)) << where;
            const gpu::Traffic t =
                traversal_bytes(n, got->size(), expanded, order == CullOrder::exact);
            EXPECT_EQ(cull->bytes_read, t.read + 80) << where;  // + CullOcclusionParams
            EXPECT_EQ(cull->bytes_written, t.written) << where;
        }
    }
}

// Test 5: before any cull the report is empty and the visit count 0; a cull of no boxes
// reports no traffic but the emit's draw count (8 B) and no visits.
TEST_F(CullReportTest, EmptyBeforeAnyCullAndForNoBoxes) {
    auto culler = make_culler();
    ASSERT_TRUE(culler);
    auto report = last_report(*culler);
    ASSERT_TRUE(report);
    EXPECT_TRUE(report->empty());
    auto visits = culler->last_visits();
    ASSERT_TRUE(visits);
    EXPECT_EQ(visits.value(), 0u);
    Frustum f = frustum_of({{2, 2, 2}, {0, 0, 0}, {0, 1, 0}, 60, 1, 0.1f, 10});
    ASSERT_TRUE(culler->cull({}, f, CullOrder::exact));
    report = last_report(*culler);
    ASSERT_TRUE(report) << report.error().message;
    ASSERT_EQ(report->size(), 5u);
    for (const StageReport& s : report.value()) {
        EXPECT_EQ(s.bytes_read, 0u) << s.name;
        EXPECT_EQ(s.bytes_written, s.name == "emit" ? 8u : 0u) << s.name;
    }
}

// Test 6: cull_lods, flat and grouped, both orders: the traversal is the frustum cull's (its
// visits the twin's); the flat LOD emit follows its model for the draws stored (the element,
// exact 8 B or approx 4 + 4 + 32 B, the mesh id and the 144-byte mesh record read; 28 B written
// per draw, and the draw count); grouping adds its kernels and sort to the emit stage.
TEST_F(CullReportTest, LodsEmitFollowsModel) {
    auto opened = open_cull_scene({"uniform", 5000});
    ASSERT_TRUE(opened);
    auto& [boxes, culler, nodes, n] = *opened;
    const Frustum f = frustum_of(cameras_for(boxes).front());
    std::vector<gpu::Mesh> meshes(3);
    for (std::uint32_t m = 0; m < 3; ++m)
        meshes[m].lods = {
            {36, 0, 0, 0}, {24, 36, 0, 0.5f}, {12, 60, 0, 1.0f + static_cast<float>(m)}};
    std::vector<std::uint32_t> mesh_ids(n);
    for (std::uint32_t i = 0; i < n; ++i) mesh_ids[i] = i % 3;
    for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
        const bool exact = order == CullOrder::exact;
        std::uint64_t expanded = 0;
        lbvh::cull(nodes, n, f, order, nullptr, &expanded);
        std::uint64_t emit_bytes[2] = {0, 0};
        for (bool grouped : {false, true}) {
            const std::string where =
                std::string(exact ? "exact" : "approx") + (grouped ? " grouped" : " flat");
            auto draws = culler->cull_lods(boxes, f, order, meshes, mesh_ids, grouped);
            ASSERT_TRUE(draws) << draws.error().message;
            const std::vector<StageReport> report = report_after_visits(*culler, expanded, where);
            const StageReport* emit = find_stage(report, "emit (LODs)");
            ASSERT_TRUE(emit) << where;
            emit_bytes[grouped ? 1 : 0] = emit->bytes_read + emit->bytes_written;
            if (grouped) {
                EXPECT_GT(emit->dispatches, 4u) << where;  // group, sort, bounds, emit
                continue;
            }
            const std::uint64_t stored = draws->size();
            EXPECT_EQ(emit->dispatches, 1u) << where;
            EXPECT_EQ(emit->bytes_read, 132 + stored * ((exact ? 8 : 40) + 4 + 144)) << where;
            EXPECT_EQ(emit->bytes_written, 28 * stored + 8) << where;
        }
        EXPECT_GT(emit_bytes[1], emit_bytes[0]) << (exact ? "exact" : "approx");
    }
}

// Test 7: RadixSort::count_traffic, the order sort's model: with the count equal to the
// capacity it is traffic()'s model plus, on reduce_then_scan, each pass's fill of the
// histograms; an empty count launches no tile, leaving the capacity's fills, scans and (odd
// passes) copy back; the passes are the capacity's.
TEST_F(CullReportTest, CountTrafficFollowsSortModel) {
    using gpu::RadixSort;
    for (gpu::SortPath path : {gpu::SortPath::reduce_then_scan, gpu::SortPath::onesweep}) {
        for (std::uint32_t n : {2u, 5000u, 70000u}) {
            for (std::uint32_t bits : {17u, 64u}) {
                const std::uint32_t words = bits > 32 ? 2 : 1;
                std::uint32_t passes = 0, count_passes = 0;
                const gpu::Traffic full = RadixSort::traffic(n, words, bits, false, path, &passes);
                const gpu::Traffic same =
                    RadixSort::count_traffic(n, n, words, bits, false, path, &count_passes);
                EXPECT_EQ(count_passes, passes);
                const std::uint64_t tiles = (n + gpu_layout::kSortTile - 1) / gpu_layout::kSortTile;
                const std::uint64_t fills = path == gpu::SortPath::onesweep
                                                ? 0
                                                : passes * 4ull * gpu_layout::kSortBuckets * tiles;
                EXPECT_EQ(same.read, full.read) << n << " " << bits;
                EXPECT_EQ(same.written, full.written + fills) << n << " " << bits;
                const gpu::Traffic none = RadixSort::count_traffic(n, 0, words, bits, false, path);
                const std::uint64_t copy = passes % 2 ? 4ull * (words + 1) * n : 0;
                if (path == gpu::SortPath::onesweep) {
                    EXPECT_EQ(none.read, copy) << n << " " << bits;
                } else {
                    const gpu::Traffic scans = RadixSort::scan_traffic(
                        static_cast<std::uint32_t>(gpu_layout::kSortBuckets * tiles));
                    EXPECT_EQ(none.read, passes * scans.read + copy) << n << " " << bits;
                    EXPECT_EQ(
                        none.written,
                        passes * (scans.written + 4ull * gpu_layout::kSortBuckets * tiles) + copy)
                        << n << " " << bits;
                }
            }
        }
    }
}

}  // namespace
}  // namespace broadphase::testing
