// Fuzz target: the scene text reader (parse_scene_text). Any bytes either parse into valid boxes
// that round-trip through format_scene_text bit for bit, or fail with a parse or box error that
// names its 1-based line (within the text) and the id of the box it was reading.
#include <cstddef>
#include <cstdint>

#include "broadphase/scene.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace broadphase;
    using namespace broadphase::fuzz;
    const std::string_view text = as_text(data, size);
    const auto scene = no_throw([&] { return parse_scene_text(text, "fuzz.txt"); });
    const std::size_t lines = line_count(text);
    if (scene) {
        FUZZ_CHECK(scene->name == "fuzz.txt");
        FUZZ_CHECK(scene->boxes.size() <= lines);
        check_scene_round_trip(scene->boxes);
        return 0;
    }
    const Error& error = scene.error();
    check_error(error, {ErrorCode::parse_error, ErrorCode::invalid_box, ErrorCode::out_of_memory});
    if (error.code != ErrorCode::out_of_memory) {
        check_error_line(error, "fuzz.txt", lines);
        FUZZ_CHECK(error.box && *error.box < *error.line);
    }
    return 0;
}
