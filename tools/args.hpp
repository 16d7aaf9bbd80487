// Command-line options of the `broadphase` tool: each command (and each mode of `bench`) has a
// fixed set of options, some required; anything else is an error naming the option and the
// valid ones. Numbers are read strictly (std::from_chars over the whole value) and
// range-checked, so that garbage never turns into 0.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "broadphase/types.hpp"

namespace broadphase::tool {

/// Parsed `--name value` options and bare flags (`--flag` maps to ""), all checked against the
/// command's option set.
struct Args {
    std::string command;  ///< "pairs", "bench --cpu", ... (for messages)
    std::map<std::string, std::string> options;
    std::vector<std::string> positional;  ///< only `events` takes any (more --scenes)
    bool help = false;                    ///< --help or -h was given
    bool has(const std::string& name) const { return options.count(name) != 0; }
    std::string get(const std::string& name, const std::string& fallback = "") const {
        auto it = options.find(name);
        return it == options.end() ? fallback : it->second;
    }
};

/// Parses argv[first..argc) for `command`: unknown or repeated options, a value missing or
/// given to a flag, a missing required option and stray arguments are errors.
Result<Args> parse_args(const std::string& command, int argc, char** argv, int first);

/// Integer option `name` in [min, max], or `fallback` when absent.
Result<std::int64_t> int_option(const Args& args, const std::string& name, std::int64_t fallback,
                                std::int64_t min, std::int64_t max);

/// Finite real option `name` in (min, max] (or [min, max] when `min_included`), or `fallback`.
Result<double> real_option(const Args& args, const std::string& name, double fallback, double min,
                           double max, bool min_included = false);

/// All of `text` as a decimal integer in [min, max]; `what` names it in the error.
Result<std::int64_t> parse_int(std::string_view text, const std::string& what, std::int64_t min,
                               std::int64_t max);

/// The non-empty comma-separated items of `text`.
std::vector<std::string> split_list(const std::string& text);

}  // namespace broadphase::tool
