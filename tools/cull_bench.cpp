// `broadphase bench --cull`: per-stage GPU times (timestamp queries, median of R runs) of the
// frustum cull of gpu::Culler's host helper: LBVH build (Karras 2012), hierarchical cull,
// compaction, order sort (near-child-first ranks or exact distances) and draw-command emit;
// with --lods (--meshes, --grouped), the emit of per-mesh LOD draws (gpu::Culler::cull_lods,
// the grouping per mesh timed with the emit).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "broadphase/frustum.hpp"
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
    Box bounds{{0, 0, 0}, {1, 1, 1}};
    if (!boxes.empty()) {
        bounds = boxes[0];
        for (const Box& b : boxes) bounds = merge(bounds, b);
    }
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
    std::printf("device: %s (%s), subgroup size %u\n", info.name.c_str(), info.driver.c_str(),
                info.subgroup_size);
    std::printf("scene: %s, %zu boxes, order %s, %d runs (median per stage)\n", scene->name.c_str(),
                scene->boxes.size(), order_name.c_str(), repeat);
    std::printf("camera: %g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g\n", camera.eye.x, camera.eye.y,
                camera.eye.z, camera.target.x, camera.target.y, camera.target.z, camera.up.x,
                camera.up.y, camera.up.z, camera.fovy_deg, camera.aspect, camera.near, camera.far);
    const bool lods = args.has("lods");
    if (!lods && (args.has("meshes") || args.has("grouped")))
        return fail("--meshes and --grouped need --lods");
    const std::vector<gpu::Mesh> meshes = lods ? lod_meshes(args) : std::vector<gpu::Mesh>();
    const std::vector<std::uint32_t> mesh_ids =
        lods ? lod_mesh_ids(args, scene->boxes.size()) : std::vector<std::uint32_t>();
    if (lods)
        std::printf("lods: %u meshes of %zu LODs, %s\n", args.meshes, args.lods.size() + 1,
                    args.grouped ? "grouped per mesh" : "flat");
    if (info.timestamp_period_ns == 0) std::printf("warning: this queue has no timestamps\n");
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
        std::printf("views: %u, the camera turned by 360/%u degrees about its up axis each\n",
                    args.views, args.views);
        std::vector<double> sep_traversal, sep_total, joint_traversal, joint_total;
        std::vector<std::size_t> seen;
        for (int r = 0; r < repeat + 1; ++r) {
            double traversal = 0, total = 0;
            seen.clear();
            for (const Frustum& f : frusta) {
                auto ids = culler.value()->cull(scene->boxes, f, order);
                if (!ids) return fail(ids.error().message);
                seen.push_back(ids->size());
                traversal += culler.value()->last_times().cull;
                total += culler.value()->last_times().cull_total();
            }
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
        }
        if (context.value()->validation_errors() > 0)
            return fail(std::to_string(context.value()->validation_errors()) +
                        " Vulkan validation errors (printed above)");
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
        return 0;
    }

    std::vector<gpu::CullTimes> runs;
    std::size_t visible = 0;
    double wall = 0;
    for (int r = 0; r < repeat + 1; ++r) {  // the first run warms up and sizes the buffers
        const auto start = std::chrono::steady_clock::now();
        std::size_t got = 0;
        if (lods) {
            auto draws = culler.value()->cull_lods(scene->boxes, frustum.value(), order, meshes,
                                                   mesh_ids, args.grouped);
            if (!draws) return fail(draws.error().message);
            got = draws->size();
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
        }
    }
    if (context.value()->validation_errors() > 0)
        return fail(std::to_string(context.value()->validation_errors()) +
                    " Vulkan validation errors (printed above)");
    auto median = [&](auto get) {
        std::vector<double> v;
        for (const gpu::CullTimes& t : runs) v.push_back(get(t));
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    struct Row {
        const char* name;
        double (*get)(const gpu::CullTimes&);
    };
    const Row rows[] = {
        {"tree build", [](const gpu::CullTimes& t) { return t.build.total(); }},
        {"cull", [](const gpu::CullTimes& t) { return t.cull; }},
        {"compact", [](const gpu::CullTimes& t) { return t.compact; }},
        {"order sort", [](const gpu::CullTimes& t) { return t.sort; }},
        {lods ? "emit (LODs)" : "emit", [](const gpu::CullTimes& t) { return t.emit; }},
        {"cull total", [](const gpu::CullTimes& t) { return t.cull_total(); }},
        {"gpu total", [](const gpu::CullTimes& t) { return t.total(); }},
    };
    for (const Row& row : rows) std::printf("  %-12s %10.3f ms\n", row.name, median(row.get));
    std::printf("visible: %zu\n", visible);
    std::printf("host wall per run (upload, build, cull, download): %.3f ms\n",
                wall / repeat * 1e3);
    return 0;
#else
    (void)args;
    return fail("bench --cull needs the GPU build");
#endif
}

}  // namespace broadphase::tool
