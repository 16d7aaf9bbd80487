// Triangle meshes for the renderer's instances: the unit cube, a UV sphere, a (p, q) torus knot
// tube, an OFF file reader (the Stanford bunny of CGAL's data, or any triangle/polygon OFF), and
// LOD simplification by vertex clustering (J. Rossignac and P. Borrel, "Multi-resolution 3D
// approximations for rendering complex scenes", 1993: one representative vertex per grid cell,
// triangles whose corners fall into fewer than three cells dropped). Every mesh lives in the
// unit cube [0,1]^3; the vertex shader stretches it over its instance's box, so a mesh never
// leaves its box and the box's frustum test stays exact for the mesh.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase::renderer {

/// An indexed triangle list, positions in [0,1]^3.
struct MeshData {
    std::vector<float> positions;        ///< x, y, z per vertex
    std::vector<std::uint32_t> indices;  ///< 3 per triangle, each < vertex count
    std::uint32_t vertex_count() const { return std::uint32_t(positions.size() / 3); }
    std::uint32_t triangle_count() const { return std::uint32_t(indices.size() / 3); }
};

/// The unit cube: corner i at (bit 0, bit 1, bit 2) of i; 12 triangles.
MeshData cube_mesh();
/// A UV sphere of radius 1/2 centred in the unit cube: `slices` around (>= 3), `stacks` from
/// pole to pole (>= 2).
MeshData uv_sphere(std::uint32_t slices, std::uint32_t stacks);
/// A tube of radius `tube` around the (p, q) torus knot, `segments` along it and `sides` around
/// the tube, scaled into the unit cube (the procedural stand-in when no scanned mesh is found).
MeshData torus_knot(std::uint32_t p, std::uint32_t q, std::uint32_t segments, std::uint32_t sides,
                    float tube = 0.35f);
/// Reads an OFF file (header "OFF", counts, vertices, faces of 3 or more corners, fanned into
/// triangles). Errors name the file and what is wrong (line numbers for malformed entries).
Result<MeshData> read_off(const std::string& path);
/// Scales the mesh uniformly into the unit cube (its longest side 1, centred in the others);
/// `extent` receives its size per axis afterwards (each in (0, 1]).
void fit_unit_cube(MeshData& mesh, Vec3* extent = nullptr);
/// Vertex clustering on a grid of `cells`^3 over the unit cube: each cell's vertices merge
/// into their mean, triangles left with two equal corners are dropped, duplicates kept once.
MeshData cluster_vertices(const MeshData& mesh, std::uint32_t cells);

}  // namespace broadphase::renderer
