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
    const auto allowed = {ErrorCode::parse_error, ErrorCode::invalid_box, ErrorCode::out_of_memory};
    return check_line_reader(
        data, size, "fuzz.txt", allowed, true,
        [](std::string_view text) { return parse_scene_text(text, "fuzz.txt"); },
        [](const Scene& scene, std::size_t lines) {
            check_parsed_scene(scene, "fuzz.txt", lines);
        });
}
