// The renderer end to end: the same scene and camera rendered from the library's GPU cull and
// from a CPU-filled command buffer drawing every box must give byte-identical images - with
// cubes, with meshes and levels of detail (the unculled path picks each LOD with the CPU twin of
// the GPU's choice), on the showcase scene, and frame by frame while instances move (the tree
// refitted or rebuilt on the GPU). Extra views (shadow cascades) culled in the same traversal
// give the brute-force oracle's visible sets.
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
#include <cstdio>
#include <optional>
#include <random>
#include <string>

#include "broadphase/scene.hpp"
#include "meshes.hpp"
#include "renderer.hpp"
#include "showcase.hpp"

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
        // Each test starts from the default single cube mesh.
        RenderMesh cube{"cube", {{cube_mesh(), 0.0f}}, {0, 0, 0, 0}};
        ASSERT_TRUE(renderer_->set_meshes(std::span<const RenderMesh>(&cube, 1)));
    }
    void TearDown() override {
        if (renderer_) {
            EXPECT_EQ(renderer_->validation_errors(), errors_before_)
                << "the Vulkan validation layer reported errors (see stderr)";
        }
    }

    static Camera camera() { return default_camera(); }

    static std::size_t non_clear_pixels(const std::vector<std::uint8_t>& rgba) {
        std::size_t count = 0;
        for (std::size_t i = 0; i + 3 < rgba.size(); i += 4)
            count += !std::equal(kClearColor.begin(), kClearColor.end(), rgba.begin() + i);
        return count;
    }
    static std::size_t non_clear_pixels(const Frame& frame) { return non_clear_pixels(frame.rgba); }

    // Bytes that differ between two frames' images (the sizes must match).
    static std::size_t differing_bytes(const Frame& a, const Frame& b) {
        EXPECT_EQ(a.rgba.size(), b.rgba.size());
        std::size_t differing = 0;
        for (std::size_t i = 0; i < std::min(a.rgba.size(), b.rgba.size()); ++i)
            differing += a.rgba[i] != b.rgba[i];
        return differing;
    }

    // The showcase meshes with LOD switch distances for a unit-sized scene (the scanned mesh
    // when the build found one).
    static const std::vector<RenderMesh>& unit_scene_meshes() {
        static const std::vector<RenderMesh> meshes = [] {
            auto made = showcase_meshes(default_scanned_mesh(), {0.08f, 0.3f});
            EXPECT_TRUE(made) << made.error().message;
            return made ? std::move(*made) : std::vector<RenderMesh>{};
        }();
        return meshes;
    }

    // Gives the renderer `meshes` and `boxes`, box i of mesh mesh_ids[i]; false, after a failed
    // expectation, when either is refused.
    static bool set_meshes_and_scene(std::span<const RenderMesh> meshes, std::span<const Box> boxes,
                                     std::span<const std::uint32_t> mesh_ids) {
        const Status set = renderer_->set_meshes(meshes);
        EXPECT_TRUE(set) << (set ? "" : set.error().message);
        if (!set) return false;
        const Status placed = renderer_->set_scene(boxes, mesh_ids);
        EXPECT_TRUE(placed) << (placed ? "" : placed.error().message);
        return bool(placed);
    }

    // set_meshes_and_scene with the unit scene's meshes (false when there are none:
    // unit_scene_meshes said why).
    static bool set_unit_scene(std::span<const Box> boxes,
                               std::span<const std::uint32_t> mesh_ids) {
        return !unit_scene_meshes().empty() &&
               set_meshes_and_scene(unit_scene_meshes(), boxes, mesh_ids);
    }

    // Gives the renderer the showcase meshes (LODs switching at 12 and 30) and a showcase
    // scene of `count` instances; false, after a failed expectation, when either is refused.
    static bool set_showcase(std::uint32_t count, ShowcaseScene& scene) {
        auto meshes = showcase_meshes(default_scanned_mesh(), {12.0f, 30.0f});
        EXPECT_TRUE(meshes) << (meshes ? "" : meshes.error().message);
        if (!meshes) return false;
        scene = showcase_scene(count);
        return set_meshes_and_scene(*meshes, scene.boxes, scene.mesh_ids);
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

// Mesh ids cycling through cube, sphere and scanned mesh.
std::vector<std::uint32_t> cycling_meshes(std::size_t n) {
    std::vector<std::uint32_t> ids(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = std::uint32_t(i % 3);
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

// Test 6: meshes with LODs on disjoint boxes: culled and unculled frames are byte-identical;
// every drawn instance has the CPU twin's LOD; several LODs of each LOD mesh are drawn.
TEST_F(RendererTest, LodMeshesCulledFrameEqualsUnculledFrame) {
    const std::vector<Box> boxes = spaced_grid(12000);
    const std::vector<std::uint32_t> mesh_ids = cycling_meshes(boxes.size());
    ASSERT_TRUE(set_unit_scene(boxes, mesh_ids));
    auto culled = renderer_->render(camera(), true);
    ASSERT_TRUE(culled) << culled.error().message;
    auto all = renderer_->render(camera(), false);
    ASSERT_TRUE(all) << all.error().message;

    auto frustum = Frustum::from_camera(camera());
    ASSERT_TRUE(frustum);
    EXPECT_EQ(sorted(culled->drawn_ids), sorted(cull_brute_force(*frustum, boxes)));
    EXPECT_LT(culled->drawn_ids.size(), boxes.size());
    ASSERT_EQ(culled->drawn_lods.size(), culled->drawn_ids.size());
    const auto& table = renderer_->mesh_table();
    std::size_t lods_seen[3][3] = {};
    std::uint32_t previous_mesh = 0;
    for (std::size_t k = 0; k < culled->drawn_ids.size(); ++k) {
        const std::uint32_t id = culled->drawn_ids[k], mesh = mesh_ids[id];
        EXPECT_EQ(culled->drawn_lods[k], lod_for(table[mesh], camera().eye, boxes[id])) << id;
        EXPECT_GE(mesh, previous_mesh) << "draws not grouped by mesh";
        previous_mesh = mesh;
        if (mesh < 3 && culled->drawn_lods[k] < 3) ++lods_seen[mesh][culled->drawn_lods[k]];
    }
    for (std::uint32_t mesh : {1u, 2u})
        for (std::uint32_t lod = 0; lod < 3; ++lod)
            EXPECT_GT(lods_seen[mesh][lod], 0u) << "mesh " << mesh << " LOD " << lod;
    ASSERT_EQ(culled->mesh_draws.size(), 4u);
    for (std::uint32_t mesh = 0; mesh < 3; ++mesh) EXPECT_GT(culled->mesh_draws[mesh], 0u);

    EXPECT_GT(non_clear_pixels(*culled), culled->rgba.size() / 4 / 10) << "frame nearly blank";
    EXPECT_EQ(differing_bytes(*culled, *all), 0u) << "culled and unculled frames differ";
}

// Test 7: the showcase scene (walls, ground, several meshes): culled == unculled, and the walls
// hide what stands behind them (fewer distinct instance colours than drawn instances is not
// asserted: only exact equality is).
TEST_F(RendererTest, ShowcaseSceneCulledFrameEqualsUnculledFrame) {
    ShowcaseScene scene;
    ASSERT_TRUE(set_showcase(6000, scene));
    auto culled = renderer_->render(scene.camera, true);
    ASSERT_TRUE(culled) << culled.error().message;
    auto all = renderer_->render(scene.camera, false);
    ASSERT_TRUE(all) << all.error().message;
    auto frustum = Frustum::from_camera(scene.camera);
    ASSERT_TRUE(frustum);
    EXPECT_EQ(sorted(culled->drawn_ids), sorted(cull_brute_force(*frustum, scene.boxes)));
    EXPECT_LT(culled->drawn_ids.size(), scene.boxes.size());
    for (std::uint32_t mesh = 0; mesh < 4; ++mesh) EXPECT_GT(culled->mesh_draws[mesh], 0u);
    EXPECT_GT(non_clear_pixels(*culled), culled->rgba.size() / 4 / 2);
    EXPECT_EQ(differing_bytes(*culled, *all), 0u) << "culled and unculled frames differ";
}

// Test 8: two shadow cascades culled with the camera in one record_views: each view's visible
// set is the brute-force oracle's, view 0 is the camera's own cull, and the first cascade's
// depth image (shadow map) is mostly covered, every depth in [0, 1].
TEST_F(RendererTest, CascadeViewsEqualOracle) {
    ShowcaseScene scene;
    ASSERT_TRUE(set_showcase(6000, scene));
    const float far = scene.camera.far;
    const std::vector<ExtraView> cascades =
        cascade_views(scene.camera, {-0.4f, -1.0f, 0.3f},
                      {scene.camera.near, 0.1f * far, 0.4f * far}, bounds_of(scene.boxes));
    ASSERT_EQ(cascades.size(), 2u);
    auto frame = renderer_->render(scene.camera, true, cascades);
    ASSERT_TRUE(frame) << frame.error().message;
    ASSERT_EQ(frame->view_ids.size(), 3u);
    auto main_view = Frustum::from_camera(scene.camera);
    ASSERT_TRUE(main_view);
    EXPECT_EQ(sorted(frame->view_ids[0]), sorted(cull_brute_force(*main_view, scene.boxes)));
    EXPECT_EQ(sorted(frame->view_ids[0]), sorted(frame->drawn_ids));
    for (std::size_t v = 0; v < cascades.size(); ++v) {
        const Frustum f =
            Frustum::from_view_projection(cascades[v].view_projection, cascades[v].eye);
        const std::vector<std::uint32_t> expected = cull_brute_force(f, scene.boxes);
        EXPECT_EQ(sorted(frame->view_ids[v + 1]), sorted(expected)) << "cascade " << v;
        EXPECT_GT(expected.size(), 1u) << "cascade " << v << " sees nothing but the ground";
        EXPECT_LT(expected.size(), scene.boxes.size()) << "cascade " << v << " culls nothing";
    }
    ASSERT_EQ(frame->extra_depth.size(), std::size_t(frame->width) * frame->height);
    EXPECT_GT(std::count_if(frame->extra_depth.begin(), frame->extra_depth.end(),
                            [](float d) { return d < 1.0f; }),
              std::ptrdiff_t(frame->extra_depth.size() / 2))
        << "the cascade's shadow map is nearly empty";
    for (float d : frame->extra_depth) ASSERT_TRUE(d >= 0.0f && d <= 1.0f) << d;
}

// Test 9: moving instances: frame by frame (some boxes bob inside their cells; at frame 3 far
// apart boxes swap places, so that the refitted tree's cost jumps and the GPU rebuilds it), the
// culled frame (and the two-phase occlusion-culled frame) equals the unculled frame of the same
// boxes and the visible set the oracle's.
TEST_F(RendererTest, MovingInstancesCulledFrameEqualsUnculledFrame) {
    const std::vector<Box> base = spaced_grid(8000);
    const std::vector<std::uint32_t> mesh_ids = cycling_meshes(base.size());
    ASSERT_TRUE(set_unit_scene(base, mesh_ids));
    const float cell = 1.0f / std::ceil(std::cbrt(float(base.size())));
    int refits = 0, rebuilds = 0;
    // Box i stands where base[place[i]] stands (from frame 3 on, far apart boxes swap places:
    // each still fills a cell of its own, so the boxes stay disjoint).
    std::vector<std::size_t> place(base.size());
    for (std::size_t i = 0; i < place.size(); ++i) place[i] = i;
    std::vector<Box> boxes(base.size());
    for (int frame = 1; frame <= 4; ++frame) {
        SCOPED_TRACE(frame);
        if (frame == 3)
            for (std::size_t i = 0; i < place.size() / 2; i += 4)
                std::swap(place[i], place[place.size() - 1 - i]);
        // Every 5th box bobs by at most 0.04 cell (the gaps between cells are >= 0.05 cell).
        for (std::size_t i = 0; i < boxes.size(); ++i) {
            const float dy = i % 5 == 0 ? 0.04f * cell * std::sin(float(frame) + float(i)) : 0.0f;
            const Box& b = base[place[i]];
            boxes[i] = {{b.min.x, b.min.y + dy, b.min.z}, {b.max.x, b.max.y + dy, b.max.z}};
        }
        ASSERT_TRUE(renderer_->move_boxes(boxes));
        auto culled = renderer_->render(camera(), true);
        ASSERT_TRUE(culled) << culled.error().message;
        EXPECT_TRUE(culled->tree_updated);
        (culled->tree_rebuilt ? rebuilds : refits)++;
        auto all = renderer_->render(camera(), false);
        ASSERT_TRUE(all) << all.error().message;
        // Two-phase occlusion on the moved boxes (its history from the frames before).
        auto occluded = renderer_->render(camera(), CullMode::occlusion);
        ASSERT_TRUE(occluded) << occluded.error().message;
        auto frustum = Frustum::from_camera(camera());
        ASSERT_TRUE(frustum);
        EXPECT_EQ(sorted(culled->drawn_ids), sorted(cull_brute_force(*frustum, boxes)));
        EXPECT_LE(occluded->drawn_ids.size(), culled->drawn_ids.size());
        EXPECT_GT(non_clear_pixels(*culled), culled->rgba.size() / 4 / 10);
        EXPECT_EQ(differing_bytes(*culled, *all), 0u) << "culled and unculled frames differ";
        EXPECT_EQ(differing_bytes(*occluded, *all), 0u)
            << "occlusion-culled and unculled frames differ";
    }
    EXPECT_GT(refits, 0);
    EXPECT_GT(rebuilds, 0);
}

// Test 10: two-phase occlusion on the showcase scene (walls in front of many instances): every
// frame equals the unculled frame byte for byte; from the second frame on (phase 1 has a
// history) fewer instances are drawn than the frustum holds; phase 1 and phase 2 never draw an
// instance twice, and everything drawn is in the frustum. A moved camera (stale history) still
// gives the exact image.
TEST_F(RendererTest, OcclusionCulledFrameEqualsUnculledFrame) {
    ShowcaseScene scene;
    ASSERT_TRUE(set_showcase(6000, scene));
    Camera moved = scene.camera;
    moved.eye.x += 1.5f, moved.target.x += 3.0f, moved.eye.y -= 1.0f;
    const Camera cameras[3] = {scene.camera, scene.camera, moved};
    for (int frame = 0; frame < 3; ++frame) {
        SCOPED_TRACE(frame);
        const Camera& c = cameras[frame];
        auto occluded = renderer_->render(c, CullMode::occlusion);
        ASSERT_TRUE(occluded) << occluded.error().message;
        auto all = renderer_->render(c, CullMode::none);
        ASSERT_TRUE(all) << all.error().message;
        auto frustum = Frustum::from_camera(c);
        ASSERT_TRUE(frustum);
        const std::vector<std::uint32_t> in_frustum =
            sorted(cull_brute_force(*frustum, scene.boxes));
        const std::vector<std::uint32_t> drawn = sorted(occluded->drawn_ids);
        EXPECT_EQ(std::adjacent_find(drawn.begin(), drawn.end()), drawn.end())
            << "an instance drawn twice";
        EXPECT_TRUE(std::includes(in_frustum.begin(), in_frustum.end(), drawn.begin(), drawn.end()))
            << "drew an instance outside the frustum";
        std::printf(
            "occlusion frame %d: drawn %zu (phase 1 %u, phase 2 %zu) of %zu in the frustum, "
            "unculled %zu\n",
            frame, drawn.size(), occluded->early_drawn, drawn.size() - occluded->early_drawn,
            in_frustum.size(), all->drawn_ids.size());
        if (frame == 0) {
            // No history: phase 1 draws the frustum's boxes, phase 2 nothing.
            EXPECT_EQ(drawn, in_frustum);
            EXPECT_EQ(occluded->early_drawn, drawn.size());
        } else {
            EXPECT_LT(drawn.size(), in_frustum.size()) << "occlusion culled nothing";
        }
        EXPECT_GT(non_clear_pixels(*occluded), occluded->rgba.size() / 4 / 2);
        EXPECT_EQ(differing_bytes(*occluded, *all), 0u)
            << "occlusion-culled and unculled frames differ";
    }
}

// Test 11: meshes. The OFF reader takes comments, counts on the header line and polygons (fanned
// into triangles), and rejects hostile files naming the line; generated meshes and vertex
// clustering stay inside the unit cube with valid indices, and clustering reduces triangles.
class MeshTest : public ::testing::Test {
protected:
    std::string write(const std::string& name, const std::string& text) {
        std::string path = ::testing::TempDir() + "broadphase_mesh_" + name + ".off";
        std::FILE* f = std::fopen(path.c_str(), "wb");
        EXPECT_NE(f, nullptr);
        if (f) {
            std::fwrite(text.data(), 1, text.size(), f);
            std::fclose(f);
        }
        return path;
    }
    static void expect_valid(const MeshData& m) {
        EXPECT_GT(m.triangle_count(), 0u);
        EXPECT_EQ(m.indices.size() % 3, 0u);
        for (std::uint32_t i : m.indices) EXPECT_LT(i, m.vertex_count());
        for (float v : m.positions) {
            EXPECT_GE(v, 0.0f);
            EXPECT_LE(v, 1.0f);
        }
    }
};

TEST_F(MeshTest, ReadsOffWithCommentsAndPolygons) {
    auto m = read_off(write("quad",
                            "OFF 5 2 0 # counts on the header line\n"
                            "# a comment line\n"
                            "0 0 0\n2 0 0\n2 2 0\n0 2 0\n1 1 4\n"
                            "4 0 1 2 3\n3 0 1 4\n"));
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->vertex_count(), 5u);
    EXPECT_EQ(m->triangle_count(), 3u);  // the quad fanned into 2
    expect_valid(*m);
    // Scaled uniformly: the longest side (z, 4) spans [0, 1]; x and y (2) are centred.
    EXPECT_EQ(m->positions[3 * 4 + 2], 1.0f);
    EXPECT_EQ(m->positions[0], 0.25f);
}

TEST_F(MeshTest, RejectsHostileOff) {
    const std::pair<const char*, const char*> cases[] = {
        {"empty", ""},
        {"magic", "PLY\n3 1 0\n"},
        {"nocounts", "OFF\n"},
        {"hugecount", "OFF\n99999999999 1 0\n"},
        {"shortvertex", "OFF\n3 1 0\n0 0 0\n1 0\n0 1 0\n3 0 1 2\n"},
        {"nan", "OFF\n3 1 0\n0 0 0\nnan 0 0\n0 1 0\n3 0 1 2\n"},
        {"badindex", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 3\n"},
        {"twocorners", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n2 0 1\n"},
        {"truncated", "OFF\n3 2 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n"},
    };
    for (const auto& [name, text] : cases) {
        auto m = read_off(write(name, text));
        EXPECT_FALSE(m) << name;
        if (!m) {
            EXPECT_NE(m.error().message.find(".off"), std::string::npos) << name;
        }
    }
    auto missing = read_off(::testing::TempDir() + "no_such_mesh.off");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, ErrorCode::io_error);
    // A malformed vertex names its line.
    auto bad = read_off(write("line", "OFF\n3 1 0\n0 0 0\n1 0 x\n0 1 0\n3 0 1 2\n"));
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().line, std::optional<std::size_t>(4));
}

TEST_F(MeshTest, GeneratedMeshesAndClusteringStayInTheUnitCube) {
    for (const MeshData& m :
         {cube_mesh(), uv_sphere(32, 16), uv_sphere(3, 2), torus_knot(2, 3, 64, 8)})
        expect_valid(m);
    const MeshData fine = uv_sphere(64, 32);
    const MeshData coarse = cluster_vertices(fine, 8);
    expect_valid(coarse);
    EXPECT_LT(coarse.triangle_count(), fine.triangle_count() / 4);
    EXPECT_LT(coarse.vertex_count(), fine.vertex_count());
    // One cell: every triangle collapses.
    EXPECT_EQ(cluster_vertices(fine, 1).triangle_count(), 0u);
    if (!default_scanned_mesh().empty()) {
        auto bunny = read_off(default_scanned_mesh());
        ASSERT_TRUE(bunny) << bunny.error().message;
        EXPECT_EQ(bunny->vertex_count(), 37706u);  // CGAL's bunny00.off
        EXPECT_EQ(bunny->triangle_count(), 75408u);
        expect_valid(*bunny);
    }
}

}  // namespace
}  // namespace broadphase::renderer
