// Camera matrices (right-handed look-at, Vulkan perspective), Gribb-Hartmann plane extraction
// for Vulkan clip space, the positive-vertex box test and the brute-force cull (see
// include/broadphase/frustum.hpp for the exact rules).
#include "broadphase/frustum.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

namespace broadphase {

namespace {

using Mat = std::array<double, 16>;  // column-major: (r, c) at [c * 4 + r]

struct D3 {
    double x, y, z;
};
D3 d3(const Vec3& v) {
    return {v.x, v.y, v.z};
}
D3 sub(D3 a, D3 b) {
    return {a.x - b.x, a.y - b.y, a.z - b.z};
}
double dot(D3 a, D3 b) {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
D3 cross(D3 a, D3 b) {
    return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
D3 normalize(D3 a) {
    double l = std::sqrt(dot(a, a));
    return {a.x / l, a.y / l, a.z / l};
}

Mat view_d(const Camera& c) {
    D3 eye = d3(c.eye);
    D3 f = normalize(sub(d3(c.target), eye));
    D3 s = normalize(cross(f, d3(c.up)));
    D3 u = cross(s, f);
    Mat m{};
    m[0] = s.x, m[4] = s.y, m[8] = s.z, m[12] = -dot(s, eye);
    m[1] = u.x, m[5] = u.y, m[9] = u.z, m[13] = -dot(u, eye);
    m[2] = -f.x, m[6] = -f.y, m[10] = -f.z, m[14] = dot(f, eye);
    m[15] = 1;
    return m;
}

Mat projection_d(const Camera& c) {
    const double pi = 3.14159265358979323846;
    double f = 1.0 / std::tan(double(c.fovy_deg) * pi / 360.0);
    double n = c.near, fa = c.far;
    Mat m{};
    m[0] = f / double(c.aspect);
    m[5] = -f;  // Vulkan: clip y points down
    m[10] = fa / (n - fa);
    m[11] = -1;
    m[14] = n * fa / (n - fa);
    return m;
}

Mat multiply(const Mat& a, const Mat& b) {
    Mat m{};
    for (int c = 0; c < 4; ++c)
        for (int r = 0; r < 4; ++r) {
            double s = 0;
            for (int k = 0; k < 4; ++k) s += a[k * 4 + r] * b[c * 4 + k];
            m[c * 4 + r] = s;
        }
    return m;
}

std::array<float, 16> to_float(const Mat& m) {
    std::array<float, 16> out{};
    for (int i = 0; i < 16; ++i) out[i] = static_cast<float>(m[i]);
    return out;
}

Frustum frustum_from(const Mat& m, const Vec3& eye) {
    auto row = [&](int r) { return std::array<double, 4>{m[r], m[4 + r], m[8 + r], m[12 + r]}; };
    auto combine = [](const std::array<double, 4>& a, const std::array<double, 4>& b, double s) {
        return std::array<double, 4>{a[0] + s * b[0], a[1] + s * b[1], a[2] + s * b[2],
                                     a[3] + s * b[3]};
    };
    const auto r0 = row(0), r1 = row(1), r2 = row(2), r3 = row(3);
    const std::array<double, 4> zero{0, 0, 0, 0};
    const std::array<std::array<double, 4>, 6> raw{
        combine(r3, r0, 1),    // left:   -w <= x
        combine(r3, r0, -1),   // right:   x <= w
        combine(r3, r1, -1),   // bottom:  y <= w (Vulkan y down)
        combine(r3, r1, 1),    // top:    -w <= y
        combine(zero, r2, 1),  // near:    0 <= z
        combine(r3, r2, -1),   // far:     z <= w
    };
    Frustum f;
    f.eye = eye;
    for (int i = 0; i < 6; ++i) {
        const auto& p = raw[i];
        double l = std::sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
        if (!(l > 0)) l = 1;
        f.planes[i] = {{float(p[0] / l), float(p[1] / l), float(p[2] / l)}, float(p[3] / l)};
    }
    return f;
}

Error bad(const std::string& message) {
    return Error{ErrorCode::invalid_argument, message};
}

bool finite(const Vec3& v) {
    return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z);
}

// Distance from p to b in double (point_box_distance before its rounding to float).
double distance_d(const Vec3& p, const Box& b) {
    double sum = 0;
    for (int axis = 0; axis < 3; ++axis) {
        const double gap =
            std::max({double(b.min[axis]) - p[axis], double(p[axis]) - b.max[axis], 0.0});
        sum += gap * gap;
    }
    return std::sqrt(sum);
}

Vec3 positive_vertex(const Plane& p, const Box& b) {
    return {p.normal.x >= 0 ? b.max.x : b.min.x, p.normal.y >= 0 ? b.max.y : b.min.y,
            p.normal.z >= 0 ? b.max.z : b.min.z};
}

}  // namespace

std::array<float, 16> Camera::view() const {
    return to_float(view_d(*this));
}
std::array<float, 16> Camera::projection() const {
    return to_float(projection_d(*this));
}
std::array<float, 16> Camera::view_projection() const {
    return to_float(multiply(projection_d(*this), view_d(*this)));
}

Frustum Frustum::from_view_projection(const std::array<float, 16>& m, const Vec3& eye) {
    Mat d{};
    for (int i = 0; i < 16; ++i) d[i] = m[i];
    return frustum_from(d, eye);
}

Result<Frustum> Frustum::from_camera(const Camera& c) {
    if (!finite(c.eye) || !finite(c.target) || !finite(c.up))
        return bad("camera eye, target and up must be finite");
    if (!std::isfinite(c.fovy_deg) || !(c.fovy_deg > 0) || !(c.fovy_deg < 180))
        return bad("camera fovy_deg must be in (0, 180), got " + std::to_string(c.fovy_deg));
    if (!std::isfinite(c.aspect) || !(c.aspect > 0))
        return bad("camera aspect must be positive, got " + std::to_string(c.aspect));
    if (!std::isfinite(c.near) || !(c.near > 0))
        return bad("camera near must be positive, got " + std::to_string(c.near));
    if (!std::isfinite(c.far) || !(c.far > c.near))
        return bad("camera far must be finite and greater than near (" + std::to_string(c.near) +
                   "), got " + std::to_string(c.far));
    const D3 eye = d3(c.eye);
    const D3 dir = sub(d3(c.target), eye);
    if (!(dot(dir, dir) > 0)) return bad("camera eye and target must differ");
    const D3 up = d3(c.up);
    const D3 side = cross(dir, up);
    if (!(dot(side, side) > 1e-12 * dot(dir, dir) * dot(up, up)))
        return bad("camera up must not be zero or parallel to the view direction");
    // The planes straight from the orthonormal basis (forward f, right s, up u), not from the
    // projection matrix, whose far row is r3 - r2 = (0, 0, n / (far - near)) in view space and
    // cancels once far / near passes 1 / epsilon: near and far enter only the offsets.
    const double pi = 3.14159265358979323846;
    const D3 f = normalize(dir);
    const D3 s = normalize(cross(f, up));
    const D3 u = cross(s, f);
    const double ty = std::tan(double(c.fovy_deg) * pi / 360.0);
    const double tx = ty * double(c.aspect);
    // Inward (unnormalised) normals and the offset beyond -dot(normal, eye): x >= -tx z,
    // x <= tx z, y >= -ty z (image bottom), y <= ty z (image top), z >= near, z <= far, with
    // (x, y, z) = (dot(s, p - eye), dot(u, p - eye), dot(f, p - eye)).
    auto mix = [](D3 a, double sign, D3 b, double t) {
        return D3{sign * a.x + t * b.x, sign * a.y + t * b.y, sign * a.z + t * b.z};
    };
    const std::array<std::pair<D3, double>, 6> raw{{
        {mix(s, 1, f, tx), 0},
        {mix(s, -1, f, tx), 0},
        {mix(u, 1, f, ty), 0},
        {mix(u, -1, f, ty), 0},
        {f, -double(c.near)},
        {D3{-f.x, -f.y, -f.z}, double(c.far)},
    }};
    Frustum out;
    out.eye = c.eye;
    const double largest = std::numeric_limits<float>::max();
    for (int i = 0; i < 6; ++i) {
        const D3 n = normalize(raw[i].first);
        const double d = -dot(n, eye) + raw[i].second;
        if (!(std::abs(d) <= largest))
            return bad("camera: the offset of frustum plane " + std::to_string(i) + " (" +
                       std::to_string(d) +
                       ", from the eye and near/far) is beyond the float range");
        out.planes[i] = {{float(n.x), float(n.y), float(n.z)}, float(d)};
    }
    return out;
}

Result<Camera> parse_camera(const std::string& text) {
    std::vector<float> v;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(',', start);
        if (end == std::string::npos) end = text.size();
        std::string item = text.substr(start, end - start);
        char* stop = nullptr;
        float x = std::strtof(item.c_str(), &stop);
        if (item.empty() || stop != item.c_str() + item.size())
            return bad("camera: '" + item + "' is not a number (expected " +
                       "ex,ey,ez,tx,ty,tz,ux,uy,uz,fovy_deg,aspect,near,far)");
        v.push_back(x);
        start = end + 1;
    }
    if (v.size() != 13)
        return bad("camera: expected 13 comma-separated numbers " +
                   std::string("ex,ey,ez,tx,ty,tz,ux,uy,uz,fovy_deg,aspect,near,far, got ") +
                   std::to_string(v.size()));
    return camera_from_numbers(std::span<const float, 13>(v.data(), 13));
}

Camera camera_from_numbers(std::span<const float, 13> v) {
    Camera c;
    c.eye = {v[0], v[1], v[2]};
    c.target = {v[3], v[4], v[5]};
    c.up = {v[6], v[7], v[8]};
    c.fovy_deg = v[9];
    c.aspect = v[10];
    c.near = v[11];
    c.far = v[12];
    return c;
}

bool frustum_may_see(const Frustum& f, const Box& b) {
    for (const Plane& p : f.planes) {
        const Vec3 v = positive_vertex(p, b);
        const float margin = p.normal.x * v.x + p.normal.y * v.y + p.normal.z * v.z + p.d;
        if (margin < 0) return false;
    }
    return true;
}

bool frustum_contains_box(const Frustum& f, const Box& b) {
    for (const Plane& p : f.planes) {
        const Vec3 v{p.normal.x >= 0 ? b.min.x : b.max.x, p.normal.y >= 0 ? b.min.y : b.max.y,
                     p.normal.z >= 0 ? b.min.z : b.max.z};
        const float margin = p.normal.x * v.x + p.normal.y * v.y + p.normal.z * v.z + p.d;
        if (margin < 0) return false;
    }
    return true;
}

double frustum_plane_margin(const Frustum& f, const Box& b, int plane) {
    const Plane& p = f.planes[plane];
    const Vec3 v = positive_vertex(p, b);
    return double(p.normal.x) * v.x + double(p.normal.y) * v.y + double(p.normal.z) * v.z + p.d;
}

bool frustum_test_ambiguous(const Frustum& f, const Box& b, double relative) {
    for (int i = 0; i < 6; ++i) {
        const Plane& p = f.planes[i];
        const Vec3 v = positive_vertex(p, b);
        const double scale = std::abs(double(p.normal.x) * v.x) +
                             std::abs(double(p.normal.y) * v.y) +
                             std::abs(double(p.normal.z) * v.z) + std::abs(double(p.d));
        if (std::abs(frustum_plane_margin(f, b, i)) <= relative * scale) return true;
    }
    return false;
}

std::vector<std::uint32_t> cull_brute_force(const Frustum& f, std::span<const Box> boxes) {
    struct Seen {
        float distance;  // point_box_distance: infinity beyond the float range
        double beyond;   // the distance in double when `distance` is infinity, else 0
        std::uint32_t id;
        bool operator<(const Seen& o) const {
            if (distance != o.distance) return distance < o.distance;
            if (beyond != o.beyond) return beyond < o.beyond;
            return id < o.id;
        }
    };
    std::vector<Seen> seen;
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        if (!frustum_may_see(f, boxes[i])) continue;
        const double d = distance_d(f.eye, boxes[i]);
        const float distance = point_box_distance(f.eye, boxes[i]);
        seen.push_back({distance, std::isinf(distance) ? d : 0.0, static_cast<std::uint32_t>(i)});
    }
    std::sort(seen.begin(), seen.end());
    std::vector<std::uint32_t> out;
    out.reserve(seen.size());
    for (const Seen& s : seen) out.push_back(s.id);
    return out;
}

}  // namespace broadphase
