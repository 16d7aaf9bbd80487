// A headless Vulkan renderer over broadphase: it creates its own instance and device (graphics +
// compute queue, VK_KHR_push_descriptor, indirect-count draws), hands them to the library with
// gpu::Context::adopt, keeps the boxes' LBVH in a gpu::MovingScene (tree only: refitted or
// rebuilt on the GPU when the boxes move), and per frame records into its own command buffer
// the tree's update, the library's front-to-back frustum cull with per-instance meshes and
// levels of detail grouped per mesh (gpu::CullLods) - or its two-phase occlusion cull (phase 1
// draws what was visible last frame, its depth becomes a depth pyramid on the GPU, phase 2
// draws what is not hidden behind it) - optionally the cull of extra views (shadow cascades)
// in one shared traversal, and one vkCmdDrawIndexedIndirectCount per mesh, then reads the
// colour image back, with per-stage GPU times from timestamp queries.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/gpu.hpp"
#include "broadphase/gpu/culler.hpp"
#include "broadphase/types.hpp"
#include "meshes.hpp"
#include "plot.hpp"

namespace broadphase::renderer {

/// Image size and device choice of a Renderer.
struct RendererOptions {
    std::uint32_t width = 512, height = 512;  ///< pixels, >= 1
    /// Khronos validation layer (also on when BROADPHASE_VALIDATION=1); errors are counted.
    bool validation = false;
    /// Device index or name substring; empty: BROADPHASE_DEVICE, else the first discrete GPU,
    /// integrated, virtual, then CPU (lavapipe).
    std::string device;
};

/// Clear colour of the frame (RGBA8).
inline constexpr std::array<std::uint8_t, 4> kClearColor{28, 32, 44, 255};

/// One level of detail of a RenderMesh: its triangles and the eye-to-box distance from which it
/// is drawn (gpu::MeshLod; LOD 0's is 0).
struct MeshLodData {
    MeshData mesh;
    float switch_distance = 0;
};

/// A mesh instances may use: 1 to gpu::kMaxMeshLods LODs, switch distances strictly ascending
/// from 0, and a tint (rgb, then the weight of rgb over each instance's hashed colour, in [0,1]).
struct RenderMesh {
    std::string name;
    std::vector<MeshLodData> lods;
    std::array<float, 4> tint{0, 0, 0, 0};
};

/// An extra view culled with the main camera in one shared traversal (Culler::record_views):
/// a shadow cascade's light frustum or any other view.
struct ExtraView {
    std::array<float, 16> view_projection{};  ///< column-major, Vulkan clip space
    Vec3 eye;                                 ///< orders the view's visible ids
};

/// How Renderer::render picks what to draw.
enum class CullMode {
    none,     ///< every box, from a CPU-filled command buffer (the reference)
    frustum,  ///< the library's GPU frustum cull
    /// Two-phase occlusion (Haar & Aaltonen, SIGGRAPH 2015; gpu::CullOcclusion): phase 1 culls
    /// to what the last occlusion frame found visible and draws it; its depth is copied into a
    /// depth pyramid built on the GPU; phase 2 culls everything else in the frustum against it
    /// and draws what is not hidden (and stamps what is visible for the next frame).
    occlusion,
};

/// GPU times of one frame's stages (ms; all 0 when the queue has no timestamps).
struct FrameTimes {
    double tree = 0;        ///< MovingScene refit / rebuild of the moved boxes (0: none moved)
    double cull = 0;        ///< main view (occlusion: phase 1): hierarchical traversal
    double compact = 0;     ///< main view (occlusion: phase 1): compaction
    double sort = 0;        ///< main view (occlusion: phase 1): front-to-back sort
    double emit = 0;        ///< main view (occlusion: phase 1): LODs, per-mesh groups, commands
    double views = 0;       ///< record_views of the main view and the extra views
    double extra_draw = 0;  ///< drawing extra view 0's boxes (the cascade image)
    double early_draw = 0;  ///< occlusion: phase 1's render pass
    double pyramid = 0;     ///< occlusion: depth copy and the depth pyramid's build
    double late_cull = 0;   ///< occlusion: phase 2's cull, all its stages
    double draw = 0;        ///< the (occlusion: phase 2's) render pass, one indirect draw per mesh
};

/// One rendered frame.
struct Frame {
    std::uint32_t width = 0, height = 0;
    std::vector<std::uint8_t> rgba;  ///< width * height * 4 bytes, row-major, top row first
    /// Instance ids in draw order: mesh 0's then mesh 1's..., each front to back: the culler's
    /// visible ids, or every id sorted by the same key when culling is off.
    std::vector<std::uint32_t> drawn_ids;
    /// The LOD each of drawn_ids was drawn with.
    std::vector<std::uint32_t> drawn_lods;
    /// The culler's exact visible count (the scene size when culling is off).
    std::uint32_t visible_count = 0;
    /// Draws per mesh (one indirect-count draw each).
    std::vector<std::uint32_t> mesh_draws;
    /// With extra views: element 0 the main view's visible ids from the shared traversal, then
    /// each extra view's, in exact front-to-back order.
    std::vector<std::vector<std::uint32_t>> view_ids;
    /// With extra views: the depth image (width * height floats, row 0 the top, 1 where
    /// nothing was drawn) of extra view 0's visible boxes drawn as cubes: a cascade's shadow map.
    std::vector<float> extra_depth;
    /// Occlusion: the first early_drawn of drawn_ids were drawn by phase 1, the rest by phase 2;
    /// occlusion_frame is the frame number the visibility stamps got.
    std::uint32_t early_drawn = 0, occlusion_frame = 0;
    /// Moved boxes: whether the tree was refitted (false) or rebuilt (true) on the GPU.
    bool tree_updated = false, tree_rebuilt = false;
    FrameTimes times;
};

/// Owns the Vulkan device, the library context and every buffer and pipeline of the example.
class Renderer {
public:
    /// Creates the device and pipelines; errors say which requirement the device lacks.
    static Result<std::unique_ptr<Renderer>> create(const RendererOptions& options = {});
    ~Renderer();
    Renderer(const Renderer&) = delete;
    Renderer& operator=(const Renderer&) = delete;

    /// Replaces the meshes (validated; the error names the mesh and LOD) and drops the scene.
    /// The default is one mesh, the unit cube.
    Status set_meshes(std::span<const RenderMesh> meshes);
    /// Uploads the boxes (validated) and each box's mesh (mesh_ids: one per box, each below
    /// the mesh count; empty: all mesh 0) and builds their LBVH on the GPU; replaces any scene.
    Status set_scene(std::span<const Box> boxes, std::span<const std::uint32_t> mesh_ids = {});
    /// New positions of the scene's boxes (same count, validated). The next culled render
    /// refits (or, by the SAH rule, rebuilds) the tree on the GPU in its own command buffer.
    Status move_boxes(std::span<const Box> boxes);
    /// Renders the scene seen by `camera`. With `cull`, the draw commands come from the
    /// library's GPU cull (exact front-to-back order, each instance's LOD for the view, grouped
    /// per mesh); without, from a CPU-filled buffer that draws every box, sorted by the same key
    /// (point_box_distance from the eye, then id), the LOD chosen by the CPU twin of the GPU's
    /// choice. `extra` (cull only, at most gpu::kMaxCullViews - 1) are culled with the camera
    /// in one record_views; the first is drawn into Frame::extra_depth.
    Result<Frame> render(const Camera& camera, bool cull, std::span<const ExtraView> extra = {});
    /// render() with a CullMode; occlusion as frustum, then (phase 2) the boxes in the frustum
    /// not hidden behind phase 1's depth. Each occlusion render is one frame of the two-phase
    /// history (reset by set_scene); a frame's image never depends on that history.
    Result<Frame> render(const Camera& camera, CullMode mode,
                         std::span<const ExtraView> extra = {});
    /// The meshes' packed LOD table (gpu::pack_mesh_table, without groups), for CPU twins.
    const std::vector<gpu_layout::CullMesh>& mesh_table() const;

    /// The adopted library context (device, queue, buffers).
    gpu::Context& context();
    /// Validation-layer errors reported so far (0 when validation is off).
    std::uint64_t validation_errors() const;

    struct Impl;

private:
    explicit Renderer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// The example's default camera: inside the unit cube scene, looking across it.
inline Camera default_camera() {
    return {
        {0.15f, 0.55f, 0.1f}, {0.8f, 0.45f, 0.9f}, {0.0f, 1.0f, 0.0f}, 60.0f, 1.0f, 0.01f, 1.0f};
}

/// The draw order of the unculled path: every id, by point_box_distance(eye, box) then id.
std::vector<std::uint32_t> front_to_back(const Vec3& eye, std::span<const Box> boxes);

/// The LOD the GPU cull picks for a box of `mesh` seen from `eye` (the CPU twin's choice).
std::uint32_t lod_for(const gpu_layout::CullMesh& mesh, const Vec3& eye, const Box& box);

/// Orthographic top-down view (looking down -y; x to the right, z downwards) of the scene and
/// the camera: frustum-culled boxes grey, drawn boxes blue, occlusion-culled (in the frustum,
/// not drawn: `occluded_ids`) orange, the frustum (near to far) red, the eye white.
tool::Image draw_debug_view(std::span<const Box> boxes, std::span<const std::uint32_t> drawn_ids,
                            const Camera& camera, int width = 768, int height = 768,
                            std::span<const std::uint32_t> occluded_ids = {});

/// A depth image as grey levels (near dark, far light, stretched over the depths drawn), the
/// clear colour where nothing was drawn.
tool::Image depth_image(std::span<const float> depth, std::uint32_t width, std::uint32_t height);

/// The frame as an RGB image (alpha dropped), for tool::write_png.
tool::Image frame_image(const Frame& frame);

}  // namespace broadphase::renderer
