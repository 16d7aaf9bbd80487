// broadphase_renderer: renders a box scene headlessly with GPU frustum culling and writes the
// frame and a top-down debug view as PNG files; --showcase renders the showcase scene (meshes
// with LODs, walls, ground, shadow cascades, moving instances) and prints per-stage GPU times.
// See docs/renderer.md, "Vulkan renderer example".
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "broadphase/scene.hpp"
#include "cli_options.hpp"
#include "renderer.hpp"
#include "showcase.hpp"

namespace {

using namespace broadphase;

// An option naming a file (shown as FILE in the help).
CLI::Option* add_file(CLI::App& app, const std::string& name, std::string& path,
                      const std::string& description) {
    return app.add_option(name, path, description)->type_name("FILE");
}

int fail(const std::string& message) {
    std::fprintf(stderr, "broadphase_renderer: %s\n", message.c_str());
    return 2;
}

struct ShowcaseArgs {
    std::uint32_t count = 20000, walls = 3, frames = 1, size = 512;
    std::string mesh, out, debug_out, cascade_out;
    renderer::CullMode mode = renderer::CullMode::occlusion;
};

void print_frame(const renderer::Frame& frame, const std::vector<renderer::RenderMesh>& meshes,
                 const std::string& label, std::size_t boxes, std::size_t in_frustum) {
    std::printf("%s: %zu boxes, %zu in the frustum, %zu drawn", label.c_str(), boxes, in_frustum,
                frame.drawn_ids.size());
    if (frame.occlusion_frame > 0)
        std::printf(" (occlusion: phase 1 %u, phase 2 %zu; %zu occlusion-culled)",
                    frame.early_drawn, frame.drawn_ids.size() - frame.early_drawn,
                    in_frustum - frame.drawn_ids.size());
    if (frame.tree_updated) std::printf(" (tree %s)", frame.tree_rebuilt ? "rebuilt" : "refitted");
    std::printf("\n  draws per mesh:");
    for (std::size_t m = 0; m < meshes.size(); ++m)
        std::printf(" %s %u", meshes[m].name.c_str(), frame.mesh_draws[m]);
    std::vector<std::size_t> lods(gpu::kMaxMeshLods, 0);
    for (std::uint32_t lod : frame.drawn_lods)
        if (lod < lods.size()) ++lods[lod];
    std::printf("\n  draws per LOD: 0: %zu, 1: %zu, 2: %zu\n", lods[0], lods[1], lods[2]);
    if (!frame.view_ids.empty()) {
        std::printf("  views culled in one traversal (record_views): camera %zu",
                    frame.view_ids[0].size());
        for (std::size_t v = 1; v < frame.view_ids.size(); ++v)
            std::printf(", cascade %zu: %zu", v - 1, frame.view_ids[v].size());
        std::printf(" visible\n");
    }
    const renderer::FrameTimes& t = frame.times;
    std::printf(
        "  GPU ms: tree update %.3f | %scull %.3f, compact %.3f, sort %.3f, emit (LODs, groups) "
        "%.3f | views %.3f | cascade draw %.3f",
        t.tree, frame.occlusion_frame > 0 ? "phase 1 " : "", t.cull, t.compact, t.sort, t.emit,
        t.views, t.extra_draw);
    if (frame.occlusion_frame > 0)
        std::printf(" | phase 1 draw %.3f | depth copy + pyramid %.3f | phase 2 cull %.3f",
                    t.early_draw, t.pyramid, t.late_cull);
    std::printf(" | %sdraw %.3f\n", frame.occlusion_frame > 0 ? "phase 2 " : "", t.draw);
}

int run_showcase(const ShowcaseArgs& args, const renderer::RendererOptions& base_options) {
    renderer::RendererOptions options = base_options;
    options.width = options.height = args.size;
    std::string scanned_name;
    const std::string mesh_path = args.mesh.empty() ? renderer::default_scanned_mesh() : args.mesh;
    auto meshes = renderer::showcase_meshes(mesh_path, {12.0f, 30.0f}, &scanned_name);
    if (!meshes) return fail(meshes.error().message);
    const renderer::ShowcaseScene scene = renderer::showcase_scene(args.count, args.walls);
    auto made = renderer::Renderer::create(options);
    if (!made) return fail(made.error().message);
    renderer::Renderer& r = **made;
    if (Status s = r.set_meshes(*meshes); !s) return fail(s.error().message);
    std::vector<Box> boxes = renderer::move_showcase(scene, 0);
    if (Status s = r.set_scene(boxes, scene.mesh_ids); !s) return fail(s.error().message);
    std::printf("showcase on %s: %zu boxes (ground, %u walls, %u instances, %zu moving), %ux%u\n",
                r.context().info().name.c_str(), scene.boxes.size(), args.walls, args.count,
                scene.movers.size(), args.size, args.size);
    std::printf("scanned mesh: %s\n", scanned_name.c_str());
    const Camera& camera = scene.camera;
    const std::vector<renderer::ExtraView> cascades = renderer::cascade_views(
        camera, {-0.4f, -1.0f, 0.3f}, {camera.near, 0.1f * camera.far, 0.4f * camera.far},
        bounds_of(scene.boxes));
    renderer::Frame last;
    std::vector<std::uint32_t> in_frustum;
    // Two-phase occlusion's first frame has no history (phase 1 draws the whole frustum): a
    // warm-up frame before the counted ones.
    const bool warm_up = args.mode == renderer::CullMode::occlusion;
    for (std::uint32_t f = warm_up ? 0 : 1; f <= args.frames; ++f) {
        if (f > 1) {
            boxes = renderer::move_showcase(scene, f - 1);
            if (Status s = r.move_boxes(boxes); !s) return fail(s.error().message);
        }
        const bool culled = args.mode != renderer::CullMode::none;
        auto frame = r.render(camera, args.mode,
                              culled ? std::span<const renderer::ExtraView>(cascades)
                                     : std::span<const renderer::ExtraView>());
        if (!frame) return fail(frame.error().message);
        // The frustum's boxes: the camera's view of the shared traversal.
        in_frustum = culled ? frame->view_ids.at(0) : frame->drawn_ids;
        print_frame(*frame, *meshes, f == 0 ? "warm-up frame" : "frame " + std::to_string(f),
                    boxes.size(), in_frustum.size());
        last = std::move(*frame);
    }
    // Occlusion-culled: in the frustum, not drawn.
    std::vector<bool> drawn(boxes.size(), false);
    for (std::uint32_t id : last.drawn_ids) drawn[id] = true;
    std::vector<std::uint32_t> occluded;
    for (std::uint32_t id : in_frustum)
        if (!drawn[id]) occluded.push_back(id);
    if (Status s = tool::write_png(args.out, renderer::frame_image(last)); !s)
        return fail(s.error().message);
    std::printf("frame -> %s\n", args.out.c_str());
    if (Status s = tool::write_png(
            args.debug_out,
            renderer::draw_debug_view(boxes, last.drawn_ids, camera, 768, 768, occluded));
        !s)
        return fail(s.error().message);
    std::printf("top-down debug view -> %s\n", args.debug_out.c_str());
    if (!last.extra_depth.empty()) {
        if (Status s = tool::write_png(
                args.cascade_out, renderer::depth_image(last.extra_depth, last.width, last.height));
            !s)
            return fail(s.error().message);
        std::printf("shadow cascade 0 depth (its visible boxes seen from the light) -> %s\n",
                    args.cascade_out.c_str());
    }
    if (r.validation_errors() > 0)
        return fail(std::to_string(r.validation_errors()) + " Vulkan validation errors");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string scene_spec = "uniform:20000", out = "frame.png", debug_out;
    Camera camera = renderer::default_camera();
    bool no_cull = false;
    std::uint32_t size = 512;
    renderer::RendererOptions options;
    bool showcase = false;
    ShowcaseArgs show;
    std::string cascade_out;
    CLI::App app{
        "Renders a box scene headlessly with the library's GPU frustum culling and "
        "writes the frame as PNG; --showcase renders meshes with LODs, walls, shadow "
        "cascades and moving instances with two-phase occlusion culling",
        "broadphase_renderer"};
    cli::set_conventions(app);
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
    add_file(app, "--out", out, "the frame's PNG file (default " + out + ")");
    add_file(app, "--debug-out", debug_out,
             "also a top-down view: drawn boxes blue, culled grey, the frustum red");
    cli::add_integer(app, "--size", size, "N", 1, 16384,
                     "width and height in pixels (1..16384, default 512)");
    app.add_option("--device", options.device,
                   "the Vulkan device, by index or name (default: BROADPHASE_DEVICE, or the "
                   "first discrete GPU)")
        ->type_name("NAME");
    app.add_flag("--showcase", showcase,
                 "render the showcase: cubes, spheres and a scanned mesh with LODs, walls, a "
                 "ground, two shadow cascades, moving instances; prints per-stage GPU times "
                 "(--out default showcase.png, --debug-out showcase-debug.png)");
    bool no_occlusion = false;
    app.add_flag("--no-occlusion", no_occlusion,
                 "showcase: frustum culling only (default: two-phase occlusion culling as well)");
    cli::add_integer(app, "--count", show.count, "N", 1, 1 << 24,
                     "showcase: instances (default 20000)");
    cli::add_integer(app, "--walls", show.walls, "N", 0, 64,
                     "showcase: walls in front of the camera (default 3)");
    cli::add_integer(
        app, "--frames", show.frames, "N", 1, 100000,
        "showcase: frames to render, the moving instances animated from frame 2 on; with "
        "occlusion culling a warm-up frame comes first (default 1)");
    add_file(app, "--mesh", show.mesh,
             "showcase: the scanned mesh, an OFF file (default: the Stanford bunny of CGAL's "
             "data when the build found it, else a procedural torus knot)");
    add_file(app, "--cascade-out", cascade_out,
             "showcase: the first shadow cascade's depth image, a shadow map (default "
             "showcase-cascade.png)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return cli::report(app, e);
    }
    options.width = options.height = size;
    const bool cull = !no_cull;
    if (showcase) {
        show.size = size;
        show.mode = !cull          ? renderer::CullMode::none
                    : no_occlusion ? renderer::CullMode::frustum
                                   : renderer::CullMode::occlusion;
        show.out = app.count("--out") ? out : "showcase.png";
        show.debug_out = debug_out.empty() ? "showcase-debug.png" : debug_out;
        show.cascade_out = cascade_out.empty() ? "showcase-cascade.png" : cascade_out;
        return run_showcase(show, options);
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
