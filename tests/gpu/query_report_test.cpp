// The instruments of gpu::LbvhQueries' host helpers (LbvhQueries::last_report) as numbered
// scenarios: the region passes' GPU visit counts (internal nodes expanded, read back through
// the modelled bytes) equal the CPU twin's (lbvh::query_region's `expanded`) on the standard
// scenes whatever the traversal budget, and so do the ray casts' (lbvh::ray_cast_nodes) where
// they are deterministic: every ray finishing in round 0, on a context whose budget is
// kTraversalBudget (a tree of fewer than kTraversalBudget internal nodes cannot need more).
// Each stage's dispatches and bytes follow the model of gpu/lbvh/lbvh_queries.cpp, written out
// again here, including the fill pass run twice when the ids grow.
#include <algorithm>
#include <vector>

#include "broadphase/gpu/instruments.hpp"
#include "broadphase/gpu/lbvh_queries.hpp"
#include "broadphase/scene.hpp"
#include "gpu_test_env.hpp"
#include "lbvh_queries.hpp"
#include "query_batches.hpp"
#include "sort/radix_sort.hpp"

namespace broadphase::testing {
namespace {

using gpu::StageReport;

// A context whose traversals expand up to kTraversalBudget nodes per round, whatever
// BROADPHASE_TRAVERSAL_BUDGET says, so that the ray casts of these scenes finish in round 0
// (their visit counts are then deterministic); and the queries of both contexts.
std::unique_ptr<gpu::Context> g_full_budget;
std::unique_ptr<gpu::LbvhQueries> g_full_queries, g_report_queries;
std::unique_ptr<gpu::Lbvh> g_report_lbvh;

// A fresh LbvhQueries of `ctx` (its ids not yet grown, no batch run) built over `boxes`; null,
// after a failure, when it cannot be made or built.
std::unique_ptr<gpu::LbvhQueries> fresh_queries(gpu::Context& ctx, std::span<const Box> boxes,
                                                const gpu::LbvhOptions& options = {}) {
    auto made = gpu::LbvhQueries::create(ctx, options);
    EXPECT_TRUE(made) << (made ? "" : made.error().message);
    if (!made) return nullptr;
    const Status built = made.value()->build(boxes);
    EXPECT_TRUE(built) << (built ? "" : built.error().message);
    return built ? std::move(made.value()) : nullptr;
}

class QueryReportTest : public GpuTest {
public:
    static void SetUpTestSuite() {
        gpu::ContextOptions options;
        options.validation = true;
        options.tuning.traversal_budget = gpu_layout::kTraversalBudget;
        auto ctx = gpu::Context::create(options);
        if (ctx) {
            g_full_budget = std::move(ctx.value());
            auto q = gpu::LbvhQueries::create(*g_full_budget);
            if (q) g_full_queries = std::move(q.value());
        }
        auto q = gpu::LbvhQueries::create(gpu_context());
        if (q) g_report_queries = std::move(q.value());
        auto l = gpu::Lbvh::create(gpu_context());
        if (l) g_report_lbvh = std::move(l.value());
    }
    static void TearDownTestSuite() {
        g_full_queries.reset();
        g_report_queries.reset();
        g_report_lbvh.reset();
        g_full_budget.reset();
    }

protected:
    void SetUp() override {
        GpuTest::SetUp();
        ASSERT_TRUE(g_full_budget && g_full_queries && g_report_queries && g_report_lbvh);
        full_errors_ = g_full_budget->validation_errors();
    }
    void TearDown() override {
        EXPECT_EQ(g_full_budget->validation_errors(), full_errors_)
            << "the validation layer reported errors on the full-budget context";
        GpuTest::TearDown();
    }

private:
    std::uint64_t full_errors_ = 0;
};

// Dispatches of a bounded traversal of `rounds` rounds (gpu/lbvh/traversal.hpp): round 0, then an
// args dispatch and an indirect round per later round, then the finish dispatch.
std::uint32_t traversal_dispatches(std::uint32_t rounds) {
    return 2 * rounds;
}

// What a host helper's batch records when round 0 finishes: round 0 and the finish, no more.
constexpr std::uint32_t kRoundZero = 2;

// The dispatches a pass of a batch may report on the device's budget (which
// BROADPHASE_TRAVERSAL_BUDGET may make small), after earlier batches of the same LbvhQueries:
// round 0 alone; every round at once (after a batch that queued items), kTraversalRounds or,
// grown, kTraversalMaxRounds; or round 0, then a ray cast's continuation up to those.
bool plausible_dispatches(std::uint32_t dispatches) {
    for (std::uint32_t rounds : {gpu_layout::kTraversalRounds, gpu_layout::kTraversalMaxRounds}) {
        const std::uint32_t all = traversal_dispatches(rounds);
        if (dispatches == all || dispatches == kRoundZero + all - 1) return true;
    }
    return dispatches == kRoundZero;
}

// Dispatches of the exclusive scan of `count` uints (RadixSort::record_scan): one scan_local
// per level, one scan_add per level below the top.
std::uint32_t scan_dispatches(std::uint32_t count) {
    std::uint32_t levels = 0, size = count;
    do {
        size = (size + gpu_layout::kScanTile - 1) / gpu_layout::kScanTile;
        ++levels;
    } while (size > 1);
    return 2 * levels - 1;
}

// The bytes of gpu/lbvh/lbvh_queries.cpp's model, written out again (the test fails when either
// side changes alone). n >= 2 here: 64 B per expanded node.
gpu::Traffic count_bytes(std::uint64_t q, std::uint64_t visits) {
    return {32 * q + 64 * visits, 4 * q};
}
gpu::Traffic fill_bytes(std::uint64_t q, std::uint64_t visits, std::uint64_t stored) {
    return {36 * q + 64 * visits, 4 * stored};
}
gpu::Traffic ray_bytes(std::uint64_t r, std::uint64_t visits) {
    return {64 * r + 64 * visits, 8 * r};  // no candidates: every ray finished in round 0
}

// What the CPU twin's region queries over `nodes` expand (internal nodes) and find, in all.
struct TwinRegions {
    std::uint64_t visits = 0, hits = 0;
};
TwinRegions twin_regions(std::span<const gpu_layout::LbvhNode> nodes,
                         std::span<const Box> regions) {
    TwinRegions twin;
    for (const Box& region : regions) {
        std::vector<std::uint32_t> ids;
        lbvh::query_region(nodes, region, ids, &twin.visits);
        twin.hits += ids.size();
    }
    return twin;
}

void expect_stage(const StageReport* s, std::uint32_t dispatches, const gpu::Traffic& t,
                  const std::string& what) {
    ASSERT_NE(s, nullptr) << what;
    EXPECT_EQ(s->dispatches, dispatches) << what;
    EXPECT_EQ(s->bytes_read, t.read) << what;
    EXPECT_EQ(s->bytes_written, t.written) << what;
    EXPECT_EQ(s->passes, 0u) << what;
}

// A context whose traversals expand `budget` nodes per round, and a scene of 3000 boxes with
// the tree the twins walk (g_report_lbvh's build).
struct BudgetScene {
    std::unique_ptr<gpu::Context> ctx;
    std::vector<Box> boxes;
    std::vector<gpu_layout::LbvhNode> nodes;
};
void open_budget_scene(std::uint32_t budget, const char* scene, BudgetScene& out) {
    gpu::ContextOptions options;
    options.tuning.traversal_budget = budget;
    out.ctx = own_context(options);
    ASSERT_TRUE(out.ctx);
    auto made = generate_scene(scene, 3000);
    ASSERT_TRUE(made) << made.error().message;
    out.boxes = std::move(made->boxes);
    auto nodes = g_report_lbvh->build_nodes(out.boxes);
    ASSERT_TRUE(nodes) << nodes.error().message;
    out.nodes = std::move(nodes.value());
}

class QueryReportSceneTest : public QueryReportTest,
                             public ::testing::WithParamInterface<const char*> {};

// Test 1: on each standard scene, the region passes' visits equal the twin's on both contexts
// (any budget: a region query never prunes on another item's result), the report names the
// three region stages with the traversal's and scan's dispatches and the modelled bytes; the
// ray cast's visits equal the twin's on the full-budget context, its report names "ray cast"
// and "ray resolve" with their dispatches and bytes.
TEST_P(QueryReportSceneTest, VisitsEqualTwinAndStagesFollowModel) {
    auto scene = generate_scene(GetParam(), 3000);
    ASSERT_TRUE(scene) << scene.error().message;
    const std::vector<Box>& boxes = scene->boxes;
    auto nodes = g_report_lbvh->build_nodes(boxes);  // the tree the twins walk: the GPU's own build
    ASSERT_TRUE(nodes) << nodes.error().message;
    const std::vector<Box> regions = regions_of(boxes);
    const std::vector<Ray> rays = rays_of(boxes);
    const auto q = static_cast<std::uint64_t>(regions.size());
    const auto r = static_cast<std::uint64_t>(rays.size());

    const auto [twin_region_visits, twin_hits] = twin_regions(nodes.value(), regions);
    std::uint64_t twin_ray_visits = 0;
    for (const Ray& ray : rays) lbvh::ray_cast_nodes(nodes.value(), ray, &twin_ray_visits);
    // A tree walk expands at least the root per query; the regions of grown boxes more.
    ASSERT_GT(twin_region_visits, q);
    ASSERT_GT(twin_ray_visits, 0u);

    for (gpu::LbvhQueries* queries : {g_report_queries.get(), g_full_queries.get()}) {
        const bool full = queries == g_full_queries.get();
        SCOPED_TRACE(full ? "full budget" : "the device's budget");
        ASSERT_TRUE(queries->build(boxes));
        // The first batch of a fresh LbvhQueries may grow its ids (Test 2); the second fits.
        ASSERT_TRUE(queries->query_boxes(regions));
        auto hits = queries->query_boxes(regions);
        ASSERT_TRUE(hits) << hits.error().message;
        ASSERT_EQ(hits->ids.size(), twin_hits);
        const std::vector<StageReport> report = last_report(*queries);
        ASSERT_EQ(report.size(), 3u);
        EXPECT_EQ(report[0].name, "region count");
        EXPECT_EQ(report[1].name, "region scan");
        EXPECT_EQ(report[2].name, "region fill");
        // The visits read back through the bytes, for a direct message first.
        EXPECT_EQ((report[0].bytes_read - 32 * q) / 64, twin_region_visits) << "count visits";
        EXPECT_EQ((report[2].bytes_read - 36 * q) / 64, twin_region_visits) << "fill visits";
        // On the full budget every pass finishes in round 0: round 0 and the finish only. The
        // device's budget may be small enough (BROADPHASE_TRAVERSAL_BUDGET) that batches queue
        // items, and the LbvhQueries then records every round at once.
        std::uint32_t rounds = kRoundZero;
        if (!full) {
            EXPECT_TRUE(plausible_dispatches(report[0].dispatches)) << report[0].dispatches;
            rounds = report[0].dispatches;
        }
        expect_stage(&report[0], rounds, count_bytes(q, twin_region_visits), "region count");
        expect_stage(&report[1], scan_dispatches(static_cast<std::uint32_t>(q + 1)),
                     gpu::RadixSort::scan_traffic(static_cast<std::uint32_t>(q + 1)),
                     "region scan");
        expect_stage(&report[2], rounds, fill_bytes(q, twin_region_visits, twin_hits),
                     "region fill");

        auto cast = queries->ray_cast(rays);
        ASSERT_TRUE(cast) << cast.error().message;
        const std::vector<StageReport> rays_report = last_report(*queries);
        ASSERT_EQ(rays_report.size(), 2u);
        EXPECT_EQ(rays_report[0].name, "ray cast");
        EXPECT_EQ(rays_report[1].name, "ray resolve");
        if (!full) {
            EXPECT_TRUE(plausible_dispatches(rays_report[0].dispatches))
                << rays_report[0].dispatches;
            // A continuation runs the resolve pass again (it resolves a finished cast only).
            EXPECT_EQ(
                rays_report[1].dispatches,
                rays_report[0].dispatches % 2 == 1 && rays_report[0].dispatches > 2 ? 2u : 1u);
            continue;  // queued rays' visits depend on timing: only the full budget's
        }
        EXPECT_EQ(rays_report[0].dispatches, kRoundZero);
        EXPECT_EQ(rays_report[1].dispatches, 1u);
        EXPECT_EQ((rays_report[0].bytes_read - 64 * r) / 64, twin_ray_visits) << "ray visits";
        expect_stage(&rays_report[0], rounds, ray_bytes(r, twin_ray_visits), "ray cast");
        expect_stage(&rays_report[1], 1, {4, 0}, "ray resolve");
    }
}

INSTANTIATE_TEST_SUITE_P(StandardScenes, QueryReportSceneTest,
                         ::testing::Values("uniform", "degenerate", "level", "multiscale"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                             return std::string(param_info.param);
                         });

// Test 2: when the hits outgrow the ids buffer, the fill pass runs again; its stage adds both
// runs: twice the traversal's dispatches, both runs' reads, and the first run's stores (up to
// the old capacity, max(4 Q, 1024) ids) plus all hits of the second. The next batch, which
// fits, reports one run again. On the full budget, each run is round 0 and the finish.
TEST_F(QueryReportTest, GrownFillReportsBothRuns) {
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene) << scene.error().message;
    const std::vector<Box>& boxes = scene->boxes;
    auto nodes = g_report_lbvh->build_nodes(boxes);
    ASSERT_TRUE(nodes) << nodes.error().message;
    auto fresh = fresh_queries(*g_full_budget, boxes);
    ASSERT_TRUE(fresh);
    gpu::LbvhQueries& queries = *fresh;
    const std::vector<Box> regions = {bounds_of(boxes), boxes[7]};
    std::uint64_t visits = 0;
    std::vector<std::uint32_t> ids;
    for (const Box& region : regions) lbvh::query_region(nodes.value(), region, ids, &visits);
    const std::uint64_t total = ids.size(), first_capacity = 1024;
    ASSERT_GT(total, first_capacity);
    const std::uint32_t rounds = kRoundZero;

    auto hits = queries.query_boxes(regions);
    ASSERT_TRUE(hits) << hits.error().message;
    ASSERT_EQ(hits->ids.size(), total);
    const StageReport* fill = find_stage(last_report(queries), "region fill");
    gpu::Traffic both = fill_bytes(2, visits, first_capacity);
    both += fill_bytes(2, visits, total);
    expect_stage(fill, 2 * rounds, both, "grown fill");
    expect_stage(find_stage(last_report(queries), "region count"), rounds, count_bytes(2, visits),
                 "region count");

    ASSERT_TRUE(queries.query_boxes(regions));
    expect_stage(find_stage(last_report(queries), "region fill"), rounds,
                 fill_bytes(2, visits, total), "fill that fits");
}

// Test 3: every attempt counts. On a context whose traversals expand one node per round, the
// first batch of a fresh LbvhQueries on `clustered` (a tree deeper than kTraversalRounds
// levels) records round 0 alone, runs again with kTraversalRounds rounds, which cannot finish
// either, and again with kTraversalMaxRounds: each stage reports the three attempts'
// dispatches, and the passes' bytes their per-query reads and writes and their visits (the
// first two attempts' partial: more than the twin's count in all, less than three times). The
// next batch records the most rounds at once and runs once, its visits the twin's exactly. The
// ray casts of a second fresh LbvhQueries record round 0, go on to kTraversalRounds in a
// continuation (resolving again), then run again with the most rounds.
TEST_F(QueryReportTest, RetriedBatchesCountEveryAttempt) {
    BudgetScene s;
    ASSERT_NO_FATAL_FAILURE(open_budget_scene(1, "clustered", s));
    const std::vector<Box>& boxes = s.boxes;
    const std::vector<gpu_layout::LbvhNode>& nodes = s.nodes;
    gpu::Context* ctx = s.ctx.get();
    // Every 20th box itself: the hits fit the first ids buffer (no fill rerun).
    std::vector<Box> regions;
    for (std::size_t i = 0; i < boxes.size(); i += 20) regions.push_back(boxes[i]);
    const std::vector<Ray> rays = rays_of(boxes);
    const auto q = static_cast<std::uint64_t>(regions.size());
    const auto r = static_cast<std::uint64_t>(rays.size());
    const auto [twin_visits, twin_hits] = twin_regions(nodes, regions);
    ASSERT_LT(twin_hits, std::max<std::uint64_t>(4 * q, 1024));
    const std::uint32_t first = traversal_dispatches(gpu_layout::kTraversalRounds);
    const std::uint32_t most = traversal_dispatches(gpu_layout::kTraversalMaxRounds);
    {
        auto made = fresh_queries(*ctx, boxes);
        ASSERT_TRUE(made);
        gpu::LbvhQueries& queries = *made;
        auto hits = queries.query_boxes(regions);
        ASSERT_TRUE(hits) << hits.error().message;
        ASSERT_EQ(hits->ids.size(), twin_hits);
        const std::vector<StageReport> report = last_report(queries);
        ASSERT_EQ(report.size(), 3u);
        EXPECT_EQ(report[0].dispatches, kRoundZero + first + most);
        EXPECT_EQ(report[1].dispatches, 3 * scan_dispatches(static_cast<std::uint32_t>(q + 1)));
        EXPECT_EQ(report[2].dispatches, kRoundZero + first + most);
        EXPECT_EQ(report[0].bytes_written, 3 * 4 * q);
        ASSERT_GE(report[0].bytes_read, 3 * 32 * q);
        EXPECT_EQ((report[0].bytes_read - 3 * 32 * q) % 64, 0u);
        const std::uint64_t count_visits = (report[0].bytes_read - 3 * 32 * q) / 64;
        EXPECT_GT(count_visits, twin_visits);
        EXPECT_LT(count_visits, 3 * twin_visits);
        ASSERT_GE(report[2].bytes_read, 3 * 36 * q);
        EXPECT_EQ((report[2].bytes_read - 3 * 36 * q) / 64, count_visits) << "fill visits";
        EXPECT_GE(report[2].bytes_written, 4 * twin_hits);  // the first attempt's and all

        ASSERT_TRUE(queries.query_boxes(regions));  // now with the most rounds: one attempt
        expect_stage(&last_report(queries)[0], most, count_bytes(q, twin_visits), "one attempt");
        expect_stage(&last_report(queries)[2], most, fill_bytes(q, twin_visits, twin_hits),
                     "one attempt, fill");
    }
    auto made = fresh_queries(*ctx, boxes);
    ASSERT_TRUE(made);
    gpu::LbvhQueries& queries = *made;
    auto cast = queries.ray_cast(rays);
    ASSERT_TRUE(cast) << cast.error().message;
    for (std::size_t i = 0; i < rays.size(); ++i) {
        const auto twin = lbvh::ray_cast_nodes(nodes, rays[i]);
        ASSERT_EQ((*cast)[i].has_value(), twin.has_value()) << "ray " << i;
        if (twin) {
            EXPECT_EQ((*cast)[i]->id, twin->id) << "ray " << i;
        }
    }
    const std::vector<StageReport> report = last_report(queries);
    ASSERT_EQ(report.size(), 2u);
    EXPECT_EQ(report[0].dispatches, kRoundZero + (first - 1) + most);
    EXPECT_EQ(report[1].dispatches, 3u);
    EXPECT_GE(report[0].bytes_written, 2 * 8 * r);
    EXPECT_GE(report[1].bytes_read, 2 * 4u);
    EXPECT_EQ(ctx->validation_errors(), 0u);
}

// Test 3b: LbvhOptions::query_budget is the first round's. On a context whose traversals expand
// 4 nodes per round, a region query and a ray the twin walks in 5 to 32 steps finish in round 0
// by default (kQueryFirstRound x 4 = 32 steps: each pass is round 0 and the finish), and go on
// into later rounds with a first round of 4; the ids and hits equal the twin's either way. A
// budget over kTraversalBudget is refused.
TEST_F(QueryReportTest, QueryBudgetIsTheFirstRounds) {
    static_assert(gpu_layout::kQueryFirstRound * 4 == 32);
    BudgetScene s;
    ASSERT_NO_FATAL_FAILURE(open_budget_scene(4, "uniform", s));
    // The first region and ray of the standard batches whose walks take 5 to 32 steps.
    std::vector<Box> region;
    for (const Box& b : regions_of(s.boxes)) {
        std::vector<std::uint32_t> ids;
        std::uint64_t visits = 0;
        lbvh::query_region(s.nodes, b, ids, &visits);
        if (visits > 4 && visits <= 32) {
            region.push_back(b);
            break;
        }
    }
    std::vector<Ray> ray;
    for (const Ray& r : rays_of(s.boxes)) {
        std::uint64_t visits = 0;
        lbvh::ray_cast_nodes(s.nodes, r, &visits);
        if (visits > 4 && visits <= 32) {
            ray.push_back(r);
            break;
        }
    }
    ASSERT_EQ(region.size(), 1u);
    ASSERT_EQ(ray.size(), 1u);
    std::vector<std::uint32_t> twin_ids;
    lbvh::query_region(s.nodes, region[0], twin_ids);
    std::sort(twin_ids.begin(), twin_ids.end());
    const auto twin_hit = lbvh::ray_cast_nodes(s.nodes, ray[0]);
    for (std::uint32_t first : {0u, 4u}) {
        SCOPED_TRACE("query_budget " + std::to_string(first));
        gpu::LbvhOptions lbvh_options;
        lbvh_options.query_budget = first;
        auto made = fresh_queries(*s.ctx, s.boxes, lbvh_options);
        ASSERT_TRUE(made);
        gpu::LbvhQueries& queries = *made;
        auto hits = queries.query_boxes(region);
        ASSERT_TRUE(hits) << hits.error().message;
        EXPECT_EQ(hits->ids, twin_ids);
        const std::uint32_t count_dispatches = last_report(queries)[0].dispatches;
        auto cast = queries.ray_cast(ray);
        ASSERT_TRUE(cast) << cast.error().message;
        ASSERT_EQ((*cast)[0].has_value(), twin_hit.has_value());
        if (twin_hit) {
            EXPECT_EQ((*cast)[0]->id, twin_hit->id);
        }
        const std::uint32_t cast_dispatches = last_report(queries)[0].dispatches;
        if (first == 0) {
            EXPECT_EQ(count_dispatches, kRoundZero);
            EXPECT_EQ(cast_dispatches, kRoundZero);
        } else {
            EXPECT_GT(count_dispatches, kRoundZero);
            EXPECT_GT(cast_dispatches, kRoundZero);
        }
    }
    gpu::LbvhOptions too_many;
    too_many.query_budget = gpu_layout::kTraversalBudget + 1;
    EXPECT_FALSE(gpu::LbvhQueries::create(*s.ctx, too_many));
    EXPECT_EQ(s.ctx->validation_errors(), 0u);
}

// Test 4: an empty ray batch and a failed batch leave no report; a batch of one region against
// a one-box tree reads the single leaf instead of wide records.
TEST_F(QueryReportTest, EmptyFailedAndOneBoxBatches) {
    gpu::LbvhQueries& queries = *g_report_queries;
    const std::vector<Box> one = {{{0, 0, 0}, {1, 1, 1}}};
    ASSERT_TRUE(queries.build(one));
    // The first batch records every round when an earlier test's last batch queued items.
    ASSERT_TRUE(queries.query_boxes(one));
    ASSERT_TRUE(queries.query_boxes(one));
    ASSERT_EQ(last_report(queries).size(), 3u);
    expect_stage(&last_report(queries)[0], kRoundZero, {32 + 48, 4}, "one-box count");
    ASSERT_TRUE(queries.ray_cast(std::vector<Ray>{}));
    EXPECT_TRUE(last_report(queries).empty());
    ASSERT_TRUE(queries.query_boxes(one));
    const Box bad{{1, 0, 0}, {0, 1, 1}};  // min.x > max.x
    EXPECT_FALSE(queries.query_boxes(std::vector<Box>{bad}));
    EXPECT_TRUE(last_report(queries).empty());
}

}  // namespace
}  // namespace broadphase::testing
