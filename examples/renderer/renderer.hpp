// A headless Vulkan renderer over broadphase: it creates its own instance and device (graphics +
// compute queue, VK_KHR_push_descriptor, indirect-count draws), hands them to the library with
// gpu::Context::adopt, builds the GPU LBVH of a box scene once, and per frame records the
// library's front-to-back frustum cull and one vkCmdDrawIndexedIndirectCount of a cube mesh
// (instanced by box) into its own command buffer, then reads the colour image back.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/gpu.hpp"
#include "broadphase/types.hpp"
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

/// One rendered frame.
struct Frame {
    std::uint32_t width = 0, height = 0;
    std::vector<std::uint8_t> rgba;  ///< width * height * 4 bytes, row-major, top row first
    /// Instance ids in draw order: the culler's visible ids (front to back), or every id sorted
    /// by the same key when culling is off.
    std::vector<std::uint32_t> drawn_ids;
    /// The culler's exact visible count (the scene size when culling is off).
    std::uint32_t visible_count = 0;
};

/// Owns the Vulkan device, the library context and every buffer and pipeline of the example.
class Renderer {
public:
    /// Creates the device and pipelines; errors say which requirement the device lacks.
    static Result<std::unique_ptr<Renderer>> create(const RendererOptions& options = {});
    ~Renderer();
    Renderer(const Renderer&) = delete;
    Renderer& operator=(const Renderer&) = delete;

    /// Uploads the boxes (validated) and builds their LBVH on the GPU; replaces any scene.
    Status set_scene(std::span<const Box> boxes);
    /// Renders the scene seen by `camera`. With `cull`, the draw commands come from the
    /// library's GPU cull (exact front-to-back order); without, from a CPU-filled buffer that
    /// draws every box, sorted by the same key (point_box_distance from the eye, then id).
    Result<Frame> render(const Camera& camera, bool cull);

    /// The adopted library context (device, queue, buffers).
    gpu::Context& context();
    /// Validation-layer errors reported so far (0 when validation is off).
    std::uint64_t validation_errors() const;

    struct Impl;

private:
    explicit Renderer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// The draw order of the unculled path: every id, by point_box_distance(eye, box) then id.
std::vector<std::uint32_t> front_to_back(const Vec3& eye, std::span<const Box> boxes);

/// Orthographic top-down view (looking down -y; x to the right, z downwards) of the scene and
/// the camera: culled boxes grey, drawn boxes blue, the frustum (near to far) red, the eye white.
tool::Image draw_debug_view(std::span<const Box> boxes, std::span<const std::uint32_t> drawn_ids,
                            const Camera& camera, int width = 768, int height = 768);

/// The frame as an RGB image (alpha dropped), for tool::write_png.
tool::Image frame_image(const Frame& frame);

}  // namespace broadphase::renderer
