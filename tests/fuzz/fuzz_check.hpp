// What every fuzz target asserts of a parser: it returns either a value whose boxes are all
// valid or an Error that says what is wrong (a known code, a message, the line where the format
// has lines); it never crashes and never throws. A failed check prints what and aborts, which
// libFuzzer and the stand-alone driver (fuzz_driver.cpp) both report with the input.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "broadphase/scene.hpp"

namespace broadphase::fuzz {

#define FUZZ_CHECK(condition)                                                             \
    do {                                                                                  \
        if (!(condition)) {                                                               \
            std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #condition, __FILE__, \
                         __LINE__);                                                       \
            std::abort();                                                                 \
        }                                                                                 \
    } while (0)

/// The bytes of a fuzz input as text (NUL bytes included).
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

/// Runs `parse` and aborts if it throws: no exception may cross the public API.
template <class F>
auto no_throw(F&& parse) {
    try {
        return parse();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz check failed: the parser threw: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "fuzz check failed: the parser threw a non-standard exception\n");
    }
    std::abort();
}

/// Every box valid (finite, min <= max), as the API promises of a parsed scene.
inline void check_boxes(std::span<const Box> boxes) {
    FUZZ_CHECK(validate_boxes(boxes).ok());
}

/// An error with one of the `allowed` codes and a message.
inline void check_error(const Error& error, std::initializer_list<ErrorCode> allowed) {
    bool known = false;
    for (ErrorCode code : allowed) known = known || error.code == code;
    FUZZ_CHECK(known);
    FUZZ_CHECK(!error.message.empty());
}

/// Lines of a fuzz input: one more than its newlines.
inline std::size_t line_count(std::string_view text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
}

/// An error of a line-based format that names its line: 1-based, one of the input's `lines`,
/// and the message opens with "<file>:<line>: ".
inline void check_error_line(const Error& error, std::string_view file, std::size_t lines) {
    FUZZ_CHECK(error.line && *error.line >= 1 && *error.line <= lines);
    const std::string where = std::string(file) + ":" + std::to_string(*error.line) + ": ";
    FUZZ_CHECK(error.message.starts_with(where));
}

/// Bit-for-bit equality of two box lists (tells -0 from 0).
inline bool same_bits(std::span<const Box> a, std::span<const Box> b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        for (int axis = 0; axis < 3; ++axis) {
            if (std::bit_cast<std::uint32_t>(a[i].min[axis]) !=
                    std::bit_cast<std::uint32_t>(b[i].min[axis]) ||
                std::bit_cast<std::uint32_t>(a[i].max[axis]) !=
                    std::bit_cast<std::uint32_t>(b[i].max[axis])) {
                return false;
            }
        }
    }
    return true;
}

/// Valid boxes that also survive the scene text format: written and read back bit for bit.
inline void check_scene_round_trip(std::span<const Box> boxes) {
    check_boxes(boxes);
    const auto again = no_throw([&] { return parse_scene_text(format_scene_text(boxes)); });
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(same_bits(again->boxes, boxes));
}

/// A scene read from `file`: named after it, at most one box per line of the input, and boxes
/// that survive the scene text format (check_scene_round_trip).
inline void check_parsed_scene(const Scene& scene, std::string_view file, std::size_t lines) {
    FUZZ_CHECK(scene.name == file);
    FUZZ_CHECK(scene.boxes.size() <= lines);
    check_scene_round_trip(scene.boxes);
}

/// The whole run of a line-based text reader on a fuzz input: parse(text) must not throw; what
/// it reads goes to check_value(value, lines); an error must have one of the `allowed` codes
/// and, unless out_of_memory, name its line of `file` and, when `names_item`, the index of the
/// box or ray it was reading (below its line: each line holds at most one).
template <class Parse, class CheckValue>
int check_line_reader(const std::uint8_t* data, std::size_t size, std::string_view file,
                      std::initializer_list<ErrorCode> allowed, bool names_item, Parse&& parse,
                      CheckValue&& check_value) {
    const std::string_view text = as_text(data, size);
    const auto result = no_throw([&] { return parse(text); });
    const std::size_t lines = line_count(text);
    if (result) {
        check_value(*result, lines);
        return 0;
    }
    const Error& error = result.error();
    check_error(error, allowed);
    if (error.code != ErrorCode::out_of_memory) {
        check_error_line(error, file, lines);
        if (names_item) FUZZ_CHECK(error.box && *error.box < *error.line);
    }
    return 0;
}

}  // namespace broadphase::fuzz
