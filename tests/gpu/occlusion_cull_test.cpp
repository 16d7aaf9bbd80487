// GPU occlusion culling (gpu::Culler with a CullOcclusion, Culler::record_depth_pyramid) as
// numbered scenarios: the GPU pyramid equals DepthPyramid::build bit for bit; the shader's
// division is correctly rounded; the single-phase
// cull equals the CPU twin (lbvh::cull with a CullOcclusionTwin) exactly on every standard scene
// from several cameras, both orders, and never culls a box the double-precision brute force
// over the depth image keeps; two-phase frames (early, pyramid, late) equal the twin's outputs
// and visibility stamps frame after frame; a wall in front of the camera rejects the root, so
// nothing below it is visited; bad arguments are errors that record nothing.
// The suites are named GpuOcclusion* (not *Cull*): their traversal does not depend on the sort
// path, so CI's second run of the cull suites on the other path leaves them out.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "broadphase/gpu/culler.hpp"
#include "broadphase/occlusion.hpp"
#include "broadphase/scene.hpp"
#include "cull_gpu_test_util.hpp"
#include "cull_test_util.hpp"
#include "device/div_rn_check.hpp"
#include "device/kernels.hpp"
#include "gpu_test_env.hpp"
#include "lbvh_cull.hpp"
#include "occlusion_test_util.hpp"

namespace broadphase::testing {
namespace {

constexpr std::uint32_t kImage = 96;  // depth images are kImage x kImage

// A depth image of walls facing the camera: far (1.0) everywhere but `walls` rectangles in
// screen space, each at one depth drawn between the depth of the scene's nearest and middle
// boxes, the nearer wall kept where two overlap (std::mt19937 seeded by `seed`).
std::vector<float> wall_image(std::uint32_t w, std::uint32_t h, int walls, unsigned seed,
                              float near_depth, float far_depth) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<std::uint32_t> px(0, w - 1), py(0, h - 1);
    std::uniform_real_distribution<float> depth(near_depth, far_depth);
    std::vector<float> image(std::size_t(w) * h, 1.0f);
    for (int k = 0; k < walls; ++k) {
        std::uint32_t x0 = px(rng), x1 = px(rng), y0 = py(rng), y1 = py(rng);
        if (x0 > x1) std::swap(x0, x1);
        if (y0 > y1) std::swap(y0, y1);
        const float d = depth(rng);
        for (std::uint32_t y = y0; y <= y1; ++y)
            for (std::uint32_t x = x0; x <= x1; ++x)
                image[std::size_t(y) * w + x] = std::min(image[std::size_t(y) * w + x], d);
    }
    return image;
}

// The depths (z / w) of the box centres the camera sees, sorted: walls are placed among them.
std::vector<float> centre_depths(const std::array<float, 16>& m, std::span<const Box> boxes,
                                 const Frustum& f) {
    std::vector<float> depths;
    for (std::uint32_t id : cull_brute_force(f, boxes)) {
        const Box& b = boxes[id];
        const double d = depth_of(
            m, {(b.min.x + b.max.x) / 2, (b.min.y + b.max.y) / 2, (b.min.z + b.max.z) / 2});
        if (d > 0 && d < 1) depths.push_back(float(d));
    }
    std::sort(depths.begin(), depths.end());
    return depths;
}

DepthPyramid pyramid_of(std::uint32_t w, std::uint32_t h, const std::vector<float>& image) {
    auto p = DepthPyramid::build(w, h, image);
    EXPECT_TRUE(p) << (p ? "" : p.error().message);
    return p ? std::move(p.value()) : DepthPyramid::build(1, 1, std::vector<float>{1}).value();
}

class GpuOcclusionTest : public GpuTest {};

// Test 1: record_depth_pyramid builds every level as DepthPyramid::build does, bit for bit,
// for square, odd, one-row, one-column and 1 x 1 images of random depths.
TEST_F(GpuOcclusionTest, PyramidEqualsCpuBuild) {
    auto culler = make_culler();
    ASSERT_TRUE(culler);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    const std::uint32_t sizes[][2] = {{1, 1}, {1, 7}, {9, 1}, {7, 5}, {64, 64}, {333, 129}};
    for (const auto& size : sizes) {
        const std::uint32_t w = size[0], h = size[1];
        std::vector<float> image(std::size_t(w) * h);
        for (float& d : image) d = u(rng);
        const DepthPyramid expected = pyramid_of(w, h, image);
        gpu::Buffer pyramid = device_buffer(expected.texels().size() * 4ull);
        ASSERT_TRUE(gpu_context().upload(pyramid, image.data(), image.size() * 4));
        Status recorded;
        Status s = gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
            gpu::compute_barrier(cmd);
            recorded = culler->record_depth_pyramid(cmd, gpu::whole(pyramid), w, h);
            gpu::compute_barrier(cmd);
        });
        ASSERT_TRUE(s) << s.error().message;
        ASSERT_TRUE(recorded) << recorded.error().message;
        std::vector<float> got(expected.texels().size());
        ASSERT_TRUE(gpu_context().download(pyramid, got.data(), got.size() * 4));
        EXPECT_TRUE(std::equal(got.begin(), got.end(), expected.texels().begin()))
            << w << " x " << h;
    }
}

// Test 2: the shader's division (occlusion.glsl div_rn) equals the CPU's IEEE division, flushed
// to a signed zero below 2^-126 as the rule's step 3 says, bit for bit: on operands of random
// bits over the whole finite range, quotients near 1, exact quotients, results near the
// subnormal and overflow boundaries, zeros and subnormal numerators.
TEST_F(GpuOcclusionTest, DivisionIsCorrectlyRounded) {
    std::mt19937 rng(12);
    std::uniform_int_distribution<std::uint32_t> bits(0, 0xffffffffu);
    std::uniform_int_distribution<std::uint32_t> exponent(1, 254), near(120, 134);
    std::vector<float> x, w;
    auto with_exponent = [&](std::uint32_t e, bool negative) {
        return std::bit_cast<float>((negative ? 0x80000000u : 0u) | (e << 23) |
                                    (bits(rng) & 0x7fffffu));
    };
    for (int i = 0; i < 200000; ++i) {
        const bool negative = bits(rng) & 1u;
        switch (i % 5) {
            case 0:  // anywhere in the finite range
                x.push_back(with_exponent(exponent(rng), negative));
                w.push_back(with_exponent(exponent(rng), false));
                break;
            case 1:  // quotients near 1: rounding decided by the last bits
                x.push_back(with_exponent(near(rng), negative));
                w.push_back(with_exponent(near(rng), false));
                break;
            case 2: {  // exact quotients: integer multiples
                const float d = with_exponent(near(rng), false);
                const float k = float(bits(rng) % 4096 + 1);
                x.push_back(negative ? -(k * d) : k * d);
                w.push_back(d);
                break;
            }
            case 3:  // results around 2^-126 (flushed or not) and around overflow
                if (bits(rng) & 1u) {
                    x.push_back(with_exponent(1 + bits(rng) % 4, negative));
                    w.push_back(with_exponent(126 + bits(rng) % 4, false));
                } else {
                    x.push_back(with_exponent(250 + bits(rng) % 5, negative));
                    w.push_back(with_exponent(125 + bits(rng) % 4, false));
                }
                break;
            default:  // zeros and subnormal numerators
                x.push_back(bits(rng) % 3 == 0 ? (negative ? -0.0f : 0.0f)
                                               : std::bit_cast<float>(bits(rng) & 0x807fffffu));
                w.push_back(with_exponent(near(rng) - 10, false));
                break;
        }
    }
    auto got = gpu::divide_on_gpu(gpu_context(), x, w);
    ASSERT_TRUE(got) << got.error().message;
    std::size_t wrong = 0, flushed = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        float q = x[i] / w[i];
        if (std::fabs(q) < std::numeric_limits<float>::min()) {
            q = std::copysign(0.0f, q);
            flushed += x[i] != 0;
        }
        if (std::bit_cast<std::uint32_t>(q) != std::bit_cast<std::uint32_t>((*got)[i])) {
            if (++wrong <= 5)
                ADD_FAILURE() << std::hexfloat << x[i] << " / " << w[i] << ": expected " << q
                              << ", got " << (*got)[i];
        }
    }
    EXPECT_EQ(wrong, 0u);
    EXPECT_GT(flushed, 0u);
}

class GpuOcclusionSceneTest : public GpuTest, public ::testing::WithParamInterface<SceneCase> {};

// Test 3: single phase, every standard scene, every camera of cameras_for, both orders: the GPU
// equals the twin exactly; every box it drops that the frustum keeps is occluded by the
// double-precision brute force over level 0; on the larger scenes the walls drop some boxes.
TEST_P(GpuOcclusionSceneTest, SinglePhaseMatchesTwinAndIsConservative) {
    auto opened = open_cull_scene(GetParam());
    ASSERT_TRUE(opened);
    auto& [boxes, culler, nodes, n] = *opened;
    std::size_t dropped = 0;
    int camera = 0;
    for (const Camera& cam : cameras_for(boxes)) {
        const Frustum f = frustum_of(cam);
        const std::array<float, 16> m = cam.view_projection();
        const std::vector<float> depths = centre_depths(m, boxes, f);
        const float near_depth = depths.empty() ? 0.5f : depths.front();
        const float mid_depth = depths.empty() ? 0.9f : depths[depths.size() / 2];
        const DepthPyramid pyramid =
            pyramid_of(kImage, kImage,
                       wall_image(kImage, kImage, 6, unsigned(camera + 11), near_depth, mid_depth));
        const std::vector<std::uint32_t> in_frustum = cull_brute_force(f, boxes);
        for (CullOrder order : {CullOrder::exact, CullOrder::approx}) {
            const char* name = order == CullOrder::exact ? " exact" : " approx";
            auto got = culler->cull_occluded(boxes, f, order, pyramid, m);
            ASSERT_TRUE(got) << got.error().message;
            lbvh::CullOcclusionTwin twin;
            twin.pyramid = &pyramid;
            twin.view_projection = m;
            EXPECT_EQ(got.value(), lbvh::cull(nodes, n, f, order, &twin))
                << "camera " << camera << name;
            std::vector<char> kept(n, 0);
            for (std::uint32_t id : got.value()) kept[id] = 1;
            for (std::uint32_t id : in_frustum) {
                if (kept[id]) continue;
                // Dropped: either on a frustum plane within float tolerance, or hidden.
                if (frustum_test_ambiguous(f, boxes[id], kCullTolerance)) continue;
                EXPECT_TRUE(brute_occluded(pyramid, m, boxes[id]))
                    << "camera " << camera << name << ": box " << id
                    << " culled but the brute force sees it; occluded(box) "
                    << occluded(pyramid, m, boxes[id]) << " box " << boxes[id].min.x << " "
                    << boxes[id].min.y << " " << boxes[id].min.z << " / " << boxes[id].max.x << " "
                    << boxes[id].max.y << " " << boxes[id].max.z;
                dropped += order == CullOrder::exact;
            }
        }
        ++camera;
    }
    if (n >= 1000) {
        EXPECT_GT(dropped, 0u) << "the walls hid nothing";
    }
}

INSTANTIATE_TEST_SUITE_P(StandardScenes, GpuOcclusionSceneTest, standard_cull_scenes(), case_name);

// The caller-owned buffers of a recorded occlusion cull.
struct Recorded {
    gpu::Buffer boxes, nodes, build_scratch, scratch, ids, commands, count, pyramid, visibility;
    std::uint32_t n = 0, capacity = 0;
};

Recorded make_recorded(std::span<const Box> boxes, gpu::Culler& culler, gpu::Lbvh& lbvh) {
    Recorded r;
    r.n = static_cast<std::uint32_t>(boxes.size());
    r.capacity = r.n;
    const auto req = lbvh.requirements(r.n);
    r.boxes = device_buffer(r.n * 32ull);
    r.nodes = device_buffer(req.nodes);
    r.build_scratch = device_buffer(req.scratch);
    r.scratch = device_buffer(culler.scratch_size(r.n));
    r.ids = device_buffer(r.capacity * 4ull);
    r.commands = device_buffer(r.capacity * 20ull);
    r.count = device_buffer(8);
    r.pyramid = device_buffer((depth_pyramid_levels(kImage, kImage).back().offset + 1ull) * 4);
    r.visibility = device_buffer(r.n * 4ull);
    const auto gpu_boxes = gpu::to_gpu_boxes(boxes);
    EXPECT_TRUE(gpu_context().upload(r.boxes, gpu_boxes.data(), r.n * 32ull));
    const std::vector<std::uint32_t> never(r.n, 0);
    EXPECT_TRUE(gpu_context().upload(r.visibility, never.data(), r.n * 4ull));
    Status s = gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        EXPECT_TRUE(lbvh.record_build(
            cmd, {gpu::whole(r.boxes), gpu::whole(r.nodes), gpu::whole(r.build_scratch)}, r.n));
    });
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    return r;
}

// One recorded cull into r's buffers; returns the visible ids (the exact count, all stored).
std::vector<std::uint32_t> record_phase(gpu::Culler& culler, Recorded& r, const Frustum& f,
                                        CullOrder order, const gpu::CullOcclusion& occlusion) {
    Status recorded;
    Status s = gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        recorded = culler.record(
            cmd, {gpu::whole(r.nodes), r.n}, f, order, gpu::whole(r.scratch),
            {gpu::whole(r.ids), gpu::whole(r.commands), gpu::whole(r.count), r.capacity}, nullptr,
            occlusion);
        gpu::compute_barrier(cmd);
    });
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    EXPECT_TRUE(recorded) << (recorded ? "" : recorded.error().message);
    std::uint32_t counts[2] = {0, 0};
    EXPECT_TRUE(gpu_context().download(r.count, counts, 8));
    EXPECT_EQ(counts[0], counts[1]);
    std::vector<std::uint32_t> ids(counts[0]);
    if (!ids.empty()) {
        EXPECT_TRUE(gpu_context().download(r.ids, ids.data(), ids.size() * 4));
    }
    return ids;
}

// Test 4: two-phase frames on caller buffers, the camera moving: each frame's early output,
// pyramid (built on the GPU from level 0), late output and visibility stamps equal the twin's;
// the early and late outputs are disjoint and together hold the single-phase cull's boxes.
TEST_F(GpuOcclusionTest, TwoPhaseFramesMatchTwin) {
    auto opened = open_cull_scene({"uniform", 6000});
    ASSERT_TRUE(opened);
    auto& [boxes, culler, nodes, n] = *opened;
    auto lbvh = gpu::Lbvh::create(gpu_context());
    ASSERT_TRUE(lbvh);
    Recorded r = make_recorded(boxes, *culler, *lbvh.value());
    std::vector<std::uint32_t> stamps(r.n, 0);  // the twin's visibility
    std::size_t early_total = 0, late_total = 0;
    for (std::uint32_t frame = 1; frame <= 4; ++frame) {
        const float t = 0.05f * float(frame);
        const Camera cam{
            {0.1f + t, 0.5f, 0.05f}, {0.6f + t, 0.45f, 0.9f}, {0, 1, 0}, 60, 1, 0.01f, 1.2f};
        const Frustum f = frustum_of(cam);
        const std::array<float, 16> m = cam.view_projection();
        const std::vector<float> depths = centre_depths(m, boxes, f);
        ASSERT_FALSE(depths.empty());
        const std::vector<float> image =
            wall_image(kImage, kImage, 5, frame, depths.front(), depths[depths.size() / 3]);
        const DepthPyramid pyramid = pyramid_of(kImage, kImage, image);
        const CullOrder order = frame % 2 ? CullOrder::exact : CullOrder::approx;

        gpu::CullOcclusion occlusion{gpu::OcclusionPhase::early, {},   kImage, kImage, m,
                                     gpu::whole(r.visibility),   frame};
        const std::vector<std::uint32_t> early = record_phase(*culler, r, f, order, occlusion);
        lbvh::CullOcclusionTwin twin;
        twin.phase = gpu_layout::kOcclusionEarly;
        twin.view_projection = m;
        twin.visibility = &stamps;
        twin.frame = frame;
        EXPECT_EQ(early, lbvh::cull(nodes, r.n, f, order, &twin)) << "frame " << frame;

        ASSERT_TRUE(gpu_context().upload(r.pyramid, image.data(), image.size() * 4));
        Status s = gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
            gpu::compute_barrier(cmd);
            EXPECT_TRUE(culler->record_depth_pyramid(cmd, gpu::whole(r.pyramid), kImage, kImage));
        });
        ASSERT_TRUE(s);
        occlusion.phase = gpu::OcclusionPhase::late;
        occlusion.pyramid = gpu::whole(r.pyramid);
        const std::vector<std::uint32_t> late = record_phase(*culler, r, f, order, occlusion);
        twin.phase = gpu_layout::kOcclusionLate;
        twin.pyramid = &pyramid;
        EXPECT_EQ(late, lbvh::cull(nodes, r.n, f, order, &twin)) << "frame " << frame;
        std::vector<std::uint32_t> got_stamps(r.n);
        ASSERT_TRUE(gpu_context().download(r.visibility, got_stamps.data(), r.n * 4ull));
        EXPECT_EQ(got_stamps, stamps) << "frame " << frame;

        lbvh::CullOcclusionTwin single;
        single.pyramid = &pyramid;
        single.view_projection = m;
        std::vector<std::uint32_t> both = early, alone = lbvh::cull(nodes, r.n, f, order, &single);
        both.insert(both.end(), late.begin(), late.end());
        std::sort(both.begin(), both.end());
        EXPECT_EQ(std::adjacent_find(both.begin(), both.end()), both.end())
            << "frame " << frame << ": a box drawn in both phases";
        std::sort(alone.begin(), alone.end());
        EXPECT_TRUE(std::includes(both.begin(), both.end(), alone.begin(), alone.end()))
            << "frame " << frame << ": a box the single phase keeps is drawn in neither phase";
        early_total += early.size();
        late_total += late.size();
    }
    // Frame 1 has no history: everything comes late; later frames reuse it.
    EXPECT_GT(early_total, 0u);
    EXPECT_GT(late_total, 0u);
}

// Test 5: a wall nearer than every box over the whole image: nothing is visible, and the twin
// classifies only the root once per chunk (the root's bounds are hidden, so no node below is
// visited); without the wall every frustum-visible box comes back.
TEST_F(GpuOcclusionTest, HiddenRootRejectsTheWholeTree) {
    auto opened = open_cull_scene({"uniform", 3000});
    ASSERT_TRUE(opened);
    auto& [boxes, culler, nodes, n] = *opened;
    // Outside the unit cube, looking at all of it.
    const Camera cam{{0.5f, 0.5f, -1.5f}, {0.5f, 0.5f, 0.5f}, {0, 1, 0}, 60, 1, 0.1f, 10};
    const Frustum f = frustum_of(cam);
    const std::array<float, 16> m = cam.view_projection();
    const float in_front = float(depth_of(m, {0.5f, 0.5f, -1.0f}));  // nearer than z = 0
    const DepthPyramid wall =
        pyramid_of(kImage, kImage, std::vector<float>(kImage * kImage, in_front));
    auto hidden = culler->cull_occluded(boxes, f, CullOrder::exact, wall, m);
    ASSERT_TRUE(hidden) << hidden.error().message;
    EXPECT_TRUE(hidden->empty());
    lbvh::CullOcclusionTwin twin;
    twin.pyramid = &wall;
    twin.view_projection = m;
    EXPECT_TRUE(lbvh::cull(nodes, n, f, CullOrder::exact, &twin).empty());
    const std::uint32_t chunks = (n + gpu_layout::kCullChunk - 1) / gpu_layout::kCullChunk;
    EXPECT_EQ(twin.visits, chunks);

    const DepthPyramid open = pyramid_of(kImage, kImage, std::vector<float>(kImage * kImage, 1));
    auto all = culler->cull_occluded(boxes, f, CullOrder::exact, open, m);
    ASSERT_TRUE(all);
    std::vector<std::uint32_t> got = all.value(), expected = cull_brute_force(f, boxes);
    std::sort(got.begin(), got.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(got, expected);
}

// Test 6: bad arguments are errors naming what is wrong, and record nothing.
TEST_F(GpuOcclusionTest, BadArgumentsAreErrors) {
    auto culler = make_culler();
    auto lbvh = gpu::Lbvh::create(gpu_context());
    ASSERT_TRUE(culler && lbvh);
    const std::vector<Box> boxes{{{0, 0, 0}, {1, 1, 1}}, {{2, 0, 0}, {3, 1, 1}}};
    Recorded r = make_recorded(boxes, *culler, *lbvh.value());
    const Camera cam{{0.5f, 0.5f, -3}, {0.5f, 0.5f, 0}, {0, 1, 0}, 60, 1, 0.1f, 10};
    const Frustum f = frustum_of(cam);
    struct Case {
        gpu::CullOcclusion occlusion;
        const char* says;
    };
    const std::array<float, 16> m = cam.view_projection();
    const Case cases[] = {
        {{gpu::OcclusionPhase::single, gpu::whole(r.pyramid), 0, kImage, m, {}, 1}, "size 0 x"},
        {{gpu::OcclusionPhase::single, gpu::whole(r.pyramid), 20000, 1, m, {}, 1}, "outside"},
        {{gpu::OcclusionPhase::late, gpu::whole(r.pyramid), kImage, kImage, m,
          gpu::whole(r.visibility), 0},
         "frame must be at least 1"},
        {{gpu::OcclusionPhase::single, {r.pyramid.handle(), 0, 64}, kImage, kImage, m, {}, 1},
         "pyramid"},
        {{gpu::OcclusionPhase::early, {}, kImage, kImage, m, {r.visibility.handle(), 0, 4}, 1},
         "visibility"},
        // The late phase writes the stamps: they may not share bytes with an output.
        {{gpu::OcclusionPhase::late, gpu::whole(r.pyramid), kImage, kImage, m, gpu::whole(r.ids),
          2},
         "overlap visibility"},
    };
    for (const Case& c : cases) {
        Status recorded;
        Status s = gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
            recorded = culler->record(
                cmd, {gpu::whole(r.nodes), r.n}, f, CullOrder::exact, gpu::whole(r.scratch),
                {gpu::whole(r.ids), gpu::whole(r.commands), gpu::whole(r.count), r.capacity},
                nullptr, c.occlusion);
        });
        ASSERT_TRUE(s);
        expect_refused_with(recorded, c.says);
    }
    Status recorded;
    Status s = gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
        recorded = culler->record_depth_pyramid(cmd, gpu::whole(r.pyramid), 0, 5);
    });
    ASSERT_TRUE(s);
    EXPECT_FALSE(recorded);
}

}  // namespace
}  // namespace broadphase::testing
