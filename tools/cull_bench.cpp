// `broadphase bench --cull`: per-stage GPU times (timestamp queries, median of R runs) of the
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

#include "broadphase/frustum.hpp"
#include "broadphase/occlusion.hpp"
#include "broadphase/scene.hpp"
#include "commands.hpp"
#include "io.hpp"
#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu_cull.hpp"
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

}  // namespace

int run_cull_bench(const Args& args) {
#ifdef BROADPHASE_HAS_GPU
    auto scene = load_input_scene(args.scene);
    if (!scene) return fail(scene.error().message);
    const Camera camera = args.has("camera") ? args.camera : default_camera(scene->boxes);
    auto frustum = Frustum::from_camera(camera);
    if (!frustum) return fail(frustum.error().message);
    const std::string& order_name = args.order;
    const CullOrder order = cull_order(args);
    const int repeat = args.has("repeat") ? static_cast<int>(args.repeat) : 5;

    auto context = open_context(args);
    if (!context) return fail(context.error().message);
    const gpu::DeviceInfo& info = context.value()->info();
    auto culler = gpu::Culler::create(*context.value());
    if (!culler) return fail(culler.error().message);
    const bool json = args.json;  // one JSON object on stdout, nothing else
    auto warm = BenchWarmUp::create(args, *context.value());
    if (!warm) return fail(warm.error().message);
    if (!json) {
        std::printf("device: %s (%s), subgroup size %u\n", info.name.c_str(), info.driver.c_str(),
                    info.subgroup_size);
        warm->print();
        std::printf("scene: %s, %zu boxes, order %s, %d runs (median per stage)\n",
                    scene->name.c_str(), scene->boxes.size(), order_name.c_str(), repeat);
        std::printf("camera: %g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g\n", camera.eye.x, camera.eye.y,
                    camera.eye.z, camera.target.x, camera.target.y, camera.target.z, camera.up.x,
                    camera.up.y, camera.up.z, camera.fovy_deg, camera.aspect, camera.near,
                    camera.far);
    }
    const bool lods = args.has("lods");
    if (!lods && (args.has("meshes") || args.has("grouped")))
        return fail("--meshes and --grouped need --lods");
    const std::vector<gpu::Mesh> meshes = lods ? lod_meshes(args) : std::vector<gpu::Mesh>();
    const std::vector<std::uint32_t> mesh_ids =
        lods ? lod_mesh_ids(args, scene->boxes.size()) : std::vector<std::uint32_t>();
    if (lods && !json)
        std::printf("lods: %u meshes of %zu LODs, %s\n", args.meshes, args.lods.size() + 1,
                    args.grouped ? "grouped per mesh" : "flat");
    const bool occlusion = args.has("occlusion");
    if (occlusion && (lods || args.has("views")))
        return fail("--occlusion cannot be combined with --lods or --views");
    const std::array<float, 16> view_projection = camera.view_projection();
    std::optional<DepthPyramid> depth;
    if (occlusion) {
        auto read = args.occlusion == "walls"
                        ? wall_depth(scene->boxes, frustum.value(), view_projection)
                        : read_depth_file(args.occlusion);
        if (!read) return fail(read.error().message);
        depth = std::move(read.value());
        if (!json)
            std::printf("occlusion: %s, %u x %u depth pyramid of %zu levels\n",
                        args.occlusion.c_str(), depth->width(), depth->height(),
                        depth->level_count());
    }
    if (info.timestamp_period_ns == 0 && !json)
        std::printf("warning: this queue has no timestamps\n");
    // The instruments of the timed runs (the median per stage), the copy kernel's bandwidth,
    // and the JSON object's opening fields (device, scene and the mode's own).
    std::vector<std::vector<gpu::StageReport>> reports;
    auto open_json = [&](const char* mode) {
        print_device_json(info);
        std::printf(
            "\"scene\": \"%s\", \"boxes\": %zu, \"mode\": \"%s\", \"order\": \"%s\", "
            "\"sort_path\": \"%s\", \"runs\": %d, ",
            json_escape(scene->name).c_str(), scene->boxes.size(), mode, order_name.c_str(),
            gpu::sort_path_name(info.sort_path), repeat);
    };
    auto last_visits = [&]() -> std::uint64_t {
        auto visits = culler.value()->last_visits();
        return visits ? visits.value() : 0;
    };
    auto median_of = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };

    if (args.has("views")) {
        // V views around the target: the V culls one after another (cull(): each builds the
        // tree again; only the cull stages are compared) against one cull_views (one traversal).
        if (lods) return fail("--views and --lods cannot be combined");
        std::vector<Frustum> frusta;
        for (std::uint32_t v = 0; v < args.views; ++v) {
            auto f = Frustum::from_camera(turned(camera, 2 * 3.14159265358979 * v / args.views));
            if (!f) return fail(f.error().message);
            frusta.push_back(f.value());
        }
        if (!json)
            std::printf("views: %u, the camera turned by 360/%u degrees about its up axis each\n",
                        args.views, args.views);
        std::vector<double> sep_traversal, sep_total, joint_traversal, joint_total;
        std::vector<std::size_t> seen;
        for (int r = 0; r < repeat + 1; ++r) {
            double traversal = 0, total = 0;
            seen.clear();
            for (const Frustum& f : frusta) {
                if (Status s = warm->before_run(); !s) return fail(s.error().message);
                auto ids = culler.value()->cull(scene->boxes, f, order);
                if (!ids) return fail(ids.error().message);
                seen.push_back(ids->size());
                traversal += culler.value()->last_times().cull;
                total += culler.value()->last_times().cull_total();
            }
            if (Status s = warm->before_run(); !s) return fail(s.error().message);
            auto joint = culler.value()->cull_views(scene->boxes, frusta, order);
            if (!joint) return fail(joint.error().message);
            for (std::size_t v = 0; v < frusta.size(); ++v) {
                if ((*joint)[v].size() != seen[v])
                    return fail("view " + std::to_string(v) + ": the joint cull saw another count");
            }
            if (r == 0) continue;  // warm-up
            sep_traversal.push_back(traversal);
            sep_total.push_back(total);
            joint_traversal.push_back(culler.value()->last_times().cull);
            joint_total.push_back(culler.value()->last_times().cull_total());
            auto report = culler.value()->last_report();
            if (!report) return fail(report.error().message);
            reports.push_back(std::move(report.value()));
        }
        if (int status = validation_check(*context.value()); status != 0) return status;
        if (Status s = warm->before_run(); !s) return fail(s.error().message);
        auto copy = gpu::measure_copy_bandwidth(*context.value());
        if (!copy) return fail(copy.error().message);
        const std::vector<gpu::StageReport> stages = median_stages(reports);
        if (json) {
            open_json("views");
            std::printf("\"views\": %u, \"visible\": [", args.views);
            for (std::size_t v = 0; v < seen.size(); ++v)
                std::printf("%s%zu", v ? ", " : "", seen[v]);
            std::printf("], \"visits\": %llu, ", static_cast<unsigned long long>(last_visits()));
            print_stages_json(stages, copy.value());
            return 0;
        }
        std::printf("  %-38s %10.3f ms\n", "traversal, one per view (sum)",
                    median_of(sep_traversal));
        std::printf("  %-38s %10.3f ms\n", "traversal, all views at once",
                    median_of(joint_traversal));
        std::printf("  %-38s %10.3f ms\n", "cull total, one per view (sum)", median_of(sep_total));
        std::printf("  %-38s %10.3f ms\n", "cull total, all views at once", median_of(joint_total));
        std::string counts;
        for (std::size_t v = 0; v < seen.size(); ++v)
            counts += (v ? "," : "") + std::to_string(seen[v]);
        std::printf("visible per view: %s\n", counts.c_str());
        print_copy_line(copy.value());
        std::printf("instruments of the cull of all views at once (median over %d runs):\n",
                    repeat);
        print_stage_rows(stages, copy.value(), 26);
        std::printf("visits: %llu (internal nodes the traversal expanded, all views)\n",
                    static_cast<unsigned long long>(last_visits()));
        return 0;
    }

    std::vector<gpu::CullTimes> runs;
    std::size_t visible = 0;
    double wall = 0;
    for (int r = 0; r < repeat + 1; ++r) {  // the first run warms up and sizes the buffers
        if (Status s = warm->before_run(); !s) return fail(s.error().message);
        const auto start = std::chrono::steady_clock::now();
        std::size_t got = 0;
        if (lods) {
            auto draws = culler.value()->cull_lods(scene->boxes, frustum.value(), order, meshes,
                                                   mesh_ids, args.grouped);
            if (!draws) return fail(draws.error().message);
            got = draws->size();
        } else if (occlusion) {
            auto ids = culler.value()->cull_occluded(scene->boxes, frustum.value(), order, *depth,
                                                     view_projection);
            if (!ids) return fail(ids.error().message);
            got = ids->size();
        } else {
            auto ids = culler.value()->cull(scene->boxes, frustum.value(), order);
            if (!ids) return fail(ids.error().message);
            got = ids->size();
        }
        const double t =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        visible = got;
        if (r > 0) {
            runs.push_back(culler.value()->last_times());
            wall += t;
            auto report = culler.value()->last_report();
            if (!report) return fail(report.error().message);
            reports.push_back(std::move(report.value()));
        }
    }
    if (int status = validation_check(*context.value()); status != 0) return status;
    auto median = [&](auto get) {
        std::vector<double> v;
        for (const gpu::CullTimes& t : runs) v.push_back(get(t));
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    if (Status s = warm->before_run(); !s) return fail(s.error().message);
    auto copy = gpu::measure_copy_bandwidth(*context.value());
    if (!copy) return fail(copy.error().message);
    const std::vector<gpu::StageReport> stages = median_stages(reports);
    const std::size_t in_frustum =
        occlusion ? cull_brute_force(frustum.value(), scene->boxes).size() : 0;
    if (json) {
        open_json(lods ? "lods" : occlusion ? "occlusion" : "frustum");
        if (lods)
            std::printf("\"meshes\": %u, \"lods\": %zu, \"grouped\": %s, ", args.meshes,
                        args.lods.size() + 1, args.grouped ? "true" : "false");
        if (occlusion)
            std::printf("\"occlusion\": \"%s\", \"in_frustum\": %zu, ",
                        json_escape(args.occlusion).c_str(), in_frustum);
        std::printf("\"visible\": %zu, \"visits\": %llu, ", visible,
                    static_cast<unsigned long long>(last_visits()));
        print_stages_json(stages, copy.value());
        return 0;
    }
    print_copy_line(copy.value());
    print_stage_rows(stages, copy.value(), 18);
    struct Row {
        const char* name;
        double (*get)(const gpu::CullTimes&);
    };
    const Row rows[] = {
        {"cull total", [](const gpu::CullTimes& t) { return t.cull_total(); }},
        {"gpu total", [](const gpu::CullTimes& t) { return t.total(); }},
    };
    for (const Row& row : rows) std::printf("  %-18s %10.3f ms\n", row.name, median(row.get));
    std::printf("visible: %zu\n", visible);
    std::printf("visits: %llu (internal nodes the traversal expanded)\n",
                static_cast<unsigned long long>(last_visits()));
    if (occlusion) {
        std::printf("in the frustum: %zu (the depth image hides %zu)\n", in_frustum,
                    in_frustum - visible);
    }
    std::printf("host wall per run (upload, build, cull, download): %.3f ms\n",
                wall / repeat * 1e3);
    return 0;
#else
    (void)args;
    return fail("bench --cull needs the GPU build");
#endif
}

}  // namespace broadphase::tool
