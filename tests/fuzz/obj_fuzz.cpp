// Fuzz target: the Wavefront .obj reader (parse_obj). Any bytes either parse into valid boxes
// (one per face, the bounds of finite vertices) that round-trip through the scene text format,
// or fail with a parse error that names its 1-based line within the text.
#include <cstddef>
#include <cstdint>

#include "broadphase/scene.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace broadphase;
    using namespace broadphase::fuzz;
    // Faces name no box index: the error names only its line.
    const auto allowed = {ErrorCode::parse_error, ErrorCode::out_of_memory};
    return check_line_reader(
        data, size, "fuzz.obj", allowed, false,
        [](std::string_view text) { return parse_obj(text, "fuzz.obj"); },
        [](const Scene& scene, std::size_t lines) {
            check_parsed_scene(scene, "fuzz.obj", lines);
        });
}
