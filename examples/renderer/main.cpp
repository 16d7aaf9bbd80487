// broadphase_renderer: renders a box scene headlessly with GPU frustum culling and writes the
// frame and a top-down debug view as PNG files. See the README section "Vulkan renderer example".
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "broadphase/scene.hpp"
#include "renderer.hpp"

namespace {

using namespace broadphase;

constexpr const char* kUsage =
    "usage: broadphase_renderer [--scene uniform:20000] "
    "[--camera ex,ey,ez,tx,ty,tz,ux,uy,uz,fovy,aspect,near,far]\n"
    "                           [--no-cull] [--out frame.png] [--debug-out above.png] "
    "[--size 512] [--device NAME]\n";

/// The default camera: inside the unit cube scene, looking across it.
Camera default_camera() {
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

int fail(const std::string& message) {
    std::fprintf(stderr, "broadphase_renderer: %s\n", message.c_str());
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string scene_spec = "uniform:20000", out = "frame.png", debug_out;
    Camera camera = default_camera();
    bool cull = true;
    renderer::RendererOptions options;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        if (arg == "--no-cull") {
            cull = false;
        } else if (arg == "--help" || arg == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (arg == "--scene" || arg == "--camera" || arg == "--out" ||
                   arg == "--debug-out" || arg == "--size" || arg == "--device") {
            const char* v = value();
            if (!v) return fail(arg + " needs a value\n" + kUsage);
            if (arg == "--scene") scene_spec = v;
            if (arg == "--out") out = v;
            if (arg == "--debug-out") debug_out = v;
            if (arg == "--device") options.device = v;
            if (arg == "--camera") {
                auto parsed = parse_camera(v);
                if (!parsed) return fail(parsed.error().message);
                camera = *parsed;
            }
            if (arg == "--size") {
                int size = std::atoi(v);
                if (size < 1 || size > 16384) return fail("--size takes 1..16384");
                options.width = options.height = std::uint32_t(size);
            }
        } else {
            return fail("unknown argument '" + arg + "'\n" + kUsage);
        }
    }

    auto scene = load_scene(scene_spec);
    if (!scene) return fail(scene.error().message);
    auto made = renderer::Renderer::create(options);
    if (!made) return fail(made.error().message);
    renderer::Renderer& r = **made;
    if (Status s = r.set_scene(scene->boxes); !s) return fail(s.error().message);
    auto frame = r.render(camera, cull);
    if (!frame) return fail(frame.error().message);
    if (Status s = tool::write_png(out, renderer::frame_image(*frame)); !s)
        return fail(s.error().message);
    std::printf("%s on %s: %zu boxes, %u visible, %zu drawn%s -> %s\n", scene->name.c_str(),
                r.context().info().name.c_str(), scene->boxes.size(), frame->visible_count,
                frame->drawn_ids.size(), cull ? " (GPU frustum cull, front to back)" : " (no cull)",
                out.c_str());
    if (!debug_out.empty()) {
        if (Status s = tool::write_png(
                debug_out, renderer::draw_debug_view(scene->boxes, frame->drawn_ids, camera));
            !s)
            return fail(s.error().message);
        std::printf("top-down debug view -> %s\n", debug_out.c_str());
    }
    if (r.validation_errors() > 0)
        return fail(std::to_string(r.validation_errors()) + " Vulkan validation errors");
    return 0;
}
