// The script of `broadphase events --script` (see proxy_script.hpp): a line reader, strict
// number fields (the whole field, range-checked), and a replay of the ids' lives that rejects
// a command on an id in the wrong state, naming the line where that id was added or removed.
#include "proxy_script.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unordered_map>

#include "broadphase/scene.hpp"

namespace broadphase::tool {
namespace {

constexpr std::string_view kSeparators = " \t\r\v\f";

/// A field as it may appear in a message: quoted, shortened, non-printing bytes as '?'.
std::string quoted(std::string_view field) {
    constexpr std::size_t kMaxShown = 32;
    std::string out = "'";
    for (std::size_t i = 0; i < field.size() && i < kMaxShown; ++i) {
        const auto c = static_cast<unsigned char>(field[i]);
        out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
    }
    if (field.size() > kMaxShown) out += "...";
    return out + "'";
}

/// The fields of a line (its `#` comment removed), split at white space.
std::vector<std::string_view> fields_of(std::string_view line) {
    line = line.substr(0, line.find('#'));
    std::vector<std::string_view> fields;
    while (true) {
        const std::size_t begin = line.find_first_not_of(kSeparators);
        if (begin == std::string_view::npos) break;
        line.remove_prefix(begin);
        const std::size_t end = line.find_first_of(kSeparators);
        fields.push_back(line.substr(0, end));
        line.remove_prefix(fields.back().size());
    }
    return fields;
}

/// All of `text` as an unsigned integer of at most `max`, in `base`.
bool read_unsigned(std::string_view text, int base, std::uint64_t max, std::uint64_t& out) {
    const char* end = text.data() + text.size();
    const auto r = std::from_chars(text.data(), end, out, base);
    return !text.empty() && r.ec == std::errc() && r.ptr == end && out <= max;
}

/// Reads the fields of one line into `command`; an empty string on success, else what is wrong.
class LineParser {
public:
    explicit LineParser(ScriptCommand& command) : c_(command) {}

    std::string id(std::string_view field) {
        std::uint64_t value = 0;
        if (!read_unsigned(field, 10, std::numeric_limits<std::uint32_t>::max(), value))
            return quoted(field) + " is not an ID (an integer in [0, 4294967295])";
        c_.id = static_cast<std::uint32_t>(value);
        return {};
    }

    std::string box(const std::vector<std::string_view>& f, std::size_t first) {
        float v[6] = {};
        for (std::size_t k = 0; k < 6; ++k) {
            std::string_view field = f[first + k];
            if (field.size() > 1 && field[0] == '+' && field[1] != '-') field.remove_prefix(1);
            const char* end = field.data() + field.size();
            const auto r = std::from_chars(field.data(), end, v[k]);
            if (r.ptr != end || field.empty() || r.ec == std::errc::invalid_argument)
                return quoted(f[first + k]) + " is not a number";
            if (r.ec != std::errc()) {
                // Too small for a float reads as the nearest one (as scene files do).
                double wide = 0;
                std::from_chars(field.data(), end, wide);
                if (!(std::fabs(wide) <= std::numeric_limits<float>::max()))
                    return quoted(f[first + k]) + " is out of range for a float";
                v[k] = static_cast<float>(wide);
            }
        }
        c_.box = Box{{v[0], v[1], v[2]}, {v[3], v[4], v[5]}};
        if (Status s = validate_box(c_.box, c_.id); !s) {
            std::string detail = s.error().message;
            detail.erase(0, detail.find(": ") + 2);  // validate_box's "box N: "
            return "the box of ID " + std::to_string(c_.id) + ": " + detail;
        }
        return {};
    }

    std::string filter(const std::vector<std::string_view>& f, std::size_t first) {
        std::uint32_t bits[2] = {};
        const char* names[2] = {"category", "mask"};
        for (std::size_t k = 0; k < 2; ++k) {
            std::string_view field = f[first + k];
            int base = 10;
            if (field.size() > 2 && field[0] == '0' && (field[1] == 'x' || field[1] == 'X')) {
                field.remove_prefix(2);
                base = 16;
            }
            std::uint64_t value = 0;
            if (!read_unsigned(field, base, std::numeric_limits<std::uint32_t>::max(), value))
                return quoted(f[first + k]) + " is not a " + names[k] +
                       " (a 32-bit value, decimal or 0x hexadecimal)";
            bits[k] = static_cast<std::uint32_t>(value);
        }
        const std::string_view group = f[first + 2];
        std::int32_t value = 0;
        const char* end = group.data() + group.size();
        const auto r = std::from_chars(group.data(), end, value);
        if (group.empty() || r.ec != std::errc() || r.ptr != end)
            return quoted(group) + " is not a group (a decimal integer in [-2147483648, " +
                   "2147483647])";
        c_.filter = Filter{bits[0], bits[1], value};
        return {};
    }

private:
    ScriptCommand& c_;
};

/// Where an id stands while the script is replayed: live since a line, or removed at one.
struct IdState {
    bool live = false;
    std::size_t line = 0;
};

}  // namespace

Result<ProxyScript> parse_proxy_script(std::string_view text, std::string_view source) {
    auto error_at = [&](std::size_t line, const std::string& what) {
        return Error{ErrorCode::parse_error,
                     std::string(source) + ":" + std::to_string(line) + ": " + what,
                     {},
                     line};
    };
    try {
        ProxyScript script;
        std::unordered_map<std::uint32_t, IdState> ids;
        std::size_t number = 0;
        constexpr std::string_view kBom = "\xEF\xBB\xBF";  // an editor's byte-order mark
        if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
        while (!text.empty() || number == 0) {
            ++number;
            const std::size_t end = text.find('\n');
            const std::string_view line = text.substr(0, end);
            text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
            const std::vector<std::string_view> f = fields_of(line);
            if (f.empty()) continue;
            const std::string_view op = f[0];
            if (op == "frame") {
                if (f.size() != 1)
                    return error_at(number, "frame takes nothing after it, found " + quoted(f[1]));
                script.frames.emplace_back();
                continue;
            }
            if (script.frames.empty())
                return error_at(number,
                                "a script starts with a line \"frame\", found " + quoted(op));
            ScriptCommand c;
            c.line = number;
            std::size_t want = 0;  // fields, the command's name included
            std::string usage;
            if (op == "+" || op == "s") {
                c.op = ScriptCommand::Op::add;
                c.kind = op == "s" ? BodyKind::static_body : BodyKind::dynamic_body;
                want = f.size() == 11 ? 11 : 8;
                usage = std::string(op) + " ID minx miny minz maxx maxy maxz [category mask group]";
            } else if (op == "-") {
                c.op = ScriptCommand::Op::remove;
                want = 2;
                usage = "- ID";
            } else if (op == "m") {
                c.op = ScriptCommand::Op::move;
                want = 8;
                usage = "m ID minx miny minz maxx maxy maxz";
            } else if (op == "f") {
                c.op = ScriptCommand::Op::set_filter;
                want = 5;
                usage = "f ID category mask group";
            } else {
                return error_at(number,
                                "unknown command " + quoted(op) + " (frame, +, s, -, m or f)");
            }
            if (f.size() != want)
                return error_at(number, "expected \"" + usage + "\", found " +
                                            std::to_string(f.size()) + " fields");
            LineParser parse(c);
            std::string problem = parse.id(f[1]);
            if (problem.empty() &&
                (c.op == ScriptCommand::Op::add || c.op == ScriptCommand::Op::move))
                problem = parse.box(f, 2);
            if (problem.empty() && c.op == ScriptCommand::Op::add && f.size() == 11)
                problem = parse.filter(f, 8);
            if (problem.empty() && c.op == ScriptCommand::Op::set_filter)
                problem = parse.filter(f, 2);
            if (!problem.empty()) {
                Error e = error_at(number, problem);
                if (problem.rfind("the box", 0) == 0) e.code = ErrorCode::invalid_box;
                return e;
            }
            // Replay the id's life.
            const std::string name = "ID " + std::to_string(c.id);
            auto it = ids.find(c.id);
            if (c.op == ScriptCommand::Op::add) {
                if (it != ids.end() && it->second.live)
                    return error_at(number, name + " is added twice (live since line " +
                                                std::to_string(it->second.line) + ")");
                ids[c.id] = {true, number};
            } else if (it == ids.end()) {
                return error_at(number, "unknown " + name + " (never added)");
            } else if (!it->second.live) {
                return error_at(number, name + " is not live (removed at line " +
                                            std::to_string(it->second.line) + ")");
            } else if (c.op == ScriptCommand::Op::remove) {
                it->second = {false, number};
            }
            script.frames.back().push_back(c);
        }
        if (script.frames.empty())
            return Error{
                ErrorCode::parse_error,
                std::string(source) + ": no frame (a script starts with a line \"frame\")"};
        return script;
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    return Error{ErrorCode::out_of_memory, "out of memory reading " + std::string(source)};
}

}  // namespace broadphase::tool
