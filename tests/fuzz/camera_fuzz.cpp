// Fuzz target: the camera parser (parse_camera, the tool's --camera) and the frustum built from
// it (Frustum::from_camera). Any text either parses into 13 numbers or fails with a message;
// a camera either fails validation with a message or gives six finite, unit-normal planes that
// see a point box at the target whenever the target lies between near and far by more than
// float rounding of the planes.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "broadphase/frustum.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace broadphase;
    using namespace broadphase::fuzz;
    const std::string text(as_text(data, size));
    const auto camera = no_throw([&] { return parse_camera(text); });
    if (!camera) {
        check_error(camera.error(), {ErrorCode::invalid_argument, ErrorCode::out_of_memory});
        return 0;
    }
    const auto frustum = no_throw([&] { return Frustum::from_camera(*camera); });
    if (!frustum) {
        check_error(frustum.error(), {ErrorCode::invalid_argument});
        return 0;
    }
    // from_camera builds every plane from the camera basis in double: finite, unit normals for
    // any camera it accepts (it rejects those whose offsets overflow float).
    const Camera& c = *camera;
    for (const Plane& p : frustum->planes) {
        FUZZ_CHECK(std::isfinite(p.normal.x) && std::isfinite(p.normal.y) &&
                   std::isfinite(p.normal.z) && std::isfinite(p.d));
        const double length = std::sqrt(double(p.normal.x) * p.normal.x +
                                        double(p.normal.y) * p.normal.y +
                                        double(p.normal.z) * p.normal.z);
        FUZZ_CHECK(std::fabs(length - 1) < 1e-5);
    }
    // The target, on the view axis, is seen when it lies between near and far with a margin
    // (distance to each plane) well above what rounding the planes to float can move them:
    // ~1e-7 of the coordinates' magnitude. (frustum_test_ambiguous measures rounding against
    // the plane's own terms, which cancel when a plane passes near the origin.)
    const Vec3 eye = camera->eye, target = camera->target;
    const double dx = double(target.x) - eye.x, dy = double(target.y) - eye.y,
                 dz = double(target.z) - eye.z;
    const double distance = std::sqrt(dx * dx + dy * dy + dz * dz);
    const double scale = std::max({std::fabs(eye.x), std::fabs(eye.y), std::fabs(eye.z)}) +
                         std::max({std::fabs(target.x), std::fabs(target.y), std::fabs(target.z)}) +
                         distance;
    const double pi = 3.14159265358979323846;
    const double half_fovy = double(c.fovy_deg) * pi / 360.0;
    const double half_fovx = std::atan(double(c.aspect) * std::tan(half_fovy));
    const double side_margin = distance * std::sin(std::min(half_fovy, half_fovx));
    const double depth_margin = std::min(distance - c.near, double(c.far) - distance);
    const double tolerance = 1e-4 * scale;
    if (side_margin > tolerance && depth_margin > tolerance) {
        FUZZ_CHECK(frustum_may_see(*frustum, Box{target, target}));
    }
    return 0;
}
