// broadphase_renderer: renders a box scene headlessly with GPU frustum culling and writes the
// frame and a top-down debug view as PNG files. See the README section "Vulkan renderer example".
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "broadphase/scene.hpp"
#include "cli_options.hpp"
#include "renderer.hpp"

namespace {

using namespace broadphase;

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
    bool no_cull = false;
    std::uint32_t size = 512;
    renderer::RendererOptions options;
    CLI::App app{
        "Renders a box scene headlessly with the library's GPU frustum culling and "
        "writes the frame as PNG",
        "broadphase_renderer"};
    app.formatter(std::make_shared<cli::HelpFormatter>());
    app.set_help_flag("-h,--help", "print this help and exit");
    app.option_defaults()->disable_flag_override();
    app.add_option("--scene", scene_spec,
                   "a scene file or a generator NAME:COUNT[:SEED] (default " + scene_spec + ")")
        ->type_name("S");
    app.add_option_function<std::string>(
           "--camera",
           [&camera](const std::string& text) {
               auto parsed = parse_camera(text);
               if (!parsed) throw CLI::ValidationError("--camera", parsed.error().message);
               camera = parsed.value();
           },
           "eye(3),target(3),up(3),fovy_deg,aspect,near,far (default: inside the unit cube, "
           "looking across it)")
        ->type_name("C");
    app.add_flag("--no-cull", no_cull,
                 "draw every box through the same indirect path, from a CPU-filled command "
                 "buffer");
    app.add_option("--out", out, "the frame's PNG file (default " + out + ")")->type_name("FILE");
    app.add_option("--debug-out", debug_out,
                   "also a top-down view: drawn boxes blue, culled grey, the frustum red")
        ->type_name("FILE");
    app.add_option("--size", size, "width and height in pixels (1..16384, default 512)")
        ->type_name("N")
        ->transform(cli::integer_in(1, 16384));
    app.add_option("--device", options.device,
                   "the Vulkan device, by index or name (default: BROADPHASE_DEVICE, or the "
                   "first discrete GPU)")
        ->type_name("NAME");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return cli::report(app, e);
    }
    options.width = options.height = size;
    const bool cull = !no_cull;

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
