// Scene file formats: the scene text format (six numbers per line, white space or commas,
// `#` comments), Wavefront .obj (one box per face), the rays text format (seven numbers per
// line, same rules), reading and writing files.
// Numbers are read with std::from_chars and written with std::to_chars' shortest form, so a
// written scene reads back bit for bit.
#include "broadphase/scene.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <system_error>

#include "file_io.hpp"

namespace broadphase {
namespace {

using file_io::read_regular_file;
using file_io::write_text_file;

constexpr std::string_view kSceneSeparators = " \t\r\v\f,";
constexpr std::string_view kObjSeparators = " \t\r\v\f";

/// Every .obj statement other than `v` and `f` (from the format's specification); these
/// are skipped, anything else is an error.
constexpr std::string_view kObjIgnored[] = {
    "vt",    "vn",        "vp",         "o",      "g",     "s",        "usemtl",   "mtllib",
    "l",     "p",         "cstype",     "deg",    "bmat",  "step",     "curv",     "curv2",
    "surf",  "parm",      "trim",       "hole",   "scrv",  "sp",       "end",      "con",
    "mg",    "lod",       "usemap",     "maplib", "bevel", "c_interp", "d_interp", "ctech",
    "stech", "trace_obj", "shadow_obj", "call",   "csh"};

/// The lines of a text, split at '\n', numbered from 1, each without its `#` comment.
class LineReader {
public:
    explicit LineReader(std::string_view text) : rest_(text) {}

    bool next(std::string_view& line) {
        if (done_) return false;
        const std::size_t end = rest_.find('\n');
        line = rest_.substr(0, end);
        if (end == std::string_view::npos) {
            done_ = true;
        } else {
            rest_.remove_prefix(end + 1);
            done_ = rest_.empty();
        }
        line = line.substr(0, line.find('#'));
        ++number_;
        return true;
    }
    std::size_t number() const { return number_; }

private:
    std::string_view rest_;
    std::size_t number_ = 0;
    bool done_ = rest_.empty();
};

/// The fields of a line: maximal runs of characters that are not separators.
class Tokens {
public:
    Tokens(std::string_view line, std::string_view separators)
        : rest_(line), separators_(separators) {}

    bool next(std::string_view& token) {
        const std::size_t begin = rest_.find_first_not_of(separators_);
        if (begin == std::string_view::npos) return false;
        rest_.remove_prefix(begin);
        const std::size_t end = rest_.find_first_of(separators_);
        token = rest_.substr(0, end);
        rest_.remove_prefix(token.size());
        return true;
    }

private:
    std::string_view rest_;
    std::string_view separators_;
};

/// A token as it may appear in a message: quoted, shortened, non-printing bytes as '?'.
std::string quoted(std::string_view token) {
    constexpr std::size_t kMaxShown = 32;
    std::string out = "'";
    for (std::size_t i = 0; i < token.size() && i < kMaxShown; ++i) {
        const auto c = static_cast<unsigned char>(token[i]);
        out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
    }
    if (token.size() > kMaxShown) out += "...";
    return out + "'";
}

enum class NumberStatus { ok, not_a_number, out_of_range };

/// Reads all of `token` as a float. Accepts what std::from_chars does (including "nan" and
/// "inf", which validation rejects with a better message) and a leading '+'. Values too
/// small for a float read as the nearest float (0 or a subnormal) rather than failing.
NumberStatus parse_float(std::string_view token, float& out) {
    if (!token.empty() && token[0] == '+') {
        token.remove_prefix(1);
        if (!token.empty() && token[0] == '-') return NumberStatus::not_a_number;
    }
    const char* end = token.data() + token.size();
    const auto r = std::from_chars(token.data(), end, out);
    if (r.ptr != end || token.empty()) return NumberStatus::not_a_number;
    if (r.ec == std::errc()) return NumberStatus::ok;
    if (r.ec != std::errc::result_out_of_range) return NumberStatus::not_a_number;
    double wide = 0;
    const auto r2 = std::from_chars(token.data(), end, wide);
    if (r2.ec != std::errc() || r2.ptr != end) return NumberStatus::out_of_range;
    if (!(std::fabs(wide) <= std::numeric_limits<float>::max())) return NumberStatus::out_of_range;
    out = static_cast<float>(wide);
    return NumberStatus::ok;
}

std::string number_problem(NumberStatus status, std::string_view token) {
    return quoted(token) + (status == NumberStatus::out_of_range ? " is out of range for a float"
                                                                 : " is not a number");
}

Error error_at(ErrorCode code, std::string_view source, std::size_t line, std::size_t box,
               const std::string& what) {
    return {code, std::string(source) + ":" + std::to_string(line) + ": " + what, box, line};
}

// Reads the numbers of one line of a scene or rays file into v (the first N of them; the rest
// are only counted): how many the line holds, or the parse_error (at `line`, naming item `id`)
// of the first token that is not a number or whose value problem(n, token) objects to (a
// non-empty message).
template <std::size_t N, class Problem>
Result<std::size_t> read_numbers(std::string_view text, float (&v)[N], std::string_view source,
                                 std::size_t line, std::size_t id, Problem&& problem) {
    std::size_t n = 0;
    Tokens tokens(text, kSceneSeparators);
    for (std::string_view token; tokens.next(token); ++n) {
        if (n >= N) continue;
        if (NumberStatus s = parse_float(token, v[n]); s != NumberStatus::ok) {
            return error_at(ErrorCode::parse_error, source, line, id, number_problem(s, token));
        }
        if (std::string what = problem(n, token); !what.empty()) {
            return error_at(ErrorCode::parse_error, source, line, id, what);
        }
    }
    return n;
}

Error out_of_memory(std::string_view source) {
    return {ErrorCode::out_of_memory, "out of memory reading " + std::string(source)};
}

/// The 0-based vertex of a face corner `v`, `v/vt`, `v//vn` or `v/vt/vn` (1-based, or
/// negative for relative to the last vertex); on failure `why` says what is wrong.
std::optional<std::size_t> face_vertex(std::string_view corner, std::size_t vertex_count,
                                       std::string& why) {
    // Up to three parts, each an integer; only vt and vn may be left empty.
    long long index = 0;
    std::size_t part = 0;
    for (std::string_view rest = corner;; ++part) {
        const std::size_t slash = rest.find('/');
        const std::string_view text = rest.substr(0, slash);
        long long value = 0;
        const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
        const bool integer = r.ec == std::errc() && r.ptr == text.data() + text.size();
        if (part > 2 || !(integer || (part > 0 && text.empty()))) {
            why = quoted(corner) + " is not a face vertex (v, v/vt, v//vn or v/vt/vn)";
            return std::nullopt;
        }
        if (part == 0) index = value;
        if (slash == std::string_view::npos) break;
        rest.remove_prefix(slash + 1);
    }
    if (index == 0) {
        why = "vertex index 0 is invalid (indices start at 1)";
        return std::nullopt;
    }
    // Negative: -1 is the last vertex so far. -(index + 1) cannot overflow.
    const auto magnitude = index > 0 ? static_cast<unsigned long long>(index) - 1
                                     : static_cast<unsigned long long>(-(index + 1));
    if (magnitude >= vertex_count) {
        why = "vertex index " + std::to_string(index) + " is out of range (" +
              std::to_string(vertex_count) + " vertices so far)";
        return std::nullopt;
    }
    return index > 0 ? magnitude : vertex_count - 1 - magnitude;
}

/// Text without a leading UTF-8 byte-order mark (editors on Windows write one; it is not data).
std::string_view without_bom(std::string_view text) {
    constexpr std::string_view kBom = "\xEF\xBB\xBF";
    return text.substr(0, kBom.size()) == kBom ? text.substr(kBom.size()) : text;
}

}  // namespace

Result<Scene> parse_scene_text(std::string_view text, std::string_view source) {
    try {
        Scene scene;
        scene.name = source;
        LineReader lines(without_bom(text));
        std::string_view line;
        while (lines.next(line)) {
            const std::size_t id = scene.boxes.size();
            float v[6] = {};
            const Result<std::size_t> count =
                read_numbers(line, v, source, lines.number(), id,
                             [](std::size_t, std::string_view) { return std::string(); });
            if (!count) return count.error();
            const std::size_t n = *count;
            if (n == 0) continue;
            if (n != 6) {
                return error_at(ErrorCode::parse_error, source, lines.number(), id,
                                "expected 6 numbers (minx miny minz maxx maxy maxz), found " +
                                    std::to_string(n));
            }
            const Box box{{v[0], v[1], v[2]}, {v[3], v[4], v[5]}};
            if (Status s = validate_box(box, id); !s) {
                return error_at(ErrorCode::invalid_box, source, lines.number(), id,
                                s.error().message);
            }
            scene.boxes.push_back(box);
        }
        return scene;
    } catch (const std::bad_alloc&) {
        return out_of_memory(source);
    } catch (const std::length_error&) {
        return out_of_memory(source);
    }
}

Result<Scene> parse_obj(std::string_view text, std::string_view source) {
    try {
        Scene scene;
        scene.name = source;
        std::vector<Vec3> vertices;
        LineReader lines(without_bom(text));
        std::string_view line;
        while (lines.next(line)) {
            const std::size_t id = scene.boxes.size();
            auto fail = [&](const std::string& what) {
                return error_at(ErrorCode::parse_error, source, lines.number(), id, what);
            };
            Tokens tokens(line, kObjSeparators);
            std::string_view keyword;
            if (!tokens.next(keyword)) continue;
            if (keyword == "v") {
                // x y z, then an optional w (or r g b colours in some exporters), unused.
                Vec3 p;
                std::size_t n = 0;
                for (std::string_view token; tokens.next(token); ++n) {
                    float value = 0;
                    if (NumberStatus s = parse_float(token, value); s != NumberStatus::ok) {
                        return fail(number_problem(s, token));
                    }
                    if (!std::isfinite(value)) {
                        return fail("vertex coordinate " + quoted(token) + " is not finite");
                    }
                    if (n < 3) p[static_cast<int>(n)] = value;
                }
                if (n < 3) {
                    return fail("expected x y z after 'v', found " + std::to_string(n) +
                                " numbers");
                }
                vertices.push_back(p);
            } else if (keyword == "f") {
                Box box;
                std::size_t n = 0;
                for (std::string_view token; tokens.next(token); ++n) {
                    std::string why;
                    const auto index = face_vertex(token, vertices.size(), why);
                    if (!index) return fail(why);
                    const Vec3& p = vertices[*index];
                    box = n == 0 ? Box{p, p} : merge(box, Box{p, p});
                }
                if (n == 0) return fail("face has no vertices");
                scene.boxes.push_back(box);
            } else if (std::find(std::begin(kObjIgnored), std::end(kObjIgnored), keyword) ==
                       std::end(kObjIgnored)) {
                return fail("unknown statement " + quoted(keyword));
            }
        }
        return scene;
    } catch (const std::bad_alloc&) {
        return out_of_memory(source);
    } catch (const std::length_error&) {
        return out_of_memory(source);
    }
}

Result<Scene> read_scene_file(const std::string& path) {
    try {
        Result<std::string> text = read_regular_file(path);
        if (!text) return text.error();
        std::string extension = path.substr(path.size() - std::min<std::size_t>(path.size(), 4));
        for (char& c : extension) {
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        const bool is_obj = extension == ".obj";
        return is_obj ? parse_obj(*text, path) : parse_scene_text(*text, path);
    } catch (const std::bad_alloc&) {
        return out_of_memory(path);
    } catch (const std::length_error&) {
        return out_of_memory(path);
    }
}

Result<std::vector<Ray>> parse_rays_text(std::string_view text, std::string_view source) {
    try {
        std::vector<Ray> rays;
        LineReader lines(without_bom(text));
        std::string_view line;
        while (lines.next(line)) {
            const std::size_t id = rays.size();
            float v[7] = {};
            // Origin and direction finite, tmax not NaN.
            const Result<std::size_t> count = read_numbers(
                line, v, source, lines.number(), id,
                [&](std::size_t k, std::string_view token) -> std::string {
                    if (!std::isnan(v[k]) && (k >= 6 || std::isfinite(v[k]))) return {};
                    return k < 6 ? "ray " + std::to_string(id) +
                                       ": origin and direction must be finite, not " + quoted(token)
                                 : "ray " + std::to_string(id) + ": tmax must not be NaN";
                });
            if (!count) return count.error();
            const std::size_t n = *count;
            if (n == 0) continue;
            if (n != 7) {
                return error_at(
                    ErrorCode::parse_error, source, lines.number(), id,
                    "expected 7 numbers (ox oy oz dx dy dz tmax), found " + std::to_string(n));
            }
            rays.push_back({{v[0], v[1], v[2]}, {v[3], v[4], v[5]}, v[6]});
        }
        return rays;
    } catch (const std::bad_alloc&) {
        return out_of_memory(source);
    } catch (const std::length_error&) {
        return out_of_memory(source);
    }
}

Result<std::vector<Ray>> read_rays_file(const std::string& path) {
    try {
        Result<std::string> text = read_regular_file(path);
        if (!text) return text.error();
        return parse_rays_text(*text, path);
    } catch (const std::bad_alloc&) {
        return out_of_memory(path);
    } catch (const std::length_error&) {
        return out_of_memory(path);
    }
}

std::string format_scene_text(std::span<const Box> boxes) {
    std::string out;
    out.reserve(boxes.size() * 64);
    char line[160];
    for (const Box& b : boxes) {
        const float v[6] = {b.min.x, b.min.y, b.min.z, b.max.x, b.max.y, b.max.z};
        char* p = line;
        for (int k = 0; k < 6; ++k) {
            if (k > 0) *p++ = ' ';
            p = std::to_chars(p, line + sizeof line, v[k]).ptr;
        }
        *p++ = '\n';
        out.append(line, p);
    }
    return out;
}

Status write_scene_file(const std::string& path, std::span<const Box> boxes) {
    try {
        const std::string text = format_scene_text(boxes);
        return write_text_file(path, text);
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::out_of_memory, "out of memory writing " + path};
    }
}

}  // namespace broadphase
