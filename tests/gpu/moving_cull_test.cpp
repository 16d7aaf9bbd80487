// Moving instances culled from a refitted tree (issue 11, item 4): a gpu::MovingScene that keeps
// the tree only (MovingSceneOptions::pairs = false) refits, decides and rebuilds on the GPU, and
// gpu::Culler::record culls its tree() in the same command buffer, with no host step between
// frames. Each frame's visible ids equal brute force's set and exact order; the approximate
// order equals the CPU twin's cull of the tree the GPU holds; the path (refit or rebuild) is
// the SAH rule's; nothing about pairs is allocated or reported.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/gpu.hpp"
#include "broadphase/gpu/culler.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/scene.hpp"
#include "cull_gpu_test_util.hpp"
#include "cull_test_util.hpp"
#include "device/kernels.hpp"
#include "gpu_test_env.hpp"
#include "lbvh_cull.hpp"

namespace broadphase::testing {
namespace {

class MovingCullTest : public GpuTest {};

// Frame f of a scene: every box slides along x by a little each frame; from frame kScatter on,
// every fourth box jumps to where another box far along the Morton order is (the refitted
// tree's cost jumps: the SAH rule rebuilds once, then refits again).
constexpr int kFrames = 6;
constexpr int kScatter = 3;

std::vector<Box> frame_boxes(const std::vector<Box>& base, int frame) {
    std::vector<Box> out = base;
    const std::size_t n = out.size();
    for (std::size_t i = 0; i < n; ++i) {
        Vec3 d{0.002f * float(frame) * float(int(i % 7) - 3), 0, 0};
        if (frame >= kScatter && i % 4 == 0) {
            const Box& to = base[(i * 7919 + n / 2) % n];
            d.x += to.min.x - base[i].min.x;
            d.y += to.min.y - base[i].min.y;
            d.z += to.min.z - base[i].min.z;
        }
        out[i] = {{out[i].min.x + d.x, out[i].min.y + d.y, out[i].min.z + d.z},
                  {out[i].max.x + d.x, out[i].max.y + d.y, out[i].max.z + d.z}};
    }
    return out;
}

struct CullBuffers {
    gpu::Buffer scratch, ids, commands, count;
};

CullBuffers make_cull_buffers(const gpu::Culler& culler, std::uint32_t n) {
    return {device_buffer(culler.scratch_size(n)), device_buffer(n * 4ull),
            device_buffer(n * 20ull), device_buffer(8)};
}

std::vector<std::uint32_t> visible_ids(const CullBuffers& b, std::uint32_t n) {
    std::uint32_t counts[2] = {};
    EXPECT_TRUE(gpu_context().download(b.count, counts, 8));
    EXPECT_EQ(counts[0], counts[1]);  // the capacity holds every box
    EXPECT_LE(counts[0], n);
    std::vector<std::uint32_t> ids(std::min(counts[0], n));
    if (!ids.empty()) {
        EXPECT_TRUE(gpu_context().download(b.ids, ids.data(), ids.size() * 4ull));
    }
    return ids;
}

// What both tests open with: the case's scene, a moving scene that keeps its tree only
// (MovingSceneOptions::pairs = false) reset to it, a culler, and the frustum of the scene's
// camera `camera` (cameras_for); empty (after a failed expectation) when one cannot be made.
struct MovingCull {
    std::vector<Box> boxes;
    std::unique_ptr<gpu::MovingScene> moving;
    std::unique_ptr<gpu::Culler> culler;
    std::uint32_t n = 0;
    Frustum f;
};

std::optional<MovingCull> open_moving_cull(const SceneCase& c, std::size_t camera) {
    auto scene = generate_scene(c.generator, c.n);
    EXPECT_TRUE(scene) << (scene ? "" : scene.error().message);
    gpu::MovingSceneOptions options;
    options.pairs = false;
    auto moving = gpu::MovingScene::create(gpu_context(), options);
    EXPECT_TRUE(moving) << (moving ? "" : moving.error().message);
    auto culler = make_culler();
    if (!scene || !moving || !culler) return std::nullopt;
    const Status reset = moving.value()->reset(scene->boxes);
    EXPECT_TRUE(reset) << (reset ? "" : reset.error().message);
    if (!reset) return std::nullopt;
    const auto n = static_cast<std::uint32_t>(scene->boxes.size());
    const Frustum f = frustum_of(cameras_for(scene->boxes)[camera]);
    return MovingCull{std::move(scene->boxes), std::move(moving.value()), std::move(culler), n, f};
}

// Test 1: one submit per frame, each holding the frame's step and its cull: exact order equal
// to brute force's every frame, the approximate order equal to the twin's cull of the GPU's
// own tree, refit frames before the scatter and a rebuild at it.
TEST_F(MovingCullTest, EachFrameStepAndCullInOneRecording) {
    auto opened = open_moving_cull({"clustered", 3000}, 0);
    ASSERT_TRUE(opened);
    auto& [scene_boxes, moving, culler, n, f] = *opened;
    gpu::MovingScene& m = *moving;
    gpu::Buffer boxes = device_buffer(n * sizeof(gpu_layout::GpuBox));
    CullBuffers exact = make_cull_buffers(*culler, n), approx = make_cull_buffers(*culler, n);
    int refits = 0, rebuilds = 0;
    for (int frame = 1; frame < kFrames; ++frame) {
        SCOPED_TRACE(frame);
        const std::vector<Box> current = frame_boxes(scene_boxes, frame);
        const auto gpu_boxes = gpu::to_gpu_boxes(current);
        ASSERT_TRUE(gpu_context().upload(boxes, gpu_boxes.data(), n * sizeof(gpu_layout::GpuBox)));
        Status recorded;
        ASSERT_TRUE(gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
            gpu::compute_barrier(cmd);
            if (!(recorded = m.record_step(cmd, gpu::whole(boxes)))) return;
            gpu::compute_barrier(cmd);
            for (auto [order, out] :
                 {std::pair{CullOrder::exact, &exact}, std::pair{CullOrder::approx, &approx}}) {
                recorded = culler->record(
                    cmd, m.tree(), f, order, gpu::whole(out->scratch),
                    {gpu::whole(out->ids), gpu::whole(out->commands), gpu::whole(out->count), n});
                if (!recorded) return;
                gpu::compute_barrier(cmd);
            }
        }));
        ASSERT_TRUE(recorded) << recorded.error().message;
        auto result = m.read_step();
        ASSERT_TRUE(result) << result.error().message;
        EXPECT_EQ(result->pair_count, 0u);
        EXPECT_TRUE(result->pairs.empty() && result->began.empty() && result->ended.empty());
        EXPECT_EQ(result->work_ratio, 1.0);
        (result->path == gpu::FramePath::rebuild ? rebuilds : refits)++;
        if (frame < kScatter) {
            EXPECT_EQ(result->path, gpu::FramePath::refit);
        } else if (frame == kScatter) {
            EXPECT_EQ(result->path, gpu::FramePath::rebuild) << result->ratio;
        }

        EXPECT_EQ(
            compare_cull(f, current, cull_brute_force(f, current), visible_ids(exact, n), true),
            "");
        auto nodes = m.nodes();
        ASSERT_TRUE(nodes);
        EXPECT_EQ(visible_ids(approx, n), lbvh::cull(nodes.value(), n, f, CullOrder::approx));
    }
    EXPECT_GT(refits, 0);
    EXPECT_GT(rebuilds, 0);
}

// Test 2: several frames back to back in one command buffer, each culled into its own
// output: every frame's ids equal brute force's for that frame's boxes.
TEST_F(MovingCullTest, FramesBackToBackInOneCommandBuffer) {
    auto opened = open_moving_cull({"uniform", 2000}, 1);
    ASSERT_TRUE(opened);
    auto& [scene_boxes, moving, culler, n, f] = *opened;
    gpu::MovingScene& m = *moving;
    const VkDeviceSize frame_bytes = n * sizeof(gpu_layout::GpuBox);
    gpu::Buffer boxes = device_buffer(frame_bytes * (kFrames - 1));
    std::vector<std::vector<Box>> frames;
    std::vector<CullBuffers> outs;
    std::vector<gpu_layout::GpuBox> all;  // every frame's boxes, one after another
    for (int frame = 1; frame < kFrames; ++frame) {
        frames.push_back(frame_boxes(scene_boxes, frame));
        const auto gpu_boxes = gpu::to_gpu_boxes(frames.back());
        all.insert(all.end(), gpu_boxes.begin(), gpu_boxes.end());
        outs.push_back(make_cull_buffers(*culler, n));
    }
    ASSERT_TRUE(gpu_context().upload(boxes, all.data(), all.size() * sizeof(all[0])));
    Status recorded;
    ASSERT_TRUE(gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        for (int k = 0; k + 1 < kFrames; ++k) {
            const gpu::BufferRange range{boxes.handle(), k * frame_bytes, frame_bytes};
            if (!(recorded = m.record_step(cmd, range))) return;
            gpu::compute_barrier(cmd);
            const CullBuffers& out = outs[k];
            recorded = culler->record(
                cmd, m.tree(), f, CullOrder::exact, gpu::whole(out.scratch),
                {gpu::whole(out.ids), gpu::whole(out.commands), gpu::whole(out.count), n});
            if (!recorded) return;
            gpu::compute_barrier(cmd);
        }
    }));
    ASSERT_TRUE(recorded) << recorded.error().message;
    ASSERT_TRUE(m.read_step());
    for (int k = 0; k + 1 < kFrames; ++k) {
        SCOPED_TRACE(k + 1);
        EXPECT_EQ(compare_cull(f, frames[k], cull_brute_force(f, frames[k]),
                               visible_ids(outs[k], n), true),
                  "");
    }
}

}  // namespace
}  // namespace broadphase::testing
