// `broadphase cull`: the boxes a camera sees, one id per line, front to back (exact order:
// by distance from the eye, then id) or in the method's approximate order; gpu_lbvh
// (gpu::Culler), sphere_bvh (SphereBvh::cull_front_to_back) or brute_force (the oracle). With
// several cameras (up to 8), each view's ids follow a line "view K"; the methods build their
// tree once (gpu::Culler::cull_views). With --lods (gpu_lbvh), each line is "id lod"
// (gpu::Culler::cull_lods); with --grouped, each mesh's draws follow a line "mesh M". With
// --occlusion DEPTHFILE (one camera), boxes the depth image hides are culled too: gpu_lbvh by
// the GPU's hierarchical test (gpu::Culler::cull_occluded), the CPU methods by occluded() on
// each box they see.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/occlusion.hpp"
#include "broadphase/scene.hpp"
#include "commands.hpp"
#include "io.hpp"
// The sphere BVH's cull is not on the Structure interface; reach the reference directly.
#include "../cpu_reference/sphere_bvh.hpp"
#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu/culler.hpp"
#endif

namespace broadphase::tool {

#ifdef BROADPHASE_HAS_GPU
std::vector<gpu::Mesh> lod_meshes(const std::vector<float>& lods, std::uint32_t meshes) {
    gpu::Mesh mesh;
    mesh.lods.push_back({36, 0, 0, 0});
    for (std::size_t k = 0; k < lods.size(); ++k)
        mesh.lods.push_back({36, static_cast<std::uint32_t>(36 * (k + 1)), 0, lods[k]});
    return std::vector<gpu::Mesh>(meshes, mesh);
}

std::vector<std::uint32_t> lod_mesh_ids(std::uint32_t meshes, std::size_t n) {
    std::vector<std::uint32_t> ids(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = static_cast<std::uint32_t>(i % meshes);
    return ids;
}
#endif

int run_cull(const Args& args) {
    std::vector<Frustum> frusta;
    for (const Camera& camera : args.cameras) {
        auto frustum = Frustum::from_camera(camera);
        if (!frustum) return fail(frustum.error().message);
        frusta.push_back(frustum.value());
    }
    const CullOrder order = args.order;
    const std::string method = args.has("method") ? args.method : "gpu_lbvh";
    if (Status s = check_gpu_options(args, method); !s) return fail(s.error().message);
    const bool lods = args.has("lods");
    if (!lods && (args.has("meshes") || args.has("grouped")))
        return fail("--meshes and --grouped need --lods");
    if (lods && method != "gpu_lbvh") return fail("--lods needs --method gpu_lbvh");
    const bool occlusion = args.has("occlusion");
    if (occlusion && (frusta.size() != 1 || lods))
        return fail("--occlusion takes one --camera and no --lods");
    auto scene = load_input_scene(args.scene);
    if (!scene) {
        const Error& e = scene.error();
        return fail(e.message);
    }
    std::optional<DepthPyramid> depth;
    if (occlusion) {
        auto read = read_depth_file(args.occlusion);
        if (!read) return fail(read.error().message);
        depth = std::move(read.value());
    }
    const std::array<float, 16> view_projection = args.cameras.front().view_projection();
    std::vector<std::vector<std::uint32_t>> views;
    if (method == "brute_force") {
        for (const Frustum& f : frusta) views.push_back(cull_brute_force(f, scene->boxes));
    } else if (method == "sphere_bvh") {
        SphereBvh bvh;
        if (Status s = bvh.build(scene->boxes); !s) return fail(s.error().message);
        for (const Frustum& f : frusta) {
            std::vector<std::uint32_t>& ids = views.emplace_back();
            bvh.cull_front_to_back(f, ids);
            if (order == CullOrder::exact) {
                std::vector<std::pair<float, std::uint32_t>> keyed;
                for (std::uint32_t id : ids)
                    keyed.push_back({point_box_distance(f.eye, scene->boxes[id]), id});
                std::sort(keyed.begin(), keyed.end());
                for (std::size_t k = 0; k < keyed.size(); ++k) ids[k] = keyed[k].second;
            }
        }
    } else {  // gpu_lbvh (the command line allows no other)
#ifdef BROADPHASE_HAS_GPU
        auto context = open_context(args);
        if (!context) return fail(context.error().message);
        auto culler = gpu::Culler::create(*context.value());
        if (!culler) return fail(culler.error().message);
        if (lods) {
            const std::vector<gpu::Mesh> meshes = lod_meshes(args.lods, args.meshes);
            const std::vector<std::uint32_t> mesh_ids =
                lod_mesh_ids(args.meshes, scene->boxes.size());
            std::string text;
            for (std::size_t v = 0; v < frusta.size(); ++v) {
                auto draws = culler.value()->cull_lods(scene->boxes, frusta[v], order, meshes,
                                                       mesh_ids, args.grouped);
                if (!draws) return fail(draws.error().message);
                if (frusta.size() > 1) text += "view " + std::to_string(v) + "\n";
                for (std::size_t k = 0; k < draws->size(); ++k) {
                    const gpu::CullDraw& d = (*draws)[k];
                    if (args.grouped && (k == 0 || (*draws)[k - 1].mesh != d.mesh))
                        text += "mesh " + std::to_string(d.mesh) + "\n";
                    text += std::to_string(d.id) + " " + std::to_string(d.lod) + "\n";
                }
            }
            if (context.value()->validation_errors() > 0)
                return fail(std::to_string(context.value()->validation_errors()) +
                            " Vulkan validation errors (printed above)");
            Output out(args);
            out.write(text);
            if (Status s = out.finish(); !s) return fail(s.error().message);
            return 0;
        }
        if (occlusion) {
            auto got = culler.value()->cull_occluded(scene->boxes, frusta.front(), order, *depth,
                                                     view_projection);
            if (!got) return fail(got.error().message);
            views.push_back(std::move(got.value()));
        } else {
            auto got = culler.value()->cull_views(scene->boxes, frusta, order);
            if (!got) return fail(got.error().message);
            views = std::move(got.value());
        }
        if (context.value()->validation_errors() > 0)
            return fail(std::to_string(context.value()->validation_errors()) +
                        " Vulkan validation errors (printed above)");
#else
        (void)lods;
        return fail("this build has no GPU support");
#endif
    }
    if (occlusion && method != "gpu_lbvh") {
        std::vector<std::uint32_t>& ids = views.front();
        std::erase_if(ids, [&](std::uint32_t id) {
            return occluded(*depth, view_projection, scene->boxes[id]);
        });
    }
    std::string text;
    for (std::size_t v = 0; v < views.size(); ++v) {
        if (views.size() > 1) text += "view " + std::to_string(v) + "\n";
        for (std::uint32_t id : views[v]) text += std::to_string(id) + "\n";
    }
    Output out(args);
    out.write(text);
    if (Status s = out.finish(); !s) return fail(s.error().message);
    return 0;
}

}  // namespace broadphase::tool
