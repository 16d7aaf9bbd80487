// Meshes of the renderer (see meshes.hpp): generated shapes, an OFF reader and vertex
// clustering (Rossignac and Borrel 1993) for coarser levels of detail.
#include "meshes.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace broadphase::renderer {

namespace {

constexpr float kPi = 3.14159265358979f;

Error parse_fail(const std::string& path, std::size_t line, const std::string& what) {
    return Error{ErrorCode::parse_error, path + ":" + std::to_string(line) + ": " + what,
                 std::nullopt, line};
}

}  // namespace

MeshData cube_mesh() {
    MeshData m;
    for (int i = 0; i < 8; ++i)
        for (int axis = 0; axis < 3; ++axis) m.positions.push_back(float((i >> axis) & 1));
    m.indices = {
        0, 2, 6, 0, 6, 4,  // -x
        1, 5, 7, 1, 7, 3,  // +x
        0, 4, 5, 0, 5, 1,  // -y
        2, 3, 7, 2, 7, 6,  // +y
        0, 1, 3, 0, 3, 2,  // -z
        4, 6, 7, 4, 7, 5,  // +z
    };
    return m;
}

MeshData uv_sphere(std::uint32_t slices, std::uint32_t stacks) {
    slices = std::max(slices, 3u), stacks = std::max(stacks, 2u);
    MeshData m;
    // Rows 0..stacks from the -y pole to the +y pole, slices + 1 columns (the seam doubled).
    for (std::uint32_t r = 0; r <= stacks; ++r) {
        float theta = kPi * float(r) / float(stacks);
        for (std::uint32_t c = 0; c <= slices; ++c) {
            float phi = 2.0f * kPi * float(c) / float(slices);
            float s = std::sin(theta);
            m.positions.insert(m.positions.end(),
                               {0.5f + 0.5f * s * std::cos(phi), 0.5f - 0.5f * std::cos(theta),
                                0.5f + 0.5f * s * std::sin(phi)});
        }
    }
    auto at = [&](std::uint32_t r, std::uint32_t c) { return r * (slices + 1) + c; };
    for (std::uint32_t r = 0; r < stacks; ++r)
        for (std::uint32_t c = 0; c < slices; ++c) {
            if (r > 0) m.indices.insert(m.indices.end(), {at(r, c), at(r + 1, c), at(r, c + 1)});
            if (r + 1 < stacks)
                m.indices.insert(m.indices.end(), {at(r, c + 1), at(r + 1, c), at(r + 1, c + 1)});
        }
    for (float& v : m.positions) v = std::clamp(v, 0.0f, 1.0f);
    return m;
}

MeshData torus_knot(std::uint32_t p, std::uint32_t q, std::uint32_t segments, std::uint32_t sides,
                    float tube) {
    segments = std::max(segments, 8u), sides = std::max(sides, 3u);
    auto curve = [&](float t) {
        float r = 1.0f + 0.45f * std::cos(float(q) * t);
        return std::array<float, 3>{r * std::cos(float(p) * t), 0.45f * std::sin(float(q) * t),
                                    r * std::sin(float(p) * t)};
    };
    MeshData m;
    for (std::uint32_t i = 0; i < segments; ++i) {
        float t = 2.0f * kPi * float(i) / float(segments);
        auto c = curve(t), n = curve(t + 1e-3f);
        float tan[3] = {n[0] - c[0], n[1] - c[1], n[2] - c[2]};
        // A frame around the tangent: b = tan x c (c points away from the centre), u = b x tan.
        float b[3] = {tan[1] * c[2] - tan[2] * c[1], tan[2] * c[0] - tan[0] * c[2],
                      tan[0] * c[1] - tan[1] * c[0]};
        float u[3] = {b[1] * tan[2] - b[2] * tan[1], b[2] * tan[0] - b[0] * tan[2],
                      b[0] * tan[1] - b[1] * tan[0]};
        float lb = std::hypot(b[0], b[1], b[2]), lu = std::hypot(u[0], u[1], u[2]);
        for (std::uint32_t j = 0; j < sides; ++j) {
            float a = 2.0f * kPi * float(j) / float(sides);
            float cu = tube * std::cos(a) / lu, sb = tube * std::sin(a) / lb;
            for (int k = 0; k < 3; ++k) m.positions.push_back(c[k] + cu * u[k] + sb * b[k]);
        }
    }
    for (std::uint32_t i = 0; i < segments; ++i)
        for (std::uint32_t j = 0; j < sides; ++j) {
            std::uint32_t i1 = (i + 1) % segments, j1 = (j + 1) % sides;
            std::uint32_t a = i * sides + j, b = i1 * sides + j, c = i1 * sides + j1,
                          d = i * sides + j1;
            m.indices.insert(m.indices.end(), {a, b, c, a, c, d});
        }
    fit_unit_cube(m);
    return m;
}

Result<MeshData> read_off(const std::string& path) {
    std::ifstream in(path);
    if (!in) return Error{ErrorCode::io_error, "cannot open mesh file '" + path + "'"};
    std::size_t line_no = 0;
    std::string line;
    // The next line with content, comments ('#' to the end) removed.
    auto next = [&](std::istringstream& fields) {
        while (std::getline(in, line)) {
            ++line_no;
            if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            fields = std::istringstream(line);
            return true;
        }
        return false;
    };
    std::istringstream fields;
    if (!next(fields)) return parse_fail(path, line_no, "empty file");
    std::string magic;
    fields >> magic;
    if (magic != "OFF") return parse_fail(path, line_no, "not an OFF file (no 'OFF' header)");
    std::uint64_t nv = 0, nf = 0;
    // The counts may follow the header on its line.
    if (!(fields >> nv)) {
        if (!next(fields) || !(fields >> nv)) return parse_fail(path, line_no, "no vertex count");
    }
    if (!(fields >> nf)) return parse_fail(path, line_no, "no face count");
    if (nv == 0 || nv > (1u << 24) || nf > (1u << 25))
        return parse_fail(path, line_no, "vertex or face count out of range (1..2^24, 0..2^25)");
    MeshData m;
    m.positions.reserve(nv * 3);
    for (std::uint64_t i = 0; i < nv; ++i) {
        float x, y, z;
        if (!next(fields) || !(fields >> x >> y >> z) || !std::isfinite(x) || !std::isfinite(y) ||
            !std::isfinite(z))
            return parse_fail(path, line_no,
                              "vertex " + std::to_string(i) + ": 3 finite numbers expected");
        m.positions.insert(m.positions.end(), {x, y, z});
    }
    for (std::uint64_t f = 0; f < nf; ++f) {
        std::uint64_t corners = 0;
        if (!next(fields) || !(fields >> corners) || corners < 3 || corners > 64)
            return parse_fail(path, line_no,
                              "face " + std::to_string(f) + ": 3 to 64 corners expected");
        std::vector<std::uint32_t> ids(corners);
        for (auto& id : ids) {
            std::uint64_t v = 0;
            if (!(fields >> v) || v >= nv)
                return parse_fail(path, line_no,
                                  "face " + std::to_string(f) +
                                      ": vertex index missing or >= " + std::to_string(nv));
            id = std::uint32_t(v);
        }
        for (std::size_t k = 1; k + 1 < ids.size(); ++k)
            m.indices.insert(m.indices.end(), {ids[0], ids[k], ids[k + 1]});
    }
    if (m.indices.empty()) return parse_fail(path, line_no, "no faces");
    fit_unit_cube(m);
    return m;
}

void fit_unit_cube(MeshData& mesh, Vec3* extent) {
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (std::size_t i = 0; i < mesh.positions.size(); ++i) {
        lo[i % 3] = std::min(lo[i % 3], mesh.positions[i]);
        hi[i % 3] = std::max(hi[i % 3], mesh.positions[i]);
    }
    float side = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-30f});
    for (std::size_t i = 0; i < mesh.positions.size(); ++i) {
        int axis = int(i % 3);
        float offset = 0.5f * (1.0f - (hi[axis] - lo[axis]) / side);
        mesh.positions[i] = std::clamp((mesh.positions[i] - lo[axis]) / side + offset, 0.0f, 1.0f);
    }
    if (extent) *extent = {(hi[0] - lo[0]) / side, (hi[1] - lo[1]) / side, (hi[2] - lo[2]) / side};
}

MeshData cluster_vertices(const MeshData& mesh, std::uint32_t cells) {
    cells = std::max(cells, 1u);
    auto cell_of = [&](std::uint32_t v) {
        std::uint64_t key = 0;
        for (int axis = 0; axis < 3; ++axis) {
            auto c = std::uint64_t(
                std::clamp(mesh.positions[3 * v + axis] * float(cells), 0.0f, float(cells - 1)));
            key = key * cells + c;
        }
        return key;
    };
    std::map<std::uint64_t, std::uint32_t> cluster;  // cell -> new vertex
    std::vector<std::uint32_t> remap(mesh.vertex_count());
    std::vector<double> sum;
    std::vector<std::uint32_t> members;
    for (std::uint32_t v = 0; v < mesh.vertex_count(); ++v) {
        auto [it, fresh] = cluster.try_emplace(cell_of(v), std::uint32_t(members.size()));
        if (fresh) sum.resize(sum.size() + 3, 0.0), members.push_back(0);
        remap[v] = it->second;
        for (int axis = 0; axis < 3; ++axis)
            sum[3 * it->second + axis] += mesh.positions[3 * v + axis];
        ++members[it->second];
    }
    MeshData out;
    out.positions.resize(sum.size());
    for (std::size_t i = 0; i < sum.size(); ++i)
        out.positions[i] = std::clamp(float(sum[i] / members[i / 3]), 0.0f, 1.0f);
    std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> seen;
    for (std::size_t t = 0; t + 2 < mesh.indices.size(); t += 3) {
        std::uint32_t a = remap[mesh.indices[t]], b = remap[mesh.indices[t + 1]],
                      c = remap[mesh.indices[t + 2]];
        if (a == b || b == c || a == c) continue;
        // The same triangle either way round counts once (rotated so its smallest id leads).
        std::array<std::uint32_t, 3> k{a, b, c};
        std::rotate(k.begin(), std::min_element(k.begin(), k.end()), k.end());
        if (k[1] > k[2]) std::swap(k[1], k[2]);
        if (!seen.insert({k[0], k[1], k[2]}).second) continue;
        out.indices.insert(out.indices.end(), {a, b, c});
    }
    return out;
}

}  // namespace broadphase::renderer
