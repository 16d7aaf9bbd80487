// The renderer's showcase scene (issue 11): instances of several meshes with levels of detail
// (cube, UV sphere, a scanned mesh: the Stanford bunny from CGAL's data, else a procedural
// torus knot) on a ground slab, a few large walls in front of many of them, shadow-cascade
// light views fitted to slices of the camera frustum (stable orthographic cascades as in
// "Cascaded Shadow Maps", R. Dimitrov, NVIDIA 2007), and moving instances.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "renderer.hpp"

namespace broadphase::renderer {

/// Mesh indices of the showcase's meshes (showcase_meshes' order).
enum ShowcaseMesh : std::uint32_t { kMeshCube = 0, kMeshSphere, kMeshScanned, kMeshSlab };

/// The path of the scanned mesh found at build time (CGAL's bunny00.off), or empty.
std::string default_scanned_mesh();

/// The showcase's meshes: a cube (1 LOD), a UV sphere (LODs 32x16, 12x6, 6x3), the scanned
/// mesh read from `mesh_path` (full, then vertex-clustered on 40^3 and 12^3 cells) or, when the
/// path is empty, a (2, 3) torus knot at three tessellations, and a grey slab (the cube's
/// geometry) for walls and ground. LOD k >= 1 is drawn from switch distance lod_distance[k-1].
/// `scanned_name` receives what the scanned mesh is.
Result<std::vector<RenderMesh>> showcase_meshes(const std::string& mesh_path,
                                                std::array<float, 2> lod_distance,
                                                std::string* scanned_name = nullptr);

/// A showcase scene: boxes and each box's mesh, and a camera looking across it.
struct ShowcaseScene {
    std::vector<Box> boxes;
    std::vector<std::uint32_t> mesh_ids;
    Camera camera;
    std::vector<std::uint32_t> movers;  ///< instances that move_showcase animates
};

/// About `count` instances (meshes cube, sphere, scanned, mixed by a seeded hash) on a grid of
/// 2 x 2 cells, each instance inside its own cell (neighbours never touch), a ground slab under
/// them (a gap below every instance), and `walls` large slabs standing across the view in front
/// of the camera. Every 16th instance moves (move_showcase).
ShowcaseScene showcase_scene(std::uint32_t count, std::uint32_t walls = 3, std::uint32_t seed = 7);

/// The boxes of frame `frame`: each mover bobs up and down inside its cell's column.
std::vector<Box> move_showcase(const ShowcaseScene& scene, std::uint32_t frame);

/// Orthographic light views covering slices [split[k], split[k+1]] of the camera's view depth
/// (in camera-space distance), looking along `light_dir` (need not be normalised), each view
/// deep enough to take in every box of `bounds` in front of its slice (the shadow casters).
std::vector<ExtraView> cascade_views(const Camera& camera, Vec3 light_dir,
                                     const std::vector<float>& splits, const Box& bounds);

}  // namespace broadphase::renderer
