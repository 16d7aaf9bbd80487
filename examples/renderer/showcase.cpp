// The showcase scene, its meshes and its shadow-cascade light views (see showcase.hpp).
#include "showcase.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "vec_math.hpp"

namespace broadphase::renderer {

namespace {

// Column-major 4x4 product a * b.
std::array<float, 16> multiply(const std::array<float, 16>& a, const std::array<float, 16>& b) {
    std::array<float, 16> out{};
    for (int c = 0; c < 4; ++c)
        for (int r = 0; r < 4; ++r) {
            double sum = 0;
            for (int k = 0; k < 4; ++k) sum += double(a[k * 4 + r]) * double(b[c * 4 + k]);
            out[c * 4 + r] = float(sum);
        }
    return out;
}

Vec3 transform_point(const std::array<float, 16>& m, Vec3 p) {
    return {m[0] * p.x + m[4] * p.y + m[8] * p.z + m[12],
            m[1] * p.x + m[5] * p.y + m[9] * p.z + m[13],
            m[2] * p.x + m[6] * p.y + m[10] * p.z + m[14]};
}

}  // namespace

std::string default_scanned_mesh() {
#ifdef BROADPHASE_RENDERER_SCANNED_MESH
    return BROADPHASE_RENDERER_SCANNED_MESH;
#else
    return {};
#endif
}

Result<std::vector<RenderMesh>> showcase_meshes(const std::string& mesh_path,
                                                std::array<float, 2> lod_distance,
                                                std::string* scanned_name) {
    std::vector<RenderMesh> meshes;
    auto three = [&](MeshData a, MeshData b, MeshData c) {
        return std::vector<MeshLodData>{
            {std::move(a), 0.0f}, {std::move(b), lod_distance[0]}, {std::move(c), lod_distance[1]}};
    };
    meshes.push_back({"cube", {{cube_mesh(), 0.0f}}, {0, 0, 0, 0}});
    meshes.push_back({"sphere",
                      three(uv_sphere(32, 16), uv_sphere(12, 6), uv_sphere(6, 3)),
                      {0.9f, 0.75f, 0.3f, 0.5f}});
    if (!mesh_path.empty()) {
        auto scanned = read_off(mesh_path);
        if (!scanned) return scanned.error();
        MeshData lod1 = cluster_vertices(*scanned, 40), lod2 = cluster_vertices(*scanned, 12);
        if (scanned_name)
            *scanned_name = mesh_path + " (" + std::to_string(scanned->triangle_count()) + ", " +
                            std::to_string(lod1.triangle_count()) + ", " +
                            std::to_string(lod2.triangle_count()) + " triangles)";
        meshes.push_back({"scanned",
                          three(std::move(*scanned), std::move(lod1), std::move(lod2)),
                          {0.85f, 0.85f, 0.8f, 0.7f}});
    } else {
        MeshData lod0 = torus_knot(2, 3, 256, 16), lod1 = torus_knot(2, 3, 64, 8),
                 lod2 = torus_knot(2, 3, 24, 4);
        if (scanned_name)
            *scanned_name = "procedural (2, 3) torus knot (" +
                            std::to_string(lod0.triangle_count()) + ", " +
                            std::to_string(lod1.triangle_count()) + ", " +
                            std::to_string(lod2.triangle_count()) + " triangles)";
        meshes.push_back({"torus knot",
                          three(std::move(lod0), std::move(lod1), std::move(lod2)),
                          {0.85f, 0.85f, 0.8f, 0.7f}});
    }
    meshes.push_back({"slab", {{cube_mesh(), 0.0f}}, {0.55f, 0.57f, 0.6f, 1.0f}});
    return meshes;
}

ShowcaseScene showcase_scene(std::uint32_t count, std::uint32_t walls, std::uint32_t seed) {
    constexpr float kCell = 2.0f, kGap = 0.05f, kWallHeight = 3.5f;
    // Enough cells for the instances and the walls' runs (8 + 3w cells each).
    const auto side =
        std::uint32_t(std::ceil(std::sqrt(double(count) + 8.0 * walls + 1.5 * walls * walls))) + 1;
    const float width = float(side) * kCell;
    ShowcaseScene scene;
    // The ground: a slab under the whole field, its top at y = 0 (instances start at kGap).
    scene.boxes.push_back({{-kCell, -0.5f, -kCell}, {width + kCell, 0.0f, width + kCell}});
    scene.mesh_ids.push_back(kMeshSlab);
    // Walls across the view in front of the camera, each filling cell row 8 + 6w over a run of
    // cells (no instance shares a wall's cells), staggered left and right of the centre.
    std::vector<bool> taken(std::size_t(side) * side, false);
    for (std::uint32_t w = 0; w < walls; ++w) {
        const std::uint32_t row = 8 + 6 * w;
        if (row >= side) break;
        const auto run = std::min<std::uint32_t>(side, 8 + 3 * w);
        const auto centre = std::int64_t(side / 2) + (w % 2 == 0 ? -1 : 1) * std::int64_t(3 * w);
        const auto first = std::uint32_t(std::clamp<std::int64_t>(centre - run / 2, 0, side - run));
        for (std::uint32_t c = first; c < first + run; ++c)
            taken[std::size_t(row) * side + c] = true;
        scene.boxes.push_back(
            {{float(first) * kCell + 0.1f, kGap, float(row) * kCell + 0.7f},
             {float(first + run) * kCell - 0.1f, kWallHeight, float(row) * kCell + 1.3f}});
        scene.mesh_ids.push_back(kMeshSlab);
    }
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::uint32_t placed = 0;
    for (std::uint32_t row = 0; row < side && placed < count; ++row)
        for (std::uint32_t col = 0; col < side && placed < count; ++col) {
            if (taken[std::size_t(row) * side + col]) continue;
            const float r = unit(rng);
            const std::uint32_t mesh =
                r < 0.4f ? kMeshCube : (r < 0.7f ? kMeshSphere : kMeshScanned);
            // Cubes any shape; spheres and scanned meshes in cubic boxes (undistorted).
            float sx = 0.6f + 1.0f * unit(rng), sy = 0.4f + 1.8f * unit(rng),
                  sz = 0.6f + 1.0f * unit(rng);
            if (mesh != kMeshCube) sy = sz = sx;
            const float x = float(col) * kCell + 0.1f + unit(rng) * (kCell - 0.2f - sx);
            const float z = float(row) * kCell + 0.1f + unit(rng) * (kCell - 0.2f - sz);
            if (placed % 16 == 5) scene.movers.push_back(std::uint32_t(scene.boxes.size()));
            scene.boxes.push_back({{x, kGap, z}, {x + sx, kGap + sy, z + sz}});
            scene.mesh_ids.push_back(mesh);
            ++placed;
        }
    Camera& c = scene.camera;
    c.eye = {0.5f * width, 4.5f, -4.0f};
    c.target = {0.5f * width, 0.0f, 0.4f * width};
    c.up = {0.0f, 1.0f, 0.0f};
    c.fovy_deg = 60.0f;
    c.aspect = 1.0f;
    c.near = 0.1f;
    c.far = 1.2f * width;
    return scene;
}

std::vector<Box> move_showcase(const ShowcaseScene& scene, std::uint32_t frame) {
    std::vector<Box> boxes = scene.boxes;
    for (std::uint32_t id : scene.movers) {
        const float lift = 1.5f * (1.0f - std::cos(0.6f * float(frame) + 0.37f * float(id)));
        boxes[id].min.y += lift;
        boxes[id].max.y += lift;
    }
    return boxes;
}

std::vector<ExtraView> cascade_views(const Camera& camera, Vec3 light_dir,
                                     const std::vector<float>& splits, const Box& bounds) {
    const Vec3 forward = normalize(sub(camera.target, camera.eye));
    const Vec3 right = normalize(cross(forward, camera.up));
    const Vec3 up = cross(right, forward);
    const float tan_half = std::tan(camera.fovy_deg * 3.14159265358979f / 360.0f);
    const Vec3 l = normalize(light_dir);
    std::vector<ExtraView> views;
    for (std::size_t k = 0; k + 1 < splits.size(); ++k) {
        // The slice's 8 corners and their centre.
        Vec3 corners[8];
        Vec3 centre{};
        for (int plane = 0; plane < 2; ++plane) {
            const float d = splits[k + plane];
            const float hh = d * tan_half, hw = hh * camera.aspect;
            const Vec3 mid = add_scaled(camera.eye, forward, d);
            const float sx[4] = {-1, 1, 1, -1}, sy[4] = {-1, -1, 1, 1};
            for (int i = 0; i < 4; ++i) {
                corners[plane * 4 + i] =
                    add_scaled(add_scaled(mid, right, sx[i] * hw), up, sy[i] * hh);
                centre = add_scaled(centre, corners[plane * 4 + i], 0.125f);
            }
        }
        // The light sits outside the scene bounds, behind the slice along -l.
        const Vec3 extent = sub(bounds.max, bounds.min);
        const float reach = std::sqrt(dot(extent, extent)) + 1.0f;
        Camera light{};
        light.eye = add_scaled(centre, l, -reach);
        light.target = centre;
        light.up = std::abs(l.y) > 0.99f ? Vec3{1, 0, 0} : Vec3{0, 1, 0};
        light.fovy_deg = 60.0f, light.aspect = 1.0f, light.near = 1.0f, light.far = 2.0f;
        const std::array<float, 16> view = light.view();
        float lo_x = INFINITY, hi_x = -INFINITY, lo_y = INFINITY, hi_y = -INFINITY;
        float near = INFINITY, far = -INFINITY;
        for (const Vec3& p : corners) {
            const Vec3 v = transform_point(view, p);
            lo_x = std::min(lo_x, v.x), hi_x = std::max(hi_x, v.x);
            lo_y = std::min(lo_y, v.y), hi_y = std::max(hi_y, v.y);
            far = std::max(far, -v.z);
        }
        // Casters: everything of the scene between the light and the slice.
        for (int i = 0; i < 8; ++i) {
            const Vec3 p{(i & 1) ? bounds.max.x : bounds.min.x,
                         (i & 2) ? bounds.max.y : bounds.min.y,
                         (i & 4) ? bounds.max.z : bounds.min.z};
            near = std::min(near, -transform_point(view, p).z);
        }
        near = std::max(near, 0.01f);
        far = std::max(far, near + 1.0f);
        std::array<float, 16> ortho{};
        ortho[0] = 2.0f / (hi_x - lo_x);
        ortho[12] = -(hi_x + lo_x) / (hi_x - lo_x);
        ortho[5] = -2.0f / (hi_y - lo_y);  // Vulkan clip y points down
        ortho[13] = (hi_y + lo_y) / (hi_y - lo_y);
        ortho[10] = -1.0f / (far - near);
        ortho[14] = -near / (far - near);
        ortho[15] = 1.0f;
        views.push_back({multiply(ortho, view), light.eye});
    }
    return views;
}

}  // namespace broadphase::renderer
