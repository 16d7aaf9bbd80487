// Conventions shared by the command lines of the `broadphase` tool and the examples, on top of
// CLI11: numbers are read strictly (the whole value as a decimal number, range-checked, so that
// "3x" or "010" never turns into 3 or 8), named values are checked against their list, and every
// usage error names the option (and the nearest option for a misspelling) and exits with 2;
// --help prints on standard output and exits with 0.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace broadphase::cli {

/// Exit status of every usage error.
inline constexpr int kExitUsage = 2;

/// "[min, max]" for messages.
inline std::string range_text(std::int64_t min, std::int64_t max) {
    std::string range = "[";  // (appended: GCC 12 warns falsely on "[" + to_string, -Wrestrict)
    range += std::to_string(min);
    range += ", ";
    range += std::to_string(max);
    range += ']';
    return range;
}

/// Checks that a value is all of a decimal integer in [min, max] and rewrites it in canonical
/// form (CLI11 would read "010" as octal and "0x10" as hexadecimal). Give it to
/// Option::transform: Option::check would not let it rewrite.
inline CLI::Validator integer_in(std::int64_t min, std::int64_t max) {
    return CLI::Validator(
        [min, max](std::string& text) -> std::string {
            std::int64_t value = 0;
            const char* end = text.data() + text.size();
            const auto r = std::from_chars(text.data(), end, value);
            if (text.empty() || r.ptr != end ||
                (r.ec != std::errc() && r.ec != std::errc::result_out_of_range))
                return "'" + text + "' is not an integer (allowed: " + range_text(min, max) + ")";
            if (r.ec == std::errc::result_out_of_range || value < min || value > max)
                return text + " is out of range (allowed: " + range_text(min, max) + ")";
            text = std::to_string(value);
            return {};
        },
        "");
}

/// An integer option read strictly in [min, max] (integer_in), its value shown in the help as
/// `type`. Returns the option, for more settings (required, needs).
template <class T>
CLI::Option* add_integer(CLI::App& app, const std::string& name, T& value, const std::string& type,
                         std::int64_t min, std::int64_t max, const std::string& description) {
    return app.add_option(name, value, description)
        ->type_name(type)
        ->transform(integer_in(min, max));
}

/// Checks that a value is all of a finite decimal number in (min, max], or [min, max] when
/// `min_included`.
inline CLI::Validator real_in(double min, double max, bool min_included = false) {
    return CLI::Validator(
        [=](std::string& text) -> std::string {
            double value = 0;
            const char* end = text.data() + text.size();
            const auto r = std::from_chars(text.data(), end, value);
            std::ostringstream range;
            range << (min_included ? "[" : "(") << min << ", " << max << "]";
            if (text.empty() || r.ptr != end || r.ec != std::errc() || !std::isfinite(value))
                return "'" + text + "' is not a finite number (allowed: " + range.str() + ")";
            if (value > max || value < min || (value == min && !min_included))
                return text + " is out of range (allowed: " + range.str() + ")";
            return {};
        },
        "");
}

/// "a, b, c".
inline std::string joined(const std::vector<std::string>& items, const char* separator = ", ") {
    std::string text;
    for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
    return text;
}

/// Edit distance of two short words (for "did you mean").
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
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

/// The candidate within two edits of `word`, nearest first; empty when none is.
inline std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_distance = 3;
    for (const std::string& c : candidates) {
        if (std::size_t d = edit_distance(word, c); d < best_distance) best_distance = d, best = c;
    }
    return best;
}

/// Checks that a value is one of `names`; `what` names the kind of value in the error
/// ("method"), `note` is added to it for a name that is known but not available here.
inline CLI::Validator one_of(std::vector<std::string> names, std::string what,
                             std::string unavailable = {}, std::string note = {}) {
    return CLI::Validator(
        [=](std::string& text) -> std::string {
            if (std::find(names.begin(), names.end(), text) != names.end()) return {};
            std::string message = "unknown " + what + " '" + text + "'";
            if (!unavailable.empty() && text == unavailable) message += " (" + note + ")";
            if (std::string near = nearest(text, names); !near.empty())
                message += " (did you mean " + near + "?)";
            return message + "; known: " + joined(names);
        },
        "");
}

/// `text` with line breaks at spaces so that no line is longer than `width` (longer words stay
/// whole); existing line breaks are kept.
inline std::string wrapped(const std::string& text, std::size_t width) {
    std::string out;
    std::size_t line = 0;  // length of the current output line
    std::istringstream paragraphs(text);
    bool first_paragraph = true;
    for (std::string paragraph; std::getline(paragraphs, paragraph);) {
        if (!first_paragraph) out += '\n';
        first_paragraph = false;
        line = 0;
        std::istringstream words(paragraph);
        for (std::string word; words >> word;) {
            if (line > 0 && line + 1 + word.size() > width) {
                out += '\n';
                line = 0;
            } else if (line > 0) {
                out += ' ';
                ++line;
            }
            out += word;
            line += word.size();
        }
    }
    return out;
}

/// CLI11's help layout with descriptions wrapped to a terminal's width and lower-case labels.
class HelpFormatter : public CLI::Formatter {
public:
    static constexpr std::size_t kWidth = 100;
    HelpFormatter() {
        label("Usage", "usage");
        label("OPTIONS", "options");
        label("SUBCOMMAND", "COMMAND");
        column_width(34);
    }
    std::string make_description(const CLI::App* app) const override {
        const std::string d = app->get_description();
        return d.empty() ? d : wrapped(d, kWidth) + "\n";
    }
    std::string make_option_desc(const CLI::Option* opt) const override {
        return wrapped(opt->get_description(), kWidth - column_width_);
    }
    std::string make_subcommand(const CLI::App* sub) const override {
        std::stringstream out;
        CLI::detail::format_help(out, sub->get_display_name(true),
                                 wrapped(sub->get_description(), kWidth - column_width_),
                                 column_width_);
        return out.str();
    }
    std::string make_footer(const CLI::App* app) const override {
        const std::string f = app->get_footer();
        return f.empty() ? f : wrapped(f, kWidth) + "\n";
    }
};

/// The conventions of every command line on `app`: HelpFormatter's layout, -h and --help, and
/// flags that take no `--flag=value`.
inline void set_conventions(CLI::App& app) {
    app.formatter(std::make_shared<HelpFormatter>());
    app.set_help_flag("-h,--help", "print this help and exit");
    app.option_defaults()->disable_flag_override();
}

/// The subcommand the command line selected (the deepest one), or `app` itself.
inline const CLI::App& selected(const CLI::App& app) {
    const CLI::App* at = &app;
    for (auto subs = at->get_subcommands(); !subs.empty(); subs = at->get_subcommands())
        at = subs.front();
    return *at;
}

/// "broadphase pairs": the program name and the selected subcommands.
inline std::string command_path(const CLI::App& app) {
    std::string path = app.get_name();
    for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
        at = at->get_subcommands().front();
        path += " " + at->get_name();
    }
    return path;
}

/// "--scene S, --method M, --out FILE, --validation": the visible options of `app`.
inline std::string option_list(const CLI::App& app) {
    std::vector<std::string> items;
    for (const CLI::Option* o : app.get_options()) {
        if (o == app.get_help_ptr() || o->get_name().empty()) continue;
        items.push_back(o->get_name() +
                        (o->get_expected_max() != 0 ? " " + o->get_type_name() : std::string()));
    }
    return joined(items);
}

/// The long names of the visible options of `app`, with their dashes.
inline std::vector<std::string> option_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* o : app.get_options())
        for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
    return names;
}

/// The message for a usage error `e` of the command line `app` parsed: the first argument no
/// option took (an unknown option, with the nearest option's name, or a stray value), an
/// option given twice, a missing value, a value given to a flag, a missing required option, or
/// CLI11's own message (which names the option).
inline std::string error_message(const CLI::App& app, const CLI::ParseError& e) {
    const CLI::App& at = selected(app);
    const std::string name = at.get_name();
    const std::string takes = "; " + name + " takes " + option_list(at);
    if (const std::vector<std::string> left = at.remaining(); !left.empty()) {
        const std::string& arg = left.front();
        if (&at == &app && !app.get_subcommands({}).empty() && arg.rfind('-', 0) != 0) {
            std::vector<std::string> commands;
            for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
            std::string message = "unknown command '" + arg + "'";
            if (std::string near = nearest(arg, commands); !near.empty())
                message += " (did you mean " + near + "?)";
            return message + "; commands: " + joined(commands);
        }
        if (arg.size() > 1 && arg[0] == '-' && !(arg[1] >= '0' && arg[1] <= '9')) {
            const std::string option = arg.substr(0, arg.find('='));
            std::string message = "unknown option '" + option + "'";
            if (std::string near = nearest(option, option_names(at)); !near.empty())
                message += " (did you mean " + near + "?)";
            return message + takes;
        }
        return "unexpected argument '" + arg + "' (options: " + option_list(at) + ")";
    }
    const std::string what = e.what();
    if (e.get_name() == "ArgumentMismatch") {
        for (const CLI::Option* o : at.get_options()) {
            const std::string full = o->get_name();
            const std::string bare = full.empty() ? full : full.substr(full.find_first_not_of('-'));
            if (full.empty() || !(what.rfind(full + ":", 0) == 0 ||
                                  what.rfind(full + " ", 0) == 0 || what.rfind(bare + " ", 0) == 0))
                continue;
            if (o->results().size() > 1 && o->get_items_expected_max() <= 1)
                return full + " is given " +
                       (o->results().size() == 2 ? std::string("twice")
                                                 : std::to_string(o->results().size()) + " times");
            if (o->get_expected_max() == 0) return full + " takes no value";
            return full + " needs a value (" + o->get_type_name() + ")";
        }
    }
    if (e.get_name() == "RequiredError") {
        for (const CLI::Option* o : at.get_options()) {
            if (o->get_required() && o->count() == 0)
                return o->get_name() + " " + o->get_type_name() + " is required (" + name +
                       " takes " + option_list(at) + ")";
        }
    }
    return what;
}

/// How a parse that threw ends: help or version text for standard output and exit 0, or a
/// usage error for standard error and exit 2.
struct Outcome {
    std::string text;
    int exit_code = 0;
};

inline Outcome outcome(const CLI::App& app, const CLI::ParseError& e) {
    if (e.get_name() == "CallForHelp") return {app.help(), 0};
    if (e.get_name() == "CallForVersion") return {std::string(e.what()) + "\n", 0};
    const std::string path = command_path(app);
    return {path + ": " + error_message(app, e) + "\n(" + path + " --help lists the " +
                (app.get_subcommands().empty() && !app.get_subcommands({}).empty() ? "commands"
                                                                                   : "options") +
                ")\n",
            kExitUsage};
}

/// Prints outcome(app, e) where it belongs; returns its exit status.
inline int report(const CLI::App& app, const CLI::ParseError& e) {
    const Outcome o = outcome(app, e);
    std::fputs(o.text.c_str(), o.exit_code == 0 ? stdout : stderr);
    return o.exit_code;
}

}  // namespace broadphase::cli
