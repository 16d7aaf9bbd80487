// The approximate front-to-back order of gpu::Culler (near-child-first depth-first order of the
// LBVH, after "Sort a sphere BVH with split planes", docs/references.md): the per-leaf rank
// (lbvh::near_first_rank, and the ranks lbvh::cull_chunk, the twin of lbvh_cull.comp, carries down)
// against a recursive near-child-first traversal, the GPU output against the twin and brute force,
// boxes on a line along the view equal the exact order, the host helper's per-stage timestamps, and
// both orders at extreme distances (squared distances past the float range) and magnitudes.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/layout/cull.h"
#include "broadphase/scene.hpp"
#include "cull_gpu_test_util.hpp"
#include "cull_test_util.hpp"
#include "gpu_test_env.hpp"
#include "lbvh_cull.hpp"

namespace broadphase::testing {
namespace {

using gpu_layout::LbvhNode;

std::uint32_t distance2(const Vec3& e, const LbvhNode& node) {
    return lbvh::cull_distance_key(e, {node.lo.x, node.lo.y, node.lo.z},
                                   {node.hi.x, node.hi.y, node.hi.z});
}

// Sorted positions of all leaves in a recursive near-child-first depth-first traversal.
std::vector<std::uint32_t> recursive_order(const std::vector<LbvhNode>& nodes, std::uint32_t n,
                                           const Vec3& eye) {
    std::vector<std::uint32_t> order;
    std::function<void(std::uint32_t)> visit = [&](std::uint32_t node) {
        if (node >= n - 1) {
            order.push_back(nodes[node].link.y);
            return;
        }
        std::uint32_t a = nodes[node].link.x, b = nodes[node].link.y;
        if (distance2(eye, nodes[b]) < distance2(eye, nodes[a])) std::swap(a, b);
        visit(a);
        visit(b);
    };
    visit(0);
    return order;
}

class CullOrderTest : public GpuTest {};

// Test 1: on every standard scene and camera, the root-to-leaf rank of each leaf is its index
// in the recursive near-child-first traversal, the ranks the chunked cull carries down (twin of
// lbvh_cull.comp) equal it and do not change what the chunk sees, and the GPU approx output
// equals the twin exactly and holds exactly the brute-force visible set.
TEST_F(CullOrderTest, RankMatchesRecursiveTraversalAndGpuMatchesTwin) {
    auto culler = make_culler();
    ASSERT_TRUE(culler);
    auto lbvh = gpu::Lbvh::create(gpu_context());
    ASSERT_TRUE(lbvh);
    for (const char* name : {"uniform", "clustered", "degenerate", "mixed_sizes"}) {
        for (std::size_t count : {std::size_t(1), std::size_t(3), std::size_t(3000)}) {
            auto scene = generate_scene(name, count);
            ASSERT_TRUE(scene) << scene.error().message;
            auto nodes = lbvh.value()->build_nodes(scene->boxes);
            ASSERT_TRUE(nodes) << nodes.error().message;
            const auto n = static_cast<std::uint32_t>(scene->boxes.size());
            int camera = 0;
            for (const Camera& cam : cameras_for(scene->boxes)) {
                Frustum f = frustum_of(cam);
                std::vector<std::uint32_t> order = recursive_order(nodes.value(), n, f.eye);
                for (std::uint32_t r = 0; r < n; ++r)
                    ASSERT_EQ(lbvh::near_first_rank(nodes.value(), n, f.eye, order[r]), r)
                        << name << " " << count << " camera " << camera;
                const std::uint32_t chunks =
                    (n + gpu_layout::kCullChunk - 1) / gpu_layout::kCullChunk;
                for (std::uint32_t c = 0; c < chunks; ++c) {
                    std::vector<std::uint32_t> ranks;
                    auto seen = lbvh::cull_chunk(nodes.value(), n, f, c, &ranks);
                    ASSERT_EQ(ranks.size(), seen.size());
                    for (std::size_t k = 0; k < seen.size(); ++k)
                        ASSERT_EQ(ranks[k], lbvh::near_first_rank(nodes.value(), n, f.eye, seen[k]))
                            << name << " " << count << " camera " << camera << " chunk " << c;
                    EXPECT_EQ(seen, lbvh::cull_chunk(nodes.value(), n, f, c));
                }
                auto got = culler->cull(scene->boxes, f, CullOrder::approx);
                ASSERT_TRUE(got) << got.error().message;
                EXPECT_EQ(got.value(), lbvh::cull(nodes.value(), n, f, CullOrder::approx))
                    << name << " " << count << " camera " << camera;
                EXPECT_EQ(compare_cull(f, scene->boxes, cull_brute_force(f, scene->boxes),
                                       got.value(), false),
                          "")
                    << name << " " << count << " camera " << camera;
                ++camera;
            }
        }
    }
}

// Test 2: boxes on a line along the view direction with gaps between them (ids shuffled, Morton
// codes distinct): the approximate order is the exact front-to-back order, from either end.
TEST_F(CullOrderTest, LineAlongViewIsExactOrder) {
    const std::uint32_t n = 500;
    std::vector<std::uint32_t> slot(n);
    std::iota(slot.begin(), slot.end(), 0u);
    std::shuffle(slot.begin(), slot.end(), std::mt19937(7));
    std::vector<Box> boxes(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        const float z = -2.0f * float(slot[i]);
        boxes[i] = {{0.4f, 0.4f, z - 1.0f}, {0.6f, 0.6f, z}};
    }
    auto culler = make_culler();
    ASSERT_TRUE(culler);
    const Camera cams[] = {{{0.5f, 0.5f, 5}, {0.5f, 0.5f, 0}, {0, 1, 0}, 60, 1, 0.1f, 5000},
                           {{0.5f, 0.5f, -1010}, {0.5f, 0.5f, 0}, {0, 1, 0}, 60, 1, 0.1f, 5000}};
    for (const Camera& cam : cams) {
        Frustum f = frustum_of(cam);
        auto expected = cull_brute_force(f, boxes);
        ASSERT_EQ(expected.size(), n);
        auto approx = culler->cull(boxes, f, CullOrder::approx);
        ASSERT_TRUE(approx) << approx.error().message;
        EXPECT_EQ(approx.value(), expected);
        auto exact = culler->cull(boxes, f, CullOrder::exact);
        ASSERT_TRUE(exact) << exact.error().message;
        EXPECT_EQ(exact.value(), expected);
    }
}

// Test 3: the host helper reports per-stage GPU times when the queue has timestamps, and
// zeros when it has none.
TEST_F(CullOrderTest, HostHelperRecordsStageTimes) {
    auto scene = generate_scene("uniform", 4000);
    ASSERT_TRUE(scene);
    auto culler = make_culler();
    ASSERT_TRUE(culler);
    Frustum f = frustum_of(cameras_for(scene->boxes)[0]);
    for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
        auto got = culler->cull(scene->boxes, f, order);
        ASSERT_TRUE(got) << got.error().message;
        const gpu::CullTimes& t = culler->last_times();
        if (gpu_context().info().timestamp_period_ns == 0) {
            EXPECT_EQ(t.total(), 0.0) << "no timestamps on this queue: all times stay zero";
            continue;
        }
        EXPECT_GT(t.build.total(), 0.0);
        EXPECT_GT(t.cull, 0.0);
        EXPECT_GT(t.compact, 0.0);
        EXPECT_GT(t.sort, 0.0);
        EXPECT_GT(t.emit, 0.0);
        EXPECT_NEAR(t.total(), t.build.total() + t.cull_total(), 1e-9);
        EXPECT_LT(t.total(), 60e3);
    }
}

// Test 4: boxes at 1e20, 2e20 and 3e20 along the view axis (ids not in distance order; their
// squared distances overflow float): both orders are nearest first, on the GPU, in the twin
// and in brute force; also seen from the other side, through a far plane at 1e30.
TEST_F(CullOrderTest, ExtremeDistancesNearestFirst) {
    auto culler = make_culler();
    ASSERT_TRUE(culler);
    auto lbvh = gpu::Lbvh::create(gpu_context());
    ASSERT_TRUE(lbvh);
    auto cube = [](float z) { return Box{{-1e18f, -1e18f, z - 1e18f}, {1e18f, 1e18f, z + 1e18f}}; };
    const std::vector<Box> boxes{cube(-3e20f), cube(-1e20f), cube(-2e20f)};
    const Camera cams[] = {{{0, 0, 0}, {0, 0, -1}, {0, 1, 0}, 60, 1, 1e-3f, 1e21f},
                           {{0, 0, -1e21f}, {0, 0, 0}, {0, 1, 0}, 60, 1, 1e-3f, 1e30f}};
    const std::vector<std::uint32_t> expected[] = {{1, 2, 0}, {0, 2, 1}};
    auto nodes = lbvh.value()->build_nodes(boxes);
    ASSERT_TRUE(nodes) << nodes.error().message;
    for (int c = 0; c < 2; ++c) {
        Frustum f = frustum_of(cams[c]);
        EXPECT_EQ(cull_brute_force(f, boxes), expected[c]) << "camera " << c;
        for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
            auto got = culler->cull(boxes, f, order);
            ASSERT_TRUE(got) << got.error().message;
            EXPECT_EQ(got.value(), expected[c]) << "camera " << c;
            EXPECT_EQ(lbvh::cull(nodes.value(), 3, f, order), expected[c]) << "camera " << c;
        }
    }
}

// Test 5: 4,000 boxes with log-uniform coordinates in +-[1e-30, 2^125] (the range where no
// plane-test sum overflows) seen from an eye at 1e36 and from the origin: the GPU equals the
// twin exactly in both orders, and brute force within float tolerance (the exact order too).
TEST_F(CullOrderTest, ExtremeMagnitudesMatchTwinAndBruteForce) {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> exponent(-30, 37.6f);
    std::bernoulli_distribution negative(0.5);
    auto coordinate = [&] {
        const float v = std::pow(10.0f, exponent(rng));
        return negative(rng) ? -v : v;
    };
    std::vector<Box> boxes;
    for (int i = 0; i < 4000; ++i) {
        const Vec3 a{coordinate(), coordinate(), coordinate()};
        const float size = std::abs(a.x) * 1e-3f;
        boxes.push_back({a, {a.x + size, a.y + size, a.z + size}});
    }
    auto culler = make_culler();
    ASSERT_TRUE(culler);
    auto lbvh = gpu::Lbvh::create(gpu_context());
    ASSERT_TRUE(lbvh);
    auto nodes = lbvh.value()->build_nodes(boxes);
    ASSERT_TRUE(nodes) << nodes.error().message;
    const Camera cams[] = {{{1e36f, 1e36f, 1e36f}, {0, 0, 0}, {0, 1, 0}, 90, 1, 1e-3f, 1e37f},
                           {{0, 0, 0}, {1, 1, 1}, {0, 1, 0}, 90, 1.5f, 1e-20f, 1e37f}};
    for (int c = 0; c < 2; ++c) {
        Frustum f = frustum_of(cams[c]);
        const auto expected = cull_brute_force(f, boxes);
        EXPECT_GT(expected.size(), 50u) << "camera " << c;
        for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
            auto got = culler->cull(boxes, f, order);
            ASSERT_TRUE(got) << got.error().message;
            EXPECT_EQ(got.value(), lbvh::cull(nodes.value(), 4000, f, order)) << "camera " << c;
            EXPECT_EQ(compare_cull(f, boxes, expected, got.value(), order == CullOrder::exact), "")
                << "camera " << c;
        }
    }
}

}  // namespace
}  // namespace broadphase::testing
