// Fuzz target: the rays text reader (parse_rays_text, the tool's `raycast --rays FILE`). Any
// bytes either parse into rays with finite origins and directions and a non-NaN tmax, at most
// one per line, or fail with a parse error naming its 1-based line and the index of the ray it
// was reading.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "broadphase/scene.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace broadphase;
    using namespace broadphase::fuzz;
    return check_line_reader(
        data, size, "fuzz.rays", {ErrorCode::parse_error, ErrorCode::out_of_memory}, true,
        [](std::string_view text) { return parse_rays_text(text, "fuzz.rays"); },
        [](const std::vector<Ray>& rays, std::size_t lines) {
            FUZZ_CHECK(rays.size() <= lines);
            for (const Ray& ray : rays) {
                for (int axis = 0; axis < 3; ++axis) {
                    FUZZ_CHECK(std::isfinite(ray.origin[axis]) && std::isfinite(ray.dir[axis]));
                }
                FUZZ_CHECK(!std::isnan(ray.tmax));
            }
        });
}
