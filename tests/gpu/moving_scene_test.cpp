// gpu::MovingScene (per-frame refit or rebuild, overlap events) against brute force and the
// CPU twin (cpu_reference/lbvh_refit): standard scenes animated over several frames with small
// deterministic motions and one large jump; every frame the pairs equal brute force's, the
// began/ended events equal std::set_difference of consecutive brute-force pair lists, the
// tree equals the twin's node for node, and the policy's decisions and ratios match the twin's.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "animation.hpp"
#include "broadphase/gpu/instruments.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#include "broadphase/scene.hpp"
#include "broadphase/structure.hpp"
#include "device/context_impl.hpp"
#include "gpu_test_env.hpp"
#include "lbvh.hpp"
#include "lbvh_build_report.hpp"
#include "lbvh_refit.hpp"
#include "sort/radix_sort.hpp"
#include "wide_nodes_check.hpp"

namespace broadphase::testing {
namespace {

using gpu_layout::LbvhNode;

std::vector<Pair> set_diff(const std::vector<Pair>& a, const std::vector<Pair>& b) {
    std::vector<Pair> out;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
    return out;
}

using tool::frame_jitter;

// Shifts box k by sum over f = 1..frame of step * frame_jitter(k, f, axis) on each axis.
void drift(std::vector<Box>& boxes, int frame, const Vec3& step) {
    for (std::size_t k = 0; k < boxes.size(); ++k) {
        Vec3 d{0, 0, 0};
        for (int f = 1; f <= frame; ++f) {
            d.x += step.x * frame_jitter(k, f, 0);
            d.y += step.y * frame_jitter(k, f, 1);
            d.z += step.z * frame_jitter(k, f, 2);
        }
        boxes[k].min = {boxes[k].min.x + d.x, boxes[k].min.y + d.y, boxes[k].min.z + d.z};
        boxes[k].max = {boxes[k].max.x + d.x, boxes[k].max.y + d.y, boxes[k].max.z + d.z};
    }
}

// Frame f of an animation of `base`: every box drifts by a small step per frame (a few
// percent of the mean spacing); at frame `jump_frame` a third of the boxes swap places with
// other boxes (a large incoherent jump that spoils the tree), and stay there.
std::vector<Box> animate(const std::vector<Box>& base, int frame, int jump_frame) {
    std::vector<Box> boxes = base;
    if (boxes.empty()) return boxes;
    Box bounds = boxes[0];
    for (const Box& b : boxes) {
        bounds.min = {std::min(bounds.min.x, b.min.x), std::min(bounds.min.y, b.min.y),
                      std::min(bounds.min.z, b.min.z)};
        bounds.max = {std::max(bounds.max.x, b.max.x), std::max(bounds.max.y, b.max.y),
                      std::max(bounds.max.z, b.max.z)};
    }
    float spacing = 1.0f / std::cbrt(float(boxes.size()));
    Vec3 step{(bounds.max.x - bounds.min.x) * spacing * 0.1f,
              (bounds.max.y - bounds.min.y) * spacing * 0.1f,
              (bounds.max.z - bounds.min.z) * spacing * 0.1f};
    if (frame >= jump_frame) {
        for (std::size_t k = 0; k < boxes.size(); k += 3) {
            std::size_t other =
                std::size_t((frame_jitter(k, 999, 0) * 0.5f + 0.5f) * float(boxes.size()));
            other = std::min(other, boxes.size() - 1);
            Vec3 d{base[other].min.x - base[k].min.x, base[other].min.y - base[k].min.y,
                   base[other].min.z - base[k].min.z};
            boxes[k].min = {boxes[k].min.x + d.x, boxes[k].min.y + d.y, boxes[k].min.z + d.z};
            boxes[k].max = {boxes[k].max.x + d.x, boxes[k].max.y + d.y, boxes[k].max.z + d.z};
        }
    }
    drift(boxes, frame, step);
    return boxes;
}

std::unique_ptr<gpu::MovingScene> make_scene(const gpu::MovingSceneOptions& options) {
    auto scene = gpu::MovingScene::create(gpu_context(), options);
    EXPECT_TRUE(scene) << (scene ? "" : scene.error().message);
    return scene ? std::move(scene.value()) : nullptr;
}

lbvh::MovingTwin::Policy twin_policy(gpu::RefitPolicy p) {
    switch (p) {
        case gpu::RefitPolicy::always_refit:
            return lbvh::MovingTwin::Policy::always_refit;
        case gpu::RefitPolicy::always_rebuild:
            return lbvh::MovingTwin::Policy::always_rebuild;
        default:
            return lbvh::MovingTwin::Policy::by_ratio;
    }
}

struct Counts {
    int refits = 0, rebuilds = 0;
    // Per frame: the path, the SAH ratio and the work ratio the GPU reported.
    std::vector<bool> rebuilt;
    std::vector<double> ratio, work_ratio;
};

// Frame f (>= 1) of an animation of a base scene.
using Animate = std::function<std::vector<Box>(const std::vector<Box>& base, int frame)>;

// The scene's tree equals the twin's node for node, and its wide records are the nodes'.
void expect_tree_matches_twin(gpu::MovingScene& moving, const lbvh::MovingTwin& twin) {
    auto nodes = moving.nodes();
    ASSERT_TRUE(nodes);
    ASSERT_EQ(nodes->size(), twin.nodes().size());
    EXPECT_EQ(std::memcmp(nodes->data(), twin.nodes().data(), nodes->size() * sizeof(LbvhNode)), 0);
    expect_wide_nodes_match(gpu_context(), gpu::helper_nodes(moving), nodes.value());
}

std::string message(const Status& s) {
    return s ? "" : s.error().message;
}

// Runs `frames` frames of an animation of `base` and checks every frame: pairs against brute
// force, events against the set difference of brute-force lists (and the twin's per-element
// diff), the tree against the twin node for node, decisions and ratios.
void run_frames(const std::vector<Box>& base, gpu::MovingSceneOptions options, int frames,
                const Animate& animation, Counts& counts) {
    const gpu::RefitPolicy policy = options.policy;
    auto moving = make_scene(options);
    ASSERT_TRUE(moving);
    lbvh::MovingTwin twin(options.code, twin_policy(policy), options.rebuild_ratio,
                          options.rebuild_work_ratio);

    std::vector<Box> boxes = base;
    Status reset = moving->reset(boxes);
    ASSERT_TRUE(reset) << message(reset);
    twin.reset(boxes);
    EXPECT_NEAR(moving->build_cost(), twin.build_cost(), 1e-4 * twin.build_cost());
    std::vector<Pair> previous = brute_pairs(boxes);
    for (int frame = 1; frame <= frames; ++frame) {
        SCOPED_TRACE("frame " + std::to_string(frame));
        boxes = animation(base, frame);
        auto r = moving->step(boxes);
        ASSERT_TRUE(r) << r.error().message;
        bool twin_rebuilt = twin.step(boxes);
        std::vector<Pair> expected = brute_pairs(boxes);
        EXPECT_EQ(r->pair_count, expected.size());
        EXPECT_TRUE(r->pairs == expected) << r->pairs.size() << " vs " << expected.size();
        std::vector<Pair> began = set_diff(expected, previous);
        std::vector<Pair> ended = set_diff(previous, expected);
        EXPECT_TRUE(r->began == began) << r->began.size() << " vs " << began.size();
        EXPECT_TRUE(r->ended == ended) << r->ended.size() << " vs " << ended.size();
        EXPECT_TRUE(lbvh::diff_sorted_pairs(expected, previous) == began);
        EXPECT_TRUE(lbvh::diff_sorted_pairs(previous, expected) == ended);
        // Policy: the same path and ratio as the twin, and the same tree.
        EXPECT_NEAR(r->ratio, twin.ratio(), 1e-4 * std::max(1.0, twin.ratio()));
        EXPECT_NEAR(r->work_ratio, twin.work_ratio(), 1e-4 * std::max(1.0, twin.work_ratio()));
        ASSERT_EQ(r->path == gpu::FramePath::rebuild, twin_rebuilt)
            << "ratio " << r->ratio << ", work ratio " << r->work_ratio;
        expect_tree_matches_twin(*moving, twin);
        (r->path == gpu::FramePath::rebuild ? counts.rebuilds : counts.refits)++;
        counts.rebuilt.push_back(r->path == gpu::FramePath::rebuild);
        counts.ratio.push_back(r->ratio);
        counts.work_ratio.push_back(r->work_ratio);
        if (policy == gpu::RefitPolicy::always_refit) {
            EXPECT_EQ(r->path, gpu::FramePath::refit);
        }
        if (policy == gpu::RefitPolicy::always_rebuild) {
            EXPECT_EQ(r->path, gpu::FramePath::rebuild);
            EXPECT_EQ(r->ratio, 1.0);
        }
        previous = expected;
    }
}

// run_frames over a generated scene with animate(base, frame, jump_frame).
void run_animation(const char* generator, std::size_t n, gpu::MovingSceneOptions options,
                   int frames, int jump_frame, Counts& counts) {
    SCOPED_TRACE(std::string(generator) + ":" + std::to_string(n));
    auto scene = generate_scene(generator, n);
    ASSERT_TRUE(scene);
    run_frames(
        scene->boxes, options, frames,
        [&](const std::vector<Box>& base, int frame) { return animate(base, frame, jump_frame); },
        counts);
}

gpu::MovingSceneOptions with_policy(gpu::RefitPolicy policy) {
    gpu::MovingSceneOptions options;
    options.policy = policy;
    return options;
}

class MovingSceneTest : public GpuTest {};

// Test 1: every standard scene, ratio policy: small motions refit, the large jump rebuilds.
TEST_F(MovingSceneTest, StandardScenesByRatio) {
    Counts counts;
    for (const char* generator :
         {"uniform", "clustered", "xline", "yline", "mixed_sizes", "degenerate"}) {
        Counts c;
        run_animation(generator, 2000, with_policy(gpu::RefitPolicy::by_ratio), 5, 3, c);
        counts.refits += c.refits;
        counts.rebuilds += c.rebuilds;
        if (::testing::Test::HasFatalFailure()) return;
    }
    EXPECT_GE(counts.refits, 1);
    EXPECT_GE(counts.rebuilds, 1);
}

// Test 2: the uniform scene with the ratio policy refits on small motions and rebuilds on the
// jump (the jump frame's refitted cost is far above the threshold).
TEST_F(MovingSceneTest, UniformRefitsThenRebuildsOnJump) {
    Counts c;
    run_animation("uniform", 3000, with_policy(gpu::RefitPolicy::by_ratio), 5, 3, c);
    EXPECT_GE(c.refits, 2);
    EXPECT_GE(c.rebuilds, 1);
}

// Test 3: fixed policies.
TEST_F(MovingSceneTest, AlwaysRefitAndAlwaysRebuild) {
    Counts refit, rebuild;
    run_animation("clustered", 2000, with_policy(gpu::RefitPolicy::always_refit), 4, 2, refit);
    EXPECT_EQ(refit.rebuilds, 0);
    run_animation("mixed_sizes", 2000, with_policy(gpu::RefitPolicy::always_rebuild), 3, 2,
                  rebuild);
    EXPECT_EQ(rebuild.refits, 0);
}

// Test 3b: the other leaf orders: the rebuild the GPU gates replays 8 sort passes for 63-bit
// Morton codes and Hilbert codes' own build; both follow the twin node for node.
TEST_F(MovingSceneTest, OtherCodesByRatio) {
    for (gpu::CodeKind code : {gpu::CodeKind::morton63, gpu::CodeKind::hilbert30}) {
        gpu::MovingSceneOptions options;
        options.code = code;
        Counts c;
        run_animation("clustered", 2000, options, 4, 2, c);
        EXPECT_GE(c.refits, 1);
        EXPECT_GE(c.rebuilds, 1);
    }
}

// Test 3c: far-spread scenes whose builds refine their codes (LbvhOptions::refine): the gated
// rebuild replays the run, bounds and re-code kernels and the second sort, node for node as
// the twin, under each policy.
TEST_F(MovingSceneTest, AdaptiveCodesInLevelAndMultiscale) {
    for (const char* generator : {"level", "multiscale"}) {
        auto scene = generate_scene(generator, 3000);
        ASSERT_TRUE(scene);
        ASSERT_TRUE(lbvh::sorted_keys(scene->boxes, lbvh::CodeKind::morton30).refined);
        Counts ratio, rebuild;
        run_animation(generator, 3000, {}, 4, 2, ratio);
        run_animation(generator, 3000, with_policy(gpu::RefitPolicy::always_rebuild), 3, 2,
                      rebuild);
        EXPECT_EQ(rebuild.refits, 0);
    }
    // At 1,000 boxes the second sort's keys take 40 bits, 5 passes, an odd number: the gated
    // rebuild leaves its keys and ids in the sort's other buffers (no copy back), still the
    // twin's tree.
    auto small = generate_scene("level", 1000);
    ASSERT_TRUE(small);
    ASSERT_TRUE(lbvh::sorted_keys(small->boxes, lbvh::CodeKind::morton30).refined);
    Counts odd;
    run_animation("level", 1000, with_policy(gpu::RefitPolicy::always_rebuild), 3, 2, odd);
    EXPECT_EQ(odd.refits, 0);
}

// Test 4: tiny scenes: empty, one box, two boxes that meet and part.
TEST_F(MovingSceneTest, TinyScenes) {
    auto moving = make_scene({});
    ASSERT_TRUE(moving);
    ASSERT_TRUE(moving->reset({}));
    auto r = moving->step(std::span<const Box>{});
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->pairs.empty() && r->began.empty() && r->ended.empty());

    std::vector<Box> one{{{0, 0, 0}, {1, 1, 1}}};
    ASSERT_TRUE(moving->reset(one));
    one[0] = {{5, 5, 5}, {6, 6, 6}};
    r = moving->step(one);
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->pairs.empty());

    std::vector<Box> two{{{0, 0, 0}, {1, 1, 1}}, {{3, 0, 0}, {4, 1, 1}}};
    ASSERT_TRUE(moving->reset(two));
    two[1] = {{1, 0, 0}, {2, 1, 1}};  // touching counts
    r = moving->step(two);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->began, (std::vector<Pair>{{0, 1}}));
    EXPECT_TRUE(r->ended.empty());
    r = moving->step(two);
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->began.empty() && r->ended.empty());
    EXPECT_EQ(r->pairs, (std::vector<Pair>{{0, 1}}));
    two[1] = {{3, 0, 0}, {4, 1, 1}};
    r = moving->step(two);
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->began.empty());
    EXPECT_EQ(r->ended, (std::vector<Pair>{{0, 1}}));
}

// Test 5: the caller's device buffer as input gives the same events as host arrays.
TEST_F(MovingSceneTest, CallerBoxBuffer) {
    auto scene = generate_scene("uniform", 2000);
    ASSERT_TRUE(scene);
    auto a = make_scene({});
    auto b = make_scene({});
    ASSERT_TRUE(a && b);
    ASSERT_TRUE(a->reset(scene->boxes));
    ASSERT_TRUE(b->reset(scene->boxes));
    auto buffer =
        gpu_context().create_buffer(2000 * sizeof(gpu_layout::GpuBox), gpu::MemoryKind::device);
    ASSERT_TRUE(buffer);
    for (int frame = 1; frame <= 3; ++frame) {
        std::vector<Box> boxes = animate(scene->boxes, frame, 2);
        auto gpu_boxes = gpu::to_gpu_boxes(boxes);
        ASSERT_TRUE(gpu_context().upload(buffer.value(), gpu_boxes.data(),
                                         gpu_boxes.size() * sizeof(gpu_layout::GpuBox)));
        auto ra = a->step(boxes);
        auto rb = b->step(gpu::whole(*buffer));
        ASSERT_TRUE(ra && rb);
        EXPECT_EQ(ra->pairs, rb->pairs);
        EXPECT_EQ(ra->began, rb->began);
        EXPECT_EQ(ra->ended, rb->ended);
        EXPECT_EQ(ra->path, rb->path);
    }
}

// Test 6: hostile use is rejected with a clear error.
TEST_F(MovingSceneTest, RejectsBadInput) {
    gpu::MovingSceneOptions bad;
    bad.rebuild_ratio = 0;
    EXPECT_FALSE(gpu::MovingScene::create(gpu_context(), bad));
    auto moving = make_scene({});
    ASSERT_TRUE(moving);
    std::vector<Box> boxes{{{0, 0, 0}, {1, 1, 1}}, {{0, 0, 0}, {1, 1, 1}}};
    auto early = moving->step(boxes);
    ASSERT_FALSE(early);
    EXPECT_NE(early.error().message.find("reset"), std::string::npos);
    Status early_record = gpu_context().submit_and_wait(
        [&](VkCommandBuffer cmd) { EXPECT_FALSE(moving->record_step(cmd, gpu::BufferRange{})); });
    EXPECT_TRUE(early_record);
    EXPECT_FALSE(moving->read_step());
    ASSERT_TRUE(moving->reset(boxes));
    std::vector<Box> three(3, boxes[0]);
    auto wrong = moving->step(three);
    ASSERT_FALSE(wrong);
    EXPECT_NE(wrong.error().message.find("3 boxes"), std::string::npos);
    boxes[1].max.y = std::nanf("");
    auto nan = moving->step(boxes);
    ASSERT_FALSE(nan);
    EXPECT_EQ(nan.error().box, 1u);
    Status bad_reset = moving->reset(boxes);
    EXPECT_FALSE(bad_reset);
}

// Boxes grown about their centres by `scale` (more pairs as it grows).
std::vector<Box> inflate(std::vector<Box> boxes, float scale) {
    for (Box& b : boxes) {
        const Vec3 c{(b.min.x + b.max.x) / 2, (b.min.y + b.max.y) / 2, (b.min.z + b.max.z) / 2};
        b.min = {c.x + (b.min.x - c.x) * scale, c.y + (b.min.y - c.y) * scale,
                 c.z + (b.min.z - c.z) * scale};
        b.max = {c.x + (b.max.x - c.x) * scale, c.y + (b.max.y - c.y) * scale,
                 c.z + (b.max.z - c.z) * scale};
    }
    return boxes;
}

// Test 7: pair buffers far too small (16 pairs), then boxes that grow every frame: the reset
// and every frame overflow the buffers on the GPU; read_step grows them and redoes the frame's
// pairs, sort and differences (FrameResult::regrown), and pairs and events stay exact. Then
// the ratio policy's animation on buffers of 16 pairs at first matches the twin throughout.
TEST_F(MovingSceneTest, OverflowGrowsAndRepairsTheFrame) {
    auto scene = generate_scene("clustered", 2000);
    ASSERT_TRUE(scene);
    gpu::MovingSceneOptions options;
    options.initial_pair_capacity = 16;
    auto moving = make_scene(options);
    ASSERT_TRUE(moving);
    ASSERT_TRUE(moving->reset(scene->boxes));
    EXPECT_GT(moving->buffers().pair_capacity, 16u);
    std::vector<Pair> previous = brute_pairs(scene->boxes);
    for (float scale : {1.3f, 1.6f, 1.9f}) {
        SCOPED_TRACE("scale " + std::to_string(scale));
        std::vector<Box> boxes = inflate(scene->boxes, scale);
        auto r = moving->step(boxes);
        ASSERT_TRUE(r) << r.error().message;
        std::vector<Pair> expected = brute_pairs(boxes);
        EXPECT_TRUE(r->regrown);
        EXPECT_EQ(r->pair_count, expected.size());
        EXPECT_TRUE(r->pairs == expected);
        EXPECT_TRUE(r->began == set_diff(expected, previous));
        EXPECT_TRUE(r->ended == set_diff(previous, expected));
        EXPECT_GE(moving->buffers().pair_capacity, expected.size());
        previous = expected;
    }
    Counts c;
    run_animation("clustered", 2000, options, 4, 2, c);
}

// Uploads each frame's boxes into its own device buffer, as a caller's simulation would have
// them on the GPU.
std::vector<gpu::Buffer> upload_frames(const std::vector<std::vector<Box>>& frames) {
    std::vector<gpu::Buffer> buffers;
    for (const std::vector<Box>& boxes : frames) {
        auto buffer = gpu_context().create_buffer(boxes.size() * sizeof(gpu_layout::GpuBox),
                                                  gpu::MemoryKind::device);
        EXPECT_TRUE(buffer);
        if (!buffer) return {};
        auto gpu_boxes = gpu::to_gpu_boxes(boxes);
        EXPECT_TRUE(gpu_context().upload(buffer.value(), gpu_boxes.data(),
                                         gpu_boxes.size() * sizeof(gpu_layout::GpuBox)));
        buffers.push_back(std::move(buffer.value()));
    }
    return buffers;
}

// Bytes of a device buffer the test does not own (a FrameBuffers handle), read back.
std::vector<std::uint8_t> read_device(VkBuffer buffer, VkDeviceSize bytes) {
    std::vector<std::uint8_t> out(bytes);
    auto staging = gpu_context().create_buffer(bytes, gpu::MemoryKind::readback);
    EXPECT_TRUE(staging);
    if (!staging) return out;
    Status s = gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
        gpu::compute_barrier(cmd);
        VkBufferCopy copy{0, 0, bytes};
        vkCmdCopyBuffer(cmd, buffer, staging->handle(), 1, &copy);
        gpu::host_barrier(cmd);
    });
    EXPECT_TRUE(s);
    std::memcpy(out.data(), staging->mapped(), bytes);
    return out;
}

// Test 8: no host in the loop. Three frames recorded back to back into one command buffer
// (the caller's), the second a large jump: the GPU alone decides to rebuild there, so after
// the submit the tree equals the twin's after the same three steps, and the last frame's
// pairs and events equal brute force's; the FrameBuffers hold what read_step returned. Run
// twice: each frame's boxes in its own buffer, and one box buffer that the caller rewrites
// between frames inside the same command buffer (a copy, with the barriers the contract asks).
TEST_F(MovingSceneTest, FramesRecordedBackToBackDecideOnTheGpu) {
    auto scene = generate_scene("uniform", 3000);
    ASSERT_TRUE(scene);
    std::vector<std::vector<Box>> frames;
    lbvh::MovingTwin twin(lbvh::CodeKind::morton30, lbvh::MovingTwin::Policy::by_ratio, 1.5);
    twin.reset(scene->boxes);
    std::vector<bool> twin_rebuilt;
    for (int f = 1; f <= 3; ++f) {
        frames.push_back(animate(scene->boxes, f, 2));
        twin_rebuilt.push_back(twin.step(frames.back()));
    }
    ASSERT_EQ(twin_rebuilt, (std::vector<bool>{false, true, false}));
    std::vector<gpu::Buffer> buffers = upload_frames(frames);
    ASSERT_EQ(buffers.size(), 3u);
    auto shared = gpu_context().create_buffer(buffers[0].size(), gpu::MemoryKind::device);
    ASSERT_TRUE(shared);

    for (bool one_buffer : {false, true}) {
        SCOPED_TRACE(one_buffer ? "one box buffer rewritten by the caller" : "a buffer per frame");
        auto moving = make_scene({});
        ASSERT_TRUE(moving);
        ASSERT_TRUE(moving->reset(scene->boxes));
        Status s = gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
            for (const gpu::Buffer& b : buffers) {
                if (!one_buffer) {
                    EXPECT_TRUE(moving->record_step(cmd, gpu::whole(b)));
                    continue;
                }
                // The previous frame's reads of the box buffer before this copy overwrites it,
                // and the copy's writes before this frame's compute reads.
                VkMemoryBarrier war{};
                war.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
                war.srcAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
                war.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
                vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                     VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &war, 0, nullptr, 0,
                                     nullptr);
                VkBufferCopy copy{0, 0, b.size()};
                vkCmdCopyBuffer(cmd, b.handle(), shared->handle(), 1, &copy);
                VkMemoryBarrier raw{};
                raw.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
                raw.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
                raw.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
                vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &raw, 0, nullptr,
                                     0, nullptr);
                EXPECT_TRUE(moving->record_step(cmd, gpu::whole(*shared)));
            }
        });
        ASSERT_TRUE(s) << message(s);
        auto r = moving->read_step();
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(r->path, gpu::FramePath::refit);
        std::vector<Pair> expected = brute_pairs(frames[2]);
        std::vector<Pair> previous = brute_pairs(frames[1]);
        EXPECT_EQ(r->pair_count, expected.size());
        EXPECT_TRUE(r->pairs == expected);
        EXPECT_TRUE(r->began == set_diff(expected, previous));
        EXPECT_TRUE(r->ended == set_diff(previous, expected));
        EXPECT_FALSE(r->began.empty());
        expect_tree_matches_twin(*moving, twin);
        EXPECT_NEAR(moving->build_cost(), twin.build_cost(), 1e-4 * twin.build_cost());

        // The frame buffers hold, on the GPU, what read_step returned.
        const gpu::FrameBuffers fb = moving->buffers();
        EXPECT_GE(fb.pair_capacity, r->pair_count);
        gpu_layout::FrameStatus status{};
        std::vector<std::uint8_t> raw = read_device(fb.status, sizeof(status));
        std::memcpy(&status, raw.data(), sizeof(status));
        EXPECT_EQ(status.pairs, r->pair_count);
        EXPECT_EQ(status.began, r->began.size());
        EXPECT_EQ(status.ended, r->ended.size());
        EXPECT_EQ(status.rebuilt, 0u);
        EXPECT_EQ(status.pair_capacity, fb.pair_capacity);
        std::vector<Pair> began(status.began);
        raw = read_device(fb.began, began.size() * sizeof(Pair));
        std::memcpy(began.data(), raw.data(), raw.size());
        EXPECT_EQ(began, r->began);
        std::vector<std::uint32_t> keys(2 * std::size_t(status.pairs));
        raw = read_device(fb.pairs, keys.size() * 4);
        std::memcpy(keys.data(), raw.data(), raw.size());
        const std::uint32_t b = fb.pair_key_bits;
        ASSERT_EQ(b, 12u);  // bit_width(2999)
        std::vector<Pair> pairs(status.pairs);
        for (std::size_t k = 0; k < pairs.size(); ++k) {
            const std::uint64_t key = std::uint64_t(keys[2 * k + 1]) << 32 | keys[2 * k];
            pairs[k] = {std::uint32_t(key >> b), std::uint32_t(key & ((1u << b) - 1))};
        }
        EXPECT_EQ(pairs, expected);
    }
}

// Test 9: two frames recorded back to back, both with far more pairs than the buffers were
// grown to at reset: the first
// one's lists were never repaired, so read_step of the second refuses to return differences
// with it (limit_exceeded, naming the capacity), repairs the second, and the next step is exact.
TEST_F(MovingSceneTest, UnreadOverflowedFrameIsReported) {
    auto scene = generate_scene("uniform", 2000);
    ASSERT_TRUE(scene);
    gpu::MovingSceneOptions options;
    auto moving = make_scene(options);
    ASSERT_TRUE(moving);
    ASSERT_TRUE(moving->reset(scene->boxes));
    // Several times the pairs the reset sized the buffers for.
    std::vector<std::vector<Box>> frames{inflate(scene->boxes, 1.6f), inflate(scene->boxes, 1.7f)};
    std::vector<gpu::Buffer> buffers = upload_frames(frames);
    ASSERT_EQ(buffers.size(), 2u);
    const std::uint32_t capacity = moving->buffers().pair_capacity;
    ASSERT_LT(capacity, brute_pairs(frames[0]).size());
    Status s = gpu_context().submit_and_wait([&](VkCommandBuffer cmd) {
        for (const gpu::Buffer& b : buffers) EXPECT_TRUE(moving->record_step(cmd, gpu::whole(b)));
    });
    ASSERT_TRUE(s) << message(s);
    auto r = moving->read_step();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::limit_exceeded);
    EXPECT_NE(r.error().message.find(std::to_string(capacity)), std::string::npos)
        << r.error().message;

    std::vector<Box> third = inflate(scene->boxes, 1.65f);
    auto next = moving->step(third);
    ASSERT_TRUE(next) << next.error().message;
    std::vector<Pair> expected = brute_pairs(third);
    std::vector<Pair> previous = brute_pairs(frames[1]);
    EXPECT_TRUE(next->pairs == expected);
    EXPECT_TRUE(next->began == set_diff(expected, previous));
    EXPECT_TRUE(next->ended == set_diff(previous, expected));
}

// Every box wanders up to 4 units a frame, in every direction (a cumulative random walk): on
// `multiscale` (clusters of side 0.1 to 10, 1e4 apart) the small clusters scatter.
std::vector<Box> scatter(const std::vector<Box>& base, int frame) {
    std::vector<Box> boxes = base;
    drift(boxes, frame, {4.0f, 4.0f, 4.0f});
    return boxes;
}

// Test 10: a refit that scatters clusters far smaller than the scene's spread. The SAH ratio
// hardly moves (the few nodes over the 1e4 spread dominate every area sum), so the SAH rule
// alone never rebuilds, and each frame's traversal walks several times the nodes it walked
// after the build. The work rule sees it in the first scattered frame's traversal and rebuilds
// the frame after, as the twin does; that rebuild brings the work back down.
TEST_F(MovingSceneTest, ScatteredRefitRebuildsByTraversalWork) {
    auto scene = generate_scene("multiscale", 2000);
    ASSERT_TRUE(scene);
    Counts c;
    run_frames(scene->boxes, {}, 4, scatter, c);
    ASSERT_EQ(c.rebuilt.size(), 4u);
    EXPECT_FALSE(c.rebuilt[0]);  // frame 1 measures the reset's traversal: the base
    EXPECT_TRUE(c.rebuilt[1]) << "work ratio " << c.work_ratio[1];
    EXPECT_GT(c.work_ratio[1], 2.0);
    EXPECT_LT(c.ratio[1], 1.5);  // the SAH rule alone would have refitted

    // The SAH rule alone (work ratio 0, the policy before the work rule) refits throughout,
    // and its trees cost several times the work of the rebuilt ones.
    // The GPU decides each frame as the twin with the work rule does (frame f's decision,
    // made on the GPU from frame f - 1's traversal, is c.rebuilt[f - 1]).
    lbvh::MovingTwin sah_only(lbvh::CodeKind::morton30, lbvh::MovingTwin::Policy::by_ratio, 1.5,
                              0.0);
    lbvh::MovingTwin with_work(lbvh::CodeKind::morton30, lbvh::MovingTwin::Policy::by_ratio, 1.5);
    sah_only.reset(scene->boxes);
    with_work.reset(scene->boxes);
    for (int frame = 1; frame <= 4; ++frame) {
        SCOPED_TRACE("frame " + std::to_string(frame));
        const std::vector<Box> boxes = scatter(scene->boxes, frame);
        EXPECT_FALSE(sah_only.step(boxes));
        const bool rebuilt = with_work.step(boxes);
        EXPECT_EQ(rebuilt, c.rebuilt[frame - 1]);
        if (frame <= 2) {
            EXPECT_EQ(rebuilt, frame == 2);
        }
        EXPECT_EQ(sah_only.traversal().pairs, with_work.traversal().pairs);
        // The frame the work rule rebuilt walks under half the nodes of the refitted tree.
        if (frame == 2) {
            EXPECT_GT(sah_only.traversal().visits, 2 * with_work.traversal().visits);
        }
    }
}

// Test 11: a frame whose pair traversal overflows its work queue while its pairs fit the
// buffers. The repair grows the queue and keeps the pair capacity: it must never shrink it,
// since the previous frame's kept keys fill the old capacity (a shrink copied them past the
// end of the smaller buffer). Two boxes become world-sized in frame 1 and sort first in its
// rebuilt tree: their group walks the whole tree, past one invocation's budget, and queues
// more subtrees than 4 items hold.
TEST_F(MovingSceneTest, WorkQueueOverflowRepairsWithoutShrinkingThePairBuffers) {
    auto scene = generate_scene("uniform", 6000);
    ASSERT_TRUE(scene);
    gpu::MovingSceneOptions options;
    options.initial_pair_capacity = 100000;
    options.initial_work_capacity = 4;
    options.policy = gpu::RefitPolicy::always_rebuild;
    auto moving = make_scene(options);
    ASSERT_TRUE(moving);
    ASSERT_TRUE(moving->reset(scene->boxes));
    std::vector<Pair> previous = brute_pairs(scene->boxes);
    ASSERT_LT(previous.size(), 100000u);
    for (int frame = 1; frame <= 3; ++frame) {
        SCOPED_TRACE("frame " + std::to_string(frame));
        std::vector<Box> boxes = scene->boxes;
        if (frame == 1) {
            // Centroids near the low corner: they sort first and walk nearly every node.
            boxes[0] = {{-1, -1, -1}, {1.05f, 1.05f, 1.05f}};
            boxes[1] = {{-1.01f, -1, -1}, {1.05f, 1.05f, 1.05f}};
        }
        auto r = moving->step(boxes);
        ASSERT_TRUE(r) << r.error().message;
        const std::vector<Pair> expected = brute_pairs(boxes);
        EXPECT_EQ(r->regrown, frame == 1);
        EXPECT_EQ(r->pair_count, expected.size());
        EXPECT_TRUE(r->pairs == expected);
        EXPECT_TRUE(r->began == set_diff(expected, previous));
        EXPECT_TRUE(r->ended == set_diff(previous, expected));
        EXPECT_GE(moving->buffers().pair_capacity, 100000u);
        previous = expected;
    }
}

// A host step's pairs pass records round 0 alone (2 dispatches) while no frame queues work past
// it. On a context whose traversal budget is a GPU's (64; the pairs' first round 512): a
// uniform frame finishes in round 0; a frame of `level` (a box over half the scene) after it
// records round 0 alone, is left short and is repaired with every round (2 + 32 dispatches,
// regrown); the next level frame records every round at once (32), as does the uniform frame
// after it, which resumes nothing past round 0, so the one after records round 0 alone again.
// Every frame's pairs equal brute force's.
TEST_F(MovingSceneTest, RoundZeroAloneUntilAFrameQueuesWork) {
    gpu::ContextOptions options;
    options.tuning.traversal_budget = gpu_layout::kGpuTraversalBudget;
    auto ctx = own_context(options);
    ASSERT_TRUE(ctx);
    auto uniform = generate_scene("uniform", 3000);
    auto level = generate_scene("level", 3000);
    ASSERT_TRUE(uniform && level);
    auto made = gpu::MovingScene::create(*ctx, {});
    ASSERT_TRUE(made) << made.error().message;
    gpu::MovingScene& ms = *made.value();
    ASSERT_TRUE(ms.reset(uniform->boxes));
    const std::uint32_t all = 2 * gpu_layout::kTraversalRounds;
    struct Frame {
        const std::vector<Box>* boxes;
        std::uint32_t dispatches;
        bool regrown;
    };
    const Frame frames[] = {{&uniform->boxes, 2, false},
                            {&level->boxes, 2 + all, true},
                            {&level->boxes, all, false},
                            {&uniform->boxes, all, false},
                            {&uniform->boxes, 2, false}};
    int f = 0;
    for (const Frame& frame : frames) {
        SCOPED_TRACE("frame " + std::to_string(++f));
        auto r = ms.step(*frame.boxes);
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(r->pairs, brute_pairs(*frame.boxes));
        EXPECT_EQ(r->regrown, frame.regrown);
        auto report = last_report(ms);
        ASSERT_TRUE(report) << report.error().message;
        ASSERT_GE(report->size(), 3u);
        EXPECT_EQ((*report)[2].name, "all pairs");
        EXPECT_EQ((*report)[2].dispatches, frame.dispatches);
    }
    EXPECT_EQ(ctx->validation_errors(), 0u);
}

// The instruments (MovingScene::last_report): the dispatches each stage records on a refit
// frame and on a rebuild frame (the gated rebuild records the same dispatches either way,
// emptied on the refit frame), and the modelled traffic of gpu/frames/moving_scene.cpp
// (frame_traffic) worked out from counts found independently: brute-force pairs and events,
// the CPU twin's traversal work, and the Lbvh's own report of a build of the same boxes.
TEST_F(MovingSceneTest, ReportCountsDispatchesAndModelledTraffic) {
    const std::uint64_t n = 2000;
    auto scene = generate_scene("uniform", n);
    ASSERT_TRUE(scene);
    const std::vector<Box> frame1 = animate(scene->boxes, 1, 1000);
    const std::uint64_t before = brute_pairs(scene->boxes).size();
    const std::vector<Pair> now = brute_pairs(frame1);
    const std::uint64_t began = set_diff(now, brute_pairs(scene->boxes)).size();
    const std::uint64_t ended = set_diff(brute_pairs(scene->boxes), now).size();
    const std::uint32_t b = std::bit_width(n - 1);    // bits of j in a pair key
    const std::uint64_t internal = n - 1, tiles = 8;  // ceil(1999 / 256) SAH tiles

    auto refitting = make_scene({});
    gpu::MovingSceneOptions eager;
    eager.rebuild_ratio = 1e-6;  // every frame after the reset rebuilds, by the GPU's decision
    auto rebuilding = make_scene(eager);
    ASSERT_TRUE(refitting && rebuilding);
    std::vector<gpu::StageReport> reports[2];
    for (int k = 0; k < 2; ++k) {
        gpu::MovingScene& ms = k == 0 ? *refitting : *rebuilding;
        ASSERT_TRUE(ms.reset(scene->boxes));
        auto r = ms.step(frame1);
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(r->path, k == 0 ? gpu::FramePath::refit : gpu::FramePath::rebuild);
        EXPECT_EQ(r->pair_count, now.size());
        auto report = last_report(ms);
        ASSERT_TRUE(report) << report.error().message;
        reports[k] = report.value();
        ASSERT_EQ(reports[k].size(), 6u);
        const char* names[] = {"refit + cost + decision",
                               "rebuild (gated)",
                               "all pairs",
                               "pair keys",
                               "sort",
                               "differences"};
        for (std::size_t s = 0; s < 6; ++s) EXPECT_EQ(reports[k][s].name, names[s]);
    }
    const auto& refit = reports[0];
    const auto& rebuild = reports[1];
    const gpu::SortPath path = gpu_context().info().sort_path;

    // The Lbvh's own build of frame 1's boxes: its dispatches (the refinement's steps are
    // indirect there and gated here, as many) and traffic.
    const std::optional<gpu::StageReport> build = lbvh_build_totals(frame1);
    ASSERT_TRUE(build);

    for (int k = 0; k < 2; ++k) {
        SCOPED_TRACE(k == 0 ? "refit frame" : "rebuild frame");
        const auto& r = reports[k];
        // Refit (leaves and node bounds in one pass), SAH cost, decision.
        EXPECT_EQ(r[0].dispatches, 3u);
        // The build, its SAH cost and commit, gated: the same both ways.
        EXPECT_EQ(r[1].dispatches, build->dispatches + 2);
        // Round 0 and the finish: a host step records round 0 alone while no frame queues
        // work past it (this scene's never do: RoundZeroAloneUntilAFrameQueuesWork).
        EXPECT_EQ(r[2].dispatches, 2u);
        EXPECT_EQ(r[2].bytes_written, 64 + 8 * now.size());
        // The pairs pass wrote the keys: count_args alone, and the status words by transfers.
        EXPECT_EQ(r[3].dispatches, 1u);
        EXPECT_EQ(r[3].bytes_read, 8u);
        EXPECT_EQ(r[3].bytes_written, 32u);
        std::uint32_t passes = 0;
        const gpu::Traffic sorted = gpu::RadixSort::traffic(static_cast<std::uint32_t>(now.size()),
                                                            2, 2 * b, true, path, &passes);
        EXPECT_EQ(r[4].bytes_read, sorted.read);
        EXPECT_EQ(r[4].bytes_written, sorted.written);
        EXPECT_EQ(r[4].passes, passes);
        // Each way: pair_diff_append, count_args, the same sort as the pairs', pair_unpack.
        EXPECT_EQ(r[5].dispatches, 2 * (3 + r[4].dispatches));
        std::uint64_t diff_read = 0, diff_written = 0;
        for (auto [a, other, kept] : {std::array<std::uint64_t, 3>{now.size(), before, began},
                                      std::array<std::uint64_t, 3>{before, now.size(), ended}}) {
            const gpu::Traffic t =
                gpu::RadixSort::traffic(static_cast<std::uint32_t>(kept), 2, 2 * b, true, path);
            diff_read += 8 + 8 * a + 8 * other + 4 * kept + 4 + t.read + 4 + 8 * kept;
            diff_written += 4 + 12 * kept + 24 + t.written + 8 * kept + 4;
        }
        EXPECT_EQ(r[5].bytes_read, diff_read);
        EXPECT_EQ(r[5].bytes_written, diff_written);
        // The refit and its cost and decision (the decision writes the gate's table, 3 words
        // per gated dispatch, and reads the armed table when it rebuilds).
        const std::uint64_t gate_words = 3ull * r[1].dispatches;
        EXPECT_EQ(r[0].bytes_read, 40 * n + 88 * internal + 32 * internal + 32 + 4 * (tiles + 1) +
                                       48 + 64 + (k == 1 ? 4 * gate_words : 0));
        EXPECT_EQ(r[0].bytes_written,
                  32 * n + (40 + 48) * internal + 4 * (tiles + 1) + 48 + 4 * gate_words);
    }
    // The rebuild stage: on the refit frame only the build's scratch fills (scene bounds,
    // refine word, split flags); on the rebuild frame the build, its cost and commit too.
    const std::uint64_t fills = 32 + 4 + 4 * n;
    EXPECT_EQ(refit[1].bytes_read, 0u);
    EXPECT_EQ(refit[1].bytes_written, fills);
    EXPECT_EQ(rebuild[1].bytes_read, build->bytes_read + 32 * internal + 32 + 4 * (tiles + 1));
    EXPECT_EQ(rebuild[1].bytes_written, build->bytes_written + fills + 4 * (tiles + 1) + 16);
    // The rebuilt tree is the fresh build's: its traversal work is the CPU twin's.
    const auto twin = lbvh::build_tree(frame1, lbvh::CodeKind::morton30);
    const std::uint64_t visits = lbvh::pair_traversal_work(twin, frame1).visits;
    EXPECT_EQ(rebuild[2].bytes_read, 48 * n + 64 * visits);
    EXPECT_EQ((refit[2].bytes_read - 48 * n) % 64, 0u);
}

}  // namespace
}  // namespace broadphase::testing
