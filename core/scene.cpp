// Scenes: box validation, the generator registry and `name:count[:seed]` specs, and the
// pairs output format.
#include "broadphase/scene.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <new>
#include <stdexcept>
#include <system_error>

#include "scene_generators.hpp"

namespace broadphase {
namespace {

constexpr std::uint32_t kDefaultSeed = 42;
/// Box ids are 32-bit, so a scene holds at most this many boxes.
constexpr std::size_t kMaxBoxes = std::numeric_limits<std::uint32_t>::max();

Error make_error(ErrorCode code, std::string message) {
    return {code, std::move(message)};
}

/// Shortest text that reads back as the same float.
std::string float_text(float v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string known_generators() {
    std::string list;
    for (const auto& g : detail::generators()) {
        if (!list.empty()) list += ", ";
        list += g.name;
    }
    return list;
}

const detail::Generator* find_generator(std::string_view name) {
    for (const auto& g : detail::generators()) {
        if (g.name == name) return &g;
    }
    return nullptr;
}

/// Parses all of `text` as a decimal unsigned integer no larger than `max`.
bool parse_unsigned(std::string_view text, std::uint64_t max, std::uint64_t& out) {
    const char* end = text.data() + text.size();
    const auto r = std::from_chars(text.data(), end, out);
    return !text.empty() && r.ec == std::errc() && r.ptr == end && out <= max;
}

}  // namespace

Status validate_box(const Box& box, std::size_t id) {
    // The test first, with no message built: validate_boxes runs it on every box of every frame
    // (building the "box i: " prefix for each valid box cost 26 ns a box, 258 ms at 10M).
    // -max <= min <= max <= max_float on each axis holds exactly when both are finite (a NaN
    // compares false) and min <= max.
    constexpr float kMax = std::numeric_limits<float>::max();
    const auto axis_ok = [](float lo, float hi) {
        return (-kMax <= lo) & (lo <= hi) & (hi <= kMax);
    };
    if (axis_ok(box.min.x, box.max.x) & axis_ok(box.min.y, box.max.y) &
        axis_ok(box.min.z, box.max.z))
        return Status::success();
    static constexpr const char* kAxis[] = {"x", "y", "z"};
    const std::string prefix = "box " + std::to_string(id) + ": ";
    auto fail = [&](std::string what) {
        return Status(Error{ErrorCode::invalid_box, prefix + what, id});
    };
    for (int corner = 0; corner < 2; ++corner) {
        const Vec3& v = corner == 0 ? box.min : box.max;
        const char* corner_name = corner == 0 ? "min." : "max.";
        for (int axis = 0; axis < 3; ++axis) {
            const float c = v[axis];
            if (std::isnan(c)) return fail(std::string(corner_name) + kAxis[axis] + " is NaN");
            if (std::isinf(c)) {
                return fail(std::string(corner_name) + kAxis[axis] + " is infinite (" +
                            float_text(c) + ")");
            }
        }
    }
    for (int axis = 0; axis < 3; ++axis) {
        if (box.min[axis] > box.max[axis]) {
            return fail(std::string("min.") + kAxis[axis] + " (" + float_text(box.min[axis]) +
                        ") > max." + kAxis[axis] + " (" + float_text(box.max[axis]) + ")");
        }
    }
    return Status::success();
}

Status validate_boxes(std::span<const Box> boxes) {
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        if (Status s = validate_box(boxes[i], i); !s) return s;
    }
    return Status::success();
}

std::vector<std::string_view> generator_names() {
    std::vector<std::string_view> names;
    for (const auto& g : detail::generators()) names.push_back(g.name);
    return names;
}

Result<Scene> generate_scene(std::string_view name, std::size_t count, std::uint32_t seed) {
    const detail::Generator* generator = find_generator(name);
    if (generator == nullptr) {
        return make_error(ErrorCode::invalid_argument, "unknown generator '" + std::string(name) +
                                                           "' (known: " + known_generators() + ")");
    }
    if (count > kMaxBoxes) {
        return make_error(ErrorCode::invalid_argument,
                          "too many boxes: " + std::to_string(count) + " (at most " +
                              std::to_string(kMaxBoxes) + ", box ids are 32-bit)");
    }
    try {
        Scene scene;
        scene.boxes = generator->generate(count, seed);
        scene.name = std::string(name) + ":" + std::to_string(count);
        if (seed != kDefaultSeed) {
            scene.name += ':';  // (not ":" + to_string: GCC 12 warns falsely, -Wrestrict)
            scene.name += std::to_string(seed);
        }
        return scene;
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    return make_error(ErrorCode::out_of_memory, "out of memory generating " + std::string(name) +
                                                    ":" + std::to_string(count));
}

namespace {

/// A non-empty word of letters, digits and underscores: how a generator's name is written.
bool is_plain_name(std::string_view word) {
    return !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
    });
}

/// Whether `spec`, which names no file, reads as a generator NAME:COUNT[:SEED] rather than a
/// path: a plain name before the first colon, and no '/', '\\' or '.' anywhere ("unifrom:100"
/// does; "data:v2/boxes.txt" and "scene:1.txt" do not).
bool looks_like_generator(std::string_view spec) {
    const std::size_t colon = spec.find(':');
    return colon != std::string_view::npos && is_plain_name(spec.substr(0, colon)) &&
           spec.find_first_of("/\\.") == std::string_view::npos;
}

}  // namespace

Result<Scene> load_scene(const std::string& spec) {
    const std::size_t colon = spec.find(':');
    if (colon != std::string::npos && find_generator(std::string_view(spec).substr(0, colon))) {
        const std::string_view name = std::string_view(spec).substr(0, colon);
        std::string_view rest = std::string_view(spec).substr(colon + 1);
        const std::size_t second = rest.find(':');
        const std::string_view count_text = rest.substr(0, second);
        std::uint64_t count = 0;
        std::uint64_t seed = kDefaultSeed;
        const bool ok = parse_unsigned(count_text, kMaxBoxes, count) &&
                        (second == std::string_view::npos ||
                         parse_unsigned(rest.substr(second + 1),
                                        std::numeric_limits<std::uint32_t>::max(), seed));
        if (!ok) {
            return make_error(ErrorCode::invalid_argument,
                              "bad scene spec '" + spec +
                                  "': expected name:count[:seed] with count <= " +
                                  std::to_string(kMaxBoxes) + " and a 32-bit seed");
        }
        return generate_scene(name, static_cast<std::size_t>(count),
                              static_cast<std::uint32_t>(seed));
    }
    Result<Scene> scene = read_scene_file(spec);
    if (!scene && scene.error().code == ErrorCode::io_error) {
        if (find_generator(spec)) {
            return make_error(
                ErrorCode::invalid_argument,
                "no file '" + spec + "'; a generator needs a count: " + spec + ":COUNT[:SEED]");
        }
        // No such file, and a NAME:... whose NAME is no generator: generate_scene's own words
        // for an unknown generator, not "cannot open". A bare word (no colon, dot or slash)
        // may be either a file or a generator without its count: both are said.
        std::error_code ignored;
        if (!std::filesystem::exists(std::filesystem::symlink_status(spec, ignored))) {
            if (looks_like_generator(spec))
                return generate_scene(std::string_view(spec).substr(0, spec.find(':')), 0);
            if (is_plain_name(spec)) {
                Result<Scene> named = generate_scene(spec, 0);
                return make_error(ErrorCode::invalid_argument,
                                  "no file '" + spec + "'; " + named.error().message);
            }
        }
    }
    return scene;
}

std::string format_pairs(std::span<const Pair> pairs) {
    std::string out;
    out.reserve(pairs.size() * 16);
    char buf[16];
    for (const Pair& p : pairs) {
        out.append(buf, std::to_chars(buf, buf + sizeof buf, p.i).ptr);
        out += ' ';
        out.append(buf, std::to_chars(buf, buf + sizeof buf, p.j).ptr);
        out += '\n';
    }
    return out;
}

}  // namespace broadphase
