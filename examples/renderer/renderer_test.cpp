// The renderer end to end: the same scene and camera rendered from the library's GPU cull and
// from a CPU-filled command buffer drawing every box must give byte-identical images.
//
// Why identical: boxes the cull leaves out lie entirely outside a frustum plane and produce no
// fragment, so both frames rasterise the same fragments of the same boxes with depth test LESS.
// Only equal depths of two different boxes at one pixel could depend on draw order, so the
// byte-identity scene is a jittered grid of disjoint boxes with gaps (no two surfaces meet).
// Both paths also draw front to back by (distance from the eye, id) - but the GPU's exact key is
// the float distance, equal to point_box_distance only up to rounding, so order alone is not
// relied on. The uniform scene (overlapping boxes) is checked for the visible set and non-blank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "broadphase/scene.hpp"
#include "renderer.hpp"

namespace broadphase::renderer {
namespace {

class RendererTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        RendererOptions options;
        options.width = options.height = 256;
        auto made = Renderer::create(options);
        ASSERT_TRUE(made) << made.error().message;
        renderer_ = std::move(*made).release();
    }
    static void TearDownTestSuite() {
        delete renderer_;
        renderer_ = nullptr;
    }
    void SetUp() override {
        ASSERT_NE(renderer_, nullptr);
        errors_before_ = renderer_->validation_errors();
    }
    void TearDown() override {
        if (renderer_) {
            EXPECT_EQ(renderer_->validation_errors(), errors_before_)
                << "the Vulkan validation layer reported errors (see stderr)";
        }
    }

    static Camera camera() {
        Camera c{};
        c.eye = {0.15f, 0.55f, 0.1f};
        c.target = {0.8f, 0.45f, 0.9f};
        c.up = {0.0f, 1.0f, 0.0f};
        c.fovy_deg = 60.0f;
        c.aspect = 1.0f;
        c.near = 0.01f;
        c.far = 1.0f;
        return c;
    }

    static std::size_t non_clear_pixels(const Frame& frame) {
        std::size_t count = 0;
        for (std::size_t i = 0; i + 3 < frame.rgba.size(); i += 4)
            count += !std::equal(kClearColor.begin(), kClearColor.end(), frame.rgba.begin() + i);
        return count;
    }

    static inline Renderer* renderer_ = nullptr;
    std::uint64_t errors_before_ = 0;
};

// About n disjoint boxes in [0,1)^3: a k^3 grid of cells, each box 30..60% of its cell per axis
// at a random offset inside it (std::mt19937, seed 7), so neighbours never touch.
std::vector<Box> spaced_grid(std::size_t n) {
    int k = int(std::ceil(std::cbrt(double(n))));
    float cell = 1.0f / float(k);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> size(0.3f, 0.6f), unit(0.0f, 1.0f);
    std::vector<Box> boxes;
    for (int x = 0; x < k; ++x)
        for (int y = 0; y < k; ++y)
            for (int z = 0; z < k && boxes.size() < n; ++z) {
                Box b;
                for (int axis = 0; axis < 3; ++axis) {
                    float extent = size(rng) * cell;
                    float lo = float((axis == 0   ? x
                                      : axis == 1 ? y
                                                  : z)) *
                                   cell +
                               0.05f * cell + unit(rng) * (0.9f * cell - extent);
                    b.min[axis] = lo;
                    b.max[axis] = lo + extent;
                }
                boxes.push_back(b);
            }
    return boxes;
}

std::vector<std::uint32_t> sorted(std::vector<std::uint32_t> ids) {
    std::sort(ids.begin(), ids.end());
    return ids;
}

// Test 1: disjoint boxes, camera inside them: culled and unculled frames are byte-identical.
TEST_F(RendererTest, CulledFrameEqualsUnculledFrame) {
    const std::vector<Box> boxes = spaced_grid(20000);
    ASSERT_TRUE(renderer_->set_scene(boxes));
    auto culled = renderer_->render(camera(), true);
    ASSERT_TRUE(culled) << culled.error().message;
    auto all = renderer_->render(camera(), false);
    ASSERT_TRUE(all) << all.error().message;

    const std::size_t n = boxes.size();
    EXPECT_EQ(all->drawn_ids.size(), n);
    EXPECT_GT(culled->visible_count, 0u);
    EXPECT_LT(culled->visible_count, n) << "culling removed nothing";
    EXPECT_EQ(culled->drawn_ids.size(), culled->visible_count);
    // The GPU's visible set is exactly the CPU oracle's.
    auto frustum = Frustum::from_camera(camera());
    ASSERT_TRUE(frustum);
    EXPECT_EQ(sorted(culled->drawn_ids), sorted(cull_brute_force(*frustum, boxes)));

    EXPECT_GT(non_clear_pixels(*culled), culled->rgba.size() / 4 / 10) << "frame nearly blank";
    ASSERT_EQ(culled->rgba.size(), all->rgba.size());
    std::size_t differing = 0;
    for (std::size_t i = 0; i < culled->rgba.size(); ++i)
        differing += culled->rgba[i] != all->rgba[i];
    EXPECT_EQ(differing, 0u) << "culled and unculled frames differ";
}

// Test 2: uniform scene (overlapping boxes): the visible set is the oracle's, the frame not blank.
TEST_F(RendererTest, UniformSceneVisibleSetAndImage) {
    auto scene = generate_scene("uniform", 20000);
    ASSERT_TRUE(scene);
    ASSERT_TRUE(renderer_->set_scene(scene->boxes));
    auto frame = renderer_->render(camera(), true);
    ASSERT_TRUE(frame) << frame.error().message;
    auto frustum = Frustum::from_camera(camera());
    ASSERT_TRUE(frustum);
    EXPECT_EQ(sorted(frame->drawn_ids), sorted(cull_brute_force(*frustum, scene->boxes)));
    EXPECT_LT(frame->visible_count, scene->boxes.size());
    EXPECT_GT(non_clear_pixels(*frame), frame->rgba.size() / 4 / 2);
}

// Test 3: a camera looking away from every box: nothing is drawn and the frame is the clear colour.
TEST_F(RendererTest, CameraLookingAwaySeesNothing) {
    auto scene = generate_scene("uniform", 2000);
    ASSERT_TRUE(scene);
    ASSERT_TRUE(renderer_->set_scene(scene->boxes));
    Camera c = camera();
    c.eye = {0.5f, 0.5f, -0.5f};
    c.target = {0.5f, 0.5f, -2.0f};
    auto frame = renderer_->render(c, true);
    ASSERT_TRUE(frame) << frame.error().message;
    EXPECT_EQ(frame->visible_count, 0u);
    EXPECT_EQ(non_clear_pixels(*frame), 0u);
}

// Test 4: an empty scene renders the clear colour on both paths.
TEST_F(RendererTest, EmptySceneIsClearColour) {
    ASSERT_TRUE(renderer_->set_scene({}));
    for (bool cull : {true, false}) {
        auto frame = renderer_->render(camera(), cull);
        ASSERT_TRUE(frame) << frame.error().message;
        EXPECT_EQ(non_clear_pixels(*frame), 0u);
        EXPECT_TRUE(frame->drawn_ids.empty());
    }
}

// Test 5: invalid boxes and cameras are rejected with an error.
TEST_F(RendererTest, RejectsBadInput) {
    Box bad{{0, 0, 0}, {-1, 1, 1}};
    EXPECT_FALSE(renderer_->set_scene(std::span<const Box>(&bad, 1)));
    Camera c = camera();
    c.near = 0.0f;
    EXPECT_FALSE(renderer_->render(c, true));
}

}  // namespace
}  // namespace broadphase::renderer
