// The renderer end to end: the same scene and camera rendered from the library's GPU cull and
// from a CPU-filled command buffer drawing every box must give byte-identical images.
//
// Why identical: both paths draw with depth test LESS in the same order (the culler's exact
// front-to-back order is point_box_distance from the eye, then id; the unculled path sorts all
// boxes by that key on the CPU), so the culled draw sequence is a subsequence of the unculled
// one, and the boxes it leaves out are entirely outside a frustum plane and produce no fragment.
// Equal depths (overlapping or touching boxes) then resolve the same way in both images.
#include <gtest/gtest.h>

#include <algorithm>

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

// Test 1: uniform scene, camera inside it: culled and unculled frames are byte-identical.
TEST_F(RendererTest, CulledFrameEqualsUnculledFrame) {
    auto scene = generate_scene("uniform", 20000);
    ASSERT_TRUE(scene);
    ASSERT_TRUE(renderer_->set_scene(scene->boxes));
    auto culled = renderer_->render(camera(), true);
    ASSERT_TRUE(culled) << culled.error().message;
    auto all = renderer_->render(camera(), false);
    ASSERT_TRUE(all) << all.error().message;

    const std::size_t n = scene->boxes.size();
    EXPECT_EQ(all->drawn_ids.size(), n);
    EXPECT_GT(culled->visible_count, 0u);
    EXPECT_LT(culled->visible_count, n) << "culling removed nothing";
    EXPECT_EQ(culled->drawn_ids.size(), culled->visible_count);
    // The GPU's visible ids in order are exactly the CPU oracle's.
    auto frustum = Frustum::from_camera(camera());
    ASSERT_TRUE(frustum);
    EXPECT_EQ(culled->drawn_ids, cull_brute_force(*frustum, scene->boxes));

    EXPECT_GT(non_clear_pixels(*culled), culled->rgba.size() / 4 / 10) << "frame nearly blank";
    ASSERT_EQ(culled->rgba.size(), all->rgba.size());
    std::size_t differing = 0;
    for (std::size_t i = 0; i < culled->rgba.size(); ++i)
        differing += culled->rgba[i] != all->rgba[i];
    EXPECT_EQ(differing, 0u) << "culled and unculled frames differ";
}

// Test 2: a camera looking away from every box: nothing is drawn and the frame is the clear colour.
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

// Test 3: an empty scene renders the clear colour on both paths.
TEST_F(RendererTest, EmptySceneIsClearColour) {
    ASSERT_TRUE(renderer_->set_scene({}));
    for (bool cull : {true, false}) {
        auto frame = renderer_->render(camera(), cull);
        ASSERT_TRUE(frame) << frame.error().message;
        EXPECT_EQ(non_clear_pixels(*frame), 0u);
        EXPECT_TRUE(frame->drawn_ids.empty());
    }
}

// Test 4: invalid boxes and cameras are rejected with an error.
TEST_F(RendererTest, RejectsBadInput) {
    Box bad{{0, 0, 0}, {-1, 1, 1}};
    EXPECT_FALSE(renderer_->set_scene(std::span<const Box>(&bad, 1)));
    Camera c = camera();
    c.near = 0.0f;
    EXPECT_FALSE(renderer_->render(c, true));
}

}  // namespace
}  // namespace broadphase::renderer
