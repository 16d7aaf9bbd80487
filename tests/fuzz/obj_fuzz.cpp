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
    const std::string_view text = as_text(data, size);
    const auto scene = no_throw([&] { return parse_obj(text, "fuzz.obj"); });
    const std::size_t lines = line_count(text);
    if (scene) {
        FUZZ_CHECK(scene->name == "fuzz.obj");
        FUZZ_CHECK(scene->boxes.size() <= lines);
        check_scene_round_trip(scene->boxes);
        return 0;
    }
    const Error& error = scene.error();
    check_error(error, {ErrorCode::parse_error, ErrorCode::out_of_memory});
    if (error.code == ErrorCode::parse_error) check_error_line(error, "fuzz.obj", lines);
    return 0;
}
