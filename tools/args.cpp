// The option sets of the tool's commands and their strict parsing (see args.hpp).
#include "args.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>
#include <system_error>

namespace broadphase::tool {
namespace {

/// One option: its name and, for one that takes a value, the value's placeholder.
struct Option {
    const char* name;
    const char* value;  ///< nullptr for a flag
};

/// The options of one command (or of one mode of `bench`).
struct Command {
    const char* name;
    std::vector<Option> options;
    std::vector<const char*> required;
    bool positionals = false;  ///< further values after the options (events: --scenes A B C)
};

const Option kDevice{"device", "INDEX|NAME"};
const Option kValidation{"validation", nullptr};
const Option kCode{"code", "morton30|morton63|hilbert30"};
const Option kScene{"scene", "S"};
const Option kOut{"out", "FILE"};
const Option kMethod{"method", "M"};
const Option kRepeat{"repeat", "R"};

const std::vector<Command>& commands() {
    static const std::vector<Command> kCommands = {
        {"pairs", {kScene, kMethod, {"against", "B"}, kOut, kCode, kDevice, kValidation},
         {"scene", "method"}},
        {"validate",
         {kScene, {"methods", "a,b,..."}, {"reference", "M"}, kOut, kCode, kDevice, kValidation},
         {}},
        {"query", {kScene, {"boxes", "Q"}, kMethod, kOut, kCode, kDevice, kValidation},
         {"scene", "boxes", "method"}},
        {"raycast", {kScene, {"rays", "R"}, kMethod, kOut, kCode, kDevice, kValidation},
         {"scene", "rays", "method"}},
        {"cull",
         {kScene, {"camera", "C"}, {"order", "exact|approx"}, {"method", "M"}, kOut, kDevice,
          kValidation},
         {"scene", "camera"}},
        {"events",
         {{"scenes", "S0 S1 ..."}, kMethod, {"frames", "F"}, {"policy", "ratio|refit|rebuild"},
          {"rebuild-ratio", "R"}, {"rebuild", nullptr}, {"verbose", nullptr}, kOut, kCode,
          kDevice, kValidation},
         {"scenes", "method"},
         true},
        {"scene", {kScene, kOut}, {"scene"}},
        {"devices", {kDevice, kValidation}, {}},
        {"bench", {kScene, kRepeat, kCode, {"no-refine", nullptr}, kDevice, kValidation},
         {"scene"}},
        {"bench --cull",
         {{"cull", nullptr}, kScene, {"camera", "C"}, {"order", "exact|approx"}, kRepeat, kDevice,
          kValidation},
         {"scene"}},
        {"bench --cpu",
         {{"cpu", nullptr}, {"scenes", "a,b,..."}, {"sizes", "N,N,..."}, {"methods", "a,b,..."},
          {"max-seconds", "S"}, {"out-dir", "DIR"}, {"table", "FILE"}},
         {}},
        {"bench --frames",
         {{"frames", "F"}, kScene, {"policy", "ratio|refit|rebuild"}, {"rebuild-ratio", "R"},
          {"back-to-back", nullptr}, kCode, kDevice, kValidation},
         {"scene"}},
        {"bench --rays",
         {{"rays", "R"}, kScene, kRepeat, {"seed", "X"}, kCode, kDevice, kValidation},
         {"scene"}},
    };
    return kCommands;
}

Error usage_error(std::string message) {
    return Error{ErrorCode::invalid_argument, std::move(message), {}, {}};
}

/// Edit distance of two short words (for "did you mean").
std::size_t distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = up;
        }
    }
    return row[b.size()];
}

std::string option_list(const Command& c) {
    std::string list;
    for (const Option& o : c.options) {
        if (!list.empty()) list += ' ';
        list += std::string("--") + o.name + (o.value ? std::string(" ") + o.value : "");
    }
    return list;
}

const Option* find_option(const Command& c, std::string_view name) {
    for (const Option& o : c.options)
        if (name == o.name) return &o;
    return nullptr;
}

}  // namespace

Result<Args> parse_args(const std::string& command_name, int argc, char** argv, int first) {
    Args args;
    // `bench` has modes, each with its own options: the mode is the one of --cull, --cpu,
    // --frames, --rays given.
    std::string name = command_name;
    if (command_name == "bench") {
        for (int i = first; i < argc; ++i) {
            for (const char* mode : {"cull", "cpu", "frames", "rays"}) {
                const std::string flag = std::string("--") + mode;
                if (argv[i] != flag && std::string(argv[i]).rfind(flag + "=", 0) != 0) continue;
                if (name != "bench")
                    return usage_error("bench: " + name.substr(6) + " and " + flag +
                                       " cannot be combined");
                name = "bench " + flag;
            }
        }
    }
    const auto it = std::find_if(commands().begin(), commands().end(),
                                 [&](const Command& c) { return name == c.name; });
    if (it == commands().end()) return usage_error("unknown command '" + command_name + "'");
    const Command& command = *it;
    args.command = name;
    const std::string where = name + ": ";

    std::string last;  // the last option read: more values may follow --scenes only
    for (int i = first; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            args.help = true;
            continue;
        }
        if (a.rfind("--", 0) != 0 || a.size() == 2) {
            if (command.positionals && last == "scenes") {
                args.positional.push_back(a);
                continue;
            }
            return usage_error(where + "unexpected argument '" + a + "' (options: " +
                               option_list(command) + ")");
        }
        std::string key = a.substr(2);
        std::string value;
        const auto eq = key.find('=');
        const bool inline_value = eq != std::string::npos;
        if (inline_value) {
            value = key.substr(eq + 1);
            key.resize(eq);
        }
        const Option* option = find_option(command, key);
        if (option == nullptr) {
            std::string message = where + "unknown option '--" + key + "'";
            const Option* nearest = nullptr;
            std::size_t best = 3;  // suggest only names within two edits
            for (const Option& o : command.options) {
                if (std::size_t d = distance(key, o.name); d < best) best = d, nearest = &o;
            }
            if (nearest) message += std::string(" (did you mean --") + nearest->name + "?)";
            return usage_error(message + "; " + name + " takes " + option_list(command));
        }
        if (args.has(key)) return usage_error(where + "--" + key + " is given twice");
        if (option->value == nullptr) {
            if (inline_value) return usage_error(where + "--" + key + " takes no value");
        } else if (!inline_value) {
            if (i + 1 >= argc || std::strncmp(argv[i + 1], "--", 2) == 0)
                return usage_error(where + "--" + key + " needs a value (" + option->value + ")");
            value = argv[++i];
        }
        args.options[key] = value;
        last = key;
    }
    if (args.help) return args;
    for (const char* required : command.required) {
        if (!args.has(required)) {
            const Option* o = find_option(command, required);
            return usage_error(where + "--" + required + " " + o->value + " is required (" +
                               name + " takes " + option_list(command) + ")");
        }
    }
    return args;
}

Result<std::int64_t> parse_int(std::string_view text, const std::string& what, std::int64_t min,
                               std::int64_t max) {
    std::int64_t value = 0;
    const char* end = text.data() + text.size();
    const auto r = std::from_chars(text.data(), end, value);
    std::string range = "[";  // (appended: GCC 12 warns falsely on "[" + to_string, -Wrestrict)
    range += std::to_string(min);
    range += ", ";
    range += std::to_string(max);
    range += ']';
    if (text.empty() || r.ptr != end || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range))
        return usage_error(what + ": '" + std::string(text) + "' is not an integer (allowed: " +
                           range + ")");
    if (r.ec == std::errc::result_out_of_range || value < min || value > max)
        return usage_error(what + ": " + std::string(text) + " is out of range (allowed: " +
                           range + ")");
    return value;
}

Result<std::int64_t> int_option(const Args& args, const std::string& name, std::int64_t fallback,
                                std::int64_t min, std::int64_t max) {
    if (!args.has(name)) return fallback;
    return parse_int(args.get(name), "--" + name, min, max);
}

Result<double> real_option(const Args& args, const std::string& name, double fallback, double min,
                           double max, bool min_included) {
    if (!args.has(name)) return fallback;
    const std::string text = args.get(name);
    double value = 0;
    const char* end = text.data() + text.size();
    const auto r = std::from_chars(text.data(), end, value);
    std::ostringstream range;
    range << (min_included ? "[" : "(") << min << ", " << max << "]";
    if (text.empty() || r.ptr != end || r.ec != std::errc() || !std::isfinite(value))
        return usage_error("--" + name + ": '" + text + "' is not a finite number (allowed: " +
                           range.str() + ")");
    if (value > max || value < min || (value == min && !min_included))
        return usage_error("--" + name + ": " + text + " is out of range (allowed: " +
                           range.str() + ")");
    return value;
}

std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

}  // namespace broadphase::tool
