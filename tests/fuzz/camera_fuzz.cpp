// Fuzz target: the camera parser (parse_camera, the tool's --camera) and the frustum built from
// it (Frustum::from_camera). Any text either parses into 13 numbers or fails with a message;
// a camera either fails validation with a message or gives six finite, unit-normal planes that
// see a point box at the target whenever the target lies clearly between near and far and the
// test is not within rounding of a plane.
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
    // Two limits of from_camera, reported and not yet rejected by it, are left out of the
    // plane checks: |eye| or far past ~1e38 (a plane's d overflows float to infinity), and
    // far / near past ~1e16 (the far plane's normal cancels to zero in double).
    const Camera& c = *camera;
    const float largest = std::max({std::fabs(c.eye.x), std::fabs(c.eye.y), std::fabs(c.eye.z),
                                    std::fabs(c.target.x), std::fabs(c.target.y),
                                    std::fabs(c.target.z), c.far});
    const bool representable = largest <= 1e37f;
    const bool far_plane_resolved = double(c.far) / double(c.near) < 1e14;
    for (const Plane& p : frustum->planes) {
        if (!representable) break;
        FUZZ_CHECK(std::isfinite(p.normal.x) && std::isfinite(p.normal.y) &&
                   std::isfinite(p.normal.z) && std::isfinite(p.d));
        const double length = std::sqrt(double(p.normal.x) * p.normal.x +
                                        double(p.normal.y) * p.normal.y +
                                        double(p.normal.z) * p.normal.z);
        FUZZ_CHECK(!far_plane_resolved || std::fabs(length - 1) < 1e-5);
    }
    const Vec3 eye = camera->eye, target = camera->target;
    const double dx = double(target.x) - eye.x, dy = double(target.y) - eye.y,
                 dz = double(target.z) - eye.z;
    const double distance = std::sqrt(dx * dx + dy * dy + dz * dz);
    const Box point{target, target};
    if (distance > camera->near * (1 + 1e-3) && distance < camera->far * (1 - 1e-3) &&
        !frustum_test_ambiguous(*frustum, point, 1e-4)) {
        FUZZ_CHECK(frustum_may_see(*frustum, point));
    }
    return 0;
}
