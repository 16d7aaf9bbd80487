// GPU LBVH against its CPU twin (cpu_reference/lbvh) node for node, and GPU pairs against
// brute force on every standard scene; recording into caller-owned buffers; pair-buffer
// overflow; hostile input.
#include <algorithm>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "broadphase/gpu/instruments.hpp"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "brute_force.hpp"
#include "device/kernels.hpp"
#include "gpu_test_env.hpp"
#include "lbvh.hpp"
#include "lbvh_refit.hpp"
#include "sort/radix_sort.hpp"
#include "wide_nodes_check.hpp"

namespace broadphase::testing {
namespace {

using gpu_layout::LbvhNode;

std::unique_ptr<gpu::Lbvh> make_lbvh_of_kind(gpu::CodeKind code) {
    auto lbvh = gpu::Lbvh::create(gpu_context(), {code});
    EXPECT_TRUE(lbvh) << (lbvh ? "" : lbvh.error().message);
    return lbvh ? std::move(lbvh.value()) : nullptr;
}

// The CPU twin's tree for the same boxes.
std::vector<LbvhNode> cpu_tree(std::span<const Box> boxes, gpu::CodeKind code) {
    return lbvh::build_tree(boxes, code);
}

// The GPU nodes equal the twin's: links bit for bit, bounds by float equality (min/max may
// pick either of -0 and +0), w zero on both sides.
void expect_same_nodes(std::span<const LbvhNode> got, std::span<const LbvhNode> want) {
    ASSERT_EQ(got.size(), want.size());
    auto same = [](const gpu_layout::vec4& a, const gpu_layout::vec4& b) {
        return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w;
    };
    for (std::size_t i = 0; i < want.size(); ++i) {
        const LbvhNode& g = got[i];
        const LbvhNode& e = want[i];
        ASSERT_TRUE(std::memcmp(&g.link, &e.link, sizeof(g.link)) == 0 && same(g.lo, e.lo) &&
                    same(g.hi, e.hi) && g.lo.w == 0.0f && g.hi.w == 0.0f)
            << "node " << i << ": gpu link (" << g.link.x << " " << g.link.y << " " << g.link.z
            << " " << g.link.w << ") twin link (" << e.link.x << " " << e.link.y << " " << e.link.z
            << " " << e.link.w << ")";
    }
}

struct LbvhSceneCase {
    const char* generator;
    std::size_t n;
    gpu::CodeKind code;
};

std::string lbvh_case_name(const ::testing::TestParamInfo<LbvhSceneCase>& info) {
    return std::string(info.param.generator) + "_" + std::to_string(info.param.n) +
           (info.param.code == gpu::CodeKind::morton63    ? "_m63"
            : info.param.code == gpu::CodeKind::hilbert30 ? "_h30"
                                                          : "_m30");
}

class LbvhSceneTest : public GpuTest, public ::testing::WithParamInterface<LbvhSceneCase> {
protected:
    // The case's scene and an Lbvh of its code kind (a failure here skips the test body). The
    // Lbvh is destroyed before the validation-error count is checked, as a test's local was.
    void SetUp() override {
        GpuTest::SetUp();
        auto scene = generate_scene(GetParam().generator, GetParam().n);
        ASSERT_TRUE(scene) << scene.error().message;
        boxes = std::move(scene->boxes);
        lbvh = make_lbvh_of_kind(GetParam().code);
        ASSERT_TRUE(lbvh);
    }
    void TearDown() override {
        lbvh.reset();
        GpuTest::TearDown();
    }

    std::vector<Box> boxes;
    std::unique_ptr<gpu::Lbvh> lbvh;
};

// The GPU tree equals the CPU twin bit for bit, and passes the twin's invariant check
// (every leaf reached once, parents contain children).
TEST_P(LbvhSceneTest, TreeMatchesCpuTwin) {
    auto nodes = lbvh->build_nodes(boxes);
    ASSERT_TRUE(nodes) << nodes.error().message;
    auto expected = cpu_tree(boxes, GetParam().code);
    Status valid = lbvh::validate_tree(nodes.value(), boxes);
    EXPECT_TRUE(valid) << (valid ? "" : valid.error().message);
    expect_same_nodes(nodes.value(), expected);
    // The wide records beside the nodes: their children's bounds and links, bit for bit.
    expect_wide_nodes_match(gpu_context(), gpu::helper_nodes(*lbvh), nodes.value());
}

// GPU pairs equal brute force exactly, as sorted lists.
TEST_P(LbvhSceneTest, PairsMatchBruteForce) {
    auto pairs = lbvh->find_pairs(boxes);
    ASSERT_TRUE(pairs) << pairs.error().message;
    EXPECT_EQ(pairs.value(), brute_pairs(boxes));
}

std::vector<LbvhSceneCase> lbvh_scene_cases() {
    std::vector<LbvhSceneCase> cases;
    for (std::string_view g : generator_names()) {
        for (std::size_t n : {0, 1, 2, 3, 100, 5000}) {
            cases.push_back({g.data(), n, gpu::CodeKind::morton30});
        }
        cases.push_back({g.data(), 20000, gpu::CodeKind::morton30});
        cases.push_back({g.data(), 5000, gpu::CodeKind::morton63});
        for (std::size_t n : {2, 100, 5000})
            cases.push_back({g.data(), n, gpu::CodeKind::hilbert30});
    }
    return cases;
}

INSTANTIATE_TEST_SUITE_P(StandardScenes, LbvhSceneTest, ::testing::ValuesIn(lbvh_scene_cases()),
                         lbvh_case_name);

class LbvhTest : public GpuTest {};

Scene hand_made(const char* kind) {
    Scene s;
    if (std::strcmp(kind, "identical") == 0) {
        s.boxes.assign(300, Box{{1, 2, 3}, {4, 5, 6}});
    } else if (std::strcmp(kind, "points") == 0) {
        for (int i = 0; i < 400; ++i) {
            float v = float(i % 20);
            s.boxes.push_back({{v, v, 0}, {v, v, 0}});
        }
    } else if (std::strcmp(kind, "far") == 0) {
        for (int i = 0; i < 500; ++i) {
            float x = 1e7f + float(i) * 2.0f;
            s.boxes.push_back({{x, -1e7f, 1e7f}, {x + 2.5f, -1e7f + 1.0f, 1e7f + 1.0f}});
        }
    } else if (std::strcmp(kind, "huge") == 0) {
        for (int i = 0; i < 500; ++i) {
            float x = float(i);
            s.boxes.push_back({{x, x, x}, {x + 0.5f, x + 0.5f, x + 0.5f}});
        }
        s.boxes.push_back({{-1e30f, -1e30f, -1e30f}, {1e30f, 1e30f, 1e30f}});
    }
    return s;
}

// Test 1: hand-made degenerate scenes (all identical, points, far from the origin, one huge box).
TEST_F(LbvhTest, DegenerateScenesMatchBruteForce) {
    for (const char* kind : {"identical", "points", "far", "huge"}) {
        Scene s = hand_made(kind);
        for (gpu::CodeKind code :
             {gpu::CodeKind::morton30, gpu::CodeKind::morton63, gpu::CodeKind::hilbert30}) {
            auto lbvh = make_lbvh_of_kind(code);
            ASSERT_TRUE(lbvh);
            auto pairs = lbvh->find_pairs(s.boxes);
            ASSERT_TRUE(pairs) << kind << ": " << pairs.error().message;
            EXPECT_EQ(pairs.value(), brute_pairs(s.boxes)) << kind;
            auto nodes = lbvh->build_nodes(s.boxes);
            ASSERT_TRUE(nodes);
            EXPECT_TRUE(lbvh::validate_tree(nodes.value(), s.boxes)) << kind;
        }
    }
}

// The one-pass build (shaders/lbvh/lbvh_build.comp) on its edge cases equals the two-step twin
// (lbvh::build_hierarchy, Karras's top-down numbering, then lbvh::compute_bounds) bit for bit
// in the links and by float equality in the bounds: 1, 2 and 3 boxes in both orders, all boxes
// equal (every code ties; the index splits), a few distinct positions repeated many times,
// and scenes whose 30-bit codes are refined into 2-word keys, for every code kind.
TEST_F(LbvhTest, OnePassBuildEqualsTwoStepTwinOnEdgeCases) {
    std::vector<std::pair<std::string, std::vector<Box>>> scenes;
    const Box a{{0, 0, 0}, {1, 1, 1}}, b{{5, 5, 5}, {6, 6, 6}}, c{{0, 9, 0}, {1, 10, 1}};
    scenes.push_back({"one", {a}});
    scenes.push_back({"two", {a, b}});
    scenes.push_back({"two reversed", {b, a}});
    scenes.push_back({"two equal", {a, a}});
    scenes.push_back({"three", {c, a, b}});
    scenes.push_back({"three equal", {b, b, b}});
    for (std::size_t n : {33u, 300u, 4097u})
        scenes.push_back({"equal " + std::to_string(n), std::vector<Box>(n, c)});
    for (int distinct : {2, 3, 7}) {
        std::vector<Box> boxes;
        for (int i = 0; i < 6000; ++i) {
            const float v = float((i * 7919) % distinct);
            boxes.push_back({{v, -v, 2 * v}, {v + 0.5f, -v + 0.5f, 2 * v + 0.5f}});
        }
        scenes.push_back({"repeats " + std::to_string(distinct), boxes});
    }
    for (const char* g : {"level", "multiscale", "degenerate"}) {
        auto scene = generate_scene(g, 6000);
        ASSERT_TRUE(scene);
        scenes.push_back({g, scene->boxes});
    }
    // Runs of 3 to kRefineRun - 1 equal codes (from kRefineBoundsRun on, the GPU reduces their
    // bounds in run_bounds) refine nothing; one more run of kRefineRun refines them all, the
    // shorter runs' bounds then taken from their boxes.
    for (bool trigger : {false, true}) {
        std::vector<Box> boxes;
        const std::uint32_t sizes[] = {3, gpu_layout::kRefineBoundsRun, 20,
                                       gpu_layout::kRefineRun - 1, gpu_layout::kRefineRun};
        int group = 0;
        for (std::uint32_t size : sizes) {
            if (size == gpu_layout::kRefineRun && !trigger) continue;
            for (std::uint32_t i = 0; i < size; ++i) {
                const float x = 1000.0f * float(group) + 0.25f + 0.001f * float(i);
                const float y = 0.25f + 0.002f * float((i * 7) % size);
                boxes.push_back({{x, y, 0.25f}, {x + 0.01f, y + 0.01f, 0.26f}});
            }
            ++group;
        }
        EXPECT_EQ(lbvh::sorted_keys(boxes, gpu::CodeKind::morton30).refined, trigger);
        scenes.push_back({trigger ? "runs up to kRefineRun" : "runs under kRefineRun", boxes});
    }
    bool saw_refined = false;
    for (const auto& [name, boxes] : scenes) {
        for (gpu::CodeKind code :
             {gpu::CodeKind::morton30, gpu::CodeKind::morton63, gpu::CodeKind::hilbert30}) {
            SCOPED_TRACE(name + " code " + std::to_string(int(code)));
            const lbvh::SortedKeys keys = lbvh::sorted_keys(boxes, code);
            saw_refined = saw_refined || keys.refined;
            std::vector<LbvhNode> twin = lbvh::build_hierarchy(keys.codes, keys.ids);
            lbvh::compute_bounds(twin, boxes);
            auto lbvh = make_lbvh_of_kind(code);
            ASSERT_TRUE(lbvh);
            auto nodes = lbvh->build_nodes(boxes);
            ASSERT_TRUE(nodes) << nodes.error().message;
            expect_same_nodes(nodes.value(), twin);
            expect_wide_nodes_match(gpu_context(), gpu::helper_nodes(*lbvh), nodes.value());
            EXPECT_EQ((*nodes)[0].link.z, gpu_layout::kInvalidNode);
        }
    }
    EXPECT_TRUE(saw_refined);  // the 2-word keys of the refined build were exercised
}

// Adaptive codes (LbvhOptions::refine, lbvh::refine_codes): on scenes whose first codes leave
// long runs (far outliers, clusters far apart, a huge box) the GPU refines exactly as the twin
// does, and with refine off it builds the twin's unrefined tree; either way the pairs are exact.
// The refined second sort orders keys run_start << 30 | second: at 12,000 boxes 44 bits, 6
// passes (its result where it started); at 1,000 boxes 40 bits, 5 passes (its result in its
// other buffers, the ids copied first): the sort stage takes 4 + 6 and 4 + 5 passes.
TEST_F(LbvhTest, RefineOnAndOffMatchTheirTwins) {
    struct Case {
        const char* generator;
        std::size_t n;
        std::uint32_t refined_passes;
    };
    const Case cases[] = {{"level", 12000, 10},      {"multiscale", 12000, 10},
                          {"degenerate", 12000, 10}, {"uniform", 12000, 4},
                          {"level", 1000, 9},        {"degenerate", 1000, 9}};
    for (const auto& [generator, n, refined_passes] : cases) {
        auto scene = generate_scene(generator, n);
        ASSERT_TRUE(scene);
        const bool expect_refined = std::string(generator) != "uniform";
        for (gpu::CodeKind code : {gpu::CodeKind::morton30, gpu::CodeKind::hilbert30}) {
            EXPECT_EQ(lbvh::sorted_keys(scene->boxes, code).refined, expect_refined) << generator;
            for (bool refine : {true, false}) {
                SCOPED_TRACE(std::string(generator) + ":" + std::to_string(n) +
                             (refine ? " refined" : " unrefined"));
                auto lbvh = gpu::Lbvh::create(gpu_context(), {code, refine});
                ASSERT_TRUE(lbvh);
                auto nodes = (*lbvh)->build_nodes(scene->boxes);
                ASSERT_TRUE(nodes);
                const auto twin = lbvh::build_tree(scene->boxes, code, refine);
                expect_same_nodes(nodes.value(), twin);
                expect_wide_nodes_match(gpu_context(), gpu::helper_nodes(**lbvh), nodes.value());
                auto pairs = (*lbvh)->find_pairs(scene->boxes);
                ASSERT_TRUE(pairs);
                EXPECT_EQ(pairs.value(), brute_pairs(scene->boxes));
                auto report = last_report(**lbvh);
                ASSERT_TRUE(report);
                EXPECT_EQ((*report)[2].passes, refine ? refined_passes : 4u);
            }
        }
    }
}

// Empty slots (LbvhOptions::empty_slots, gpu::ProxyScene's free slots: min = +inf, max = -inf)
// among real boxes, scattered and in a block: the GPU tree equals the twin's bit for bit for
// every code kind, refined or not, empties sorted last and never refined; the twin's pairs over
// that tree are brute force's pairs of the real boxes.
TEST_F(LbvhTest, EmptySlotsMatchTheTwin) {
    gpu::Context& ctx = gpu_context();
    const float inf = std::numeric_limits<float>::infinity();
    for (const char* generator : {"uniform", "multiscale", "level"}) {
        auto scene = generate_scene(generator, 6000);
        ASSERT_TRUE(scene);
        std::vector<Box> boxes = scene->boxes;
        std::vector<Box> real;
        std::vector<std::uint32_t> real_ids;
        for (std::size_t i = 0; i < boxes.size(); ++i) {
            if (i % 3 == 1 || (i >= 2000 && i < 2600)) {
                boxes[i] = Box{{inf, inf, inf}, {-inf, -inf, -inf}};
            } else {
                real.push_back(boxes[i]);
                real_ids.push_back(static_cast<std::uint32_t>(i));
            }
        }
        std::vector<Pair> expected;
        for (const Pair& p : brute_pairs(real)) expected.push_back({real_ids[p.i], real_ids[p.j]});
        const auto n = static_cast<std::uint32_t>(boxes.size());
        for (gpu::CodeKind code :
             {gpu::CodeKind::morton30, gpu::CodeKind::hilbert30, gpu::CodeKind::morton63}) {
            for (bool refine : {true, false}) {
                SCOPED_TRACE(std::string(generator) + " code " + std::to_string(int(code)) +
                             (refine ? " refined" : ""));
                gpu::LbvhOptions options;
                options.code = code;
                options.refine = refine;
                options.empty_slots = true;
                auto lbvh = gpu::Lbvh::create(ctx, options);
                ASSERT_TRUE(lbvh);
                const gpu::LbvhRequirements req = (*lbvh)->requirements(n);
                auto box_buffer = ctx.create_buffer(req.boxes, gpu::MemoryKind::device);
                auto nodes = ctx.create_buffer(req.nodes, gpu::MemoryKind::device);
                auto scratch = ctx.create_buffer(req.scratch, gpu::MemoryKind::device);
                ASSERT_TRUE(box_buffer && nodes && scratch);
                const auto gpu_boxes = gpu::to_gpu_boxes(boxes);
                ASSERT_TRUE(ctx.upload(*box_buffer, gpu_boxes.data(), req.boxes));
                ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
                    gpu::compute_barrier(cmd);
                    EXPECT_TRUE((*lbvh)->record_build(
                        cmd, {gpu::whole(*box_buffer), gpu::whole(*nodes), gpu::whole(*scratch)},
                        n));
                }));
                std::vector<LbvhNode> got(2ull * n - 1);
                ASSERT_TRUE(ctx.download(*nodes, got.data(), got.size() * sizeof(LbvhNode)));
                const auto twin = lbvh::build_tree(boxes, code, refine);
                expect_same_nodes(got, twin);
                expect_wide_nodes_match(ctx, *nodes, got);
                // The last leaves in sorted order hold the empty slots.
                EXPECT_EQ(boxes[twin.back().link.x].min.x, inf);
                std::vector<Pair> pairs;
                QueryStats stats;
                lbvh::self_pairs(twin, boxes, pairs, &stats);
                std::sort(pairs.begin(), pairs.end());
                EXPECT_EQ(pairs, expected);
            }
        }
    }
}

// Test 2: invalid boxes are rejected with an error naming the box; nothing runs.
TEST_F(LbvhTest, RejectsInvalidBoxes) {
    auto lbvh = make_lbvh_of_kind(gpu::CodeKind::morton30);
    ASSERT_TRUE(lbvh);
    std::vector<Box> boxes(10, Box{{0, 0, 0}, {1, 1, 1}});
    boxes[7].max.y = std::numeric_limits<float>::quiet_NaN();
    auto r = lbvh->find_pairs(boxes);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::invalid_box);
    EXPECT_EQ(r.error().box, std::optional<std::size_t>(7));
    boxes[7] = {{2, 0, 0}, {1, 1, 1}};
    r = lbvh->find_pairs(boxes);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().box, std::optional<std::size_t>(7));
    boxes[7] = {{0, 0, 0}, {std::numeric_limits<float>::infinity(), 1, 1}};
    EXPECT_FALSE(lbvh->find_pairs(boxes));
}

// What record_build + record_pairs left in caller-owned buffers: the traversal status and the
// `capacity` pair slots.
struct RecordedPairs {
    gpu_layout::TraversalStatus status{};
    std::vector<Pair> stored;
};

// Records the build of `boxes` and their pairs into caller-owned buffers (room for `capacity`
// pairs, a work queue of `work_capacity` items) in the caller's command buffer, as an
// application does, and downloads what they hold.
void record_pairs_into(gpu::Lbvh& lbvh, std::span<const Box> boxes, std::uint32_t capacity,
                       std::uint32_t work_capacity, RecordedPairs& out) {
    gpu::Context& ctx = gpu_context();
    const auto n = static_cast<std::uint32_t>(boxes.size());
    const gpu::LbvhRequirements req = lbvh.requirements(n);
    auto box_buffer = ctx.create_buffer(n * sizeof(gpu_layout::GpuBox), gpu::MemoryKind::device);
    auto nodes = ctx.create_buffer(req.nodes, gpu::MemoryKind::device);
    auto scratch = ctx.create_buffer(req.scratch, gpu::MemoryKind::device);
    auto pairs = ctx.create_buffer(capacity * 8, gpu::MemoryKind::device);
    auto status = ctx.create_buffer(sizeof(gpu_layout::TraversalStatus), gpu::MemoryKind::device);
    auto work =
        ctx.create_buffer(gpu::traversal_work_bytes(work_capacity), gpu::MemoryKind::device);
    ASSERT_TRUE(box_buffer && nodes && scratch && pairs && status && work);
    const auto gpu_boxes = gpu::to_gpu_boxes(boxes);
    ASSERT_TRUE(
        ctx.upload(*box_buffer, gpu_boxes.data(), gpu_boxes.size() * sizeof(gpu_layout::GpuBox)));
    gpu::LbvhBuildBuffers build{gpu::whole(*box_buffer), gpu::whole(*nodes), gpu::whole(*scratch)};
    ASSERT_TRUE(ctx.submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        EXPECT_TRUE(lbvh.record_build(cmd, build, n));
        gpu::compute_barrier(cmd);
        EXPECT_TRUE(lbvh.record_pairs(cmd, {build.nodes, n},
                                      {gpu::whole(*pairs),
                                       capacity,
                                       gpu::whole(*status),
                                       {gpu::whole(*work), work_capacity}}));
    }));
    ASSERT_TRUE(ctx.download(*status, &out.status, sizeof(out.status)));
    out.stored.resize(capacity);
    ASSERT_TRUE(ctx.download(*pairs, out.stored.data(), capacity * 8));
}

// Test 3: a pair buffer too small reports the exact count, stores only true pairs, and the
// host helper grows the buffer and still returns every pair.
TEST_F(LbvhTest, PairOverflowIsCountedNotLost) {
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene);
    auto expected = brute_pairs(scene->boxes);
    ASSERT_GT(expected.size(), 100u);
    auto lbvh = make_lbvh_of_kind(gpu::CodeKind::morton30);
    ASSERT_TRUE(lbvh);

    // Caller-owned buffers with room for 50 pairs, recorded into the caller's command buffer.
    RecordedPairs recorded;
    ASSERT_NO_FATAL_FAILURE(record_pairs_into(*lbvh, scene->boxes, 50, 1024, recorded));
    const gpu_layout::TraversalStatus& st = recorded.status;
    EXPECT_EQ(st.count, expected.size());
    EXPECT_EQ(st.total_lo, expected.size());
    EXPECT_EQ(st.total_hi, 0u);
    EXPECT_EQ(st.flags, 0u);
    for (const Pair& p : recorded.stored)
        EXPECT_TRUE(std::binary_search(expected.begin(), expected.end(), p)) << p.i << " " << p.j;

    auto all = lbvh->find_pairs(scene->boxes);
    ASSERT_TRUE(all);
    EXPECT_EQ(all.value(), expected);
}

// Pairs without the pair sort (LbvhOptions::sorted_pairs false): each pair once, i < j, the
// same set as brute force, on a uniform scene and on one box over all the others (whose pairs
// come from many traversal rounds); the report's pair sort stage records no dispatch and
// models no traffic, where the sorted run of the same Lbvh options records its passes.
TEST_F(LbvhTest, UnsortedPairsAreTheSameSetWithoutThePairSort) {
    gpu::Context& ctx = gpu_context();
    gpu::LbvhOptions unsorted_options;
    unsorted_options.sorted_pairs = false;
    auto unsorted = gpu::Lbvh::create(ctx, unsorted_options);
    auto sorted = gpu::Lbvh::create(ctx);
    ASSERT_TRUE(unsorted && sorted);
    auto uniform = generate_scene("uniform", 4000);
    auto level = generate_scene("level", 3000);
    ASSERT_TRUE(uniform && level);
    for (const Scene* scene : {&uniform.value(), &level.value()}) {
        SCOPED_TRACE(scene->name);
        const std::vector<Pair> expected = brute_pairs(scene->boxes);
        ASSERT_GT(expected.size(), 1000u);
        auto pairs = (*unsorted)->find_pairs(scene->boxes);
        ASSERT_TRUE(pairs) << pairs.error().message;
        for (const Pair& p : pairs.value()) ASSERT_LT(p.i, p.j);
        std::vector<Pair> got = pairs.value();
        EXPECT_FALSE(std::is_sorted(got.begin(), got.end()))
            << "the appended order was sorted already: the test shows nothing";
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, expected);
        EXPECT_EQ(std::adjacent_find(got.begin(), got.end()), got.end()) << "a pair twice";

        auto report = last_report(**unsorted);
        ASSERT_TRUE(report);
        ASSERT_EQ(report->back().name, "pair sort");
        EXPECT_EQ(report->back().dispatches, 0u);
        EXPECT_EQ(report->back().passes, 0u);
        EXPECT_EQ(report->back().bytes_read + report->back().bytes_written, 0u);

        auto with_sort = (*sorted)->find_pairs(scene->boxes);
        ASSERT_TRUE(with_sort);
        EXPECT_EQ(with_sort.value(), expected);
        auto sorted_report = last_report(**sorted);
        ASSERT_TRUE(sorted_report);
        EXPECT_GT(sorted_report->back().dispatches, 0u);
    }
}

// Both ways of appending pairs (LbvhOptions::pair_append): one atomic per subgroup's appends
// (where the device has subgroup ballot: lavapipe has) and one per pair store the same sorted
// pairs as brute force, on crowded and degenerate scenes; with a capacity below the count,
// the exact total is counted and the stored pairs are distinct true pairs. A device without
// ballot refuses `subgroup` by name.
TEST_F(LbvhTest, BothPairAppendPathsMatchBruteForce) {
    gpu::Context& ctx = gpu_context();
    if (!ctx.info().subgroup_ballot) {
        auto refused = gpu::Lbvh::create(ctx, {.pair_append = gpu::PairAppend::subgroup});
        ASSERT_FALSE(refused);
        EXPECT_NE(refused.error().message.find("subgroup ballot"), std::string::npos);
    }
    std::vector<gpu::PairAppend> paths = {gpu::PairAppend::atomic};
    if (ctx.info().subgroup_ballot) paths.push_back(gpu::PairAppend::subgroup);
    std::vector<Box> one_over_all = generate_scene("uniform", 4000)->boxes;
    one_over_all.push_back({{-1, -1, -1}, {2, 2, 2}});
    const std::vector<std::pair<const char*, std::vector<Box>>> scenes = {
        {"clustered:5000", generate_scene("clustered", 5000)->boxes},
        {"degenerate:3000", generate_scene("degenerate", 3000)->boxes},
        {"one box over uniform:4000", one_over_all}};
    for (gpu::PairAppend path : paths) {
        SCOPED_TRACE(path == gpu::PairAppend::subgroup ? "subgroup" : "atomic");
        auto made = gpu::Lbvh::create(ctx, {.pair_append = path});
        ASSERT_TRUE(made) << made.error().message;
        gpu::Lbvh& lbvh = *made.value();
        for (const auto& [name, boxes] : scenes) {
            SCOPED_TRACE(name);
            auto pairs = lbvh.find_pairs(boxes);
            ASSERT_TRUE(pairs) << pairs.error().message;
            EXPECT_EQ(pairs.value(), brute_pairs(boxes));
        }
        // A capacity of 50 for thousands of pairs.
        const auto& boxes = scenes[0].second;
        const std::vector<Pair> expected = brute_pairs(boxes);
        RecordedPairs recorded;
        ASSERT_NO_FATAL_FAILURE(record_pairs_into(lbvh, boxes, 50, 4096, recorded));
        EXPECT_EQ(recorded.status.total_lo, expected.size());
        EXPECT_EQ(recorded.status.total_hi, 0u);
        std::vector<Pair>& stored = recorded.stored;
        for (const Pair& p : stored)
            EXPECT_TRUE(std::binary_search(expected.begin(), expected.end(), p))
                << p.i << " " << p.j;
        std::sort(stored.begin(), stored.end());
        EXPECT_EQ(std::adjacent_find(stored.begin(), stored.end()), stored.end())
            << "a slot was written twice";
    }
}

// Test 4: the same Lbvh object serves scenes of different sizes one after another.
TEST_F(LbvhTest, ReusedAcrossSceneSizes) {
    auto lbvh = make_lbvh_of_kind(gpu::CodeKind::morton30);
    ASSERT_TRUE(lbvh);
    for (std::size_t n : {4000, 10, 0, 9000, 1}) {
        auto scene = generate_scene("clustered", n);
        ASSERT_TRUE(scene);
        auto pairs = lbvh->find_pairs(scene->boxes);
        ASSERT_TRUE(pairs) << pairs.error().message;
        EXPECT_EQ(pairs.value(), brute_pairs(scene->boxes)) << n;
    }
}

// Test 5: stage timings come from timestamp queries when the queue supports them.
TEST_F(LbvhTest, ReportsStageTimes) {
    auto lbvh = make_lbvh_of_kind(gpu::CodeKind::morton30);
    ASSERT_TRUE(lbvh);
    auto scene = generate_scene("uniform", 5000);
    ASSERT_TRUE(scene);
    ASSERT_TRUE(lbvh->find_pairs(scene->boxes));
    if (gpu_context().info().timestamp_period_ns > 0) {
        EXPECT_GT(lbvh->last_times().total(), 0.0);
    }
}

// The instruments' report (Lbvh::last_report): deterministic dispatch counts and the modelled
// traffic, checked against sums worked out by hand from the model in gpu/lbvh/lbvh.cpp and
// gpu/sort/radix_sort.hpp for 3000 uniform boxes (one sort tile of 4096, 256 digit counts, one scan
// level; the refinement's kernels run and find no long run, so its second sort is launched
// empty), and the traversal's bytes against the CPU twin's count of expanded nodes.
TEST_F(LbvhTest, ReportCountsDispatchesAndModelledTraffic) {
    auto lbvh = make_lbvh_of_kind(gpu::CodeKind::morton30);
    ASSERT_TRUE(lbvh);
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene);
    auto pairs = lbvh->find_pairs(scene->boxes);
    ASSERT_TRUE(pairs);
    auto last = last_report(*lbvh);
    ASSERT_TRUE(last);
    const std::vector<gpu::StageReport>& report = last.value();
    ASSERT_EQ(report.size(), 6u);
    const char* names[] = {"scene bounds",       "codes",     "sort",
                           "hierarchy + bounds", "all pairs", "pair sort"};
    for (std::size_t k = 0; k < 6; ++k) EXPECT_EQ(report[k].name, names[k]);
    const std::uint64_t n = 3000, groups = 12;
    EXPECT_EQ(report[0].dispatches, 1u);
    EXPECT_EQ(report[0].bytes_read, 32 * n + 24 * groups);
    EXPECT_EQ(report[1].dispatches, 1u);
    EXPECT_EQ(report[1].bytes_read, 32 * n + 32 * groups);
    EXPECT_EQ(report[1].bytes_written, 8 * n);
    // The sort as the test context runs it (BROADPHASE_SORT_PATH, else the device's rule).
    // First sort: 30-bit codes, 4 passes of 8 bits, one tile of 4096 (256 digit counts); then
    // code_runs. Refinement on demand: a fresh Lbvh's build records the refinement's later
    // steps only after a build found a long run, and this scene has none
    // (RefinementOnDemand).
    // reduce_then_scan per pass: histogram, scan_local, scatter (3 dispatches; bytes read
    // 12000 + 1024 + 25024, written 1024 + 1028 + 24000). onesweep: the histogram (reads
    // 12000 + 4 * 1024, writes 4096) and one dispatch per pass (reads and writes 4 + 24000 +
    // 1024; the state's fill writes 4 * (64 + 2048 + 4 * 256)). Then code_runs reads the keys
    // (12000) and writes nothing.
    const bool onesweep = gpu_context().info().sort_path == gpu::SortPath::onesweep;
    EXPECT_EQ(report[2].dispatches, onesweep ? (1 + 4) + 1 : 4 * 3 + 1);
    EXPECT_EQ(report[2].passes, 4u);
    if (onesweep) {
        EXPECT_EQ(report[2].bytes_read, 16096u + 4u * 25028 + 12000);
        EXPECT_EQ(report[2].bytes_written, 12544u + 4096u + 4u * 25028);
    } else {
        EXPECT_EQ(report[2].bytes_read, 4u * (12000 + 1024 + 25024) + 12000);
        EXPECT_EQ(report[2].bytes_written, 4u * (1024 + 1028 + 24000));
    }
    // Hierarchy and bounds in one dispatch (the two-kernel build took two): the first codes
    // (not refined: 1 word each), ids and boxes, a flag and the first child's bounds per
    // internal node; every node written once and every flag.
    EXPECT_EQ(report[3].dispatches, 1u);
    EXPECT_EQ(report[3].bytes_read, (4 + 4 + 32) * n + (36 + 4) * (n - 1));
    EXPECT_EQ(report[3].bytes_written, 48 * (2 * n - 1) + (4 + 64) * (n - 1));
    // The whole build: one dispatch each for bounds, codes and the tree, and the sort's.
    std::uint32_t build_dispatches = 0;
    for (std::size_t k = 0; k < 4; ++k) build_dispatches += report[k].dispatches;
    EXPECT_EQ(build_dispatches, 1 + 1 + report[2].dispatches + 1);
    // Round 0 and the finish: every walk ended in round 0, so no later round was recorded.
    EXPECT_EQ(report[4].dispatches, 2u);
    const auto twin = lbvh::build_tree(scene->boxes, lbvh::CodeKind::morton30);
    const std::uint64_t visits = lbvh::pair_traversal_work(twin, scene->boxes).visits;
    // Each leaf once as a member of its group, one LbvhWideNode per step; the grouped walks
    // expand under half the nodes one walk per leaf would.
    EXPECT_EQ(report[4].bytes_read, 48 * n + 64 * visits);
    std::uint64_t one_per_leaf = 0;
    for (std::uint32_t p = 0; p < n; ++p) {
        const Box& query = scene->boxes[twin[n - 1 + p].link.x];
        std::vector<std::uint32_t> stack = {0};  // the root, expanded for every leaf
        while (!stack.empty()) {
            const std::uint32_t node = stack.back();
            stack.pop_back();
            ++one_per_leaf;
            for (const std::uint32_t child : {twin[node].link.x, twin[node].link.y}) {
                const Box b{{twin[child].lo.x, twin[child].lo.y, twin[child].lo.z},
                            {twin[child].hi.x, twin[child].hi.y, twin[child].hi.z}};
                if (child < n - 1 && twin[child].link.w > p && overlaps(query, b))
                    stack.push_back(child);
            }
        }
    }
    EXPECT_LT(2 * visits, one_per_leaf);
    EXPECT_EQ(report[4].bytes_written, 8 * pairs->size());
    // The pairs' keys i << 12 | j (ids below 2^12) sorted on the GPU: 24 bits, 3 passes, keys
    // only; onesweep: its histogram and a dispatch per pass; reduce_then_scan: histogram, scan
    // and scatter per pass.
    EXPECT_EQ(report[5].passes, 3u);
    EXPECT_EQ(report[5].dispatches, onesweep ? 1u + 3 : 3u * 3);
    const gpu::Traffic keys = gpu::RadixSort::traffic(static_cast<std::uint32_t>(pairs->size()), 2,
                                                      24, true, gpu_context().info().sort_path);
    EXPECT_EQ(report[5].bytes_read, keys.read);
    EXPECT_EQ(report[5].bytes_written, keys.written);
    for (const gpu::StageReport& r : report)
        EXPECT_EQ(r.passes != 0, r.name == "sort" || r.name == "pair sort");

    // A refined scene sorts its boxes again, within their runs: keys run_start << 30 | second
    // of 30 + bit_width(2999) = 42 bits, 6 passes (not the 8 of a 64-bit key), so 4 + 6.
    auto level = generate_scene("level", 3000);
    ASSERT_TRUE(level);
    ASSERT_TRUE(lbvh->find_pairs(level->boxes));
    auto refined = lbvh->read_refined();
    ASSERT_TRUE(refined && refined.value());
    auto level_report = last_report(*lbvh);
    ASSERT_TRUE(level_report);
    EXPECT_EQ(level_report.value()[2].passes, 10u);
    EXPECT_GT(level_report.value()[2].bytes_read, report[2].bytes_read);
}

// A pairs pass that overflows its pair buffer runs again after growing it, and the report
// counts both attempts: twice the query leaves and the twin's expanded nodes, the pairs the
// first attempt could store plus all of them. 1500 boxes that all overlap give 1,124,250
// pairs, over the first capacity of 4n = 6000; storing them takes each group's walk past its
// budget, so each attempt's round 0 and finish are followed by continuations of
// kTraversalRounds rounds (a traversal_args and a round each, and a finish), whose queued items
// load their group's members again (48 B per member, kPairGroup per item).
TEST_F(LbvhTest, ReportCountsEveryAttemptOfThePairsPass) {
    std::vector<Box> boxes;
    for (std::uint32_t i = 0; i < 1500; ++i) {
        const float d = float(i % 37) * 1e-3f;
        boxes.push_back({{d, d, d}, {1 + d, 1 + d, 1 + d}});
    }
    const std::uint64_t n = boxes.size(), all = n * (n - 1) / 2;
    auto lbvh = make_lbvh_of_kind(gpu::CodeKind::morton30);
    ASSERT_TRUE(lbvh);
    auto pairs = lbvh->find_pairs(boxes);
    ASSERT_TRUE(pairs) << pairs.error().message;
    ASSERT_EQ(pairs->size(), all);
    EXPECT_TRUE(std::is_sorted(pairs->begin(), pairs->end()));
    EXPECT_EQ(pairs->front(), (Pair{0, 1}));
    EXPECT_EQ(pairs->back(), (Pair{1498, 1499}));
    auto report = last_report(*lbvh);
    ASSERT_TRUE(report);
    const gpu::StageReport& traversal = report.value()[4];
    ASSERT_EQ(traversal.name, "all pairs");
    const std::uint32_t continuation = 2 * gpu_layout::kTraversalRounds + 1;
    EXPECT_GT(traversal.dispatches, 2u * 2);
    EXPECT_EQ((traversal.dispatches - 2 * 2) % (2 * continuation), 0u) << traversal.dispatches;
    const auto twin = lbvh::build_tree(boxes, lbvh::CodeKind::morton30);
    const std::uint64_t visits = lbvh::pair_traversal_work(twin, boxes).visits;
    const std::uint64_t member_loads = 48ull * gpu_layout::kPairGroup;
    EXPECT_GT(traversal.bytes_read, 2 * 48 * n + 2 * 64 * visits);
    EXPECT_EQ((traversal.bytes_read - 2 * 48 * n - 2 * 64 * visits) % (2 * member_loads), 0u);
    EXPECT_EQ(traversal.bytes_written, 8 * (4 * n + all));
    // Run again: the grown buffer holds them at once, one attempt, the same continuations and
    // resumed items as each attempt before.
    ASSERT_TRUE(lbvh->find_pairs(boxes));
    auto again = last_report(*lbvh);
    ASSERT_TRUE(again);
    EXPECT_EQ(2 * again.value()[4].dispatches, traversal.dispatches);
    EXPECT_EQ(2 * again.value()[4].bytes_read, traversal.bytes_read);
    EXPECT_EQ(again.value()[4].bytes_written, 8 * all);
}

// Refinement on demand (LbvhOptions::refine_on_demand): a fresh Lbvh's find_pairs over a scene
// without a long run records the refinement's check alone (the sort stage: the first sort and
// code_runs); over `level` (one run of nearly every box) after it, the check finds the run and
// the build is continued with the refinement's steps alone (its pairs pass launched nothing;
// the report adds the check's stages to the continuation's: the refined sort stage, 4 + 6
// passes, every dispatch of a build that recorded the refinement; the pass over the first tree
// held back: no node visited, no pair); the next level build records the
// refinement at once; the uniform build after it too (its check finds no run), and the one after
// that the check alone again. Every pass gives brute force's pairs, and build_nodes' trees equal
// the twin's (refined on level), first call or not. With refine_on_demand false every build records
// the refinement.
TEST_F(LbvhTest, RefinementOnDemand) {
    auto uniform = generate_scene("uniform", 3000);
    auto level = generate_scene("level", 3000);
    ASSERT_TRUE(uniform && level);
    const bool onesweep = gpu_context().info().sort_path == gpu::SortPath::onesweep;
    // The sort stage's dispatches: the first sort and code_runs; with the refinement recorded,
    // run_bounds, refine_codes and the second sort (6 passes: 42 key bits, run_start << 30 |
    // second with run_start < 3000) too.
    const std::uint32_t check = onesweep ? (1 + 4) + 1 : 4 * 3 + 1;
    const std::uint32_t refined = check + 2 + (onesweep ? 1 + 6 : 6 * 3);
    struct Step {
        const std::vector<Box>* boxes;
        std::uint32_t sort_dispatches;
        std::uint32_t passes;  // 4, or 4 + 6 when the codes were refined
    };
    const Step steps[] = {{&uniform->boxes, check, 4},
                          {&level->boxes, refined, 10},
                          {&level->boxes, refined, 10},
                          {&uniform->boxes, refined, 4},
                          {&uniform->boxes, check, 4}};
    for (bool on_demand : {true, false}) {
        SCOPED_TRACE(on_demand ? "on demand" : "always recorded");
        gpu::LbvhOptions options;
        options.refine_on_demand = on_demand;
        auto made = gpu::Lbvh::create(gpu_context(), options);
        ASSERT_TRUE(made);
        gpu::Lbvh& lbvh = *made.value();
        int k = 0;
        for (const Step& step : steps) {
            SCOPED_TRACE("step " + std::to_string(++k));
            auto pairs = lbvh.find_pairs(*step.boxes);
            ASSERT_TRUE(pairs) << pairs.error().message;
            EXPECT_EQ(pairs.value(), brute_pairs(*step.boxes));
            auto report = last_report(lbvh);
            ASSERT_TRUE(report) << report.error().message;
            EXPECT_EQ((*report)[2].dispatches, on_demand ? step.sort_dispatches : refined);
            EXPECT_EQ((*report)[2].passes, step.passes);
        }
        // The one build whose check found the run (step 2): its pairs pass, over the tree the
        // continuation replaced, launched no round (the gate held it back).
        const gpu::HeldBackPasses held = gpu::held_back_passes(lbvh);
        EXPECT_EQ(held.count, on_demand ? 1u : 0u);
        EXPECT_EQ(gpu::traversal_visits(held.last), 0u);
        EXPECT_EQ(gpu::pair_total(held.last), 0u);
        EXPECT_EQ(held.last.flags, 0u);
        // No box after a refined build: no pair, and no refine word to read (or go on from).
        ASSERT_TRUE(lbvh.find_pairs(*steps[1].boxes));
        auto none = lbvh.find_pairs(std::vector<Box>{});
        ASSERT_TRUE(none) << none.error().message;
        EXPECT_TRUE(none->empty());
        // build_nodes on a fresh Lbvh: level's first build is continued, refined.
        auto fresh = gpu::Lbvh::create(gpu_context(), options);
        ASSERT_TRUE(fresh);
        for (const auto* boxes : {&level->boxes, &uniform->boxes, &level->boxes}) {
            auto nodes = fresh.value()->build_nodes(*boxes);
            ASSERT_TRUE(nodes) << nodes.error().message;
            expect_same_nodes(nodes.value(), cpu_tree(*boxes, gpu::CodeKind::morton30));
        }
    }
}

// LbvhOptions::pair_budget is the first round's budget of the all-pairs pass; later rounds take
// the device's (DeviceInfo::traversal_budget). On a context whose budget is 4 steps:
// - uniform: the default first round (4 x kPairGroup = 32 steps) leaves walks unfinished, so
//   find_pairs submits continuations (more than 2 dispatches), while a first round of
//   kTraversalBudget steps finishes in round 0 (2 dispatches);
// - level (one box over half the scene), with a first round of 64 steps on both: later rounds
//   of 4 steps queue and resume more items (more bytes read: each resumed item reloads its
//   group's members) than the same pass where the device's budget, so its later rounds', is
//   kTraversalBudget.
// Every pass gives brute force's pairs. A budget over kTraversalBudget is refused.
TEST_F(LbvhTest, PairBudgetIsTheFirstRoundsLaterRoundsTakeTheDevices) {
    gpu::ContextOptions small_options;
    small_options.tuning.traversal_budget = 4;
    auto small = own_context(small_options);
    ASSERT_TRUE(small);
    ASSERT_EQ(small->info().traversal_budget, 4u);
    gpu::ContextOptions large_options;
    large_options.tuning.traversal_budget = gpu_layout::kTraversalBudget;
    auto large = own_context(large_options);
    ASSERT_TRUE(large);
    // The pairs, checked against brute force, and the all-pairs stage's report.
    auto run = [](gpu::Context& ctx, std::uint32_t pair_budget,
                  const std::vector<Box>& boxes) -> gpu::StageReport {
        gpu::LbvhOptions options;
        options.pair_budget = pair_budget;
        auto lbvh = gpu::Lbvh::create(ctx, options);
        EXPECT_TRUE(lbvh);
        if (!lbvh) return {};
        auto pairs = lbvh.value()->find_pairs(boxes);
        EXPECT_TRUE(pairs) << pairs.error().message;
        auto expected = find_pairs_cpu("brute_force", boxes);
        EXPECT_TRUE(expected);
        if (!pairs || !expected) return {};
        EXPECT_EQ(pairs.value(), expected.value());
        auto report = last_report(*lbvh.value());
        EXPECT_TRUE(report);
        return report ? report.value()[4] : gpu::StageReport{};
    };
    auto uniform = generate_scene("uniform", 3000);
    ASSERT_TRUE(uniform);
    EXPECT_GT(run(*small, 0, uniform->boxes).dispatches, 2u);
    EXPECT_EQ(run(*small, gpu_layout::kTraversalBudget, uniform->boxes).dispatches, 2u);
    auto level = generate_scene("level", 3000);
    ASSERT_TRUE(level);
    const gpu::StageReport short_later = run(*small, 64, level->boxes);
    const gpu::StageReport long_later = run(*large, 64, level->boxes);
    EXPECT_GT(long_later.dispatches, 2u);  // round 0 leaves the big box's walk unfinished
    EXPECT_GT(short_later.bytes_read, long_later.bytes_read);
    gpu::LbvhOptions over;
    over.pair_budget = gpu_layout::kTraversalBudget + 1;
    auto refused = gpu::Lbvh::create(gpu_context(), over);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("pair_budget"), std::string::npos);
}

// The copy kernel the instruments measure against moves what it says, in measurable time.
TEST_F(LbvhTest, CopyBandwidthIsMeasured) {
    auto copy = gpu::measure_copy_bandwidth(gpu_context(), 1 << 20, 1);
    ASSERT_TRUE(copy) << copy.error().message;
    EXPECT_EQ(copy->bytes, 1u << 20);
    if (gpu_context().info().timestamp_period_ns > 0) {
        EXPECT_GT(copy->ms, 0.0);
        EXPECT_DOUBLE_EQ(copy->bytes_per_second, 2.0 * double(1 << 20) / (copy->ms * 1e-3));
    }
    EXPECT_FALSE(gpu::measure_copy_bandwidth(gpu_context(), 8, 1));
}

// gpu::WarmUp submits about the milliseconds asked (in whole copies) without waiting, and work
// submitted after it on the Context's queue completes after it: once a later submit_and_wait
// returns, the warm-up has finished. A pairs search after it is unchanged.
TEST_F(LbvhTest, WarmUpRunsAheadOfLaterWork) {
    auto warm = gpu::WarmUp::create(gpu_context());
    ASSERT_TRUE(warm) << warm.error().message;
    ASSERT_TRUE(warm->start(0));
    EXPECT_EQ(warm->copies(), 0u);
    EXPECT_TRUE(warm->finished());
    const double copy_ms = warm->copy_ms();
    if (gpu_context().info().timestamp_period_ns > 0) {
        ASSERT_GT(copy_ms, 0.0);
    }
    const double ask = copy_ms > 0 ? 3.5 * copy_ms : 3.0;
    ASSERT_TRUE(warm->start(ask));
    EXPECT_EQ(warm->copies(), 4u);
    ASSERT_TRUE(gpu_context().submit_and_wait([](VkCommandBuffer) {}));
    EXPECT_TRUE(warm->finished());
    ASSERT_TRUE(warm->start(ask));  // waits for nothing: the last start has finished
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene);
    auto lbvh = gpu::Lbvh::create(gpu_context());
    ASSERT_TRUE(lbvh);
    auto pairs = (*lbvh)->find_pairs(scene->boxes);
    ASSERT_TRUE(pairs) << pairs.error().message;
    EXPECT_TRUE(warm->finished());
    EXPECT_EQ(pairs.value(), brute_pairs(scene->boxes));
}

}  // namespace
}  // namespace broadphase::testing
