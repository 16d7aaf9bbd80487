// `broadphase bench cull`: per-stage GPU times (timestamp queries, median of R runs) of the
// frustum cull of gpu::Culler's host helper: LBVH build (Karras 2012), hierarchical cull,
// compaction, order sort (near-child-first ranks or exact distances) and draw-command emit;
// with --lods (--meshes, --grouped), the emit of per-mesh LOD draws (gpu::Culler::cull_lods,
// the grouping per mesh timed with the emit); with --occlusion, the cull against a depth
// pyramid (gpu::Culler::cull_occluded; a depth file, or `walls`: a built-in image).
// Beside the times, the instruments of the pairs bench (gpu::Culler::last_report): per stage
// the dispatches, the bytes read and written by the kernels' documented traffic, GB/s and the
// fraction of the copy kernel's bandwidth, and the traversal's exact visit count; with --json
// one object (device, scene, copy bandwidth, a `stages` list) instead of the table.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "broadphase/frustum.hpp"
#include "broadphase/occlusion.hpp"
#include "broadphase/scene.hpp"
#include "io.hpp"
#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu/culler.hpp"
#endif

namespace broadphase::tool {

namespace {

// The default camera: outside the scene's bounds, looking at a point near its centre, seeing
// part of it (the first camera of the cull tests). Unused in a build without GPU support.
[[maybe_unused]] Camera default_camera(const std::vector<Box>& boxes) {
    const Box bounds = bounds_of(boxes);
    const Vec3 c{(bounds.min.x + bounds.max.x) / 2, (bounds.min.y + bounds.max.y) / 2,
                 (bounds.min.z + bounds.max.z) / 2};
    const float size = std::max({bounds.max.x - bounds.min.x, bounds.max.y - bounds.min.y,
                                 bounds.max.z - bounds.min.z, 1e-3f});
    return {{c.x + 0.8f * size, c.y + 0.5f * size, c.z + size},
            {c.x + 0.1f * size, c.y, c.z},
            {0, 1, 0},
            35,
            1.5f,
            1e-3f * size,
            4 * size};
}

// `camera` turned by `radians` about its up axis through its target (Rodrigues' rotation).
[[maybe_unused]] Camera turned(const Camera& camera, double radians) {
    const Vec3 u = camera.up;
    const double len = std::sqrt(double(u.x) * u.x + double(u.y) * u.y + double(u.z) * u.z);
    const double k[3] = {u.x / len, u.y / len, u.z / len};
    const double v[3] = {camera.eye.x - camera.target.x, camera.eye.y - camera.target.y,
                         camera.eye.z - camera.target.z};
    const double c = std::cos(radians), s = std::sin(radians);
    const double dot = k[0] * v[0] + k[1] * v[1] + k[2] * v[2];
    const double cross[3] = {k[1] * v[2] - k[2] * v[1], k[2] * v[0] - k[0] * v[2],
                             k[0] * v[1] - k[1] * v[0]};
    Camera out = camera;
    out.eye = {
        static_cast<float>(camera.target.x + v[0] * c + cross[0] * s + k[0] * dot * (1 - c)),
        static_cast<float>(camera.target.y + v[1] * c + cross[1] * s + k[1] * dot * (1 - c)),
        static_cast<float>(camera.target.z + v[2] * c + cross[2] * s + k[2] * dot * (1 - c))};
    return out;
}

// The built-in depth image of `--occlusion walls`: 512 x 512, far everywhere but a wall over
// the middle half of the image (x and y in [128, 384)) at the depth of the median centre of the
// boxes the camera sees, so that about the farther half of what is behind it is hidden.
[[maybe_unused]] Result<DepthPyramid> wall_depth(std::span<const Box> boxes, const Frustum& f,
                                                 const std::array<float, 16>& m) {
    std::vector<float> depths;
    for (std::uint32_t id : cull_brute_force(f, boxes)) {
        const Box& b = boxes[id];
        const double p[3] = {(double(b.min.x) + b.max.x) / 2, (double(b.min.y) + b.max.y) / 2,
                             (double(b.min.z) + b.max.z) / 2};
        double c[4];
        for (int r = 0; r < 4; ++r)
            c[r] = m[r] * p[0] + m[4 + r] * p[1] + m[8 + r] * p[2] + m[12 + r];
        if (c[3] > 0 && c[2] / c[3] >= 0 && c[2] / c[3] <= 1) depths.push_back(float(c[2] / c[3]));
    }
    std::nth_element(depths.begin(), depths.begin() + depths.size() / 2, depths.end());
    const float wall = depths.empty() ? 1.0f : depths[depths.size() / 2];
    constexpr std::uint32_t kSize = 512;
    std::vector<float> image(kSize * kSize, 1.0f);
    for (std::uint32_t y = kSize / 4; y < 3 * kSize / 4; ++y)
        for (std::uint32_t x = kSize / 4; x < 3 * kSize / 4; ++x) image[y * kSize + x] = wall;
    return DepthPyramid::build(kSize, kSize, image);
}

#ifdef BROADPHASE_HAS_GPU
// What every mode of the cull bench shares: the scene and its view, the device and its culler,
// the warm-up before each timed run, and the instruments of each timed run.
struct CullBench {
    const BenchCullOptions& args;
    const Scene& scene;
    const Camera& camera;
    const Frustum& frustum;
    CullOrder order;
    int repeat;
    bool json;  // one JSON object on stdout, nothing else
    gpu::Context& context;
    gpu::Culler& culler;
    BenchWarmUp& warm;
    std::vector<std::vector<gpu::StageReport>> reports;

    // The JSON object's opening fields: the device, the scene and the mode's own.
    void open_json(const char* mode) const {
        const gpu::DeviceInfo& info = context.info();
        print_device_json(info);
        std::printf(
            "\"scene\": \"%s\", \"boxes\": %zu, \"mode\": \"%s\", \"order\": \"%s\", "
            "\"sort_path\": \"%s\", \"runs\": %d, ",
            json_escape(scene.name).c_str(), scene.boxes.size(), mode,
            name_of(order_names(), args.order).c_str(), gpu::sort_path_name(info.sort_path),
            repeat);
    }
    std::uint64_t last_visits() const {
        auto visits = culler.last_visits();
        return visits ? visits.value() : 0;
    }
    // The last timed run's instruments, kept for median_stages.
    Status keep_report() {
        auto report = last_report(culler);
        if (!report) return report.error();
        reports.push_back(std::move(report.value()));
        return Status::success();
    }
    // After the timed runs (and their validation check): the copy kernel's bandwidth.
    Result<gpu::CopyBandwidth> copy_bandwidth() {
        if (Status s = warm.before_run(); !s) return s.error();
        return gpu::measure_copy_bandwidth(context);
    }
};

// --views: the cull of each view's frustum alone against one cull of all views at once.
struct ViewsRuns {
    std::vector<double> sep_traversal, sep_total, joint_traversal, joint_total;
    std::vector<std::size_t> seen;  // visible per view, the last run's
};

// V views around the target: the V culls one after another (cull(): each builds the tree
// again; only the cull stages are compared) against one cull_views (one traversal).
Result<ViewsRuns> measure_views(CullBench& b, const std::vector<Frustum>& frusta) {
    ViewsRuns out;
    for (int r = 0; r < b.repeat + 1; ++r) {
        double traversal = 0, total = 0;
        out.seen.clear();
        for (const Frustum& f : frusta) {
            if (Status s = b.warm.before_run(); !s) return s.error();
            auto ids = b.culler.cull(b.scene.boxes, f, b.order);
            if (!ids) return ids.error();
            out.seen.push_back(ids->size());
            traversal += b.culler.last_times().cull;
            total += b.culler.last_times().cull_total();
        }
        if (Status s = b.warm.before_run(); !s) return s.error();
        auto joint = b.culler.cull_views(b.scene.boxes, frusta, b.order);
        if (!joint) return joint.error();
        for (std::size_t v = 0; v < frusta.size(); ++v) {
            if ((*joint)[v].size() != out.seen[v])
                return Error{ErrorCode::invariant_violated,
                             "view " + std::to_string(v) + ": the joint cull saw another count"};
        }
        if (r == 0) continue;  // warm-up
        out.sep_traversal.push_back(traversal);
        out.sep_total.push_back(total);
        out.joint_traversal.push_back(b.culler.last_times().cull);
        out.joint_total.push_back(b.culler.last_times().cull_total());
        if (Status s = b.keep_report(); !s) return s.error();
    }
    return out;
}

void print_views(const CullBench& b, const ViewsRuns& runs,
                 const std::vector<gpu::StageReport>& stages, const gpu::CopyBandwidth& copy) {
    if (b.json) {
        b.open_json("views");
        std::printf("\"views\": %u, \"visible\": [", b.args.views);
        for (std::size_t v = 0; v < runs.seen.size(); ++v)
            std::printf("%s%zu", v ? ", " : "", runs.seen[v]);
        std::printf("], \"visits\": %llu, ", static_cast<unsigned long long>(b.last_visits()));
        print_stages_json(stages, copy);
        return;
    }
    std::printf("  %-38s %10.3f ms\n", "traversal, one per view (sum)", median(runs.sep_traversal));
    std::printf("  %-38s %10.3f ms\n", "traversal, all views at once",
                median(runs.joint_traversal));
    std::printf("  %-38s %10.3f ms\n", "cull total, one per view (sum)", median(runs.sep_total));
    std::printf("  %-38s %10.3f ms\n", "cull total, all views at once", median(runs.joint_total));
    std::string counts;
    for (std::size_t v = 0; v < runs.seen.size(); ++v)
        counts.append(v ? "," : "").append(std::to_string(runs.seen[v]));
    std::printf("visible per view: %s\n", counts.c_str());
    print_copy_line(copy);
    std::printf("instruments of the cull of all views at once (median over %d runs):\n", b.repeat);
    print_stage_rows(stages, copy, 26);
    std::printf("visits: %llu (internal nodes the traversal expanded, all views)\n",
                static_cast<unsigned long long>(b.last_visits()));
}

int run_views(CullBench& b) {
    std::vector<Frustum> frusta;
    for (std::uint32_t v = 0; v < b.args.views; ++v) {
        auto f = Frustum::from_camera(turned(b.camera, 2 * 3.14159265358979 * v / b.args.views));
        if (!f) return fail(f.error().message);
        frusta.push_back(f.value());
    }
    if (!b.json)
        std::printf("views: %u, the camera turned by 360/%u degrees about its up axis each\n",
                    b.args.views, b.args.views);
    auto runs = measure_views(b, frusta);
    if (!runs) return fail(runs.error().message);
    if (int status = validation_check(b.context); status != 0) return status;
    auto copy = b.copy_bandwidth();
    if (!copy) return fail(copy.error().message);
    print_views(b, runs.value(), median_stages(b.reports), copy.value());
    return 0;
}

// The one-view modes: a frustum cull, its LOD draws (--lods) or its cull against a depth
// pyramid (--occlusion).
struct OneView {
    bool lods = false;
    std::vector<gpu::Mesh> meshes;            // --lods
    std::vector<std::uint32_t> mesh_ids;      // --lods
    std::optional<DepthPyramid> depth;        // --occlusion
    std::array<float, 16> view_projection{};  // --occlusion
};

struct OneViewRuns {
    std::vector<gpu::CullTimes> times;  // per timed run
    std::size_t visible = 0;
    double wall = 0;  // seconds, over the timed runs
};

Result<OneViewRuns> measure_one_view(CullBench& b, const OneView& view) {
    OneViewRuns out;
    for (int r = 0; r < b.repeat + 1; ++r) {  // the first run warms up and sizes the buffers
        if (Status s = b.warm.before_run(); !s) return s.error();
        const auto start = std::chrono::steady_clock::now();
        std::size_t got = 0;
        if (view.lods) {
            auto draws = b.culler.cull_lods(b.scene.boxes, b.frustum, b.order, view.meshes,
                                            view.mesh_ids, b.args.grouped);
            if (!draws) return draws.error();
            got = draws->size();
        } else if (view.depth) {
            auto ids = b.culler.cull_occluded(b.scene.boxes, b.frustum, b.order, *view.depth,
                                              view.view_projection);
            if (!ids) return ids.error();
            got = ids->size();
        } else {
            auto ids = b.culler.cull(b.scene.boxes, b.frustum, b.order);
            if (!ids) return ids.error();
            got = ids->size();
        }
        const double t =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        out.visible = got;
        if (r > 0) {
            out.times.push_back(b.culler.last_times());
            out.wall += t;
            if (Status s = b.keep_report(); !s) return s.error();
        }
    }
    return out;
}

void print_one_view(const CullBench& b, const OneView& view, const OneViewRuns& runs,
                    const std::vector<gpu::StageReport>& stages, const gpu::CopyBandwidth& copy) {
    const bool lods = view.lods, occlusion = view.depth.has_value();
    const std::size_t in_frustum =
        occlusion ? cull_brute_force(b.frustum, b.scene.boxes).size() : 0;
    if (b.json) {
        b.open_json(lods ? "lods" : occlusion ? "occlusion" : "frustum");
        if (lods)
            std::printf("\"meshes\": %u, \"lods\": %zu, \"grouped\": %s, ", b.args.meshes,
                        b.args.lods.size() + 1, b.args.grouped ? "true" : "false");
        if (occlusion)
            std::printf("\"occlusion\": \"%s\", \"in_frustum\": %zu, ",
                        json_escape(b.args.occlusion).c_str(), in_frustum);
        std::printf("\"visible\": %zu, \"visits\": %llu, ", runs.visible,
                    static_cast<unsigned long long>(b.last_visits()));
        print_stages_json(stages, copy);
        return;
    }
    print_copy_line(copy);
    print_stage_rows(stages, copy, 18);
    auto over_runs = [&](auto get) {
        std::vector<double> v;
        for (const gpu::CullTimes& t : runs.times) v.push_back(get(t));
        return median(std::move(v));
    };
    std::printf("  %-18s %10.3f ms\n", "cull total",
                over_runs([](const gpu::CullTimes& t) { return t.cull_total(); }));
    std::printf("  %-18s %10.3f ms\n", "gpu total",
                over_runs([](const gpu::CullTimes& t) { return t.total(); }));
    std::printf("visible: %zu\n", runs.visible);
    std::printf("visits: %llu (internal nodes the traversal expanded)\n",
                static_cast<unsigned long long>(b.last_visits()));
    if (occlusion) {
        std::printf("in the frustum: %zu (the depth image hides %zu)\n", in_frustum,
                    in_frustum - runs.visible);
    }
    std::printf("host wall per run (upload, build, cull, download): %.3f ms\n",
                runs.wall / b.repeat * 1e3);
}

// The text output's opening lines: device, warm-up, scene and camera.
void print_heading(const CullBench& b) {
    const gpu::DeviceInfo& info = b.context.info();
    std::printf("device: %s (%s), subgroup size %u\n", info.name.c_str(), info.driver.c_str(),
                info.subgroup_size);
    b.warm.print();
    std::printf("scene: %s, %zu boxes, order %s, %d runs (median per stage)\n",
                b.scene.name.c_str(), b.scene.boxes.size(),
                name_of(order_names(), b.args.order).c_str(), b.repeat);
    const Camera& c = b.camera;
    std::printf("camera: %g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g\n", c.eye.x, c.eye.y, c.eye.z,
                c.target.x, c.target.y, c.target.z, c.up.x, c.up.y, c.up.z, c.fovy_deg, c.aspect,
                c.near, c.far);
}

// The one-view mode's --lods and --occlusion inputs, checked, and their lines of the text
// output; an exit status when they are refused.
std::optional<int> read_one_view(const CullBench& b, OneView& view) {
    const BenchCullOptions& args = b.args;
    const bool lods = !args.lods.empty();
    if (!lods && (args.has_meshes || args.grouped))
        return fail("--meshes and --grouped need --lods");
    if (lods) {
        view.lods = true;
        view.meshes = lod_meshes(args.lods, args.meshes);
        view.mesh_ids = lod_mesh_ids(args.meshes, b.scene.boxes.size());
        if (!b.json)
            std::printf("lods: %u meshes of %zu LODs, %s\n", args.meshes, args.lods.size() + 1,
                        args.grouped ? "grouped per mesh" : "flat");
    }
    const bool occlusion = !args.occlusion.empty();
    if (occlusion && (lods || args.has_views))
        return fail("--occlusion cannot be combined with --lods or --views");
    view.view_projection = b.camera.view_projection();
    if (occlusion) {
        auto read = args.occlusion == "walls"
                        ? wall_depth(b.scene.boxes, b.frustum, view.view_projection)
                        : read_depth_file(args.occlusion);
        if (!read) return fail(read.error().message);
        view.depth = std::move(read.value());
        if (!b.json)
            std::printf("occlusion: %s, %u x %u depth pyramid of %zu levels\n",
                        args.occlusion.c_str(), view.depth->width(), view.depth->height(),
                        view.depth->level_count());
    }
    if (b.context.info().timestamp_period_ns == 0 && !b.json)
        std::printf("warning: this queue has no timestamps\n");
    if (args.has_views && lods) return fail("--views and --lods cannot be combined");
    return std::nullopt;
}
#endif

}  // namespace

void add_bench_cull(CLI::App& c, BenchCullOptions& o) {
    add_bench_gpu_options(c, o.common);
    add_bench_repeat(c, o.repeat);
    c.add_option_function<std::string>(
         "--camera",
         [&o](const std::string& text) {
             auto camera = parse_camera(text);
             if (!camera) throw CLI::ValidationError("--camera", camera.error().message);
             o.camera = camera.value();
         },
         "the camera (default: outside the scene, seeing part of it); "
         "eye(3),target(3),up(3),fovy_deg,aspect,near,far")
        ->type_name("C");
    add_order(c, o.order);
    const std::vector<CLI::Option*> lods = add_lods(c, o.lods, o.meshes, o.grouped);
    c.add_option("--occlusion", o.occlusion,
                 "also cull against a depth image: a depth file (docs/occlusion.md) or `walls` "
                 "(512 x 512, a wall over the middle half at the median visible depth)")
        ->type_name("DEPTHFILE");
    CLI::Option* views =
        cli::add_integer(c, "--views", o.views, "V", 2, 8,
                         "V views (2..8: the camera turned by 360/V degrees about its up axis "
                         "each): the V culls one after another against one cull of all V (one "
                         "traversal)");
    c.final_callback([&o, meshes = lods[1], views] {
        o.has_meshes = meshes->count() > 0;
        o.has_views = views->count() > 0;
    });
}

#ifdef BROADPHASE_HAS_GPU
int run_bench(const BenchCullOptions& args) {
    auto scene = load_input_scene(args.common.scene);
    if (!scene) return fail(scene.error().message);
    const Camera camera = args.camera ? *args.camera : default_camera(scene->boxes);
    auto frustum = Frustum::from_camera(camera);
    if (!frustum) return fail(frustum.error().message);
    auto context = open_context(args.common.gpu);
    if (!context) return fail(context.error().message);
    auto culler = gpu::Culler::create(*context.value());
    if (!culler) return fail(culler.error().message);
    auto warm = BenchWarmUp::create(args.common.warm_up_ms, *context.value());
    if (!warm) return fail(warm.error().message);
    CullBench b{args,        scene.value(),    camera,           frustum.value(), args.order,
                args.repeat, args.common.json, *context.value(), *culler.value(), warm.value(),
                {}};
    if (!b.json) print_heading(b);
    OneView view;
    if (std::optional<int> refused = read_one_view(b, view)) return *refused;
    if (args.has_views) return run_views(b);
    auto runs = measure_one_view(b, view);
    if (!runs) return fail(runs.error().message);
    if (int status = validation_check(b.context); status != 0) return status;
    auto copy = b.copy_bandwidth();
    if (!copy) return fail(copy.error().message);
    print_one_view(b, view, runs.value(), median_stages(b.reports), copy.value());
    return 0;
}
#endif

}  // namespace broadphase::tool
