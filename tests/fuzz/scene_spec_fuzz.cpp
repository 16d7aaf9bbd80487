// Fuzz target: the scene spec parser (load_scene) on generator specs `NAME:COUNT[:SEED]`. A spec
// either generates exactly COUNT valid boxes, named so that loading the name again gives the
// same boxes, or fails with an error message. Specs with a '/' are file paths, not specs, and
// are skipped (a fuzzer must not read the machine's files); so are well-formed counts above
// kMaxFuzzCount, which are valid but only slow (counts past 32 bits must still be rejected).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "broadphase/scene.hpp"
#include "fuzz_check.hpp"

namespace {

constexpr std::uint64_t kMaxFuzzCount = 2000;

/// The decimal value of a digits-only `text`, saturated at 2^33; nothing if not all digits.
std::optional<std::uint64_t> digits_value(std::string_view text) {
    if (text.empty()) return std::nullopt;
    std::uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = std::min<std::uint64_t>(value * 10 + static_cast<std::uint64_t>(c - '0'),
                                        std::uint64_t{1} << 33);
    }
    return value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace broadphase;
    using namespace broadphase::fuzz;
    const std::string spec(as_text(data, size));
    if (spec.find('/') != std::string::npos || spec.find('\0') != std::string::npos) return 0;
    const std::size_t colon = spec.find(':');
    std::optional<std::uint64_t> count;
    if (colon != std::string::npos) {
        const std::string_view rest = std::string_view(spec).substr(colon + 1);
        count = digits_value(rest.substr(0, rest.find(':')));
        if (count && *count > kMaxFuzzCount && *count <= 0xffffffffu) return 0;
    }
    bool generator = false;
    for (std::string_view name : generator_names()) {
        generator = generator || (colon != std::string::npos && spec.substr(0, colon) == name);
    }
    const auto scene = no_throw([&] { return load_scene(spec); });
    if (!scene) {
        if (generator) {
            check_error(scene.error(), {ErrorCode::invalid_argument, ErrorCode::out_of_memory});
        } else {
            check_error(scene.error(), {ErrorCode::invalid_argument, ErrorCode::io_error,
                                        ErrorCode::parse_error, ErrorCode::invalid_box,
                                        ErrorCode::out_of_memory});
        }
        return 0;
    }
    check_boxes(scene->boxes);
    if (generator) {
        FUZZ_CHECK(count && scene->boxes.size() == *count);
        const auto again = no_throw([&] { return load_scene(scene->name); });
        FUZZ_CHECK(again.ok());
        FUZZ_CHECK(again->name == scene->name);
        FUZZ_CHECK(same_bits(again->boxes, scene->boxes));
    }
    return 0;
}
