// Scenes: lists of boxes, their validation, the standard seeded generators (listed below; their
// sources are in docs/references.md), and the file formats (scene text, Wavefront .obj, pairs
// output).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase {

/// A scene: boxes whose ids are their indices.
struct Scene {
    std::vector<Box> boxes;
    std::string name;  ///< where it came from ("uniform:1000", a file path), for messages
};

/// Checks one box: finite coordinates and min <= max on every axis. The error names box `id`.
Status validate_box(const Box& box, std::size_t id);

/// Checks every box; the first bad one is reported by id.
Status validate_boxes(std::span<const Box> boxes);

/// The standard generators, by name. All are seeded and deterministic.
/// - uniform: N cubes of side 0.8 * N^(-1/3), min corner uniform in [0,1)^3 drawn x, y, z in
///   that order from std::mt19937(seed); about 2 pairs per box.
/// - clustered: boxes gathered around a few dense cluster centres (magley's survey "Broad
///   phase algorithms and data structures", docs/references.md).
/// - xline / yline: flat 2D boxes strung along a thin vertical / horizontal band, so one axis
///   has almost no variance (the survey's XLine and YLine benchmark scenes).
/// - mixed_sizes: 96% small boxes and 4% large ones (the scene of "Loose Octrees for Frustum
///   Culling, Part 1", AltDevBlogADay 2011).
/// - degenerate: duplicates, zero-volume boxes (points, flat boxes), one huge box over
///   everything and a group far from the origin.
/// - level: a physics level: uniform cubes, a few fallen about 1e7 below, a ground slab
///   2e6 wide and a trigger volume over the play area.
/// - multiscale: 8 dense clusters of side 0.1, 1 or 10, spread over [0, 1e4)^3.
std::vector<std::string_view> generator_names();

/// Generates scene `name` with `count` boxes; `seed` defaults to 42.
Result<Scene> generate_scene(std::string_view name, std::size_t count, std::uint32_t seed = 42);

/// Parses a scene text (one box per line, `minx miny minz maxx maxy maxz`, white space or
/// commas between numbers, `#` starts a comment). Errors name the 1-based line and box id.
/// `source` is used in messages.
Result<Scene> parse_scene_text(std::string_view text, std::string_view source = "<text>");

/// Parses a Wavefront .obj: one box per face (`f`), the bounds of its vertices. Negative
/// (relative) indices and `v/vt/vn` forms are accepted; errors name the line.
Result<Scene> parse_obj(std::string_view text, std::string_view source = "<obj>");

/// Reads a scene from a file: `.obj` by extension, anything else as scene text.
Result<Scene> read_scene_file(const std::string& path);

/// Parses a rays text: one ray per line, `ox oy oz dx dy dz tmax`, white space or commas
/// between numbers, `#` starts a comment, a leading UTF-8 byte-order mark is skipped. Origin
/// and direction must be finite; tmax may be infinite (`inf`) but not NaN. Errors name the
/// 1-based line and the ray's index (its 0-based data-line index, in Error::box).
Result<std::vector<Ray>> parse_rays_text(std::string_view text, std::string_view source = "<rays>");
/// Reads a rays file (parse_rays_text); only regular files, errors name the path.
Result<std::vector<Ray>> read_rays_file(const std::string& path);

/// Loads `spec`: a file path, or a generator `name:count[:seed]` (e.g. `uniform:100000`). A
/// `name:...` that is no file and whose name is no generator ("unifrom:100") gets
/// generate_scene's "unknown generator" error, with the known names.
Result<Scene> load_scene(const std::string& spec);

/// Writes boxes as scene text, with enough digits to round-trip every float exactly.
std::string format_scene_text(std::span<const Box> boxes);
Status write_scene_file(const std::string& path, std::span<const Box> boxes);

/// Formats pairs one `i j` per line (the caller sorts them first for the canonical form).
std::string format_pairs(std::span<const Pair> pairs);

}  // namespace broadphase
