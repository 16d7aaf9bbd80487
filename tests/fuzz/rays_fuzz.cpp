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
    const std::string_view text = as_text(data, size);
    const auto rays = no_throw([&] { return parse_rays_text(text, "fuzz.rays"); });
    const std::size_t lines = line_count(text);
    if (rays) {
        FUZZ_CHECK(rays->size() <= lines);
        for (const Ray& ray : *rays) {
            for (int axis = 0; axis < 3; ++axis) {
                FUZZ_CHECK(std::isfinite(ray.origin[axis]) && std::isfinite(ray.dir[axis]));
            }
            FUZZ_CHECK(!std::isnan(ray.tmax));
        }
        return 0;
    }
    const Error& error = rays.error();
    check_error(error, {ErrorCode::parse_error, ErrorCode::out_of_memory});
    if (error.code != ErrorCode::out_of_memory) {
        check_error_line(error, "fuzz.rays", lines);
        FUZZ_CHECK(error.box && *error.box < *error.line);
    }
    return 0;
}
