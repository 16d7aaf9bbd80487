// The options that several commands of the `broadphase` tool share (args.cpp, bench_*.cpp),
// each defined once here on the field it fills; named values are read straight into the
// library's enums (enum_of), with the checks and messages of cli_options.hpp.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broadphase/frustum.hpp"
#include "broadphase/types.hpp"
#include "cli_options.hpp"
#ifdef BROADPHASE_HAS_GPU
#include "broadphase/gpu/context.hpp"
#include "broadphase/gpu/lbvh.hpp"
#include "broadphase/gpu/moving_scene.hpp"
#else
namespace broadphase::gpu {
// Without the GPU library the GPU options are still read (and their commands say that the build
// has no GPU): these stand in for the library's enums of the same names.
enum class SortPath { automatic, onesweep, reduce_then_scan };
enum class PairAppend { automatic, subgroup, atomic };
enum class RefitPolicy { always_refit, always_rebuild, by_ratio };
}  // namespace broadphase::gpu
#endif

namespace broadphase::tool {

/// The command-line names of an enum's values, in the order the help lists them.
template <class E>
using EnumNames = std::vector<std::pair<std::string, E>>;

const EnumNames<CodeKind>& code_names();
const EnumNames<CullOrder>& order_names();
const EnumNames<gpu::RefitPolicy>& policy_names();
const EnumNames<gpu::SortPath>& sort_path_names();
const EnumNames<gpu::PairAppend>& pair_append_names();

/// The command-line name of `value` ("" for a value `names` lacks).
template <class E>
std::string name_of(const EnumNames<E>& names, E value) {
    for (const auto& [name, v] : names)
        if (v == value) return name;
    return {};
}

/// `views` as strings (the names of the library's registries).
std::vector<std::string> strings(const std::vector<std::string_view>& views);

/// "description (default value)".
std::string with_default(const std::string& description, const std::string& value);

/// A transform reading one of `names` into its enum's value; `what` names the kind of value in
/// errors ("unknown code 'x' (did you mean ...?); known: ...").
template <class E>
CLI::Validator enum_of(const EnumNames<E>& names, const std::string& what) {
    std::vector<std::string> texts;
    for (const auto& entry : names) texts.push_back(entry.first);
    const CLI::Validator known = cli::one_of(texts, what);
    return CLI::Validator(
        [names, known](std::string& text) -> std::string {
            if (std::string error = known(text); !error.empty()) return error;
            for (const auto& [name, value] : names)
                if (name == text) text = std::to_string(static_cast<long long>(value));
            return {};
        },
        "");
}

/// An option naming one of `names` into `value`, whose current value is the default; shown as
/// a|b|c.
template <class E>
CLI::Option* add_enum(CLI::App& c, const std::string& name, E& value,
                      const std::string& description, const EnumNames<E>& names,
                      const std::string& what) {
    std::vector<std::string> texts;
    for (const auto& entry : names) texts.push_back(entry.first);
    return c.add_option(name, value, with_default(description, name_of(names, value)))
        ->type_name(cli::joined(texts, "|"))
        ->transform(enum_of(names, what));
}

/// A comma-separated list option, shown as `text` ("a,b,...") in the help and the usage.
template <class T>
CLI::Option* add_list(CLI::App& c, const std::string& name, std::vector<T>& values,
                      const std::string& description, const std::string& text) {
    return c.add_option(name, values, description)
        ->type_name(text)
        ->option_text(text)
        ->delimiter(',');
}

/// A method-name check: `names`, and for gpu_lbvh in a build without it a note saying so.
CLI::Validator method_check(std::vector<std::string> names);

/// --scene S: a file or a generator NAME:COUNT[:SEED].
CLI::Option* add_scene(CLI::App& c, std::string& scene);
/// --device INDEX|NAME.
CLI::Option* add_device(CLI::App& c, std::string& device);
/// --validation: the Vulkan validation layer.
CLI::Option* add_validation(CLI::App& c, bool& validation);
/// --code: the LBVH's space-filling curve.
CLI::Option* add_code(CLI::App& c, CodeKind& code);
/// --camera C (one): eye(3),target(3),up(3),fovy_deg,aspect,near,far.
CLI::Option* add_camera(CLI::App& c, Camera& camera, const std::string& description);
/// --lods, --meshes and --grouped of cull and bench cull (gpu::Culler::cull_lods).
std::vector<CLI::Option*> add_lods(CLI::App& c, std::vector<float>& lods, std::uint32_t& meshes,
                                   bool& grouped);
/// --order exact|approx.
CLI::Option* add_order(CLI::App& c, CullOrder& order);
/// --policy ratio|refit|rebuild (gpu::MovingSceneOptions::policy).
CLI::Option* add_policy(CLI::App& c, gpu::RefitPolicy& policy);
/// --rebuild-ratio R, or --rebuild-work-ratio W when `work` (gpu::MovingSceneOptions' ratios).
CLI::Option* add_rebuild_ratio(CLI::App& c, double& ratio, bool work);
/// The same, left empty when not given (the library's default).
CLI::Option* add_rebuild_ratio(CLI::App& c, std::optional<double>& ratio, bool work);

}  // namespace broadphase::tool
